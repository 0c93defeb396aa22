/** The write flow (docs/design.md §5, §9–§10): the state checked and sealed, guarded, fenced and committed, under the lock. */
import { isObjstateError, type ObjstateError } from "../errors.js";
import type { DigestItem, LockTableDriver } from "../lock/types.js";
import { bufferSource, isByteSource, md5OfSource, prefixOf, readThrough, sizeOf, wrapSource } from "../store/byte-source.js";
import type { ByteSource, ObjectMeta } from "../store/types.js";
import { checkState } from "../state/check.js";
import { md5Hex, md5Of, PARALLEL_MD5_MIN } from "../util/md5.js";
import { commit, generationOf, intentMetadata, judge, storedDigest } from "./commit.js";
import { checkReadable, sealState } from "./crypt.js";
import type { BackendContext } from "./context.js";
import type { LockInfo } from "./locks/lock-info.js";
import { conflict, decodeMeta, encodeMeta, META, normalizeDigest, plainMd5, principalMetadata, recordedMd5 } from "./meta.js";
import { lockOwnerOf } from "./principal.js";
import { adoptTorn, committedMissing, committedVersion, restoreCommitted } from "./read.js";
import type { WriteOptions, WriteResult } from "./types.js";
import { HEADER_BYTES, scanHeader, stateHeader, type StateHeader } from "./state-header.js";
import { LAST_WRITE_ATTR, lastWriteRecord } from "./workspaces.js";

interface Incoming {
  readonly body: Buffer | ByteSource;
  readonly size: number;
  readonly header: { lineage?: string; serial?: number };
  /** Hex MD5 of the body (computed, or given by the caller). */
  readonly hashing: Promise<string>;
  /** The state sealed into `body` (an envelope): the same state stored under another nonce is the same content. */
  readonly plain?: Buffer | undefined;
  /** `body` is a state in memory still to be checked: the store reads it through the check, whose verdict comes before its last slice. */
  readonly checkLater?: boolean;
}

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

/** Store the workspace's state (see `ObjectStoreBackend.writeState`) under the caller's lock or one taken here. */
export async function writeState(ctx: BackendContext, workspace: string, given: Uint8Array | string | ByteSource, options: WriteOptions): Promise<WriteResult> {
  const bytes = isByteSource(given) ? given : toBuffer(given);
  const enc = options.stored === true ? undefined : ctx.encryption;
  // A large plain state in memory is checked while the store reads it, so the check overlaps the upload.
  const checkLater = enc === undefined && !isByteSource(bytes) && bytes.length >= PARALLEL_MD5_MIN;
  const data = checkLater ? bytes : await checkState(bytes, workspace);
  const plain = enc === undefined ? undefined : await wholeState(data);
  const sealed = enc === undefined || plain === undefined ? undefined : await sealState(enc, plain, workspace);
  const input = {
    ...(await prepareIncoming(sealed ?? data, sealed === undefined ? options.md5 : undefined, sealed === plain ? undefined : plain)),
    checkLater,
  };
  // The guard compares the state's own lineage and serial (the envelope's clear copies agree with them).
  const lock = { lockId: options.lockId, wait: options.wait, operation: "writeState", owner: lockOwnerOf(options.principal) };
  const result = await ctx.withLock(workspace, lock, (l) => writeFenced(ctx, workspace, input, l.taken, options));
  // The caller's MD5 of the state it wrote is the plaintext's of this envelope: its next read need not hash it.
  if (sealed !== undefined && sealed !== plain && options.md5 !== undefined && result.written) ctx.rememberPlainMd5(result.md5, options.md5.toLowerCase());
  return result;
}

/** The state to write, with its header scanned and its hash under way (a worker thread for large bytes, one streamed pass for a source). */
async function prepareIncoming(body: Buffer | ByteSource, md5: string | undefined, plain: Buffer | undefined): Promise<Incoming> {
  const head = isByteSource(body) ? await prefixOf(body, HEADER_BYTES) : body.subarray(0, HEADER_BYTES);
  const hashing = md5 !== undefined ? Promise.resolve(md5.toLowerCase()) : isByteSource(body) ? md5OfSource(body, "the state") : md5Of(body);
  hashing.catch(() => undefined); // awaited later; a failure before then must not go unhandled
  return { body, size: sizeOf(body), header: scanHeader(head) ?? { complete: false }, hashing, plain };
}

function toBuffer(data: Uint8Array | string): Buffer {
  if (typeof data === "string") return Buffer.from(data, "utf8");
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** The state to write in one buffer (a source read whole, checked against its size): what is encrypted. */
async function wholeState(data: Buffer | ByteSource): Promise<Buffer> {
  if (!isByteSource(data)) return data;
  const out = Buffer.allocUnsafe(data.size);
  let n = 0;
  await readThrough(data, (c) => void out.set(c, (n += c.length) - c.length), "the state");
  return out.subarray(0, n);
}

/** Write under the lock: `ownLock` when the call took it (the holder, owner unchecked), else `options.lockId`, checked right before the write. */
async function writeFenced(
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
  const [current, firstHolder, item] = await Promise.all([inspect(ctx, path, where), checkHolder(), locks?.getDigest(ctx.digestId(workspace)) ?? null]);
  let holder = firstHolder;
  if (options.ifMatch !== undefined && (current?.etag ?? null) !== options.ifMatch) {
    throw conflict(
      `the state at ${where} changed since it was read (${options.ifMatch === null ? "there was none" : `version ${options.ifMatch}`}, now ${current?.etag ?? "none"}); nothing was written. Read it again, reapply the change and write again.`,
    );
  }
  // The guard judges against the committed state, which is not the stored object behind a write that never committed.
  const settled =
    locks === undefined || current === null
      ? { base: current, seen: item, extraRead: false }
      : await settleForWrite(ctx, workspace, current, item, lockId, options.force === true);
  const { seen } = settled;
  let { base, extraRead } = settled;
  // Identical bytes have identical headers: only then is the hash worth waiting for before the upload.
  if (base !== null && base.size === input.size && base.header.serial === incoming.serial && base.header.lineage === incoming.lineage) {
    // Possibly the same content again: a no-op, but one that makes sure the digest is recorded.
    const sum = await hashing;
    const stored = base.md5 ?? ((extraRead = true), (await storedDigest(ctx, path))?.md5);
    // Sealed again, the same state has other bytes (a fresh nonce): the stored envelope's state is compared.
    if (stored !== undefined && (stored === sum || (input.plain !== undefined && (await sealsSameState(ctx, workspace, base, stored, input.plain))))) {
      // Bytes checked only on their way to the store are checked here: a non-state stored by hand is not a no-op.
      if (input.checkLater === true && !isByteSource(input.body)) await checkState(input.body, workspace);
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
  return storeAndCommit(ctx, workspace, input, current, seen, lockId, holder, options);
}

/** The conditional PUT, then the commit point: only once the digest item took this write did it happen. */
async function storeAndCommit(
  ctx: BackendContext,
  workspace: string,
  input: Incoming,
  current: Current | null,
  seen: DigestItem | null,
  lockId: string | undefined,
  holder: LockInfo | undefined,
  options: WriteOptions,
): Promise<WriteResult> {
  const locks = ctx.table;
  const path = ctx.statePath(workspace);
  // A source's MD5 is known before it is sent (it was read once to hash it); a large buffer's is hashed beside the upload.
  const known = isByteSource(input.body) || input.size < PARALLEL_MD5_MIN ? await input.hashing : undefined;
  const metadata = writeMetadata(ctx, input.header, lockId, holder, known, options);
  if (locks !== undefined) Object.assign(metadata, intentMetadata(seen));
  const body = input.checkLater === true && !isByteSource(input.body) ? await checkState(bufferSource(input.body), workspace) : input.body;
  try {
    await ctx.store.put(path, withProgress(body, options.onProgress), {
      ...ctx.putOptions(),
      md5: known ?? input.hashing,
      metadata,
      ...(current === null ? { ifNoneMatch: true } : current.etag === undefined ? {} : { ifMatch: current.etag }),
    });
  } catch (e) {
    if (!isObjstateError(e, "PRECONDITION_FAILED")) throw e;
    // A PUT retried after its reply was lost finds its own first attempt stored (these bytes, under this lock): that is success.
    const stored = await storedDigest(ctx, path);
    const by = stored?.meta.metadata?.[META.lockId];
    if (stored?.md5 !== (await input.hashing) || by !== (lockId === undefined ? undefined : encodeMeta(lockId)))
      throw await lostRace(ctx, workspace, stored, lockId, e);
  }
  if (!isByteSource(body)) options.onProgress?.(input.size, input.size);
  await options.onStored?.();
  const digest = await input.hashing;
  if (locks !== undefined) {
    await commit(ctx, workspace, locks, seen, digest, lockId, { set: { [LAST_WRITE_ATTR]: lastWriteRecord(digest, metadata) } }).catch(async (e: unknown) => {
      if (isObjstateError(e, "STATE_CONFLICT")) await undoLateWrite(ctx, workspace, locks, digest, lockId);
      throw e;
    });
  }
  return { written: true, md5: digest, serial: input.header.serial };
}

/** The metadata a write records (docs/design.md §9). */
function writeMetadata(
  ctx: BackendContext,
  incoming: { lineage?: string; serial?: number },
  lockId: string | undefined,
  holder: LockInfo | undefined,
  md5: string | undefined,
  options: WriteOptions,
): Record<string, string> {
  const m: Record<string, string> = {};
  if (incoming.serial !== undefined) m[META.serial] = String(incoming.serial);
  if (incoming.lineage !== undefined) m[META.lineage] = encodeMeta(incoming.lineage);
  if (lockId !== undefined) m[META.lockId] = encodeMeta(lockId);
  m[META.who] = encodeMeta(holder?.Who || ctx.who);
  const operation = options.operation ?? (holder?.Operation || undefined);
  if (operation !== undefined) m[META.operation] = encodeMeta(operation);
  if (md5 !== undefined) m[META.md5] = md5;
  if (options.principal !== undefined) Object.assign(m, principalMetadata(options.principal));
  if (options.sourceVersion !== undefined) m[META.sourceVersion] = encodeMeta(options.sourceVersion);
  return m;
}

/** A source that reports bytes as the store reads them (bytes in memory report once stored). */
function withProgress(body: Buffer | ByteSource, onProgress: ((sent: number, total: number) => void) | undefined): Buffer | ByteSource {
  if (onProgress === undefined || !isByteSource(body)) return body;
  return wrapSource(body, async function* () {
    let sent = 0;
    for await (const chunk of body.open()) {
      yield chunk;
      sent += chunk.length;
      onProgress(sent, body.size);
    }
  });
}

/** The tool's own rule (`CheckValidImport`), with objstate's reading of "no lineage". */
export function guardRefusal(stored: StateHeader, incoming: { lineage?: string; serial?: number }, where: string): ObjstateError | undefined {
  if (stored.empty === true || stored.lineage === undefined || stored.lineage === "") return undefined;
  const details = { storedLineage: stored.lineage, storedSerial: stored.serial, lineage: incoming.lineage, serial: incoming.serial };
  const fix = "Pull the stored state and apply the change to it, or write with --force (force: true) if you mean to replace it.";
  const show = (l: string | undefined, n: number | undefined): string => `lineage ${l === undefined ? "(none)" : l}, serial ${n === undefined ? "(none)" : n}`;
  const pair = `stored: ${show(stored.lineage, stored.serial)}; new: ${show(incoming.lineage, incoming.serial)}`;
  if (incoming.lineage !== stored.lineage) {
    return conflict(`refusing to write a state of another lineage over ${where} (${pair}): it belongs to a different history. ${fix}`, { details });
  }
  if (stored.serial !== undefined && (incoming.serial === undefined || incoming.serial < stored.serial)) {
    return conflict(`refusing to write an older state over ${where} (${pair}): the stored state is newer. ${fix}`, { details });
  }
  if (stored.serial !== undefined && incoming.serial === stored.serial) {
    return conflict(`refusing to write a different state with the same serial over ${where} (${pair}): bump the serial when you change a state. ${fix}`, {
      details,
    });
  }
  return undefined;
}

/**
 * After a refused commit: a store that ignored the PUT's If-Match (Ceph RGW, versioned) may keep the late write current,
 * which the tool's S3 backend refuses to read: put the committed version back over it, conditional on the late write.
 */
async function undoLateWrite(ctx: BackendContext, workspace: string, locks: LockTableDriver, mine: string, lockId: string | undefined): Promise<void> {
  const path = ctx.statePath(workspace);
  try {
    const [current, item] = await Promise.all([ctx.store.head(path), locks.getDigest(ctx.digestId(workspace))]);
    const committed = normalizeDigest(item?.digest);
    if (current === null || committed === undefined || committed === mine || (recordedMd5(current) ?? plainMd5(current)) !== mine) return;
    if (current.metadata?.[META.lockId] !== (lockId === undefined ? undefined : encodeMeta(lockId))) return;
    const version = await committedVersion(ctx, path, committed);
    if (version !== null) await restoreCommitted(ctx, workspace, version, current, committed, generationOf(item), true);
  } catch {
    // Best effort: the refusal is the answer, and readers pass over the late write.
  }
}

/**
 * The base a write judges against: the stored object, or, proven from the bytes, a torn write committed first, or the committed
 * version behind a superseded one (`COMMITTED_VERSION_MISSING` without it, unless `force`).
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
    if (committed !== null)
      return {
        base: currentOf(committed.meta, committed.body.length, committed.body, expected, `the committed state at ${ctx.describe(workspace)}`),
        seen: item,
        extraRead: true,
      };
    if (!force) throw committedMissing(ctx.describe(workspace), workspace, stored.meta, expected);
  }
  return { base: current, seen: item, extraRead: true };
}

/** Does the stored envelope whose MD5 is `storedMd5` hold exactly `plain`? Remembered, or read and opened. */
async function sealsSameState(ctx: BackendContext, workspace: string, base: Current, storedMd5: string, plain: Buffer): Promise<boolean> {
  const enc = ctx.encryption;
  if (enc === undefined) return false;
  const mine = md5Hex(plain);
  const known = ctx.plainMd5Of(storedMd5);
  if (known !== undefined) return known === mine;
  // A small state's bytes are in hand already (the guard read them whole).
  const body = base.whole ? base.prefix : (await ctx.store.get(ctx.statePath(workspace)))?.body;
  if (body === undefined || md5Hex(body) !== storedMd5) return false;
  let opened: Buffer;
  try {
    opened = (await enc.decrypt(body, { workspace })).state;
  } catch {
    return false; // not readable here: the guard decides (checkReadable)
  }
  ctx.rememberPlainMd5(storedMd5, md5Hex(opened));
  return opened.equals(plain);
}

/** The write's condition failed: another write (`obj`) landed in between. When it is torn and we hold the lock, commit it. */
async function lostRace(
  ctx: BackendContext,
  workspace: string,
  obj: Awaited<ReturnType<typeof storedDigest>>,
  lockId: string | undefined,
  cause: unknown,
): Promise<Error> {
  const where = ctx.describe(workspace);
  const locks = ctx.table;
  let note = "";
  if (locks !== undefined && lockId !== undefined && obj?.md5 !== undefined && obj.proven) {
    try {
      const item = await locks.getDigest(ctx.digestId(workspace));
      if (judge(obj.meta, obj.md5, item) === "torn" && typeof (await adoptTorn(ctx, workspace, obj.meta, obj.md5, item, lockId)) !== "string") {
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
  const obj = await ctx.store.get(path, { maxBytes: HEADER_BYTES });
  if (obj === null) return null;
  const md5 = obj.body.length >= obj.meta.size ? md5Hex(obj.body) : (plainMd5(obj.meta) ?? recordedMd5(obj.meta));
  return currentOf(obj.meta, obj.meta.size, obj.body, md5, `the stored state at ${where}`);
}

/** A stored state as the guard sees it; whatever is stored that is not a state (hand-written, junk) has nothing to guard. */
function currentOf(meta: ObjectMeta, size: number, bytes: Buffer, md5: string | undefined, what: string): Current {
  const prefix = bytes.subarray(0, HEADER_BYTES);
  const whole = prefix.length >= size;
  let header: StateHeader;
  try {
    header = stateHeader(prefix, whole, what);
  } catch {
    header = { lineage: undefined, serial: undefined, version: undefined, empty: true };
  }
  return { etag: meta.etag, size, header, md5, meta, prefix, whole };
}
