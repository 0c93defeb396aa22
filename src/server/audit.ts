/**
 * The server's side of the audit log (docs/decisions/076, 087): which requests are changes, the
 * event each one gets before it is answered, and `GET /api/v1/audit`. The record itself is the
 * library's (backend/audit.ts): this hands it the principal, the action and what the handler
 * noted, never a header or a body.
 */
import type { AuditAction, AuditEntry, AuditOutcome } from "../backend/audit.js";
import { parseSince } from "../backend/audit.js";
import { checkWorkspace } from "../config/layout.js";
import { ObjstateError } from "../errors.js";
import { requireRole, sendJson, type Ctx } from "./context.js";
import { allowedEverywhere } from "./users.js";

/** Lines `GET /api/v1/audit` returns without `?limit=`, and the most it returns at once. */
export const AUDIT_DEFAULT_LIMIT = 1000;
export const AUDIT_MAX_LIMIT = 10_000;
/** How far back `GET /api/v1/audit` reads without `?since=`. */
export const AUDIT_DEFAULT_SINCE = "24h";

/** 2xx/3xx: done; 5xx: it broke on the way; other 4xx: turned down (a role, a lock held by another, a bad body). */
export function outcomeOf(status: number): AuditOutcome {
  return status < 400 ? "ok" : status >= 500 ? "failed" : "refused";
}

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
  const outcome = outcomeOf(status);
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

function limitOf(ctx: Ctx): number {
  const raw = ctx.url.searchParams.get("limit");
  if (raw === null) return AUDIT_DEFAULT_LIMIT;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1 || n > AUDIT_MAX_LIMIT) {
    throw new ObjstateError("BAD_REQUEST", `?limit=${JSON.stringify(raw).slice(1, -1)} of the audit route must be a whole number from 1 to ${AUDIT_MAX_LIMIT}`);
  }
  return n;
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
  const since = parseSince(ctx.url.searchParams.get("since") ?? AUDIT_DEFAULT_SINCE, new Date());
  const limit = limitOf(ctx);
  const log = ctx.auditLog;
  if (log === undefined) throw new ObjstateError("NOT_FOUND", "this server keeps no audit log");
  const page = await log.read({ since, workspace, limit });
  sendJson(ctx, 200, { since: since.toISOString(), records: page.records, truncated: page.truncated, unreadable: page.unreadable });
}
