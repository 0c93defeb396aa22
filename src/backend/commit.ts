/**
 * The commit point of a state write (docs/design.md §5, decision 012): the object is stored recording the generation it intends (the digest
 * item's, plus one) and the digest it replaces, then committed by one conditional update of the digest item. Only a committed write happened.
 */
import { isObjstateError, ObjstateError } from "../errors.js";
import type { DigestItem, LockTableDriver } from "../lock/types.js";
import type { GetResult, ObjectMeta } from "../store/types.js";
import { md5Hex } from "../util/md5.js";
import type { BackendContext } from "./context.js";
import { workspaceFlag } from "./locks/lock-info.js";
import { conflict, encodeMeta, META, normalizeDigest, plainMd5, provenComplete, recordedMd5 } from "./meta.js";

/** Largest stored state read whole to learn its MD5 (same-content check, a lost race); a larger one is judged by its record. */
const HASH_READ_MAX = 256 * 1024 * 1024;

/** {@link META.parent} of a write that replaced no digest. */
export const NO_PARENT = "none";

/**
 * How a stored object stands against the committed digest: `committed`; `torn` (a complete objstate write whose commit would still succeed);
 * `superseded` (overtaken by another commit: it never happened); `foreign` (another tool's or an older objstate's, or bytes unlike their record).
 */
export type Verdict = "committed" | "torn" | "superseded" | "foreign";

export function generationOf(item: DigestItem | null): number {
  return item?.generation ?? 0;
}

/** The metadata a write records of the commit it intends, given the item it saw. */
export function intentMetadata(seen: DigestItem | null): Record<string, string> {
  return { [META.generation]: String(generationOf(seen) + 1), [META.parent]: normalizeDigest(seen?.digest) ?? NO_PARENT };
}

/** The generation a stored write meant to commit and the digest it replaces (normalized, or {@link NO_PARENT}); undefined when unrecorded. */
export function intentOf(meta: ObjectMeta): { generation: number; parent: string } | undefined {
  const m = meta.metadata;
  const g = Number(m?.[META.generation]);
  const parent = m?.[META.parent]?.toLowerCase();
  if (!Number.isSafeInteger(g) || g < 1 || parent === undefined || (parent !== NO_PARENT && !/^[0-9a-f]{32}$/.test(parent))) return undefined;
  return { generation: g, parent };
}

/** Judge a stored object (`actual`: the MD5 of its bytes, computed or proven) against the digest item. */
export function judge(meta: ObjectMeta, actual: string, item: DigestItem | null): Verdict {
  const committed = normalizeDigest(item?.digest);
  if (actual === committed) return "committed";
  const intent = intentOf(meta);
  if (intent === undefined || !provenComplete(meta, actual)) return "foreign";
  // Exactly the commit its writer would make now: the generation it saw and the digest it saw.
  if (intent.generation === generationOf(item) + 1 && intent.parent === (committed ?? NO_PARENT)) return "torn";
  return "superseded";
}

/** What {@link commit} sets besides the digest, and how long it waits for the item. */
export interface CommitExtra {
  /** Other attributes to set (a repair's note). */
  readonly set?: Readonly<Record<string, string>> | undefined;
  /** Wait at most this long for an item another commit holds (the embedded table): `STORE_BUSY` after. */
  readonly claimWaitMs?: number | undefined;
}

/** One conditional update of the digest item while it is still as `seen`; a refusal means this write did not happen (`STATE_CONFLICT`). */
export async function commit(
  ctx: BackendContext,
  workspace: string,
  locks: LockTableDriver,
  seen: DigestItem | null,
  digest: string,
  lockId: string | undefined,
  extra: CommitExtra = {},
): Promise<DigestItem> {
  const generation = generationOf(seen) + 1;
  let ok: boolean;
  try {
    ok = await locks.commitDigest(ctx.digestId(workspace), seen, { digest, generation, lockId, set: extra.set }, { claimWaitMs: extra.claimWaitMs });
  } catch (e) {
    if (extra.claimWaitMs !== undefined && isObjstateError(e, "STORE_BUSY")) throw e;
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

/** PUT the committed version's bytes again with its record (so it judges as committed), conditional on the write it goes over. */
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

/** The stored object's metadata and MD5, hashing at most {@link HASH_READ_MAX} bytes (else its record); `proven`: from the bytes or the store's ETag. */
export async function storedDigest(ctx: BackendContext, path: string): Promise<{ meta: ObjectMeta; md5: string | undefined; proven: boolean } | null> {
  const obj = await ctx.store.get(path, { maxBytes: HASH_READ_MAX });
  if (obj === null) return null;
  if (obj.body.length >= obj.meta.size) return { meta: obj.meta, md5: md5Hex(obj.body), proven: true };
  const etag = plainMd5(obj.meta);
  return { meta: obj.meta, md5: etag ?? recordedMd5(obj.meta), proven: etag !== undefined };
}
