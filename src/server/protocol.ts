/** `/state/{workspace}`: the tool's http backend protocol (docs/design.md §11); every request its client retries is safe to repeat (decisions 013, 016). */
import { NO_LOCK_ID, type LockInfo, type StateSink, type StreamOptions } from "../backend/backend.js";
import { describeHolder } from "../backend/locks/lock-info.js";
import { lockOwnerOf } from "../backend/principal.js";
import { isEnvelope } from "../encryption/index.js";
import { isObjstateError, ObjstateError } from "../errors.js";
import { JsonScanner } from "../json/scan.js";
import { md5Of } from "../util/md5.js";
import type { ByteSource } from "../store/types.js";
import type { Body } from "../io/http-body.js";
import type { Route } from "./api.js";
import { jsonObject, ownerToCheck, readSmall, SMALL_BODY_MAX, requireRole, send, sendEmpty, sendJson, writeAs, type Ctx } from "./context.js";

/** States at least this large are sent while they are read; smaller ones go whole. */
const STREAM_MIN = 256 * 1024;
/** Bytes held back until the read checked the digest (the client does not check Content-MD5 itself). */
export const HOLD_BACK = 64 * 1024;
/** Smallest piece of a GET's body written to the socket at once (except its end). */
export const SEND_MIN = 1024 * 1024;
export const GET_STREAM: StreamOptions = { minBytes: STREAM_MIN, holdBackBytes: HOLD_BACK, chunkBytes: SEND_MIN };
/** Bodies at least this large are written from their chunks as they arrived, never joined (a copy of the whole). */
const JOIN_MAX = 4 * 1024 * 1024;
/** What tells a large body's kind: whether it is an envelope. */
const HEAD_BYTES = 64 * 1024;
/** How long a user's next force-unlock without an ID is taken for a retry of the last (docs/decisions/016). */
const FORCE_RETRY_MS = 60_000;

const W = "/state/:workspace";
const L = "/state/:workspace/lock";
/** The http backend protocol, plus the `lock_method = POST` / `unlock_method = DELETE` style on `/lock`. */
export const STATE_ROUTES: readonly Route[] = [
  { method: "GET", path: W, handler: getState },
  { method: "POST", path: W, audit: "write", handler: postState },
  { method: "PUT", path: W, audit: "write", handler: postState },
  { method: "DELETE", path: W, audit: "delete-workspace", handler: deleteState },
  ...[W, L].flatMap((path): Route[] => [
    { method: "LOCK", path, audit: "lock", handler: lockState },
    { method: "UNLOCK", path, audit: "unlock", handler: unlockState },
  ]),
  { method: "POST", path: L, audit: "lock", handler: lockState },
  { method: "DELETE", path: L, audit: "unlock", handler: unlockState },
];

/** `GET /state/{w}`: 200 with the state and its Content-MD5, 204 without; a large one streamed, its last {@link HOLD_BACK} bytes after the digest. */
async function getState(ctx: Ctx, ws: string): Promise<void> {
  requireRole(ctx, "read", ws);
  // After the headers went out, a failure cuts the connection.
  const read = await ctx.backend.streamState(ws, new ResponseSink(ctx), GET_STREAM);
  if (read.streamed) return void ctx.res.end();
  const found = read.state;
  if (found === null || found.body.length === 0) return sendEmpty(ctx, 204);
  // The read's digest check proved the MD5 (a decrypted state has its plaintext's, decision 079).
  const md5 = found.md5 === undefined && ctx.backend.encrypts ? undefined : Buffer.from(found.md5 ?? (await md5Of(found.body)), "hex").toString("base64");
  send(ctx, 200, found.body, {
    "Content-Type": "application/json",
    ...(md5 === undefined ? {} : { "Content-MD5": md5 }),
    ...(found.etag === undefined ? {} : { ETag: found.etag }),
  });
}

/** A GET's answer as the library's streamed read fills it: headers, pieces of the read's buffer, or a cut connection. */
export class ResponseSink implements StateSink {
  constructor(private readonly ctx: Ctx) {}

  start(size: number, md5: string): void {
    this.ctx.res.writeHead(200, {
      "Content-Type": "application/json",
      "Content-Length": String(size),
      "Content-MD5": Buffer.from(md5, "hex").toString("base64"),
    });
  }

  write(chunk: Buffer): void {
    if (this.ctx.res.destroyed) return;
    this.ctx.res.write(chunk);
    // node:http corks until the next tick, and the read hashes on without yielding: send now.
    this.ctx.res.socket?.uncork();
    this.ctx.bytesOut += chunk.length;
  }

  abort(): void {
    this.ctx.res.destroy();
  }
}

/** `POST /state/{w}[?ID=lock]` (or PUT): store the body under the client's lock; the same content again is a 200 no-op. */
async function postState(ctx: Ctx, ws: string): Promise<void> {
  requireRole(ctx, "write", ws);
  const id = ctx.url.searchParams.get("ID") ?? "";
  if (id === "" && !ctx.allowUnlockedWrites) {
    // The client holds no lock (no `lock_address`, or `-lock=false`): it could overwrite changes it never read.
    const address = `${ctx.origin ?? ""}/state/${encodeURIComponent(ws)}`;
    throw new ObjstateError(
      "UNLOCKED_WRITE",
      `a write to workspace ${ws} without ?ID: the client holds no lock, so it could overwrite changes it never read. Set lock_address and unlock_address to ${address} in the backend "http" block (and do not run with -lock=false), or start objstate serve with --allow-unlocked-writes to accept such writes`,
      { details: { lock_address: address } },
    );
  }
  const lockId = id === "" ? undefined : id;
  if (lockId !== undefined) ctx.audit.lockId = lockId;
  const as = writeAs(ctx, ws);
  const body = await readSmall(ctx, ctx.limits.maxBytes, true);
  const encryption = ctx.encryption;
  const stored = encryption !== undefined && isEnvelopeBody(body);
  // A client's envelope is stored only when the server's encryption opens it (decisions 071, 084: the lock first, as opening derives a key).
  if (stored && lockId !== undefined) await ctx.backend.checkLock(ws, lockId, as.owner);
  if (stored) {
    try {
      await encryption.decrypt(body.bytes(), { workspace: ws });
    } catch (e) {
      if (!isObjstateError(e)) throw e;
      throw new ObjstateError(
        e.code,
        `a write to workspace ${ws} sent an encryption envelope this server cannot open, and nothing was written: this server encrypts states at rest and keeps only what its own encryption configuration reads. Send the state unencrypted (OpenTofu without encryption for this backend), or give the server the client's key as a fallback method. ${e.message}`,
        { cause: e, details: e.details },
      );
    }
  }
  const r = await ctx.backend.writeState(ws, writable(body), { lockId, md5: body.md5, stored, ...as });
  Object.assign(ctx.audit, { md5: r.md5, ...(r.serial === undefined ? {} : { serial: r.serial }) });
  sendEmpty(ctx, 200);
}

/** What the library writes of a body: small ones in one buffer, large ones from the socket's chunks. */
function writable(body: Body): Buffer | ByteSource {
  if (body.size < JOIN_MAX || body.chunks.length === 1) return body.bytes();
  const { chunks, size, md5 } = body;
  return {
    size,
    verifiedMd5: md5,
    async *open() {
      yield* chunks;
    },
  };
}

/** The body is an envelope: a small one read whole; a large one by its head (OpenTofu writes encrypted_data after its small clear fields). */
function isEnvelopeBody(body: Body): boolean {
  if (body.size < JOIN_MAX) return isEnvelope(body.bytes());
  const parts: Buffer[] = [];
  let n = 0;
  for (const c of body.chunks) {
    parts.push(c);
    if ((n += c.length) >= HEAD_BYTES) break;
  }
  const head = Buffer.concat(parts, n).subarray(0, HEAD_BYTES);
  return isEnvelope(head) || new JsonScanner().feedUntil(head, "encrypted_data") !== -1;
}

/** `DELETE /state/{w}`: objstate's own (the tool never sends it); `default` is refused. */
async function deleteState(ctx: Ctx, ws: string): Promise<void> {
  requireRole(ctx, "admin", ws);
  const id = ctx.url.searchParams.get("ID") ?? "";
  if (id !== "") ctx.audit.lockId = id;
  await ctx.backend.deleteWorkspace(ws, { lockId: id === "" ? undefined : id });
  sendEmpty(ctx, 200);
}

/** `LOCK /state/{w}` (or `POST …/lock`): 200 with the stored info; 423 with the holder's, or the client's own on `LOCK_LEFT_BEHIND` (decision 088). */
async function lockState(ctx: Ctx, ws: string): Promise<void> {
  requireRole(ctx, "lock", ws);
  const info = await readLockInfo(ctx);
  if (info === undefined || info.ID === "")
    throw new ObjstateError("LOCK_INFO_INVALID", `a LOCK of workspace ${ws} needs the lock info as its JSON body, with an ID`);
  ctx.audit.lockId = info.ID;
  try {
    const stored = await ctx.backend.lock(ws, {
      id: info.ID,
      operation: info.Operation,
      info: info.Info,
      who: info.Who === "" ? ctx.user.name : info.Who,
      version: info.Version,
      created: info.Created === "" ? undefined : info.Created,
      owner: lockOwnerOf(ctx.principal),
    });
    ctx.metrics.lockHeld(1);
    send(ctx, 200, JSON.stringify(stored), { "Content-Type": "application/json" });
  } catch (e) {
    if (isObjstateError(e, "STATE_LOCKED")) ctx.metrics.lockWaits.inc();
    // The answer names the lock, but the client may not show it: the operator must see it here.
    if (isObjstateError(e, "LOCK_LEFT_BEHIND"))
      ctx.logger.event("error", "lock left behind", { workspace: ws, principal: ctx.principal.name, lockId: info.ID });
    throw e;
  }
}

/** `UNLOCK /state/{w}` (or `DELETE …/lock`): for its owner or `force`, else 403; another ID 409 unless just released (a retry); no lock 200; no body: force-unlock. */
async function unlockState(ctx: Ctx, ws: string): Promise<void> {
  requireRole(ctx, "lock", ws);
  const given = await readLockInfo(ctx);
  if (given === undefined || given.ID === "") {
    ctx.audit.action = "force-unlock";
    requireRole(ctx, "force", ws);
    return forceUnlock(ctx, ws);
  }
  ctx.audit.lockId = given.ID;
  // Lock info naming an ID and nothing else: OpenTofu's force-unlock.
  const onlyId = Object.entries(given).every(([k, v]) => k === "ID" || v === "");
  if (onlyId) ctx.audit.action = "force-unlock";
  // The release checks the ID and the owner on the read it makes anyway: nothing is read first.
  if ((await release(ctx, ws, given.ID, ownerToCheck(ctx, ws))) && onlyId) forceLine(ctx, ws, given.ID, "force-unlock");
  sendEmpty(ctx, 200);
}

/** The tool's force-unlock: releases any holder; repeated within {@link FORCE_RETRY_MS}, a retry that leaves a newer lock alone (409). */
async function forceUnlock(ctx: Ctx, ws: string): Promise<void> {
  const [holder, recent] = await Promise.all([ctx.backend.lockInfo(ws), ctx.backend.recentReleases(ws)]);
  if (holder === null) return sendJson(ctx, 200, { released: null, message: `workspace ${ws} is not locked: nothing to release` });
  const last = recent[recent.length - 1];
  if (last?.forcedBy === ctx.principal.name && Math.abs(Date.now() - last.at) <= FORCE_RETRY_MS) {
    ctx.audit.lockId = last.id;
    forceLine(ctx, ws, last.id, "force-unlock repeated: taken for a retry of the last one, nothing more released", holder.ID);
    const id = holder.ID === "" ? NO_LOCK_ID : holder.ID;
    throw new ObjstateError(
      "FORCE_UNLOCK_REPEATED",
      `force-unlock of workspace ${ws} released nothing, and the state is still locked (${describeHolder(holder)}): ${ctx.principal.name} force-unlocked lock ${last.id} at ${new Date(last.at).toISOString()}, and a force-unlock without a lock ID by the same user within ${FORCE_RETRY_MS / 1000} s is taken for a retry of that one, so the lock taken since was left alone. Release it by its ID now (DELETE /api/v1/workspaces/${ws}/lock?id=${id}, OpenTofu's force-unlock, or the console), or force-unlock again after ${new Date(last.at + FORCE_RETRY_MS).toISOString()}`,
      { details: { lockId: id, releasedId: last.id } },
    );
  }
  ctx.audit.lockId = holder.ID === "" ? NO_LOCK_ID : holder.ID;
  if (!(await release(ctx, ws, ctx.audit.lockId, undefined, ctx.principal.name)))
    return sendJson(ctx, 200, { released: null, message: `workspace ${ws} was unlocked meanwhile: nothing to release` });
  forceLine(ctx, ws, holder.ID, "force-unlock");
  sendJson(ctx, 200, { released: ctx.audit.lockId });
}

/** The `warn` line of a force-unlock: who, and which lock (never a header or body). */
function forceLine(ctx: Ctx, ws: string, lockId: string, msg: string, kept?: string): void {
  ctx.logger.event("warn", msg, {
    workspace: ws,
    principal: ctx.principal.name,
    via: ctx.principal.via,
    lockId: lockId === "" ? NO_LOCK_ID : lockId,
    ...(kept === undefined ? {} : { heldBy: kept }),
  });
}

/** Release lock `id`; true when this request released it, false when it was gone already. */
async function release(ctx: Ctx, ws: string, id: string, owner?: string, forcedBy?: string): Promise<boolean> {
  try {
    await ctx.backend.unlock(ws, id, { owner, forcedBy });
    ctx.metrics.lockHeld(-1);
    return true;
  } catch (e) {
    // Gone already (a retry of this very UNLOCK, maybe after another client locked): done.
    if (!isObjstateError(e, "LOCK_NOT_FOUND")) throw e;
    return false;
  }
}

async function readLockInfo(ctx: Ctx): Promise<LockInfo | undefined> {
  const body = await readSmall(ctx, SMALL_BODY_MAX, true);
  if (body.size === 0) return undefined;
  const o = jsonObject(body.bytes(), "the lock info body");
  if (o === "invalid") throw new ObjstateError("LOCK_INFO_INVALID", "the lock info body is not valid JSON");
  if (o === undefined) throw new ObjstateError("LOCK_INFO_INVALID", "the lock info body must be a JSON object");
  const s = (k: string): string => (typeof o[k] === "string" ? (o[k] as string) : "");
  // Go's zero time is what OpenTofu's force-unlock sends as Created: no time at all.
  const created = s("Created").startsWith("0001-01-01") ? "" : s("Created");
  return { ID: s("ID"), Operation: s("Operation"), Info: s("Info"), Who: s("Who"), Version: s("Version"), Created: created, Path: s("Path") };
}
