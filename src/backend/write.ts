/**
 * The write path (docs/design.md §5, §9–§10): the lineage guard judged against the committed
 * state, the fencing checks (the holder right before the write, the conditional PUT), and the
 * commit point. The caller has settled the lock (lock-scope.ts): this module writes under it.
 */
import { isObjstateError } from "../errors.js";
import type { DigestItem, LockTableDriver } from "../lock/types.js";
import { bufferSource, isByteSource, md5OfSource, prefixOf, readThrough, sizeOf } from "../store/byte-source.js";
import type { ByteSource, GetResult, ObjectMeta } from "../store/types.js";
import { md5Hex, md5Of, PARALLEL_MD5_MIN } from "../util/md5.js";
import { commit, generationOf, intentMetadata, judge, storedDigest } from "./commit.js";
import { checkReadable, openState } from "./crypt.js";
import type { BackendContext } from "./context.js";
import { committedMissing, conflict, decodeMeta, encodeMeta, guardRefusal, META, normalizeDigest, plainMd5, recordedMd5, writeMetadata } from "./fencing.js";
import type { LockInfo } from "./locks/lock-info.js";
import type { WriteOptions } from "./options.js";
import type { LockHandle } from "./locks/lease.js";
import { adoptTorn, committedVersion, putCommittedBack } from "./read.js";
import type { WriteResult } from "./results.js";
import { scanHeader, stateHeader, type StateHeader } from "./state-header.js";
import { checkedSource, checkSource, stateToWrite } from "../state/check.js";
import { LAST_WRITE_ATTR, lastWriteRecord } from "./workspaces.js";

/** How much of a stored state the guard reads: whole small states, the header of large ones. */
const GUARD_READ_BYTES = 64 * 1024;
/** How much of a state to write is scanned for its lineage and serial. */
const HEADER_BYTES = 64 * 1024;

/** The state being written, prepared once. */
export interface Incoming {
  readonly body: Buffer | ByteSource;
  readonly size: number;
  readonly header: { lineage?: string; serial?: number };
  /** Hex MD5 of the body (computed, or given by the caller). */
  readonly hashing: Promise<string>;
  /** Streamed from a source that must be read once to hash it (its MD5 is then known before the write starts). */
  readonly streamed: boolean;
  /** The state sealed into `body` (an envelope): the same state stored under another nonce is the same content. */
  readonly plain?: Buffer | undefined;
}

/** The stored state as the guard sees it. */
interface Current {
  readonly etag: string | undefined;
  readonly size: number;
  readonly header: StateHeader;
  readonly md5: string | undefined;
  readonly meta: ObjectMeta;
  /** Its first bytes (all of them when `whole`). */
  readonly prefix: Buffer;
  readonly whole: boolean;
}

/**
 * The state to write, with its header scanned and its hash under way: large states are
 * hashed in a worker thread (bytes in memory) or in one streamed pass (a source) while
 * other work goes on.
 */
export async function prepareIncoming(data: Uint8Array | string | ByteSource, md5: string | undefined, plain?: Buffer): Promise<Incoming> {
  const body = isByteSource(data) ? data : toBuffer(data);
  const head = isByteSource(body) ? await prefixOf(body, HEADER_BYTES) : body.subarray(0, HEADER_BYTES);
  const hashing = md5 !== undefined ? Promise.resolve(md5.toLowerCase()) : isByteSource(body) ? md5OfSource(body, "the state") : md5Of(body);
  hashing.catch(() => undefined); // awaited later; a failure before then must not go unhandled
  return { body, size: sizeOf(body), header: scanHeader(head) ?? { complete: false }, hashing, streamed: isByteSource(body), plain };
}

/** The caller's state held to the one rule of what a state is (state/check.ts): checked now, or by every read of a source. */
export async function checkedState(data: Uint8Array | string | ByteSource, workspace: string): Promise<Buffer | ByteSource> {
  if (isByteSource(data)) return checkedSource(data, stateToWrite(workspace));
  const bytes = toBuffer(data);
  await checkSource(bufferSource(bytes), stateToWrite(workspace));
  return bytes;
}

function toBuffer(data: Uint8Array | string): Buffer {
  if (typeof data === "string") return Buffer.from(data, "utf8");
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** The state to write in one buffer (a source read whole, checked against its size): what is encrypted. */
export async function wholeState(data: Uint8Array | string | ByteSource): Promise<Buffer> {
  if (!isByteSource(data)) return toBuffer(data);
  const out = Buffer.allocUnsafe(data.size);
  let n = 0;
  await readThrough(
    data,
    (c) => {
      out.set(c, n);
      n += c.length;
    },
    "the state",
  );
  return out.subarray(0, n);
}

/**
 * Write under the lock: `ownLock` when the call took it itself (its info is the holder, its
 * owner is not checked), else the caller's `options.lockId` (checked, with `options.owner`,
 * right before the write). Guarded, fenced and committed (see `ObjectStoreBackend.writeState`).
 */
export async function writeFenced(
  ctx: BackendContext,
  workspace: string,
  input: Incoming,
  ownLock: LockInfo | undefined,
  options: WriteOptions,
): Promise<WriteResult> {
  const locks = ctx.table;
  const path = ctx.statePath(workspace);
  const where = ctx.describe(workspace);
  const lockId = ownLock?.ID ?? options.lockId;
  const { hashing, header: incoming } = input;
  // The lock this call took is its own: only a lock the caller names is checked for its owner.
  const owner = ownLock === undefined ? options.owner : undefined;
  const checkHolder = (): Promise<LockInfo | undefined> =>
    ctx.locking.enabled && lockId !== undefined ? ctx.locking.assertHolder(workspace, lockId, owner) : Promise.resolve(ownLock);
  // The digest item is read beside what the write reads anyway: the commit is conditional on it.
  const [current, firstHolder, item] = await Promise.all([
    inspect(ctx, path, where),
    checkHolder(),
    locks === undefined ? Promise.resolve(null) : locks.getDigest(ctx.digestId(workspace)),
  ]);
  let holder = firstHolder;

  if (options.ifMatch !== undefined && (current?.etag ?? null) !== options.ifMatch) {
    throw conflict(
      `the state at ${where} changed since it was read (${options.ifMatch === null ? "there was none" : `version ${options.ifMatch}`}, now ${current?.etag ?? "none"}); nothing was written. Read it again, reapply the change and write again.`,
      {},
    );
  }
  // What the guard judges against: the committed state, which is not the stored object when
  // that is a write that never committed (see settleForWrite).
  const settled =
    locks === undefined || current === null
      ? { base: current, seen: item, extraRead: false }
      : await settleForWrite(ctx, workspace, current, item, lockId, options.force === true);
  const { seen } = settled;
  let { base } = settled;
  let { extraRead } = settled;
  // Identical bytes have identical headers: only then is the hash worth waiting for before
  // the upload (for a large state it would otherwise run alongside it).
  if (base !== null && base.size === input.size && base.header.serial === incoming.serial && base.header.lineage === incoming.lineage) {
    // Possibly the same content again: a no-op, but one that makes sure the digest is recorded.
    const sum = await hashing;
    const stored = base.md5 ?? ((extraRead = true), (await storedDigest(ctx, path))?.md5);
    // Sealed again, the same state has other bytes (a fresh nonce): the stored envelope's state is compared.
    if (stored !== undefined && (stored === sum || (input.plain !== undefined && (await sealsSameState(ctx, workspace, base, stored, input.plain))))) {
      // Re-checked after the extra read: only the holder may commit.
      if (extraRead || stored !== sum) await checkHolder();
      if (locks !== undefined && normalizeDigest(seen?.digest) !== stored) await commit(ctx, workspace, locks, seen, stored, lockId);
      return { written: false, md5: stored, serial: incoming.serial };
    }
  }
  // A state this configuration cannot read is never written over (a lost key must not cost the state): `force` is the way out.
  if (base !== null && ctx.encryption !== undefined && options.stored !== true && options.force !== true) {
    const inner = await checkReadable(ctx.encryption, base.prefix, base.whole, workspace);
    if (inner !== undefined) base = { ...base, header: inner };
  }
  if (base !== null && options.force !== true) {
    const refusal = guardRefusal(base.header, incoming, where);
    if (refusal !== undefined) throw refusal;
  }
  if (extraRead) holder = await checkHolder();

  // A streamed state's MD5 is known before it is sent (it was read once to hash it).
  const known = input.streamed || input.size < PARALLEL_MD5_MIN ? await hashing : undefined;
  const metadata = writeMetadata({ incoming, lockId, holder, who: ctx.who, md5: known, principal: options.principal });
  if (options.operation !== undefined) metadata[META.operation] = encodeMeta(options.operation);
  if (options.sourceVersion !== undefined) metadata[META.sourceVersion] = encodeMeta(options.sourceVersion);
  if (locks !== undefined) Object.assign(metadata, intentMetadata(seen));
  try {
    await ctx.store.put(path, withProgress(input.body, options.onProgress), {
      ...ctx.putOptions(),
      md5: known ?? hashing,
      metadata,
      ...(current === null ? { ifNoneMatch: true } : current.etag === undefined ? {} : { ifMatch: current.etag }),
    });
  } catch (e) {
    if (!isObjstateError(e, "PRECONDITION_FAILED")) throw e;
    // A PUT retried after its reply was lost finds its own first attempt stored: that is success.
    if (!(await storedIsOurs(ctx, path, await hashing, lockId))) throw await lostRace(ctx, workspace, locks, lockId, e);
  }
  if (!isByteSource(input.body)) options.onProgress?.(input.size, input.size);
  await options.onStored?.();
  const digest = await hashing;
  // The commit point: only now did the write happen.
  if (locks !== undefined) {
    await commit(ctx, workspace, locks, seen, digest, lockId, { set: { [LAST_WRITE_ATTR]: lastWriteRecord(digest, metadata) } }).catch(async (e: unknown) => {
      if (isObjstateError(e, "STATE_CONFLICT")) await undoLateWrite(ctx, workspace, locks, digest, lockId);
      throw e;
    });
  }
  return { written: true, md5: digest, serial: incoming.serial };
}

/** A source that reports bytes as the store reads them (bytes in memory report once stored). */
function withProgress(body: Buffer | ByteSource, onProgress: ((sent: number, total: number) => void) | undefined): Buffer | ByteSource {
  if (onProgress === undefined || !isByteSource(body)) return body;
  return {
    size: body.size,
    verifiedMd5: body.verifiedMd5,
    async *open() {
      let sent = 0;
      for await (const chunk of body.open()) {
        yield chunk;
        sent += chunk.length;
        onProgress(sent, body.size);
      }
    },
  };
}

/**
 * After a refused commit: where the store did not hold the PUT to its If-Match (Ceph RGW
 * checks it by HEAD on a versioned bucket), the late write may be the current object while
 * the digest is a newer commit's, and the tool's S3 backend then refuses every read. Put the
 * committed version back over it at once, conditional on the late write still being current
 * (under a short lock when the lock is free; a holder's write would be refused, never lost).
 */
export async function undoLateWrite(ctx: BackendContext, workspace: string, locks: LockTableDriver, mine: string, lockId: string | undefined): Promise<void> {
  const path = ctx.statePath(workspace);
  try {
    const [current, item] = await Promise.all([ctx.store.head(path), locks.getDigest(ctx.digestId(workspace))]);
    const committed = normalizeDigest(item?.digest);
    if (current === null || committed === undefined || committed === mine || (recordedMd5(current) ?? plainMd5(current)) !== mine) return;
    if (current.metadata?.[META.lockId] !== (lockId === undefined ? undefined : encodeMeta(lockId))) return;
    const version = await committedVersion(ctx, path, committed);
    if (version === null || ctx.readOnly || !ctx.locking.enabled) return;
    let own: LockHandle | undefined;
    try {
      own = await ctx.acquire(workspace, { operation: "restore the committed state" });
    } catch (e) {
      if (!isObjstateError(e, "STATE_LOCKED")) return;
    }
    try {
      await putCommittedBack(ctx, workspace, version, current, committed, generationOf(item), own?.id);
    } finally {
      await own?.release().catch(() => undefined);
    }
  } catch {
    // Best effort: the refusal is the answer, and readers pass over the late write.
  }
}

/**
 * The stored object against the committed digest, before a write under `lockId` judges it.
 * Usually one and the same (no request). Otherwise, proven from the bytes: a torn write is
 * committed first (the caller holds the lock, so no writer of it is still at work), and it
 * is the base; behind a write that never committed, the committed version is the base
 * (`COMMITTED_VERSION_MISSING` when the store no longer has it, unless `force`).
 */
async function settleForWrite(
  ctx: BackendContext,
  workspace: string,
  current: Current,
  item: DigestItem | null,
  lockId: string | undefined,
  force: boolean,
): Promise<{ base: Current | null; seen: DigestItem | null; extraRead: boolean }> {
  const expected = normalizeDigest(item?.digest);
  if (expected === undefined || current.md5 === expected) return { base: current, seen: item, extraRead: false };
  const path = ctx.statePath(workspace);
  const stored = await storedDigest(ctx, path);
  if (stored === null || stored.md5 === undefined || stored.md5 === expected || !stored.proven) return { base: current, seen: item, extraRead: true };
  const verdict = judge(stored.meta, stored.md5, item);
  if (verdict === "torn") {
    const adopted = await adoptTorn(ctx, workspace, stored.meta, stored.md5, item, lockId);
    if (typeof adopted === "string") {
      throw conflict(
        `another write was committed to ${ctx.describe(workspace)} just as this one started; nothing was written. Pull the state, reapply the change and push again.`,
        {},
      );
    }
    return { base: { ...current, md5: stored.md5 }, seen: adopted, extraRead: true };
  }
  if (verdict === "superseded") {
    const committed = await committedVersion(ctx, path, expected);
    if (committed !== null) return { base: currentOf(committed, ctx.describe(workspace)), seen: item, extraRead: true };
    if (!force) throw committedMissing(ctx.describe(workspace), workspace, stored.meta, expected);
  }
  return { base: current, seen: item, extraRead: true };
}

/**
 * Does the stored envelope whose MD5 is `storedMd5` hold exactly `plain`? Known without a
 * read when that envelope's plaintext MD5 is remembered; otherwise it is read and opened
 * (only a write with the stored serial and lineage asks: a retry, or a conflict).
 */
async function sealsSameState(ctx: BackendContext, workspace: string, base: Current, storedMd5: string, plain: Buffer): Promise<boolean> {
  const enc = ctx.encryption;
  if (enc === undefined) return false;
  const mine = md5Hex(plain);
  const known = ctx.plainMd5s.get(storedMd5);
  if (known !== undefined) return known === mine;
  // A small state's bytes are in hand already (the guard read them whole).
  const body = base.whole ? base.prefix : (await ctx.store.get(ctx.statePath(workspace)))?.body;
  if (body === undefined || md5Hex(body) !== storedMd5) return false;
  let opened: Buffer;
  try {
    opened = (await openState(enc, body, workspace)).state;
  } catch {
    return false; // not readable here: the guard decides (checkReadable)
  }
  ctx.plainMd5s.set(storedMd5, md5Hex(opened));
  return opened.equals(plain);
}

/** Is the stored object exactly these bytes, written under this lock (or by this call without one)? */
async function storedIsOurs(ctx: BackendContext, path: string, sum: string, lockId: string | undefined): Promise<boolean> {
  const stored = await storedDigest(ctx, path);
  if (stored === null || stored.md5 !== sum) return false;
  const by = stored.meta.metadata?.[META.lockId];
  return lockId === undefined ? by === undefined : by === encodeMeta(lockId);
}

/**
 * The write's condition failed: another write landed between the guard's read and ours
 * (a lock-free writer, or an abandoned write of an earlier holder arriving late). When
 * that write is torn (stored, never committed, and nothing committed since), and we hold
 * the lock, commit it, so readers get the newest state anyone meant.
 */
async function lostRace(
  ctx: BackendContext,
  workspace: string,
  locks: LockTableDriver | undefined,
  lockId: string | undefined,
  cause: unknown,
): Promise<Error> {
  const where = ctx.describe(workspace);
  let note = "";
  if (locks !== undefined && lockId !== undefined) {
    try {
      const [obj, item] = await Promise.all([storedDigest(ctx, ctx.statePath(workspace)), locks.getDigest(ctx.digestId(workspace))]);
      if (
        obj !== null &&
        obj.md5 !== undefined &&
        obj.proven &&
        judge(obj.meta, obj.md5, item) === "torn" &&
        typeof (await adoptTorn(ctx, workspace, obj.meta, obj.md5, item, lockId)) !== "string"
      ) {
        note = ` That write (serial ${obj.meta.metadata?.[META.serial] ?? "?"}, by ${decodeMeta(obj.meta.metadata?.[META.who]) ?? "unknown"}) had not been committed; it is committed now, so the stored state reads again.`;
      }
    } catch {
      // Best effort: the conflict is the answer either way.
    }
  }
  return conflict(
    `another write reached ${where} while this one was in flight, so this one was refused and nothing was overwritten.${note} Pull the state, reapply the change and push again.`,
    { cause },
  );
}

/** The stored object as the guard sees it: size, ETag, header, and its MD5 when cheaply known. */
async function inspect(ctx: BackendContext, path: string, where: string): Promise<Current | null> {
  const obj = await ctx.store.get(path, { maxBytes: GUARD_READ_BYTES });
  if (obj === null) return null;
  const whole = obj.body.length >= obj.meta.size;
  const md5Known = whole ? md5Hex(obj.body) : (plainMd5(obj.meta) ?? recordedMd5(obj.meta));
  return {
    etag: obj.meta.etag,
    size: obj.meta.size,
    header: headerOf(obj.body, whole, `the stored state at ${where}`),
    md5: md5Known,
    meta: obj.meta,
    prefix: obj.body,
    whole,
  };
}

/** The committed version as the guard sees a stored state (its bytes are proven: they are the digest's). */
function currentOf(committed: GetResult, where: string): Current {
  const whole = committed.body.length <= GUARD_READ_BYTES;
  const header = headerOf(committed.body.subarray(0, GUARD_READ_BYTES), whole, `the committed state at ${where}`);
  return {
    etag: committed.meta.etag,
    size: committed.body.length,
    header,
    md5: md5Hex(committed.body),
    meta: committed.meta,
    prefix: committed.body.subarray(0, GUARD_READ_BYTES),
    whole,
  };
}

/** A stored state's header; whatever is stored that is not a state (hand-written, or junk) has nothing to guard. */
function headerOf(bytes: Buffer, whole: boolean, what: string): StateHeader {
  try {
    return stateHeader(bytes, whole, what);
  } catch {
    return { lineage: undefined, serial: undefined, version: undefined, empty: true };
  }
}
