/**
 * An in-memory {@link ConsoleApi} for the console's tests and benchmark: workspaces with
 * versions (state bytes), locks, and a rollback that writes the old content with serial
 * current + 1, as the backend's will. Diffs use the real `diffStates`.
 */
import { randomUUID } from "node:crypto";
import { ObjstateError } from "../../src/errors.js";
import { stringifyExact } from "../../src/json/exact-json.js";
import { diffStates } from "../../src/state/diff.js";
import { readStateDocument } from "../../src/state/document.js";
import type { ConsoleApi, LockView, OutputView, VersionView, WorkspaceSummary } from "../../src/console/types.js";

export interface MemoryVersion {
  readonly versionId: string;
  readonly bytes: Buffer;
  readonly lastModified: string;
  readonly who?: string | undefined;
  readonly operation?: string | undefined;
}

interface Ws {
  versions: MemoryVersion[]; // newest first
  lock: LockView | null;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A v4 state with `n` resources `null_resource.r[i]` (attribute `v` = `tag`) and the given outputs. */
export function makeState(
  serial: number,
  n: number,
  outputs: Record<string, { value: Json; sensitive?: boolean }> = {},
  tag = "a",
  lineage = "lineage-1",
): string {
  return JSON.stringify({
    version: 4,
    terraform_version: "1.9.0",
    serial,
    lineage,
    outputs: Object.fromEntries(
      Object.entries(outputs).map(([k, o]) => [k, { value: o.value, type: "string", ...(o.sensitive === true ? { sensitive: true } : {}) }]),
    ),
    resources:
      n === 0
        ? []
        : [
            {
              mode: "managed",
              type: "null_resource",
              name: "r",
              provider: 'provider["registry.example/x/null"]',
              instances: Array.from({ length: n }, (_, i) => ({ index_key: i, attributes: { id: `id-${i}`, v: tag } })),
            },
          ],
  });
}

export class MemoryConsoleApi implements ConsoleApi {
  private readonly keepsHistory: boolean;
  private readonly ws = new Map<string, Ws>();
  /** Calls of the actions, for assertions. */
  readonly calls: string[] = [];

  constructor(options: { hasHistory?: boolean } = {}) {
    this.keepsHistory = options.hasHistory ?? true;
  }

  hasHistory(): Promise<boolean> {
    return Promise.resolve(this.keepsHistory);
  }

  private get(name: string): Ws {
    let w = this.ws.get(name);
    if (w === undefined) {
      w = { versions: [], lock: null };
      this.ws.set(name, w);
    }
    return w;
  }

  /** Add a version (newest) to a workspace. */
  write(name: string, state: string, meta: { lastModified?: string; who?: string; operation?: string } = {}): string {
    const versionId = randomUUID();
    this.get(name).versions.unshift({
      versionId,
      bytes: Buffer.from(state),
      lastModified: meta.lastModified ?? new Date().toISOString(),
      who: meta.who,
      operation: meta.operation,
    });
    return versionId;
  }

  setLock(name: string, lock: LockView | null): void {
    this.get(name).lock = lock;
  }

  private summary(name: string, w: Ws): WorkspaceSummary {
    const head = w.versions[0];
    const doc = head === undefined ? null : readStateDocument(head.bytes, "to");
    return {
      name,
      lock: w.lock,
      lastWrite: head === undefined ? null : { time: head.lastModified, who: head.who, serial: doc?.serial ?? null },
      size: head?.bytes.length ?? 0,
      resources: doc?.instances.size ?? 0,
    };
  }

  listWorkspaces(): Promise<WorkspaceSummary[]> {
    return Promise.resolve([...this.ws].map(([n, w]) => this.summary(n, w)));
  }
  workspace(name: string): Promise<WorkspaceSummary> {
    return Promise.resolve(this.summary(name, this.get(name)));
  }
  exists(name: string): Promise<boolean> {
    const w = this.ws.get(name);
    return Promise.resolve(name === "default" || (w !== undefined && (w.versions.length > 0 || w.lock !== null)));
  }
  lock(name: string): Promise<LockView | null> {
    return Promise.resolve(this.get(name).lock);
  }
  locks(): Promise<ReadonlyMap<string, LockView | null>> {
    return Promise.resolve(new Map([...this.ws].map(([n, w]) => [n, w.lock])));
  }
  outputs(name: string): Promise<OutputView[]> {
    const head = this.get(name).versions[0];
    const doc = head === undefined ? null : readStateDocument(head.bytes, "to");
    return Promise.resolve(doc === null ? [] : [...doc.outputs].map(([k, o]) => ({ name: k, value: stringifyExact(o.exact), sensitive: o.sensitive })));
  }
  history(name: string, options: { readonly limit: number }): Promise<VersionView[]> {
    const vs = this.get(name).versions.slice(0, options.limit);
    return Promise.resolve(
      vs.map((v, i) => {
        const doc = readStateDocument(v.bytes, "to");
        return {
          versionId: v.versionId,
          lastModified: v.lastModified,
          size: v.bytes.length,
          serial: doc?.serial ?? null,
          lineage: doc?.lineage ?? null,
          who: v.who,
          operation: v.operation,
          isLatest: i === 0,
          deleteMarker: false,
          resources: doc?.instances.size,
        };
      }),
    );
  }
  async version(name: string, versionId: string, options: { readonly limit: number }): Promise<VersionView | null> {
    return (await this.history(name, options)).find((v) => v.versionId === versionId) ?? null;
  }
  private stored(name: string, id: string): MemoryVersion {
    const v = this.get(name).versions.find((x) => x.versionId === id);
    if (v === undefined) throw new ObjstateError("VERSION_NOT_FOUND", `no version ${id} of workspace ${name}`);
    return v;
  }
  diff(name: string, from: string, to: string): ReturnType<ConsoleApi["diff"]> {
    try {
      return Promise.resolve(diffStates(this.stored(name, from).bytes, this.stored(name, to).bytes));
    } catch (e) {
      return Promise.reject(e);
    }
  }
  rollback(name: string, to: string): ReturnType<ConsoleApi["rollback"]> {
    this.calls.push(`rollback ${name} ${to}`);
    const w = this.get(name);
    if (w.lock !== null) return Promise.reject(new ObjstateError("STATE_LOCKED", `workspace ${name} is locked`));
    const target = this.stored(name, to);
    const head = w.versions[0] as MemoryVersion;
    const serial = (readStateDocument(head.bytes, "to")?.serial ?? 0) + 1;
    const doc = JSON.parse(target.bytes.toString("utf8")) as Record<string, unknown>;
    doc["serial"] = serial;
    this.write(name, JSON.stringify(doc), { who: "console", operation: "rollback" });
    return Promise.resolve({ serial });
  }
  forceUnlock(name: string, id: string): Promise<void> {
    this.calls.push(`force-unlock ${name} ${id}`);
    const w = this.get(name);
    if (w.lock === null) return Promise.reject(new ObjstateError("LOCK_NOT_FOUND", `workspace ${name} is not locked`));
    if (w.lock.id !== id) return Promise.reject(new ObjstateError("LOCK_ID_MISMATCH", `lock ID ${id} does not match`));
    w.lock = null;
    return Promise.resolve();
  }
}
