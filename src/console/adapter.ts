/**
 * `backendConsoleApi(backend)`: the console's {@link ConsoleApi} over an
 * `ObjectStoreBackend` — the same library calls the JSON API makes (`lastWrite`,
 * `lockInfo`, `history`, `readVersion`, `rollback`, `forceUnlock`), no second
 * implementation of any operation.
 */
import type { LastWrite as BackendLastWrite, ObjectStoreBackend, StateVersion } from "../backend/backend.js";
import type { LockInfo } from "../backend/lock-info.js";
import { stringifyExact } from "../remote-state/exact-json.js";
import { diffStates, type StateDiff } from "../state/diff.js";
import { readStateDocument } from "../state/document.js";
import type { ConsoleApi, LockView, OutputView, RollbackResult, VersionView, WorkspaceSummary } from "./types.js";

/** What the console uses of a backend: its real methods, nothing guessed. */
export type ConsoleBackend = Pick<ObjectStoreBackend, "listWorkspaces" | "lockInfo" | "locks" | "lastWrite" | "readState" | "forceUnlock" | "history" | "readVersion" | "rollback" | "versioning">;

/** Options of {@link backendConsoleApi}. */
export interface BackendConsoleOptions {
  /** Workspaces (or versions) read at once (default 8). */
  readonly concurrency?: number | undefined;
  /** Newest versions whose resources are counted for the History chart (default 100). */
  readonly chartVersions?: number | undefined;
  /** States read at once in the background to count resources for the Workspaces page (default 2). */
  readonly countConcurrency?: number | undefined;
  /**
   * How old a workspace's last write (one HEAD each) may be when the Workspaces page shows
   * it (default 5 s). Older ones are shown once more and read again in the background, so a
   * page of thousands of workspaces waits only for their locks; a workspace never seen is
   * read at once. Locks are always read fresh; one workspace's own page always reads.
   */
  readonly summaryTtlMs?: number | undefined;
  /** How long the bucket's versioning status is reused (default 60 s). */
  readonly versioningTtlMs?: number | undefined;
  /** Time source (default `Date.now`). */
  readonly now?: (() => number) | undefined;
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
 * Jobs run in the background, at most `limit` at once and one per key (a key queued again
 * before it ran keeps its place). Failures are dropped: the next page view queues again.
 */
function backgroundQueue(limit: number): (key: string, job: () => Promise<unknown>) => void {
  const queued = new Map<string, () => Promise<unknown>>();
  const running = new Set<string>();
  const pump = (): void => {
    for (const [key, job] of queued) {
      if (running.size >= limit) return;
      if (running.has(key)) continue;
      queued.delete(key);
      running.add(key);
      void job()
        .catch(() => undefined)
        .finally(() => {
          running.delete(key);
          pump();
        });
    }
  };
  return (key, job) => {
    if (running.has(key) || queued.has(key)) return;
    queued.set(key, job);
    pump();
  };
}

/** Lock info as the console shows it; a lease's `Expires` (epoch seconds) when the holder set one. */
export function lockView(info: LockInfo | null): LockView | null {
  if (info === null) return null;
  const raw = (info as LockInfo & { readonly Expires?: unknown }).Expires;
  const secs = typeof raw === "number" ? raw : typeof raw === "string" && /^\d+$/.test(raw) ? Number(raw) : undefined;
  return { id: info.ID, who: info.Who, operation: info.Operation, info: info.Info, created: info.Created, expires: secs === undefined ? undefined : new Date(secs * 1000).toISOString() };
}

function versionView(r: StateVersion, resources?: number): VersionView {
  return {
    versionId: r.versionId,
    lastModified: r.lastModified?.toISOString() ?? "",
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

/** Resource instances in a state, or undefined when it is not a readable state. */
function countResources(bytes: Uint8Array | null): number | undefined {
  if (bytes === null) return undefined;
  try {
    return readStateDocument(bytes, "to")?.instances.size;
  } catch {
    // Written by another client in a shape we cannot read: no count, the row still shows.
    return undefined;
  }
}

/** What identifies one write of a workspace's state (a new write, a new key). */
function writeKey(w: BackendLastWrite): string {
  return w.etag ?? `${w.lastModified ?? ""}/${w.size}/${w.serial ?? ""}`;
}

/** The console's API over a backend. */
export function backendConsoleApi(backend: ConsoleBackend, options: BackendConsoleOptions = {}): ConsoleApi {
  const concurrency = options.concurrency ?? 8;
  const chartVersions = options.chartVersions ?? 100;
  const countConcurrency = options.countConcurrency ?? 2;
  const versioningTtl = options.versioningTtlMs ?? 60_000;
  const now = options.now ?? Date.now;
  const summaryTtl = options.summaryTtlMs ?? 5_000;

  // Counting resources means reading and parsing the whole state: the Workspaces page
  // never waits for it. Counts are keyed by the write they were made from (its ETag), so
  // they never go stale; the ones not known yet are made in the background, a few at a time.
  const counts = new Map<string, number | undefined>();
  const countLater = backgroundQueue(countConcurrency);
  const count = async (workspace: string, key: string): Promise<number | undefined> => {
    const resources = countResources(await backend.readState(workspace));
    remember(counts, key, resources, COUNT_CACHE_MAX);
    return resources;
  };

  // Version contents never change: their counts are kept (bounded).
  const versionCounts = new Map<string, number | undefined>();

  let versioning: { readonly at: number; readonly keeps: boolean } | undefined;
  const hasHistory = async (): Promise<boolean> => {
    if (versioning !== undefined && now() - versioning.at < versioningTtl) return versioning.keeps;
    // `suspended` still has the versions made while it was on: show them.
    const keeps = (await backend.versioning()) !== "off";
    versioning = { at: now(), keeps };
    return keeps;
  };

  // Last writes seen, for the Workspaces page (stale-while-revalidate, see summaryTtlMs).
  const writes = new Map<string, { readonly at: number; readonly write: BackendLastWrite | null }>();
  const refreshLater = backgroundQueue(concurrency);
  const readWrite = async (workspace: string): Promise<BackendLastWrite | null> => {
    const write = await backend.lastWrite(workspace);
    writes.set(workspace, { at: now(), write });
    return write;
  };
  const lastWrite = (workspace: string, fresh: boolean): Promise<BackendLastWrite | null> => {
    const seen = writes.get(workspace);
    if (fresh || seen === undefined || summaryTtl <= 0) return readWrite(workspace);
    if (now() - seen.at >= summaryTtl) refreshLater(workspace, () => readWrite(workspace));
    return Promise.resolve(seen.write);
  };

  // Every lock in one listing (a table scan and a prefix listing), not one read per workspace.
  const allLocks = async (): Promise<Map<string, LockView>> => {
    const out = new Map<string, LockView>();
    for (const l of await backend.locks()) {
      if (l.workspace === null || out.has(l.workspace)) continue;
      out.set(l.workspace, { id: l.id, who: l.who, operation: l.operation, info: l.info, created: l.since, expires: l.expires ?? undefined });
    }
    return out;
  };

  const summary = async (workspace: string, wait: boolean, locks?: ReadonlyMap<string, LockView>): Promise<WorkspaceSummary> => {
    const [lock, write] = await Promise.all([locks === undefined ? backend.lockInfo(workspace).then(lockView) : Promise.resolve(locks.get(workspace) ?? null), lastWrite(workspace, wait)]);
    const base = { name: workspace, lock };
    if (write === null) return { ...base, lastWrite: null, size: 0, resources: 0 };
    const key = `${workspace}\0${writeKey(write)}`;
    let resources = counts.get(key);
    if (resources === undefined && !counts.has(key)) {
      if (wait) resources = await count(workspace, key);
      else countLater(workspace, () => count(workspace, key));
    }
    return { ...base, lastWrite: { time: write.lastModified, who: write.who, serial: write.serial ?? null }, size: write.size, resources };
  };

  return {
    hasHistory,
    listWorkspaces: async () => {
      const names = await backend.listWorkspaces();
      const listed = new Set(names);
      // Deleted workspaces leave the cache with the listing.
      for (const w of writes.keys()) if (!listed.has(w)) writes.delete(w);
      const locks = await allLocks();
      return mapLimit(names, concurrency, (w) => summary(w, false, locks));
    },
    workspace: (workspace) => summary(workspace, true),
    lock: async (workspace) => lockView(await backend.lockInfo(workspace)),
    locks: async () => {
      const [names, locks] = await Promise.all([backend.listWorkspaces(), allLocks()]);
      return new Map(names.map((w) => [w, locks.get(w) ?? null]));
    },
    outputs: async (workspace): Promise<OutputView[]> => {
      const bytes = await backend.readState(workspace);
      const doc = bytes === null ? null : readStateDocument(bytes, "to");
      if (doc === null) return [];
      return [...doc.outputs].map(([name, o]) => ({ name, value: stringifyExact(o.exact), sensitive: o.sensitive })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    history: async (workspace, { limit }) => {
      const records: StateVersion[] = [];
      for await (const r of backend.history(workspace, { limit })) records.push(r);
      // Counting resources means reading the version: only the newest few, for the chart.
      const counted = new Set(records.filter((r) => !r.deleteMarker).slice(0, chartVersions).map((r) => r.versionId));
      return mapLimit(records, concurrency, async (r) => {
        if (!counted.has(r.versionId)) return versionView(r);
        const key = `${workspace}\0${r.versionId}`;
        if (!versionCounts.has(key)) remember(versionCounts, key, countResources(await backend.readVersion(workspace, r.versionId)), COUNT_CACHE_MAX);
        return versionView(r, versionCounts.get(key));
      });
    },
    diff: async (workspace, from, to): Promise<StateDiff> => {
      const [a, b] = await Promise.all([backend.readVersion(workspace, from), backend.readVersion(workspace, to)]);
      return diffStates(a, b);
    },
    rollback: async (workspace, to): Promise<RollbackResult> => {
      const r = await backend.rollback(workspace, to);
      writes.delete(workspace);
      return { serial: r.serial };
    },
    forceUnlock: (workspace, id) => backend.forceUnlock(workspace, id),
  };
}
