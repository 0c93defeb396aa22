/** `/api/v1/...`: the CLI's operations as JSON, each one library call, and `GET /api/v1/audit` (docs/decisions/076, 087). */
import { createHash } from "node:crypto";
import { NO_LOCK_ID } from "../backend/backend.js";
import { parseSince, type AuditAction } from "../backend/audit.js";
import { checkWorkspace } from "../config/layout.js";
import { ObjstateError } from "../errors.js";
import { readRemoteOutputs } from "../remote-state/fetch-outputs.js";
import { checkDiffRoom, DIFF_MAX_BODY, diffInWorker, diffJson, versionDiffText } from "./diff-runner.js";
import { jsonObject, limitParam, readSmall, SMALL_BODY_MAX, requireRole, send, sendJson, writeAs, type Ctx } from "./context.js";
import { allowed, allowedEverywhere, type Role } from "./users.js";
import { ENCRYPTED, encryptedOr } from "../console/types.js";
import { historyEntryJson, lockJson, outputsJsonText, rollbackJson, workspaceJson, type HistoryEntryJson } from "../wire/shapes.js";

/** A route: method, path pattern (`:name` segments), the role it needs on `:workspace`, handler. */
export interface Route {
  readonly method: string;
  readonly path: string;
  /** Checked on `:workspace` before the handler runs; undefined: the handler checks (or no auth). */
  readonly role?: Role | undefined;
  /** Each request that reaches it is written to the audit log as this action. */
  readonly audit?: AuditAction | undefined;
  /** `ws`: the `:workspace` parameter ("" on a route without one). */
  readonly handler: (ctx: Ctx, ws: string) => Promise<void>;
}

/** A state that is an envelope the server has no key for is answered as such (`"encrypted": true`), not as a failure. */
function sendEncrypted(ctx: Ctx, fields: object = {}): void {
  const message =
    "the state is encrypted by its client (OpenTofu's state encryption) and this server has no key for it: its content cannot be shown. Read it with the same encryption configured (TF_ENCRYPTION), or configure encryption on the server";
  sendJson(ctx, 200, { ...fields, encrypted: true, message });
}

async function listWorkspaces(ctx: Ctx): Promise<void> {
  // `outputs` is enough to be listed: the listing shows no more than that role's routes.
  const statuses = await ctx.backend.workspaceStatuses((w) => allowed(ctx.user, "outputs", w));
  sendJson(ctx, 200, { workspaces: statuses.map(workspaceJson) });
}

async function showLock(ctx: Ctx, ws: string): Promise<void> {
  const lock = await ctx.backend.currentLock(ws);
  sendJson(ctx, 200, { lock: lock === null ? null : lockJson(lock) });
}

/** `DELETE …/lock?id=ID`: the CLI's force-unlock, which needs the ID shown in the lock error. */
async function forceUnlock(ctx: Ctx, ws: string): Promise<void> {
  const id = ctx.url.searchParams.get("id") ?? "";
  if (id === "")
    throw new ObjstateError(
      "BAD_REQUEST",
      `force-unlock of workspace ${ws} needs ?id=LOCK_ID (the ID shown in the lock error; ${NO_LOCK_ID} for an item without lock info)`,
    );
  ctx.audit.lockId = id;
  await ctx.backend.unlock(ws, id);
  ctx.metrics.lockHeld(-1);
  sendJson(ctx, 200, { released: id });
}

/** Outputs of the workspace's state, as `objstate output --json` prints them; sensitive values are always masked here. */
async function outputs(ctx: Ctx, ws: string): Promise<void> {
  // Through the server's own connection: no credentials, drivers or table check per request.
  const read = await readRemoteOutputs(ctx.backend, ws).catch(encryptedOr);
  if (read === ENCRYPTED) return sendEncrypted(ctx, { outputs: null });
  // As text: numbers go out exactly as the state has them, never through a JS number.
  send(ctx, 200, `{"outputs":${outputsJsonText(read, (n) => read.isSensitive(n))}}\n`, { "Content-Type": "application/json" });
}

/** `POST …/diff`, body = a state: what would change from the stored state to it (bounded: diff-runner.ts). */
async function diff(ctx: Ctx, ws: string): Promise<void> {
  // Refused before the body is read when every place is taken: no upload for nothing.
  checkDiffRoom();
  const name = DIFF_MAX_BODY < ctx.limits.maxBytes ? "the most a diff takes: compare larger states with objstate state diff" : undefined;
  const body = await readSmall(ctx, DIFF_MAX_BODY, false, name);
  const current = await ctx.backend.readState(ws);
  const answer = await diffJson(current, body.bytes()).catch(encryptedOr);
  if (answer === ENCRYPTED) return sendEncrypted(ctx);
  send(ctx, 200, answer, { "Content-Type": "application/json" });
}

/** `GET …/history[?limit=N]`: versions newest first, as `objstate state history --json`. */
async function history(ctx: Ctx, ws: string): Promise<void> {
  const limit = limitParam(ctx, "history", 100, 1000);
  const versions: HistoryEntryJson[] = [];
  for await (const v of ctx.backend.history(ws, { limit })) versions.push(historyEntryJson(v));
  sendJson(ctx, 200, { workspace: ws, versions });
}

/** `GET …/versions/{v}`: one version's bytes exactly as stored, as `state pull --version`. */
async function version(ctx: Ctx, ws: string): Promise<void> {
  const bytes = await ctx.backend.readVersion(ws, ctx.params["version"] as string);
  send(ctx, 200, bytes, { "Content-Type": "application/json", "Content-MD5": createHash("md5").update(bytes).digest("base64") });
}

async function diffVersions(ctx: Ctx, ws: string): Promise<void> {
  const from = ctx.url.searchParams.get("from") ?? "";
  const to = ctx.url.searchParams.get("to") ?? "";
  if (from === "" || to === "")
    throw new ObjstateError(
      "BAD_REQUEST",
      `a diff of workspace ${ws} needs ?from=VERSION&to=VERSION (version IDs from its history); to compare with a state of your own, POST it to this route`,
    );
  checkDiffRoom();
  const compared = await ctx.backend.diff(ws, { from, to, compare: diffInWorker }).catch(encryptedOr);
  if (compared === ENCRYPTED) return sendEncrypted(ctx, { workspace: ws, from, to });
  send(ctx, 200, versionDiffText(ws, compared), { "Content-Type": "application/json" });
}

/** `POST …/rollback` `{"to", "force"?, "lockId"?}`: version `to` written as the newest; needs write and lock, `force` (another lineage) force. */
async function rollback(ctx: Ctx, ws: string): Promise<void> {
  requireRole(ctx, "lock", ws);
  const found = jsonObject((await readSmall(ctx, SMALL_BODY_MAX, false)).bytes(), "the rollback request body");
  const { to, force: given, lockId } = found === "invalid" ? {} : (found ?? {});
  const force = given ?? false;
  if (typeof to !== "string" || to === "" || typeof force !== "boolean" || (lockId !== undefined && (typeof lockId !== "string" || lockId === "")))
    throw new ObjstateError(
      "BAD_REQUEST",
      `a rollback of workspace ${ws} takes a JSON body {"to": "VERSION_ID", "force": false, "lockId": "ID of a lock you hold" (optional)}`,
    );
  Object.assign(ctx.audit, { from: to, ...(lockId === undefined ? {} : { lockId }) });
  if (force) requireRole(ctx, "force", ws);
  const result = await ctx.backend.rollback(ws, to, { force, lockId, ...writeAs(ctx, ws) });
  Object.assign(ctx.audit, { serial: result.serial, md5: result.md5 });
  sendJson(ctx, 200, rollbackJson(ws, result));
}

/** `GET /api/v1/locks`: those of workspaces the user may list; a lock of another state under the prefix only for admins of `*`. */
async function listLocks(ctx: Ctx): Promise<void> {
  const locks = (await ctx.backend.locks()).filter((l) =>
    l.workspace === null ? allowedEverywhere(ctx.user, "admin") : allowed(ctx.user, "outputs", l.workspace),
  );
  sendJson(ctx, 200, { locks: locks.map(lockJson) });
}

/** `GET /api/v1/audit[?workspace=W][&since=T][&limit=N]`, oldest first: admins of `W`, or of `*` for every workspace. */
async function auditRoute(ctx: Ctx): Promise<void> {
  const workspace = ctx.url.searchParams.get("workspace") ?? undefined;
  if (workspace !== undefined) {
    checkWorkspace(workspace);
    requireRole(ctx, "admin", workspace);
  } else if (!allowedEverywhere(ctx.user, "admin")) {
    throw new ObjstateError(
      "FORBIDDEN",
      `user ${ctx.user.name} may not read the audit log of every workspace (needs the admin role on *); ask for one workspace with ?workspace=NAME`,
    );
  }
  const since = parseSince(ctx.url.searchParams.get("since") ?? "24h", new Date());
  const limit = limitParam(ctx, "audit", 1000, 10_000);
  if (ctx.auditLog === undefined) throw new ObjstateError("NOT_FOUND", "this server keeps no audit log");
  const page = await ctx.auditLog.read({ since, workspace, limit });
  sendJson(ctx, 200, { since: since.toISOString(), records: page.records, truncated: page.truncated, unreadable: page.unreadable });
}

const WS = "/api/v1/workspaces/:workspace";
export const API_ROUTES: readonly Route[] = [
  { method: "GET", path: "/api/v1/workspaces", handler: listWorkspaces },
  { method: "GET", path: WS, role: "outputs", handler: async (ctx, ws) => sendJson(ctx, 200, workspaceJson(await ctx.backend.workspaceStatus(ws))) },
  { method: "GET", path: `${WS}/lock`, role: "outputs", handler: showLock },
  { method: "DELETE", path: `${WS}/lock`, role: "force", audit: "force-unlock", handler: forceUnlock },
  { method: "GET", path: `${WS}/outputs`, role: "outputs", handler: outputs },
  { method: "POST", path: `${WS}/diff`, role: "read", handler: diff },
  { method: "GET", path: `${WS}/diff`, role: "read", handler: diffVersions },
  { method: "GET", path: `${WS}/history`, role: "read", handler: history },
  { method: "GET", path: `${WS}/versions/:version`, role: "read", handler: version },
  { method: "POST", path: `${WS}/rollback`, role: "write", audit: "rollback", handler: rollback },
  { method: "GET", path: "/api/v1/locks", handler: listLocks },
  { method: "GET", path: "/api/v1/audit", handler: auditRoute },
];
