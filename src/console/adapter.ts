/** The console's {@link ConsoleApi} over an `ObjectStoreBackend`, through the library calls the JSON API makes. */
import type { DiffOptions, LastWrite as BackendLastWrite, ObjectStoreBackend, StateVersion, WorkspaceObject } from "../backend/backend.js";
import { DEFAULT_WORKSPACE } from "../config/layout.js";
import type { LockInfo } from "../backend/locks/lock-info.js";
import { stringifyExact } from "../json/exact-json.js";
import { readStateDocument } from "../state/document.js";
import { isObjstateError } from "../errors.js";
import { remember } from "../util/memo.js";
import { ENCRYPTED, encryptedOr, type ConsoleApi, type Encrypted, type LockView, type OutputView, type VersionView, type WorkspaceSummary } from "./types.js";

export interface BackendConsoleOptions {
  /** Newest versions whose resources are counted for the History chart (default 100). */
  readonly chartVersions?: number | undefined;
  /** How long the bucket's versioning status is reused (default 60 s). */
  readonly versioningTtlMs?: number | undefined;
  readonly now?: (() => number) | undefined;
  /** How the Diff and Rollback pages compare two versions (`serve` passes its worker's). */
  readonly compare?: DiffOptions["compare"];
}

/** Workspaces or versions read at once. */
const CONCURRENCY = 8;
/** States read at once in the background to count resources for the Workspaces page. */
const COUNT_CONCURRENCY = 2;
/** Resource counts remembered (per write, per version): a few hundred KiB at most. */
const COUNT_CACHE_MAX = 20_000;
const VERSION_CACHE_MAX = 5_000;

type Count = number | Encrypted | undefined;

/** Map `items` through `fn`, at most `limit` at a time, keeping order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Background jobs, at most `limit` at once and one per key (queued again, it keeps its place); failures dropped (the next view queues again). */
export function backgroundQueue(limit: number): (key: string, job: () => Promise<unknown>) => void {
  const queued = new Map<string, () => Promise<unknown>>();
  const running = new Set<string>();
  let scheduled = false;
  // Once per turn of the event loop: the embedded store answers without I/O, and would hold the loop until the last job.
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(pump);
  };
  const pump = (): void => {
    scheduled = false;
    for (const [key, job] of queued) {
      if (running.size >= limit) return;
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
    schedule();
  };
}

/** Lock info as the console shows it; a lease's `Expires` (epoch seconds) as an ISO time. */
export function lockView(info: LockInfo | null): LockView | null {
  if (info === null) return null;
  const expires = info.Expires === undefined ? undefined : new Date(info.Expires * 1000).toISOString();
  return { id: info.ID, who: info.Who, operation: info.Operation, info: info.Info, created: info.Created, expires };
}

function versionView(r: StateVersion, resources?: Count): VersionView {
  const { versionId, size, who, principal, operation, isLatest, deleteMarker } = r;
  const lastModified = r.lastModified?.toISOString() ?? "";
  return { versionId, lastModified, size, serial: r.serial ?? null, lineage: r.lineage ?? null, who, principal, operation, isLatest, deleteMarker, resources };
}

/** Resource instances in a state, or undefined when it is not one objstate can read (another client's shape). */
function countResources(bytes: Uint8Array | null): Count {
  try {
    return bytes === null ? undefined : readStateDocument(bytes, "to")?.instances.size;
  } catch (e) {
    return isObjstateError(e, "STATE_ENCRYPTED") ? ENCRYPTED : undefined;
  }
}

/** What identifies one write of a workspace's state, from a HEAD or a listing. */
const writeKey = (w: { readonly etag: string | undefined; readonly lastModified: string | undefined; readonly size: number }): string =>
  w.etag ?? `${w.lastModified ?? ""}/${w.size}`;

/** Every lock from one table scan (or prefix listing), not one read per workspace. */
async function allLocks(backend: ObjectStoreBackend): Promise<Map<string, LockView>> {
  const out = new Map<string, LockView>();
  for (const l of await backend.locks()) {
    if (l.workspace === null || out.has(l.workspace)) continue;
    out.set(l.workspace, { id: l.id, who: l.who, operation: l.operation, info: l.info, created: l.since, expires: l.expires ?? undefined });
  }
  return out;
}

async function outputsOf(backend: ObjectStoreBackend, workspace: string): Promise<OutputView[] | Encrypted> {
  const bytes = await backend.readState(workspace);
  let doc: ReturnType<typeof readStateDocument>;
  try {
    doc = bytes === null ? null : readStateDocument(bytes, "to");
  } catch (e) {
    return encryptedOr(e);
  }
  return [...(doc?.outputs ?? [])]
    .map(([name, o]) => ({ name, value: stringifyExact(o.exact), sensitive: o.sensitive }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The Workspaces page's rows and a workspace's summary. The list never waits for a resource count (a whole state read) or a
 * serial and who (a HEAD each): they are kept (counts by the write they came from), and read in the background until known.
 */
function workspaceRows(backend: ObjectStoreBackend) {
  const counts = new Map<string, Count>();
  const countLater = backgroundQueue(COUNT_CONCURRENCY);
  const count = async (workspace: string, key: string): Promise<Count> => {
    const resources = countResources(await backend.readState(workspace));
    remember(counts, key, resources, COUNT_CACHE_MAX);
    return resources;
  };
  const writes = new Map<string, BackendLastWrite>();
  const refreshLater = backgroundQueue(CONCURRENCY);
  const readWrite = async (workspace: string): Promise<BackendLastWrite | null> => {
    const write = await backend.lastWrite(workspace);
    // Only writes are kept: pages of names that have none must not fill the cache.
    if (write === null) writes.delete(workspace);
    else writes.set(workspace, write);
    return write;
  };
  const resourcesOf = (workspace: string, write: Parameters<typeof writeKey>[0], wait: boolean): Promise<Count> | Count => {
    const key = `${workspace}\0${writeKey(write)}`;
    if (counts.has(key)) return counts.get(key);
    if (wait) return count(workspace, key);
    countLater(workspace, () => count(workspace, key));
    return undefined;
  };

  const summary = async (workspace: string): Promise<WorkspaceSummary> => {
    const [lock, write] = await Promise.all([backend.lockInfo(workspace).then(lockView), readWrite(workspace)]);
    if (write === null) return { name: workspace, lock, lastWrite: null, size: 0, resources: 0 };
    const lastWrite = { time: write.lastModified, who: write.who, serial: write.serial ?? null };
    return { name: workspace, lock, lastWrite, size: write.size, resources: await resourcesOf(workspace, write, true) };
  };
  const listed = (workspace: string, object: WorkspaceObject | undefined, lock: LockView | null): WorkspaceSummary => {
    if (object === undefined) {
      writes.delete(workspace);
      return { name: workspace, lock, lastWrite: null, size: 0, resources: 0 };
    }
    const seen = writes.get(workspace);
    const known = seen !== undefined && writeKey(seen) === writeKey(object) ? seen : undefined;
    if (known === undefined) refreshLater(workspace, () => readWrite(workspace));
    const lastWrite =
      known === undefined
        ? { time: object.lastModified, serial: null, pending: true }
        : { time: object.lastModified, who: known.who, serial: known.serial ?? null };
    return { name: workspace, lock, lastWrite, size: object.size, resources: resourcesOf(workspace, object, false) as Count };
  };
  const keepOnly = (names: ReadonlyMap<string, unknown>): void => {
    for (const w of writes.keys()) if (!names.has(w)) writes.delete(w);
  };
  return { summary, listed, forget: (workspace: string): boolean => writes.delete(workspace), keepOnly };
}

/** Version descriptions (a ranged read each) and their resource counts, kept (bounded) for the Rollback confirmation. */
function versionDescriptions(backend: ObjectStoreBackend, chartVersions: number) {
  const counts = new Map<string, Count>();
  const views = new Map<string, VersionView>();
  const history = async (workspace: string, limit: number): Promise<VersionView[]> => {
    const records: StateVersion[] = [];
    for await (const r of backend.history(workspace, { limit })) records.push(r);
    // Counting reads the version: only the newest few, for the chart.
    const newest = records.filter((r) => !r.deleteMarker).slice(0, chartVersions);
    const counted = new Set(newest.map((r) => r.versionId));
    const found = await mapLimit(records, CONCURRENCY, async (r) => {
      if (!counted.has(r.versionId)) return versionView(r);
      const key = `${workspace}\0${r.versionId}`;
      if (!counts.has(key)) remember(counts, key, countResources(await backend.readVersion(workspace, r.versionId)), COUNT_CACHE_MAX);
      return versionView(r, counts.get(key));
    });
    for (const v of found) remember(views, `${workspace}\0${v.versionId}`, v, VERSION_CACHE_MAX);
    return found;
  };
  const version = async (workspace: string, versionId: string, limit: number): Promise<VersionView | null> =>
    views.get(`${workspace}\0${versionId}`) ?? (await history(workspace, limit)).find((v) => v.versionId === versionId) ?? null;
  return { history, version };
}

export function backendConsoleApi(backend: ObjectStoreBackend, options: BackendConsoleOptions = {}): ConsoleApi {
  const versioningTtl = options.versioningTtlMs ?? 60_000;
  const now = options.now ?? Date.now;
  const rows = workspaceRows(backend);
  const versions = versionDescriptions(backend, options.chartVersions ?? 100);
  let versioning: { readonly at: number; readonly keeps: boolean } | undefined;
  const hasHistory = async (): Promise<boolean> => {
    if (versioning !== undefined && now() - versioning.at < versioningTtl) return versioning.keeps;
    // `suspended` still has the versions made while it was on: show them.
    versioning = { at: now(), keeps: (await backend.versioning()) !== "off" };
    return versioning.keeps;
  };
  return {
    hasHistory,
    listWorkspaces: async () => {
      const [objects, locks] = await Promise.all([backend.listWorkspaceObjects(), allLocks(backend)]);
      const byName = new Map(objects.map((o) => [o.workspace, o]));
      rows.keepOnly(byName);
      // `default` always exists, with a state or not (as `listWorkspaces` lists it).
      const names = [...(byName.has(DEFAULT_WORKSPACE) ? [] : [DEFAULT_WORKSPACE]), ...byName.keys()];
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
    diff: async (workspace, from, to) => (await backend.diff(workspace, { from, to, compare: options.compare })).diff,
    rollback: async (workspace, to, opts) => {
      const r = await backend.rollback(workspace, to, { principal: opts?.principal, expectCurrent: opts?.expectCurrent });
      rows.forget(workspace);
      return { serial: r.serial, md5: r.md5 };
    },
    forceUnlock: (workspace, id) => backend.unlock(workspace, id),
  };
}
