/**
 * What a route handler gets: the request, the authenticated user, the backend, and replies
 * that count their bytes (for the log line and the metrics).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ObjectStoreBackend } from "../backend/backend.js";
import { ObjstateError } from "../errors.js";
import type { BodyLimits } from "./body.js";
import type { Metrics } from "./metrics.js";
import { allowed, type Role, type User } from "./users.js";

/** One request being answered. */
export interface Ctx {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  /** Path parameters of the matched route (`workspace`, …). */
  readonly params: Readonly<Record<string, string>>;
  readonly user: User;
  readonly backend: ObjectStoreBackend;
  readonly limits: BodyLimits;
  readonly metrics: Metrics;
  /** Bytes of the request body read so far. */
  bytesIn: number;
  bytesOut: number;
}

const VERBS: Readonly<Record<Role, string>> = { outputs: "read the outputs of", read: "read", write: "write", lock: "lock", force: "force-unlock", admin: "administer" };

/** Refuse with 403 unless the user has `role` on `workspace`. */
export function requireRole(ctx: Ctx, role: Role, workspace: string): void {
  if (!allowed(ctx.user, role, workspace)) {
    // Someone given only outputs asked for the state: name the one route that role reads.
    const only = role === "read" && allowed(ctx.user, "outputs", workspace) ? `; the outputs role reads only GET /api/v1/workspaces/${workspace}/outputs` : "";
    throw new ObjstateError("FORBIDDEN", `user ${ctx.user.name} may not ${VERBS[role]} workspace ${workspace} (needs the ${role} role${only})`);
  }
}

/** Answer with bytes (the body of a GET, a lock info). */
export function send(ctx: Ctx, status: number, body: Buffer | string, headers: Record<string, string> = {}): void {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  ctx.res.writeHead(status, { "Content-Length": String(bytes.length), ...headers });
  ctx.res.end(bytes);
  ctx.bytesOut += bytes.length;
}

/** Answer with JSON. */
export function sendJson(ctx: Ctx, status: number, value: unknown): void {
  send(ctx, status, `${JSON.stringify(value)}\n`, { "Content-Type": "application/json" });
}

/** Answer with no body. */
export function sendEmpty(ctx: Ctx, status: number): void {
  ctx.res.writeHead(status, { "Content-Length": "0" });
  ctx.res.end();
}
