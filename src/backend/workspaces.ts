/** Workspaces (docs/design.md §5): listed from the bucket, created with an empty state, deleted digest first; and their last writes. */
import { ObjstateError } from "../errors.js";
import { nodeCrypto } from "../util/builtins.js";
import type { BackendContext } from "./context.js";
import { recordOf } from "./meta.js";
import { checkWorkspace, DEFAULT_WORKSPACE, listPrefixes, statePath, workspaceOfKey, workspacesPrefix } from "../config/layout.js";
import type { LastWrite, WorkspaceObject, WorkspaceStatus } from "./types.js";
import { parseLockInfo } from "./locks/lock-info.js";
import type { LockListing } from "./locks/locking.js";

/** The empty state a new workspace starts with (serial 0, a new lineage), as the tool writes one. */
export function emptyState(): string {
  return JSON.stringify({ version: 4, serial: 0, lineage: nodeCrypto().randomUUID(), outputs: {}, resources: [] });
}

/** Every workspace with a state, sorted, `default` first (it always exists). */
export async function listWorkspaceNames(ctx: BackendContext): Promise<string[]> {
  const found = new Set<string>();
  for await (const key of ctx.store.list(workspacesPrefix(ctx.layout), { pageSize: ctx.listPageSize })) {
    const w = workspaceOfKey(ctx.layout, key);
    if (w !== undefined) found.add(w);
  }
  return [DEFAULT_WORKSPACE, ...[...found].sort()];
}

/** The state object of every workspace that has one, from the listing alone, sorted, `default` first when it has a state. */
export async function listWorkspaceObjects(ctx: BackendContext): Promise<WorkspaceObject[]> {
  const found: WorkspaceObject[] = [];
  let fallback: WorkspaceObject | undefined;
  const defaultKey = statePath(ctx.layout, DEFAULT_WORKSPACE);
  // In the s3 layout the default workspace's key is outside the workspaces' prefix: a listing of its own.
  for (const prefix of listPrefixes(ctx.layout)) {
    for await (const o of ctx.store.listDetailed(prefix, { pageSize: ctx.listPageSize })) {
      const described = { size: o.size, lastModified: o.lastModified?.toISOString(), etag: o.etag };
      if (o.key === defaultKey) fallback = { workspace: DEFAULT_WORKSPACE, ...described };
      const w = workspaceOfKey(ctx.layout, o.key);
      if (w !== undefined) found.push({ workspace: w, ...described });
    }
  }
  found.sort((a, b) => (a.workspace < b.workspace ? -1 : a.workspace > b.workspace ? 1 : 0));
  return fallback === undefined ? found : [fallback, ...found];
}

/** `WORKSPACE_EXISTS` for `default` and a workspace with a state; checked under the lock, right before the empty state is written. */
export async function refuseExisting(ctx: BackendContext, workspace: string): Promise<void> {
  checkWorkspace(workspace);
  if (workspace === DEFAULT_WORKSPACE) throw new ObjstateError("WORKSPACE_EXISTS", `workspace ${DEFAULT_WORKSPACE} already exists (it always does)`);
  if ((await ctx.store.head(ctx.statePath(workspace))) !== null) {
    throw new ObjstateError("WORKSPACE_EXISTS", `workspace ${workspace} already exists (${ctx.describe(workspace)})`, { details: { workspace } });
  }
}

/** Refuse to delete a workspace without a state (`WORKSPACE_NOT_FOUND`); checked under the lock. */
export async function refuseMissing(ctx: BackendContext, workspace: string): Promise<void> {
  if ((await ctx.store.head(ctx.statePath(workspace))) === null) {
    throw new ObjstateError("WORKSPACE_NOT_FOUND", `workspace ${workspace} does not exist (no state at ${ctx.describe(workspace)})`, {
      details: { workspace },
    });
  }
}

/** `CANNOT_DELETE_DEFAULT` and `INVALID_WORKSPACE`, before anything is locked. */
export function checkDeletable(workspace: string): void {
  checkWorkspace(workspace);
  if (workspace === DEFAULT_WORKSPACE) throw new ObjstateError("CANNOT_DELETE_DEFAULT", "the default workspace cannot be deleted");
}

/** Delete a workspace's digest, then its state, under the caller's lock: a crash between leaves a state without a digest, which reads fine. */
export async function deleteUnderLock(ctx: BackendContext, workspace: string): Promise<void> {
  if (ctx.table !== undefined) await ctx.table.delete(ctx.digestId(workspace));
  await ctx.store.delete(ctx.statePath(workspace));
}

/** The digest item's attribute that keeps the metadata of the write it commits (`{"md5", "meta"}`): a listing needs no HEAD per workspace. */
export const LAST_WRITE_ATTR = "LastWrite";

/** The {@link LAST_WRITE_ATTR} value of a write of bytes with MD5 `md5` and object metadata `meta`. */
export function lastWriteRecord(md5: string, meta: Readonly<Record<string, string>>): string {
  return JSON.stringify({ md5, meta });
}

function lastWriteFrom(o: Omit<WorkspaceObject, "workspace">, m: Readonly<Record<string, string>>): LastWrite {
  return { size: o.size, etag: o.etag, lastModified: o.lastModified, ...recordOf(m) };
}

/** The last write of a workspace's state as its object records it (a HEAD, never the body); null when it has no state. */
export async function lastWriteOf(ctx: BackendContext, workspace: string): Promise<LastWrite | null> {
  const meta = await ctx.store.head(ctx.statePath(workspace));
  return meta === null ? null : lastWriteFrom({ size: meta.size, etag: meta.etag, lastModified: meta.lastModified?.toISOString() }, meta.metadata ?? {});
}

/** HEADs at once for the workspaces whose record does not describe the listed object. */
const STATUS_CONCURRENCY = 8;

export async function workspaceStatusOf(ctx: BackendContext, workspace: string): Promise<WorkspaceStatus> {
  checkWorkspace(workspace);
  const [lock, lastWrite] = await Promise.all([ctx.locking.current(workspace), lastWriteOf(ctx, workspace)]);
  return { name: workspace, lock, lastWrite };
}

/** The metadata a {@link LAST_WRITE_ATTR} record keeps, when it describes the listed object (its ETag is the record's MD5). */
function recorded(value: string | undefined, o: WorkspaceObject): Record<string, string> | undefined {
  const etag = o.etag?.replace(/"/g, "").toLowerCase();
  if (value === undefined || etag === undefined) return undefined;
  try {
    const r = JSON.parse(value) as { md5?: unknown; meta?: unknown };
    return r.md5 === etag && typeof r.meta === "object" && r.meta !== null ? (r.meta as Record<string, string>) : undefined;
  } catch {
    return undefined;
  }
}

/** {@link workspaceStatusOf} of every listed workspace `include` keeps, from one listing and one table scan (a HEAD only where unrecorded). */
export async function workspaceStatuses(ctx: BackendContext, include: (workspace: string) => boolean = () => true): Promise<WorkspaceStatus[]> {
  const [objects, { locks, records }] = await Promise.all([listWorkspaceObjects(ctx), locksAndRecords(ctx)]);
  const byName = new Map(objects.map((o) => [o.workspace, o]));
  const names = byName.has(DEFAULT_WORKSPACE) ? objects.map((o) => o.workspace) : [DEFAULT_WORKSPACE, ...objects.map((o) => o.workspace)];
  const out: WorkspaceStatus[] = [];
  const missing: number[] = [];
  for (const name of names.filter(include)) {
    const key = ctx.locking.keyOf(name);
    const lock = key === undefined ? null : (locks.get(key) ?? null);
    const o = byName.get(name);
    const meta = o === undefined ? undefined : recorded(records.get(ctx.digestId(name)), o);
    if (o !== undefined && meta === undefined) missing.push(out.length);
    out.push({ name, lock, lastWrite: o === undefined ? null : meta === undefined ? null : lastWriteFrom(o, meta) });
  }
  for (let i = 0; i < missing.length; i += STATUS_CONCURRENCY) {
    await Promise.all(
      missing.slice(i, i + STATUS_CONCURRENCY).map(async (at) => {
        const s = out[at] as WorkspaceStatus;
        out[at] = { ...s, lastWrite: await lastWriteOf(ctx, s.name) };
      }),
    );
  }
  return out;
}

/** Every lock by its path and every {@link LAST_WRITE_ATTR} record by its item: one scan when the table is where locks are read first. */
async function locksAndRecords(ctx: BackendContext): Promise<{ locks: Map<string, LockListing>; records: Map<string, string> }> {
  const table = ctx.table;
  const records = new Map<string, string>();
  if (table === undefined || ctx.locking.keyOf(DEFAULT_WORKSPACE) !== ctx.lockId(DEFAULT_WORKSPACE)) {
    const scan = async (): Promise<void> => {
      if (table !== undefined) for await (const item of table.scanAttrs([LAST_WRITE_ATTR])) records.set(item.id, item.values[LAST_WRITE_ATTR] as string);
    };
    const [list] = await Promise.all([ctx.locking.list(), scan()]);
    return { locks: new Map(list.map((l) => [l.path, l])), records };
  }
  const locks = new Map<string, LockListing>();
  for await (const item of table.scanAttrs(["Info", LAST_WRITE_ATTR])) {
    const raw = item.values["Info"];
    const workspace = raw === undefined || raw === "" ? undefined : ctx.workspaceOfLockId(item.id);
    if (raw !== undefined && workspace !== undefined) {
      const info = parseLockInfo(raw, item.id);
      locks.set(item.id, ctx.locking.listed(workspace, { ...info, Expires: item.expires ?? info.Expires }));
    }
    const record = item.values[LAST_WRITE_ATTR];
    if (record !== undefined) records.set(item.id, record);
  }
  return { locks, records };
}
