/** What a route handler gets: the request, the authenticated user, the backend, and replies that count their bytes. */
import type { StateEncryption } from "../encryption/index.js";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ObjectStoreBackend } from "../backend/backend.js";
import type { AuditAction, AuditLog } from "../backend/audit.js";
import { lockOwnerOf, type Principal } from "../backend/principal.js";
import { ObjstateError } from "../errors.js";
import { checkContentMd5, readBody, type Body, type BodyLimits } from "../io/http-body.js";
import { checkNesting } from "../json/scan.js";
import type { Logger } from "./log.js";
import type { Metrics } from "./metrics.js";
import { allowed, type Role, type User } from "./users.js";

export interface Ctx {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly params: Readonly<Record<string, string>>;
  readonly user: User;
  /** Who the request is, as the library records it (lock owner, who wrote a version); `anonymous` without users. */
  readonly principal: Principal;
  readonly backend: ObjectStoreBackend;
  readonly limits: BodyLimits;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** The origin this request reached the server by (`https://state.example.com`), when the gate knows it. */
  readonly origin: string | undefined;
  readonly allowUnlockedWrites: boolean;
  readonly encryption: StateEncryption | undefined;
  bytesIn: number;
  bytesOut: number;
  readonly auditLog: AuditLog | undefined;
  /** What the request changed, noted by its handler: the server writes the audit event from it before answering. */
  readonly audit: {
    /** Overrides the route's action (an UNLOCK that is a force-unlock). */
    action?: AuditAction;
    lockId?: string;
    serial?: number;
    md5?: string;
    /** A rollback: the version whose content it restored. */
    from?: string;
  };
  /** An audited request's answer, held (null until made) while its audit event is stored; undefined: answers go out at once. */
  held?: HeldAnswer | null;
}

type HeldAnswer = { readonly status: number; readonly headers: Record<string, string>; readonly body: Buffer };

export function sendHeld(ctx: Ctx, a: HeldAnswer): void {
  ctx.res.writeHead(a.status, a.headers);
  ctx.res.end(a.body);
}

export function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const VERBS: Readonly<Record<Role, string>> = {
  outputs: "read the outputs of",
  read: "read",
  write: "write",
  lock: "lock",
  force: "force-unlock",
  admin: "administer",
};

export function requireRole(ctx: Ctx, role: Role, workspace: string): void {
  if (allowed(ctx.user, role, workspace)) return;
  // Someone given only outputs asked for the state: name the one route that role reads.
  const only = role === "read" && allowed(ctx.user, "outputs", workspace) ? `; the outputs role reads only GET /api/v1/workspaces/${workspace}/outputs` : "";
  throw new ObjstateError("FORBIDDEN", `user ${ctx.user.name} may not ${VERBS[role]} workspace ${workspace} (needs the ${role} role${only})`);
}

/** Who a write through the server is made as: the principal, and under a lock, the owner it must have. */
export type WriteAs = { readonly principal: Principal; readonly owner: string | undefined };

export function writeAs(ctx: Ctx, ws: string): WriteAs {
  return { principal: ctx.principal, owner: ownerToCheck(ctx, ws) };
}

/** The owner a lock must have for this request to release it or write under it; undefined with `force`. */
export function ownerToCheck(ctx: Ctx, ws: string): string | undefined {
  return allowed(ctx.user, "force", ws) ? undefined : lockOwnerOf(ctx.principal);
}

/** Answer with bytes (held while an audited request's event is stored). */
export function send(ctx: Ctx, status: number, body: Buffer | string, headers: Record<string, string> = {}): void {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  const answer = { status, headers: { "Content-Length": String(bytes.length), ...headers }, body: bytes };
  if (ctx.held === null) ctx.held = answer;
  else sendHeld(ctx, answer);
  ctx.bytesOut += bytes.length;
}

export function sendJson(ctx: Ctx, status: number, value: unknown): void {
  send(ctx, status, `${JSON.stringify(value)}\n`, { "Content-Type": "application/json" });
}

export function sendEmpty(ctx: Ctx, status: number): void {
  send(ctx, status, Buffer.alloc(0));
}

/** A small JSON body `what` that must be an object: "invalid" when it is not JSON, undefined when not an object. */
export function jsonObject(bytes: Buffer, what: string): Record<string, unknown> | "invalid" | undefined {
  checkNesting(bytes, what);
  let v: unknown;
  try {
    v = JSON.parse(bytes.toString("utf8"));
  } catch {
    return "invalid";
  }
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** `?limit=` of a listing route: a whole number from 1 to `max`, `fallback` when absent. */
export function limitParam(ctx: Ctx, route: string, fallback: number, max: number): number {
  const raw = ctx.url.searchParams.get("limit");
  if (raw === null) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1 || n > max)
    throw new ObjstateError("BAD_REQUEST", `?limit=${JSON.stringify(raw).slice(1, -1)} of the ${route} route must be a whole number from 1 to ${max}`);
  return n;
}

/** Largest lock info or rollback body: small JSON objects, so a larger body is neither. */
export const SMALL_BODY_MAX = 64 * 1024;

/** A body of at most `maxBytes` (and the server's limit); its Content-MD5 checked on the state routes. */
export async function readSmall(ctx: Ctx, maxBytes: number, md5: boolean, maxBytesName?: string): Promise<Body> {
  const body = await readBody(ctx.req, { ...ctx.limits, maxBytes: Math.min(ctx.limits.maxBytes, maxBytes), maxBytesName });
  ctx.bytesIn += body.size;
  if (md5) checkContentMd5(header(ctx.req, "content-md5"), body.md5);
  return body;
}
