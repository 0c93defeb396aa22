/**
 * Digest-checked reads (docs/design.md §5): the state as the lock table's digest says it is,
 * following the commit point — a torn write committed, a late write passed over, a store
 * behind a recent write waited for — and how a workspace's state stands without repairing.
 */
import { isObjstateError, ObjstateError } from "../errors.js";
import type { ObjectMeta } from "../store/types.js";
import { hasherFor, md5Hex } from "../util/md5.js";
import { takeShared } from "../util/shared-memory.js";
import { generationOf, judge } from "./commit.js";
import type { BackendContext } from "./context.js";
import { committedMissing, decodeMeta, META, normalizeDigest, provenComplete, tornWrite, uncommittedUnderLock, workspaceFlag } from "./fencing.js";
import { readStateVersionById } from "./history.js";
import type { ReadOptions } from "./options.js";
import { adoptTorn, committedVersion, restoreCommitted } from "./reconcile.js";
import type { DigestStatus, StateRead } from "./results.js";

/** What a reader that passes the bytes on as they arrive is told (stream.ts). */
export interface ReadHooks {
  /**
   * At most once per attempt, before the bytes are checked (usually before most of them
   * arrive): the digest recorded for the state and the store's own MD5 record of the object
   * agree on this MD5, so the bytes will very likely match it.
   */
  vouched(md5: string): void;
  /** The buffer being filled, and how many bytes of it arrived (a new attempt: a new buffer). */
  data(body: Buffer, filled: number): void;
  /** An attempt's bytes did not match the digest, before the read looks again (or fails). */
  mismatch(): void;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The workspace's state and its ETag, or null when it has none. With a lock table, the read
 * follows the committed digest:
 * - a stored write that was never committed, with nothing committed since (its writer
 *   stopped between the two steps), is committed by the read (reported to `onRepair`), under
 *   a short lock of its own when the lock is free, or while the lock is held under another
 *   ID than that write's; while its own writer holds the lock, the committed version is
 *   read instead (on a bucket that keeps versions), else the read waits, then fails with
 *   `TORN_WRITE`;
 * - a write that another commit overtook is passed over: the newest of the last versions
 *   that is the committed state is read (and written again as the newest, when the lock
 *   is free); `COMMITTED_VERSION_MISSING` when the bucket no longer has it;
 * - anything else that does not match is retried (eventual consistency), then fails with
 *   `DIGEST_MISMATCH` (or `TORN_WRITE` for an older objstate's unfinished write).
 * A read-only connection repairs nothing.
 */
export async function readCommitted(ctx: BackendContext, workspace: string, options: ReadOptions, hooks?: ReadHooks): Promise<StateRead | null> {
  const path = ctx.statePath(workspace);
  const locks = ctx.table;
  const found = (obj: Fetched | null, md5?: string): StateRead | null => (obj === null ? null : { body: obj.body, etag: obj.meta.etag, md5 });
  if (locks === undefined) return found(await fetchState(ctx, path, options, hooks, undefined));
  const digestId = ctx.digestId(workspace);
  const deadline = Date.now() + ctx.digestRetry.timeoutMs;
  for (;;) {
    const recorded = locks.getDigest(digestId);
    const [obj, item] = await Promise.all([
      fetchState(
        ctx,
        path,
        options,
        hooks,
        recorded.then((i) => normalizeDigest(i?.digest)),
      ),
      recorded,
    ]);
    const expected = normalizeDigest(item?.digest);
    if (expected === undefined) return found(obj);
    // The driver's MD5 may come from the ETag or objstate's metadata: a shortcut only when it
    // agrees with the digest; otherwise the bytes are hashed before anything is declared.
    if (obj !== null && obj.md5 === expected) return found(obj, expected);
    const actual = obj === null ? "" : obj.hashed && obj.md5 !== undefined ? obj.md5 : md5Hex(obj.body);
    if (actual === expected) return found(obj, expected);
    hooks?.mismatch();
    // The lock of a stored write that is not committed yet while its writer holds the lock.
    let pending: string | undefined;
    let held = false;
    const verdict = obj === null ? "foreign" : judge(obj.meta, actual, item);
    if (obj !== null && verdict === "torn") {
      // A commit that cannot be made now (its writer is inside the same commit, holding the
      // item) leaves the write in doubt: the committed state stands until it settles.
      const adopted = await adoptTorn(ctx, workspace, obj.meta, actual, item, undefined).catch((e: unknown) => {
        if (isObjstateError(e, "DIGEST_WRITE_FAILED")) return "held" as const;
        throw e;
      });
      if (adopted === "moved") continue;
      if (adopted !== "held") return found(obj, actual);
      // Its writer may commit it any moment; until then the committed state stands.
      const committed = await committedVersion(ctx, path, expected);
      if (committed !== null) return { body: committed.body, etag: obj.meta.etag, md5: expected };
      pending = ctx.readOnly ? undefined : (decodeMeta(obj.meta.metadata?.[META.lockId]) ?? "");
      held = true;
    } else if (obj !== null && verdict === "superseded") {
      // A write that never happened (a writer that lost its lock, arriving late): readers follow the table.
      const committed = await committedVersion(ctx, path, expected);
      if (committed === null) throw committedMissing(ctx.describe(workspace), workspace, obj.meta, expected);
      const etag = await restoreCommitted(ctx, workspace, committed, obj.meta, expected, generationOf(item));
      return { body: committed.body, etag: etag ?? obj.meta.etag, md5: expected };
    } else if (obj !== null && provenComplete(obj.meta, actual) && (await locks.get(ctx.lockId(workspace), "Info")) === null) {
      // An older objstate's write (no intent recorded). A writer commits before it releases
      // its lock, so the digest read now, after the lock was seen free, is final for every
      // write that finished: only when it is still the one read with the object was this
      // write torn. (Read together with the object, it may have been a finishing writer's
      // previous digest.)
      const now = normalizeDigest((await locks.getDigest(digestId))?.digest);
      if (now === actual) return found(obj, actual);
      if (now !== expected) continue;
      throw tornWrite(ctx.describe(workspace), workspace, obj.meta, expected, actual, digestId);
    }
    if (Date.now() + ctx.digestRetry.intervalMs > deadline) {
      if (obj !== null && held) throw uncommittedUnderLock(ctx.describe(workspace), workspace, obj.meta, pending);
      throw new ObjstateError(
        "DIGEST_MISMATCH",
        `the state at ${ctx.describe(workspace)} does not match its digest: the lock table says ${expected}, the ${obj === null ? "object is missing" : `object's MD5 is ${actual}`}. ` +
          `Either the object store has not caught up with a recent write (try again), or the state was changed outside objstate. ` +
          `If the stored state is the one you want, run \`objstate state repair${workspaceFlag(workspace)} --force\` to record its digest.`,
        { details: { expected, actual, digestId, path } },
      );
    }
    await sleep(ctx.digestRetry.intervalMs);
  }
}

/** One read of the stored state: its bytes, and their MD5 when the store vouched for it or the read hashed them. */
interface Fetched {
  readonly body: Buffer;
  readonly meta: ObjectMeta;
  readonly md5: string | undefined;
  /** `md5` was taken of these very bytes (not the store's record). */
  readonly hashed: boolean;
}

/** Bodies from this size up go into shared memory when the reader asks (`ReadOptions.sharedBody`). */
const SHARED_BODY_MIN = 1024 * 1024;

/**
 * Read the stored state into one buffer of its size, shown to `onData` and `hooks` as it
 * fills. `digest` (the lock table's, when there is one) settles beside the read: when it
 * agrees with the store's record, `hooks` are told before the bytes arrive. Bytes the store
 * vouches for no MD5 of are hashed as they arrive.
 */
async function fetchState(
  ctx: BackendContext,
  path: string,
  options: ReadOptions,
  hooks: ReadHooks | undefined,
  digest: Promise<string | undefined> | undefined,
): Promise<Fetched | null> {
  const got = await ctx.store.getStream(path);
  if (got === null) return null;
  const { size } = got.meta;
  const record = got.recordedMd5;
  const vouching =
    hooks === undefined || record === undefined || digest === undefined
      ? undefined
      : digest.then(
          (d) => (d === record ? hooks.vouched(record) : undefined),
          () => undefined, // the read itself reports the table's failure
        );
  const hash = digest !== undefined && !got.proven ? hasherFor(size) : undefined;
  const watched = options.onData !== undefined || hooks !== undefined;
  let body: Buffer | undefined;
  let filled = 0;
  try {
    for await (const chunk of got.body) {
      if (filled + chunk.length > size) throw new ObjstateError("STORE_ERROR", `the object store sent more than the ${size} bytes of ${path}`);
      // A body that comes whole (the embedded store's) is kept as it is; others fill one buffer.
      if (body === undefined && chunk.length === size && options.sharedBody !== true) body = Buffer.from(chunk.buffer, chunk.byteOffset, size);
      else {
        body ??= options.sharedBody === true && size >= SHARED_BODY_MIN ? takeShared(size) : Buffer.allocUnsafe(size);
        body.set(chunk, filled);
      }
      filled += chunk.length;
      if (watched) {
        options.onData?.(body, filled);
        hooks?.data(body, filled);
      }
      await hash?.write(chunk);
    }
  } catch (e) {
    await Promise.resolve(hash?.digest()).catch(() => undefined); // ends the worker's job
    throw e;
  }
  if (filled !== size) throw new ObjstateError("STORE_ERROR", `the object store sent ${filled} of the ${size} bytes of ${path}`);
  await vouching;
  const hashed = await hash?.digest();
  return { body: body ?? Buffer.alloc(0), meta: got.meta, md5: got.proven ? record : hashed, hashed: hashed !== undefined };
}

/**
 * The bytes of one version of the workspace's state, exactly as stored. The digest is
 * checked only when the version is the current one: then the whole read with its retries and
 * repairs, which fails unless the current version is committed, or a complete objstate write
 * that never committed (a version like any other: these are its bytes).
 */
export async function readVersionChecked(ctx: BackendContext, workspace: string, versionId: string): Promise<Buffer> {
  const got = await readStateVersionById(ctx.versioned(workspace), versionId);
  const locks = ctx.table;
  if (!got.isLatest || locks === undefined) return got.body;
  const expected = normalizeDigest((await locks.getDigest(ctx.digestId(workspace)))?.digest);
  if (expected === undefined || expected === md5Hex(got.body)) return got.body;
  await readCommitted(ctx, workspace, {});
  return got.body;
}

/**
 * How a workspace's state stands against its digest, without retrying or repairing:
 * `no-state`, `no-digest` (nothing recorded: nothing to check), `match`, `torn` (a complete
 * objstate write that was never committed, and nothing was committed since: the next read
 * commits it once no writer of it holds the lock, as does `state repair`), `superseded` (the
 * newest version is a write that never committed; reads serve the committed one) or
 * `mismatch`.
 */
export async function digestStatusOf(ctx: BackendContext, workspace: string): Promise<DigestStatus> {
  const locks = ctx.table;
  const [obj, item] = await Promise.all([
    ctx.store.get(ctx.statePath(workspace), { md5: true }),
    locks === undefined ? Promise.resolve(null) : locks.getDigest(ctx.digestId(workspace)),
  ]);
  const recorded = normalizeDigest(item?.digest);
  if (recorded === undefined) return obj === null ? { status: "no-state" } : { status: "no-digest", size: obj.body.length };
  if (obj === null) return { status: "mismatch", recorded, actual: undefined };
  const actual = obj.md5 === recorded ? recorded : md5Hex(obj.body);
  if (actual === recorded) return { status: "match", recorded, size: obj.body.length };
  const verdict = judge(obj.meta, actual, item);
  if (verdict === "torn" || verdict === "superseded") return { status: verdict, recorded, actual, size: obj.body.length };
  // An older objstate's write (no intent recorded): torn only once no writer holds the lock and the digest, read after that, is still the old
  // one (see readCommitted); a writer still at work is a mismatch of the moment.
  const torn =
    provenComplete(obj.meta, actual) &&
    locks !== undefined &&
    (await locks.get(ctx.lockId(workspace), "Info")) === null &&
    normalizeDigest(await locks.get(ctx.digestId(workspace), "Digest")) === recorded;
  return { status: torn ? "torn" : "mismatch", recorded, actual, size: obj.body.length };
}
