/**
 * Workspaces (docs/design.md §5): listed from the bucket (every page, keys of exactly the
 * layout's form), created with an empty state, deleted digest first; and a workspace's last
 * write as its object records it.
 */
import { ObjstateError } from "../errors.js";
import { nodeCrypto } from "../util/builtins.js";
import type { BackendContext } from "./context.js";
import { decodeMeta, META } from "./fencing.js";
import { principalOf } from "./history.js";
import { checkWorkspace, DEFAULT_WORKSPACE, listPrefixes, statePath, workspaceOfKey, workspacesPrefix } from "../config/layout.js";
import type { LastWrite, WorkspaceObject, WorkspaceStatus } from "./results.js";

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

/**
 * The state object of every workspace that has one, from the listing alone (a request per
 * 1,000 workspaces on S3, none per workspace), sorted as {@link listWorkspaceNames},
 * `default` first when it has a state.
 */
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

/**
 * Refuse to create a workspace that exists (`WORKSPACE_EXISTS`): `default` always does, a
 * named one when it has a state. Checked under the lock, right before the empty state is written.
 */
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

/**
 * Delete a workspace's digest, then its state (the caller holds the lock). The digest goes
 * first: a crash in between leaves a state without a digest, which reads fine, never a
 * digest without a state.
 */
export async function deleteUnderLock(ctx: BackendContext, workspace: string): Promise<void> {
  if (ctx.table !== undefined) await ctx.table.delete(ctx.digestId(workspace));
  await ctx.store.delete(ctx.statePath(workspace));
}

/**
 * The last write of a workspace's state as its object records it (a HEAD, never the
 * body); null when it has no state.
 */
export async function lastWriteOf(ctx: BackendContext, workspace: string): Promise<LastWrite | null> {
  const meta = await ctx.store.head(ctx.statePath(workspace));
  if (meta === null) return null;
  const m = meta.metadata ?? {};
  const serial = m[META.serial] === undefined ? undefined : Number(m[META.serial]);
  return {
    size: meta.size,
    etag: meta.etag,
    lastModified: meta.lastModified?.toISOString(),
    serial: serial !== undefined && Number.isSafeInteger(serial) ? serial : undefined,
    lineage: decodeMeta(m[META.lineage]),
    who: decodeMeta(m[META.who]),
    lockId: decodeMeta(m[META.lockId]),
    operation: decodeMeta(m[META.operation]),
    principal: principalOf(m),
  };
}

/** Workspaces described at once by {@link workspaceStatuses}: one HEAD and one lock read each. */
const STATUS_CONCURRENCY = 8;

/** A workspace's lock and last write, read together. */
export async function workspaceStatusOf(ctx: BackendContext, workspace: string): Promise<WorkspaceStatus> {
  checkWorkspace(workspace);
  const [lock, lastWrite] = await Promise.all([ctx.locking.current(workspace), lastWriteOf(ctx, workspace)]);
  return { name: workspace, lock, lastWrite };
}

/** {@link workspaceStatusOf} of every listed workspace that `include` keeps, in listing order, a few at a time. */
export async function workspaceStatuses(ctx: BackendContext, include: (workspace: string) => boolean = () => true): Promise<WorkspaceStatus[]> {
  const names = (await listWorkspaceNames(ctx)).filter(include);
  const out: WorkspaceStatus[] = [];
  for (let i = 0; i < names.length; i += STATUS_CONCURRENCY)
    out.push(...(await Promise.all(names.slice(i, i + STATUS_CONCURRENCY).map((w) => workspaceStatusOf(ctx, w)))));
  return out;
}
