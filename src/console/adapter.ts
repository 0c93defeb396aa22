/**
 * `backendConsoleApi(backend)`: the console's {@link ConsoleApi} over an
 * `ObjectStoreBackend` — the same library calls the JSON API makes (`lastWrite`,
 * `lockInfo`, `history`, `readVersion`, `diff`, `rollback`, `unlock`), no second
 * implementation of any operation.
 */
import type { DiffOptions, LastWrite as BackendLastWrite, ObjectStoreBackend, StateVersion, WorkspaceObject } from "../backend/backend.js";
import { DEFAULT_WORKSPACE } from "../config/layout.js";
import type { LockInfo } from "../backend/locks/lock-info.js";
import { stringifyExact } from "../json/exact-json.js";
import type { StateDiff } from "../state/diff.js";
import { readStateDocument } from "../state/document.js";
import { isObjstateError } from "../errors.js";
import {
  ENCRYPTED,
  type ConsoleApi,
  type Encrypted,
  type LockView,
  type OutputView,
  type RollbackResult,
  type VersionView,
  type WorkspaceSummary,
} from "./types.js";

/** What the console uses of a backend: its real methods, nothing guessed. */
export type ConsoleBackend = Pick<
  ObjectStoreBackend,
  | "listWorkspaces"
  | "listWorkspaceObjects"
  | "lockInfo"
  | "locks"
  | "lastWrite"
  | "readState"
  | "unlock"
  | "history"
  | "readVersion"
  | "diff"
  | "rollback"
  | "versioning"
>;

/** Options of {@link backendConsoleApi}. */
export interface BackendConsoleOptions {
  /** Workspaces (or versions) read at once (default 8). */
  readonly concurrency?: number | undefined;
  /** Newest versions whose resources are counted for the History chart (default 100). */
  readonly chartVersions?: number | undefined;
  /** States read at once in the background to count resources for the Workspaces page (default 2). */
  readonly countConcurrency?: number | undefined;
  /** Version descriptions remembered for the History and Rollback pages (default 5,000). */
  readonly versionCacheSize?: number | undefined;
  /** How long the bucket's versioning status is reused (default 60 s). */
  readonly versioningTtlMs?: number | undefined;
  /** Time source (default `Date.now`). */
  readonly now?: (() => number) | undefined;
  /** How the Diff and Rollback pages compare two versions (default: on this thread; `serve` passes its worker's). */
  readonly compare?: DiffOptions["compare"];
}

/** Resource counts remembered (per workspace write, per version): a few hundred KiB at most. */
const COUNT_CACHE_MAX = 20_000;

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

/** A map that forgets its oldest entries past `max`. */
function remember<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  for (const k of map.keys()) {
    if (map.size <= max) break;
    map.delete(k);
  }
}

/**
 * Jobs run in the background (exported for its tests), at most `limit` at once and one per key (a key queued again
 * before it ran keeps its place), each started from the event loop so requests are served
 * between them. Failures are dropped: the next page view queues again.
 */
export function backgroundQueue(limit: number): (key: string, job: () => Promise<unknown>) => void {
  const queued = new Map<string, () => Promise<unknown>>();
  const running = new Set<string>();
  let scheduled = false;
  // Through the event loop, once per turn: the embedded store answers without waiting on
  // I/O, and a queue that started each next job at once would hold the loop until the last.
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(pump);
  };
  const pump = (): void => {
    scheduled = false;
    for (const [key, job] of queued) {
      if (running.size >= limit) return;
      if (running.has(key)) continue;
      queued.delete(key);
      running.add(key);
      void job()
        .catch(() => undefined)
        .finally(() => {
          running.delete(key);
          schedule();
        });
    }
  };
  return (key, job) => {
    if (running.has(key) || queued.has(key)) return;
    queued.set(key, job);
    schedule(); // after the page that queued it has been answered
  };
}

/** Lock info as the console shows it; a lease's `Expires` (epoch seconds) when the holder set one. */
export function lockView(info: LockInfo | null): LockView | null {
  if (info === null) return null;
  // parseLockInfo already turned a stored `Expires` into epoch seconds (or left it out).
  return {
    id: info.ID,
    who: info.Who,
    operation: info.Operation,
    info: info.Info,
    created: info.Created,
    expires: info.Expires === undefined ? undefined : new Date(info.Expires * 1000).toISOString(),
  };
}

function versionView(r: StateVersion, resources?: number | Encrypted): VersionView {
  return {
    versionId: r.versionId,
    lastModified: r.lastModified?.toISOString() ?? "",
    size: r.size,
    serial: r.serial ?? null,
    lineage: r.lineage ?? null,
    who: r.who,
    principal: r.principal,
    operation: r.operation,
    isLatest: r.isLatest,
    deleteMarker: r.deleteMarker,
    resources,
  };
}

/** Resource instances in a state, {@link ENCRYPTED} for an envelope without its key, or undefined when it is not a readable state. */
function countResources(bytes: Uint8Array | null): number | Encrypted | undefined {
  if (bytes === null) return undefined;
  try {
    return readStateDocument(bytes, "to")?.instances.size;
  } catch (e) {
    if (isObjstateError(e, "STATE_ENCRYPTED")) return ENCRYPTED;
    // Written by another client in a shape we cannot read: no count, the row still shows.
    return undefined;
  }
}

/** What identifies one write of a workspace's state (a new write, a new key), from a HEAD or a listing. */
function writeKey(w: { readonly etag: string | undefined; readonly lastModified: string | undefined; readonly size: number }): string {
  return w.etag ?? `${w.lastModified ?? ""}/${w.size}`;
}

/** Every lock in one listing (a table scan and a prefix listing), not one read per workspace. */
async function allLocks(backend: ConsoleBackend): Promise<Map<string, LockView>> {
  const out = new Map<string, LockView>();
  for (const l of await backend.locks()) {
    if (l.workspace === null || out.has(l.workspace)) continue;
    out.set(l.workspace, { id: l.id, who: l.who, operation: l.operation, info: l.info, created: l.since, expires: l.expires ?? undefined });
  }
  return out;
}

/** Root outputs of the current state, sorted by name; {@link ENCRYPTED} for an envelope without its key. */
async function outputsOf(backend: ConsoleBackend, workspace: string): Promise<OutputView[] | Encrypted> {
  const bytes = await backend.readState(workspace);
  let doc: ReturnType<typeof readStateDocument>;
  try {
    doc = bytes === null ? null : readStateDocument(bytes, "to");
  } catch (e) {
    if (isObjstateError(e, "STATE_ENCRYPTED")) return ENCRYPTED;
    throw e;
  }
  if (doc === null) return [];
  return [...doc.outputs]
    .map(([name, o]) => ({ name, value: stringifyExact(o.exact), sensitive: o.sensitive }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The Workspaces page's rows and a workspace's summary, with what they remember: resource
 * counts by the write they were made from, and the last writes seen.
 */
function workspaceRows(backend: ConsoleBackend, concurrency: number, countConcurrency: number) {
  // Counting resources means reading and parsing the whole state: the Workspaces page
  // never waits for it. Counts are keyed by the write they were made from (its ETag), so
  // they never go stale; the ones not known yet are made in the background, a few at a time.
  const counts = new Map<string, number | Encrypted | undefined>();
  const countLater = backgroundQueue(countConcurrency);
  const count = async (workspace: string, key: string): Promise<number | Encrypted | undefined> => {
    const resources = countResources(await backend.readState(workspace));
    remember(counts, key, resources, COUNT_CACHE_MAX);
    return resources;
  };

  // Last writes seen (one HEAD each: serial and who are object metadata, not in a listing).
  // The Workspaces page takes size, time and ETag from one listing; a HEAD made for the
  // same ETag is still true, any other is read in the background and shown as "…" meanwhile.
  const writes = new Map<string, BackendLastWrite | null>();
  const refreshLater = backgroundQueue(concurrency);
  const readWrite = async (workspace: string): Promise<BackendLastWrite | null> => {
    const write = await backend.lastWrite(workspace);
    // Only writes are kept: pages of names that have none must not fill the cache.
    if (write === null) writes.delete(workspace);
    else writes.set(workspace, write);
    return write;
  };

  const resourcesOf = (
    workspace: string,
    write: { readonly etag: string | undefined; readonly lastModified: string | undefined; readonly size: number },
    wait: boolean,
  ): Promise<number | Encrypted | undefined> | number | Encrypted | undefined => {
    const key = `${workspace}\0${writeKey(write)}`;
    if (counts.has(key)) return counts.get(key);
    if (wait) return count(workspace, key);
    countLater(workspace, () => count(workspace, key));
    return undefined;
  };

  // One workspace's own page: its lock and last write read now.
  const summary = async (workspace: string): Promise<WorkspaceSummary> => {
    const [lock, write] = await Promise.all([backend.lockInfo(workspace).then(lockView), readWrite(workspace)]);
    const base = { name: workspace, lock };
    if (write === null) return { ...base, lastWrite: null, size: 0, resources: 0 };
    const resources = await resourcesOf(workspace, write, true);
    return { ...base, lastWrite: { time: write.lastModified, who: write.who, serial: write.serial ?? null }, size: write.size, resources };
  };

  // A row of the Workspaces page from the listing: never waits for a HEAD or a state read.
  const listed = (workspace: string, object: WorkspaceObject | undefined, lock: LockView | null): WorkspaceSummary => {
    const base = { name: workspace, lock };
    if (object === undefined) {
      writes.delete(workspace);
      return { ...base, lastWrite: null, size: 0, resources: 0 };
    }
    const seen = writes.get(workspace);
    const known = seen !== undefined && seen !== null && writeKey(seen) === writeKey(object) ? seen : undefined;
    if (known === undefined) refreshLater(workspace, () => readWrite(workspace));
    const lastWrite =
      known === undefined
        ? { time: object.lastModified, serial: null, pending: true }
        : { time: object.lastModified, who: known.who, serial: known.serial ?? null };
    return { ...base, lastWrite, size: object.size, resources: resourcesOf(workspace, object, false) as number | Encrypted | undefined };
  };

  return {
    summary,
    listed,
    forget: (workspace: string): boolean => writes.delete(workspace),
    /** Deleted workspaces leave the cache with the listing. */
    keepOnly: (names: ReadonlyMap<string, unknown>): void => {
      for (const w of writes.keys()) if (!names.has(w)) writes.delete(w);
    },
  };
}

/** Version descriptions and their resource counts, kept (bounded) as their content never changes. */
function versionDescriptions(backend: ConsoleBackend, concurrency: number, chartVersions: number, versionCacheSize: number) {
  const versionCounts = new Map<string, number | Encrypted | undefined>();
  // Version descriptions (a ranged read each) never change but for which one is current:
  // kept by version ID (bounded) for the Rollback confirmation, which needs two of them.
  const versionViews = new Map<string, VersionView>();
  const history = async (workspace: string, limit: number): Promise<VersionView[]> => {
    const records: StateVersion[] = [];
    for await (const r of backend.history(workspace, { limit })) records.push(r);
    // Counting resources means reading the version: only the newest few, for the chart.
    const counted = new Set(
      records
        .filter((r) => !r.deleteMarker)
        .slice(0, chartVersions)
        .map((r) => r.versionId),
    );
    const views = await mapLimit(records, concurrency, async (r) => {
      if (!counted.has(r.versionId)) return versionView(r);
      const key = `${workspace}\0${r.versionId}`;
      if (!versionCounts.has(key)) remember(versionCounts, key, countResources(await backend.readVersion(workspace, r.versionId)), COUNT_CACHE_MAX);
      return versionView(r, versionCounts.get(key));
    });
    for (const v of views) remember(versionViews, `${workspace}\0${v.versionId}`, v, versionCacheSize);
    return views;
  };
  const version = async (workspace: string, versionId: string, limit: number): Promise<VersionView | null> => {
    const kept = versionViews.get(`${workspace}\0${versionId}`);
    if (kept !== undefined) return kept;
    return (await history(workspace, limit)).find((v) => v.versionId === versionId) ?? null;
  };
  return { history, version };
}

/** The console's API over a backend. */
export function backendConsoleApi(backend: ConsoleBackend, options: BackendConsoleOptions = {}): ConsoleApi {
  const concurrency = options.concurrency ?? 8;
  const chartVersions = options.chartVersions ?? 100;
  const countConcurrency = options.countConcurrency ?? 2;
  const versioningTtl = options.versioningTtlMs ?? 60_000;
  const now = options.now ?? Date.now;
  const versionCacheSize = options.versionCacheSize ?? 5_000;
  const rows = workspaceRows(backend, concurrency, countConcurrency);
  const versions = versionDescriptions(backend, concurrency, chartVersions, versionCacheSize);

  let versioning: { readonly at: number; readonly keeps: boolean } | undefined;
  const hasHistory = async (): Promise<boolean> => {
    if (versioning !== undefined && now() - versioning.at < versioningTtl) return versioning.keeps;
    // `suspended` still has the versions made while it was on: show them.
    const keeps = (await backend.versioning()) !== "off";
    versioning = { at: now(), keeps };
    return keeps;
  };

  return {
    hasHistory,
    listWorkspaces: async () => {
      const [objects, locks] = await Promise.all([backend.listWorkspaceObjects(), allLocks(backend)]);
      const byName = new Map(objects.map((o) => [o.workspace, o]));
      rows.keepOnly(byName);
      // `default` always exists, with a state or not (as `listWorkspaces` lists it).
      const names = byName.has(DEFAULT_WORKSPACE) ? objects.map((o) => o.workspace) : [DEFAULT_WORKSPACE, ...objects.map((o) => o.workspace)];
      return names.map((w) => rows.listed(w, byName.get(w), locks.get(w) ?? null));
    },
    workspace: (workspace) => rows.summary(workspace),
    exists: async (workspace) => {
      if (workspace === DEFAULT_WORKSPACE) return true;
      const [write, lock] = await Promise.all([backend.lastWrite(workspace), backend.lockInfo(workspace)]);
      if (write !== null || lock !== null) return true;
      if (!(await hasHistory())) return false;
      for await (const _ of backend.history(workspace, { limit: 1 })) return true;
      return false;
    },
    lock: async (workspace) => lockView(await backend.lockInfo(workspace)),
    locks: async () => {
      const [names, locks] = await Promise.all([backend.listWorkspaces(), allLocks(backend)]);
      return new Map(names.map((w) => [w, locks.get(w) ?? null]));
    },
    outputs: (workspace) => outputsOf(backend, workspace),
    history: (workspace, { limit }) => versions.history(workspace, limit),
    version: (workspace, versionId, { limit }) => versions.version(workspace, versionId, limit),
    diff: async (workspace, from, to): Promise<StateDiff> => (await backend.diff(workspace, { from, to, compare: options.compare })).diff,
    rollback: async (workspace, to, opts): Promise<RollbackResult> => {
      const r = await backend.rollback(workspace, to, { principal: opts?.principal, expectCurrent: opts?.expectCurrent });
      rows.forget(workspace);
      return { serial: r.serial, md5: r.md5 };
    },
    forceUnlock: (workspace, id) => backend.unlock(workspace, id),
  };
}
