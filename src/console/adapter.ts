/**
 * `backendConsoleApi(backend)`: the console's {@link ConsoleApi} over an
 * `ObjectStoreBackend` — the same library calls the JSON API makes, no second
 * implementation. History and rollback come from the backend's version methods
 * ({@link HistoryBackend}) when it has them; until then the console says it keeps no history.
 */
import type { ObjectStoreBackend } from "../backend/backend.js";
import type { LockInfo } from "../backend/lock-info.js";
import { ObjstateError } from "../errors.js";
import { stringifyExact } from "../remote-state/exact-json.js";
import { diffStates, type StateDiff } from "../state/diff.js";
import { readStateDocument, type StateDocument } from "../state/document.js";
import type { ConsoleApi, LockView, OutputView, RollbackResult, VersionView, WorkspaceSummary } from "./types.js";

/** One stored version as the backend's history lists it (DESIGN §9). */
export interface VersionRecord {
  readonly versionId: string;
  readonly lastModified: Date | string | undefined;
  readonly size: number;
  readonly serial: number | null | undefined;
  readonly lineage: string | null | undefined;
  readonly who?: string | undefined;
  readonly operation?: string | undefined;
  readonly lockId?: string | undefined;
  readonly isLatest: boolean;
  readonly deleteMarker: boolean;
}

/** The backend's version methods (issue 10), wired when present. */
export interface HistoryBackend {
  /** Versions newest first, at most `limit`. */
  history(workspace: string, options: { readonly limit: number }): AsyncIterable<VersionRecord>;
  /** One version's bytes (null for a delete marker or a version that is gone). */
  readVersion(workspace: string, versionId: string): Promise<Uint8Array | null>;
  /** Write version `to`'s content as a new version, serial = current + 1, under the lock. */
  rollback(workspace: string, versionId: string): Promise<{ readonly serial?: number | null | undefined; readonly versionId?: string | undefined }>;
}

/** What the adapter uses of a backend: today's methods, and the version methods when it has them. */
export type ConsoleBackend = Pick<ObjectStoreBackend, "listWorkspaces" | "lockInfo" | "readState" | "forceUnlock"> & Partial<HistoryBackend>;

/** Options of {@link backendConsoleApi}. */
export interface BackendConsoleOptions {
  /** Workspaces read at once when listing (default 8). */
  readonly concurrency?: number | undefined;
  /** Newest versions whose content is read to count resources for the chart (default 100). */
  readonly chartVersions?: number | undefined;
  /**
   * How long a workspace's size, resource count and last write are reused by the
   * Workspaces page before its state is read again (default 10 s; 0 reads every time).
   * Locks are always read fresh. A rollback through this API forgets its workspace's entry.
   */
  readonly summaryTtlMs?: number | undefined;
  /** Time source (default `Date.now`). */
  readonly now?: (() => number) | undefined;
}

/** Map `items` through `fn`, at most `limit` at a time, keeping order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Lock info as the console shows it; a lease's `Expires` (epoch seconds) when the holder set one. */
export function lockView(info: LockInfo | null): LockView | null {
  if (info === null) return null;
  const raw = (info as LockInfo & { readonly Expires?: unknown }).Expires;
  const secs = typeof raw === "number" ? raw : typeof raw === "string" && /^\d+$/.test(raw) ? Number(raw) : undefined;
  return { id: info.ID, who: info.Who, operation: info.Operation, info: info.Info, created: info.Created, expires: secs === undefined ? undefined : new Date(secs * 1000).toISOString() };
}

function iso(t: Date | string | undefined): string {
  return t === undefined ? "" : typeof t === "string" ? t : t.toISOString();
}

function versionView(r: VersionRecord, resources?: number): VersionView {
  return {
    versionId: r.versionId,
    lastModified: iso(r.lastModified),
    size: r.size,
    serial: r.serial ?? null,
    lineage: r.lineage ?? null,
    who: r.who,
    operation: r.operation,
    isLatest: r.isLatest,
    deleteMarker: r.deleteMarker,
    resources,
  };
}

/** The console's API over a backend. */
export function backendConsoleApi(backend: ConsoleBackend, options: BackendConsoleOptions = {}): ConsoleApi {
  const concurrency = options.concurrency ?? 8;
  const ttl = options.summaryTtlMs ?? 10_000;
  const now = options.now ?? Date.now;
  // Reading 2,000 states per page view costs seconds; their summaries change only on writes.
  const cache = new Map<string, { readonly at: number; readonly content: Omit<WorkspaceSummary, "name" | "lock"> }>();
  const chartVersions = options.chartVersions ?? 100;
  const { history, readVersion, rollback } = backend;
  const hasHistory = typeof history === "function" && typeof readVersion === "function" && typeof rollback === "function";

  const versions = async (workspace: string, limit: number): Promise<VersionRecord[]> => {
    if (!hasHistory) throw new ObjstateError("NO_HISTORY", "this server keeps no version history yet: history and rollback need a backend with versions");
    const out: VersionRecord[] = [];
    for await (const r of history.call(backend, workspace, { limit })) {
      out.push(r);
      if (out.length >= limit) break;
    }
    return out;
  };

  const versionBytes = async (workspace: string, versionId: string): Promise<Uint8Array | null> => {
    if (!hasHistory) throw new ObjstateError("NO_HISTORY", "this server keeps no version history yet: there are no versions to compare");
    return readVersion.call(backend, workspace, versionId);
  };

  const current = async (workspace: string): Promise<{ bytes: Buffer | null; doc: StateDocument | null }> => {
    const bytes = await backend.readState(workspace);
    return { bytes, doc: bytes === null ? null : readStateDocument(bytes, "to") };
  };

  // One unreadable state must not take the whole list down: its row shows size, no counts.
  const tolerant = async (workspace: string): Promise<{ bytes: Buffer | null; doc: StateDocument | null }> => {
    const bytes = await backend.readState(workspace);
    try {
      return { bytes, doc: bytes === null ? null : readStateDocument(bytes, "to") };
    } catch {
      return { bytes, doc: null };
    }
  };

  const content = async (workspace: string): Promise<Omit<WorkspaceSummary, "name" | "lock">> => {
    const [state, latest] = await Promise.all([tolerant(workspace), hasHistory ? versions(workspace, 1) : Promise.resolve([])]);
    const head = latest[0];
    const write = head !== undefined && head.isLatest && !head.deleteMarker ? head : undefined;
    return {
      lastWrite: state.bytes === null ? null : { time: write === undefined ? undefined : iso(write.lastModified), who: write?.who, serial: state.doc?.serial ?? null },
      size: state.bytes?.length ?? 0,
      resources: state.doc?.instances.size ?? 0,
    };
  };

  /** `cached`: the Workspaces page may reuse a recent read; one workspace's own page never does. */
  const summary = async (workspace: string, cached = false): Promise<WorkspaceSummary> => {
    const hit = cached ? cache.get(workspace) : undefined;
    const fresh = hit !== undefined && now() - hit.at < ttl ? hit.content : undefined;
    const [lock, c] = await Promise.all([backend.lockInfo(workspace), fresh === undefined ? content(workspace) : Promise.resolve(fresh)]);
    if (fresh === undefined && ttl > 0) cache.set(workspace, { at: now(), content: c });
    return { name: workspace, lock: lockView(lock), ...c };
  };

  return {
    hasHistory,
    listWorkspaces: async () => {
      const names = await backend.listWorkspaces();
      const listed = new Set(names);
      // Deleted workspaces leave the cache with the listing.
      for (const w of cache.keys()) if (!listed.has(w)) cache.delete(w);
      return mapLimit(names, concurrency, (w) => summary(w, true));
    },
    workspace: (workspace) => summary(workspace),
    lock: async (workspace) => lockView(await backend.lockInfo(workspace)),
    locks: async () => {
      const names = await backend.listWorkspaces();
      const locks = await mapLimit(names, concurrency, async (w) => lockView(await backend.lockInfo(w)));
      return new Map(names.map((w, i) => [w, locks[i] ?? null]));
    },
    outputs: async (workspace): Promise<OutputView[]> => {
      const { doc } = await current(workspace);
      if (doc === null) return [];
      return [...doc.outputs].map(([name, o]) => ({ name, value: stringifyExact(o.exact), sensitive: o.sensitive })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    history: async (workspace, { limit }) => {
      const records = await versions(workspace, limit);
      // Counting resources means reading the version: only the newest few, for the chart.
      const counted = new Set(records.filter((r) => !r.deleteMarker).slice(0, chartVersions).map((r) => r.versionId));
      return mapLimit(records, concurrency, async (r) => {
        if (!counted.has(r.versionId)) return versionView(r);
        const bytes = await readVersion?.call(backend, workspace, r.versionId);
        let resources: number | undefined;
        try {
          resources = bytes === null || bytes === undefined ? undefined : readStateDocument(bytes, "to")?.instances.size;
        } catch {
          // A version that is not a readable state (written by another client) has no count.
          resources = undefined;
        }
        return versionView(r, resources);
      });
    },
    diff: async (workspace, from, to): Promise<StateDiff> => {
      const [a, b] = await Promise.all([versionBytes(workspace, from), versionBytes(workspace, to)]);
      return diffStates(a, b);
    },
    rollback: async (workspace, to): Promise<RollbackResult> => {
      if (!hasHistory) throw new ObjstateError("NO_HISTORY", "this server keeps no version history yet: there is nothing to roll back to");
      const r = await rollback.call(backend, workspace, to);
      cache.delete(workspace);
      return { serial: r.serial ?? null, versionId: r.versionId };
    },
    forceUnlock: (workspace, id) => backend.forceUnlock(workspace, id),
  };
}
