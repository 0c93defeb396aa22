/**
 * The requests around the commit point (docs/design.md §5, decision 012): the commit itself,
 * and what reads and writes do when the stored object is not the committed state — commit a
 * torn write, find the committed version behind a late one, write it again. commit.ts
 * judges; this module asks the store and the table.
 */
import { isObjstateError, ObjstateError } from "../errors.js";
import type { DigestItem, LockTableDriver } from "../lock/types.js";
import type { GetResult, ObjectMeta } from "../store/types.js";
import { md5Hex } from "../util/md5.js";
import { generationOf } from "./commit.js";
import type { BackendContext } from "./context.js";
import { conflict, decodeMeta, encodeMeta, META, normalizeDigest, plainMd5, recordedMd5, workspaceFlag } from "./fencing.js";
import type { LockHandle } from "./lease.js";

/**
 * Largest stored state read whole to learn its MD5 (same-content check, a lost race): a
 * larger one is judged by its MD5 record, so a write never pulls a huge object into memory.
 */
const HASH_READ_MAX = 256 * 1024 * 1024;

/**
 * How many of the newest versions a read looks through for the committed state, behind
 * writes that never committed (each a late writer that lost its lock: there are rarely more
 * than one or two).
 */
const LOOKBACK_VERSIONS = 10;

/**
 * The commit point of a write: one conditional update of the digest item, made only while
 * it is still as `seen`. A refusal means another write was committed after this one started:
 * this one did not happen (`STATE_CONFLICT`), whatever the store holds.
 */
export async function commit(
  ctx: BackendContext,
  workspace: string,
  locks: LockTableDriver,
  seen: DigestItem | null,
  digest: string,
  lockId: string | undefined,
  set?: Readonly<Record<string, string>>,
): Promise<DigestItem> {
  const generation = generationOf(seen) + 1;
  let ok: boolean;
  try {
    ok = await locks.commitDigest(ctx.digestId(workspace), seen, { digest, generation, lockId, set });
  } catch (e) {
    throw new ObjstateError(
      "DIGEST_WRITE_FAILED",
      `the state at ${ctx.describe(workspace)} was stored, but its commit (the digest in the lock table) could not be recorded (${(e as Error).message}): the write has not happened yet. ` +
        `Send the same state again: that completes it (so does the next read, once the lock is released, or \`objstate state repair${workspaceFlag(workspace)}\`)`,
      { cause: e, details: { written: true } },
    );
  }
  if (!ok) {
    throw conflict(
      `another write was committed to ${ctx.describe(workspace)} after this one started (the lock table's digest is no longer generation ${generationOf(seen)}, ${normalizeDigest(seen?.digest) ?? "none"}), so this write did not happen: nothing of it counts, and what it stored is a version nobody reads. Pull the state, reapply the change and push again.`,
      { details: { generation: generationOf(seen), digest: normalizeDigest(seen?.digest) ?? null } },
    );
  }
  return { digest, generation, lockId };
}

/**
 * Commit a torn write (stored, never committed) with the very update its writer would have
 * made. Under the caller's lock (`callerLockId`); or when the lock is held under another ID
 * than the torn write's (its writer lost the lock: none of its writes is at work, and the
 * holder may well be the caller, which a GET does not say); or under a short lock of its
 * own when the lock is free (or expired). Never while the torn write's own lock is held:
 * its writer may be committing it right now (`held`). `moved`: another commit came first.
 */
export async function adoptTorn(
  ctx: BackendContext,
  workspace: string,
  meta: ObjectMeta,
  actual: string,
  seen: DigestItem | null,
  callerLockId: string | undefined,
): Promise<DigestItem | "held" | "moved"> {
  const locks = ctx.table;
  if (locks === undefined) return "held";
  const writerLock = decodeMeta(meta.metadata?.[META.lockId]);
  let own: LockHandle | undefined;
  if (callerLockId === undefined) {
    if (ctx.readOnly) return "held";
    const holder = await ctx.locking.info(workspace);
    if (holder === null || holder.ID === writerLock) {
      try {
        own = await ctx.acquire(workspace, { operation: "adopt an uncommitted write" });
      } catch (e) {
        if (isObjstateError(e, "STATE_LOCKED")) return "held";
        throw e;
      }
    }
  }
  try {
    const previous = normalizeDigest(seen?.digest) ?? null;
    const note = JSON.stringify({ at: new Date().toISOString(), who: ctx.who, previous, forced: false, adopted: writerLock ?? null });
    let next: DigestItem;
    try {
      next = await commit(ctx, workspace, locks, seen, actual, writerLock, { Repaired: note });
    } catch (e) {
      if (isObjstateError(e, "STATE_CONFLICT")) return "moved";
      throw e;
    }
    const serial = serialOf(meta);
    const by = decodeMeta(meta.metadata?.[META.who]);
    ctx.reportRepair({
      workspace,
      action: "adopted",
      md5: actual,
      generation: next.generation,
      serial,
      lockId: writerLock,
      message: `committed the last write to ${ctx.describe(workspace)} (serial ${serial ?? "?"}${by === undefined ? "" : ` by ${by}`}${writerLock === undefined ? "" : `, lock ${writerLock}`}): it was stored, but its writer stopped before committing it, and nothing was committed since`,
    });
    return next;
  } finally {
    if (own !== undefined) await own.release();
  }
}

/**
 * The newest of the last {@link LOOKBACK_VERSIONS} versions whose bytes are `digest` (the
 * committed state, behind writes that never committed), bytes checked; null when there is
 * none (a bucket without versions, or one that no longer keeps it).
 */
export async function committedVersion(ctx: BackendContext, path: string, digest: string): Promise<GetResult | null> {
  let looked = 0;
  try {
    for await (const v of ctx.store.listVersions(path, { pageSize: LOOKBACK_VERSIONS + 1 })) {
      if (++looked > LOOKBACK_VERSIONS + 1) break;
      if (v.deleteMarker) continue;
      // A plain-MD5 ETag in the listing says it at once; otherwise (another version, or an
      // ETag that is not an MD5: KMS) objstate's record of the write, from a HEAD.
      if (plainMd5({ size: v.size, etag: v.etag }) !== digest) {
        const meta = await ctx.store.head(path, { versionId: v.versionId });
        if (meta === null || (recordedMd5(meta) ?? plainMd5(meta)) !== digest) continue;
      }
      const got = await ctx.store.get(path, { versionId: v.versionId });
      if (got !== null && md5Hex(got.body) === digest) return got;
    }
  } catch (e) {
    // A store or bucket without version listings has no older versions to offer.
    if (isObjstateError(e) && (e.code.startsWith("ENDPOINT_") || e.code === "CREDENTIALS_MISSING")) throw e;
    return null;
  }
  return null;
}

/**
 * Write the committed state again as the newest version, over a write that never committed,
 * so that every reader of the bucket (the tool's own S3 backend compares the current object
 * with `Digest`) sees them agree. Only under a short lock of its own while the lock is free:
 * a holder's next write does the same. Best effort; returns the new ETag when it wrote.
 */
export async function restoreCommitted(
  ctx: BackendContext,
  workspace: string,
  committed: GetResult,
  over: ObjectMeta,
  digest: string,
  generation: number,
  evenIfLocked = false,
): Promise<string | undefined> {
  if (ctx.readOnly || !ctx.locking.enabled) return undefined;
  let own: LockHandle | undefined;
  try {
    own = await ctx.acquire(workspace, { operation: "restore the committed state" });
  } catch (e) {
    if (!evenIfLocked || !isObjstateError(e, "STATE_LOCKED")) return undefined;
  }
  try {
    await writeCommittedAgain(ctx, workspace, committed, over, digest, own?.id);
    const serial = serialOf(committed.meta);
    const by = decodeMeta(over.metadata?.[META.who]);
    ctx.reportRepair({
      workspace,
      action: "restored",
      md5: digest,
      generation,
      serial,
      lockId: decodeMeta(over.metadata?.[META.lockId]),
      message: `the newest version of ${ctx.describe(workspace)} (serial ${serialOf(over) ?? "?"}${by === undefined ? "" : ` by ${by}`}) was a write that never committed (another write was committed after it started); wrote the committed state (serial ${serial ?? "?"}) again over it`,
    });
    return (await ctx.store.head(ctx.statePath(workspace)))?.etag;
  } catch {
    return undefined;
  } finally {
    await own?.release().catch(() => undefined);
  }
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
    if (version !== null) await restoreCommitted(ctx, workspace, version, current, committed, generationOf(item), true);
  } catch {
    // Best effort: the refusal is the answer, and readers pass over the late write.
  }
}

/**
 * PUT the committed version's bytes again, with its record (so it judges as committed),
 * conditional on the write it goes over. The digest is already theirs: nothing to commit.
 */
export async function writeCommittedAgain(
  ctx: BackendContext,
  workspace: string,
  committed: GetResult,
  over: ObjectMeta,
  digest: string,
  lockId: string | undefined,
): Promise<void> {
  const metadata: Record<string, string> = {
    ...(committed.meta.metadata ?? {}),
    [META.md5]: digest,
    [META.operation]: "restore",
    [META.who]: encodeMeta(ctx.who),
  };
  if (lockId !== undefined) metadata[META.lockId] = encodeMeta(lockId);
  if (committed.meta.versionId !== undefined) metadata[META.sourceVersion] = encodeMeta(committed.meta.versionId);
  await ctx.store.put(ctx.statePath(workspace), committed.body, {
    ...ctx.putOptions(),
    md5: digest,
    metadata,
    ...(over.etag === undefined ? {} : { ifMatch: over.etag }),
  });
}

/**
 * The stored object's metadata and MD5 without holding a large object in memory: up to
 * {@link HASH_READ_MAX} bytes are read and hashed (the bytes themselves are the truth);
 * a larger object's MD5 is its record (the store's plain MD5 ETag, else objstate's
 * metadata), undefined when it has none. `proven` says the MD5 comes from the bytes (or
 * from the store's own ETag, which it computed from them).
 */
export async function storedDigest(ctx: BackendContext, path: string): Promise<{ meta: ObjectMeta; md5: string | undefined; proven: boolean } | null> {
  const obj = await ctx.store.get(path, { maxBytes: HASH_READ_MAX });
  if (obj === null) return null;
  if (obj.body.length >= obj.meta.size) return { meta: obj.meta, md5: md5Hex(obj.body), proven: true };
  const etag = plainMd5(obj.meta);
  return { meta: obj.meta, md5: etag ?? recordedMd5(obj.meta), proven: etag !== undefined };
}

/** The serial objstate recorded with a write, when it did. */
export function serialOf(meta: ObjectMeta): number | undefined {
  const n = Number(meta.metadata?.[META.serial]);
  return meta.metadata?.[META.serial] !== undefined && Number.isSafeInteger(n) ? n : undefined;
}
