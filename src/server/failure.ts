/** One error-to-answer mapping for every route: status from the code (errors.ts), its headers, a body quoting nothing only the log may see. */
import type { ServerResponse } from "node:http";
import { codeOf, isObjstateError, ObjstateError, statusOf } from "../errors.js";
import { nodeCrypto } from "../util/builtins.js";
import { send, sendEmpty, sendJson, type Ctx } from "./context.js";
import type { Logger } from "./log.js";

/** Answer a failure: the holder's lock info when the error carries one (what the tool parses on 409/423), else `{"code", "message"}`. */
export function answerFailure(ctx: Ctx, e: unknown, logger: Logger): void {
  const status = statusOf(e);
  const res = ctx.res;
  if (ctx.held) return; // answered before it failed: that answer stands
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // A body left unread is not read at all: the connection closes after this answer.
  if (!ctx.req.complete) res.setHeader("Connection", "close");
  if (status === 401) res.setHeader("WWW-Authenticate", 'Basic realm="objstate", charset="UTF-8"');
  const retry = isObjstateError(e) ? e.details?.["retryAfter"] : undefined;
  if (typeof retry === "number") res.setHeader("Retry-After", String(retry));
  const holder = isObjstateError(e) ? e.details?.["lockInfo"] : undefined;
  if (holder !== undefined && (status === 409 || status === 423)) {
    send(ctx, status, JSON.stringify(holder), { "Content-Type": "application/json" });
    return;
  }
  if (status === 500 && !isObjstateError(e)) {
    // Unexpected: no detail leaves the process (it may quote a request).
    sendJson(ctx, 500, { code: "INTERNAL", message: "internal error; see the server's log" });
    logger.event("error", "unexpected failure", { name: e instanceof Error ? e.name : typeof e });
    return;
  }
  if (status === 204) return sendEmpty(ctx, 204);
  // Why an issuer could not be asked is the operator's to know (its messages never hold a token).
  if (isObjstateError(e, "IDENTITY_PROVIDER_UNAVAILABLE")) logger.event("warn", "identity provider unavailable", { reason: e.message });
  // The one field a client is told to set: UNLOCKED_WRITE names the state's lock_address.
  const lockAddress = isObjstateError(e) ? e.details?.["lock_address"] : undefined;
  sendJson(ctx, status, {
    code: codeOf(e),
    message: isObjstateError(e) ? shownMessage(e, ctx, logger) : String(e),
    ...(typeof lockAddress === "string" ? { lock_address: lockAddress } : {}),
  });
}

/** The message a client is shown: a key provider's failure (it quotes its program's stderr) goes to the log under a reference. */
export function shownMessage(e: ObjstateError, ctx: Ctx, logger: Logger): string {
  if (!fromKeyProvider(e)) return e.message;
  const ref = nodeCrypto().randomBytes(6).toString("hex");
  logger.event("error", "key provider failed", { ref, workspace: ctx.params["workspace"], detail: e.message });
  return `the server's encryption key provider failed: the detail is in the server's log, under reference ${ref}`;
}

/** A failure outside every handler's own catch (its logging included): logged and answered 500, never the process's end. */
export function lastResort(res: ServerResponse, e: unknown, logger: Logger): void {
  try {
    if (res.headersSent) res.destroy();
    else
      res
        .writeHead(500, { "Content-Type": "application/json", Connection: "close" })
        .end('{"code":"INTERNAL","message":"internal error; see the server\'s log"}\n');
    logger.event("error", "request handling failed", { name: e instanceof Error ? e.name : typeof e });
  } catch {
    res.destroy();
  }
}

function fromKeyProvider(e: unknown): boolean {
  return isObjstateError(e) && (e.code === "ENCRYPTION_KEY_PROVIDER_FAILED" || fromKeyProvider(e.cause));
}
