/**
 * `/api/v1/...`: the CLI's operations as JSON, each one library call. Routes that wait for
 * library APIs still being built answer 501 and name what they wait for; each becomes one
 * handler when its API lands (see {@link API_ROUTES}).
 */
import { NO_LOCK_ID } from "../backend/backend.js";
import { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { ObjstateError } from "../errors.js";
import { DataRemoteStateObjectStore } from "../remote-state/data-remote-state.js";
import { diffStates } from "../state/diff.js";
import { readBody } from "./body.js";
import { sendJson, type Ctx } from "./context.js";
import { allowed, type Role } from "./users.js";

/** A route: method, path pattern (`:name` segments), the role it needs on `:workspace`, handler. */
export interface Route {
  readonly method: string;
  readonly path: string;
  /** Checked on `:workspace` before the handler runs; undefined: the handler checks (or no auth). */
  readonly role?: Role | undefined;
  readonly handler: (ctx: Ctx) => Promise<void>;
}

const SENSITIVE = "<sensitive>";

async function workspaceView(ctx: Ctx, ws: string): Promise<Record<string, unknown>> {
  const [lock, lastWrite] = await Promise.all([ctx.backend.lockInfo(ws), ctx.backend.lastWrite(ws)]);
  return { name: ws, state: lastWrite !== null, lock, lastWrite };
}

async function listWorkspaces(ctx: Ctx): Promise<void> {
  const names = (await ctx.backend.listWorkspaces()).filter((w) => allowed(ctx.user, "read", w));
  const out: Record<string, unknown>[] = [];
  // A few at a time: one HEAD and one table read per workspace.
  for (let i = 0; i < names.length; i += 8) out.push(...(await Promise.all(names.slice(i, i + 8).map((w) => workspaceView(ctx, w)))));
  sendJson(ctx, 200, { workspaces: out });
}

async function showWorkspace(ctx: Ctx): Promise<void> {
  sendJson(ctx, 200, await workspaceView(ctx, ctx.params["workspace"] as string));
}

async function showLock(ctx: Ctx): Promise<void> {
  sendJson(ctx, 200, { lock: await ctx.backend.lockInfo(ctx.params["workspace"] as string) });
}

/** `DELETE …/lock?id=ID`: the CLI's force-unlock, which needs the ID shown in the lock error. */
async function forceUnlock(ctx: Ctx): Promise<void> {
  const ws = ctx.params["workspace"] as string;
  const id = ctx.url.searchParams.get("id") ?? "";
  if (id === "") throw new ObjstateError("BAD_REQUEST", `force-unlock of workspace ${ws} needs ?id=LOCK_ID (the ID shown in the lock error; ${NO_LOCK_ID} for an item without lock info)`);
  await ctx.backend.forceUnlock(ws, id);
  ctx.metrics.lockHeld(-1);
  sendJson(ctx, 200, { released: id });
}

/** Outputs of the workspace's state; sensitive values are always masked here. */
async function outputs(ctx: Ctx): Promise<void> {
  const ws = ctx.params["workspace"] as string;
  const config = DataRemoteStateObjectStoreConfig.from({ ...ctx.config.toProps(), workspace: ws });
  const read = await new DataRemoteStateObjectStore("objstate_serve", config).fetchOutputs({ onWarning: () => undefined });
  const out: Record<string, unknown> = {};
  for (const n of read.names()) out[n] = read.isSensitive(n) ? { sensitive: true, value: SENSITIVE } : { sensitive: false, value: read.get(n) };
  sendJson(ctx, 200, { outputs: out });
}

/** `POST …/diff`, body = a state: what would change from the stored state to it. */
async function diff(ctx: Ctx): Promise<void> {
  const ws = ctx.params["workspace"] as string;
  const body = await readBody(ctx.req, ctx.limits);
  ctx.bytesIn += body.bytes.length;
  const current = await ctx.backend.readState(ws);
  sendJson(ctx, 200, diffStates(current, body.bytes));
}

/** A route whose library API is still being built elsewhere: 501, naming it. */
function pending(what: string): (ctx: Ctx) => Promise<void> {
  return () => Promise.reject(new ObjstateError("NOT_IMPLEMENTED", `this server's library has no ${what} yet`));
}

/** The JSON API. */
export const API_ROUTES: readonly Route[] = [
  { method: "GET", path: "/api/v1/workspaces", handler: listWorkspaces },
  { method: "GET", path: "/api/v1/workspaces/:workspace", role: "read", handler: showWorkspace },
  { method: "GET", path: "/api/v1/workspaces/:workspace/lock", role: "read", handler: showLock },
  { method: "DELETE", path: "/api/v1/workspaces/:workspace/lock", role: "force", handler: forceUnlock },
  { method: "GET", path: "/api/v1/workspaces/:workspace/outputs", role: "read", handler: outputs },
  { method: "POST", path: "/api/v1/workspaces/:workspace/diff", role: "read", handler: diff },
  // Issue 10 (history, versions, rollback) and issue 11 (leases, lockfiles): one handler each.
  { method: "GET", path: "/api/v1/workspaces/:workspace/history", role: "read", handler: pending("state history (backend.history)") },
  { method: "GET", path: "/api/v1/workspaces/:workspace/versions/:version", role: "read", handler: pending("reading an old version (backend.readVersion)") },
  { method: "POST", path: "/api/v1/workspaces/:workspace/rollback", role: "write", handler: pending("rollback (backend.rollback)") },
  { method: "GET", path: "/api/v1/locks", handler: pending("a listing of locks (backend.locks)") },
];

