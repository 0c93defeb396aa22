/**
 * The server's side of the audit log (docs/decisions/076, 087): which requests are changes, the
 * event each one gets before it is answered, and `GET /api/v1/audit`. The record itself is the
 * library's (backend/audit.ts): this hands it the principal, the action and what the handler
 * noted, never a header or a body.
 */
import type { AuditAction, AuditEntry } from "../backend/audit.js";
import { parseSince } from "../backend/audit.js";
import { checkWorkspace } from "../config/layout.js";
import { ObjstateError } from "../errors.js";
import { limitParam, requireRole, sendJson, type Ctx } from "./context.js";
import { allowedEverywhere } from "./users.js";

/** The audit event of a request to a route that changes something, as it is answered. */
export function auditEntry(
  ctx: Ctx,
  action: AuditAction,
  workspace: string,
  surface: AuditEntry["surface"],
  status: number,
  code: string | undefined,
): AuditEntry {
  const n = ctx.audit;
  // 5xx: it broke on the way; other 4xx: turned down (a role, a lock held by another, a bad body).
  const outcome = status < 400 ? "ok" : status >= 500 ? "failed" : "refused";
  return {
    principal: ctx.principal,
    action: n.action ?? action,
    workspace,
    surface,
    outcome,
    lockId: n.lockId,
    serial: outcome === "ok" ? n.serial : undefined,
    md5: outcome === "ok" ? n.md5 : undefined,
    from: n.from,
    code: outcome === "ok" ? undefined : code,
    status: outcome === "ok" ? undefined : status,
  };
}

/**
 * `GET /api/v1/audit[?workspace=W][&since=T][&limit=N]`: the audit events from `since` (default
 * the last 24 h) on, oldest first, at most `limit`. Admins only: of `W` when given, else of
 * every workspace (a grant on `*`). A change is answered only after its event is stored
 * (or logged as not stored), so every answered change is in the answer.
 */
export async function auditRoute(ctx: Ctx): Promise<void> {
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
  const log = ctx.auditLog;
  if (log === undefined) throw new ObjstateError("NOT_FOUND", "this server keeps no audit log");
  const page = await log.read({ since, workspace, limit });
  sendJson(ctx, 200, { since: since.toISOString(), records: page.records, truncated: page.truncated, unreadable: page.unreadable });
}
