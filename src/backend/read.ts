/** The read flow (docs/design.md §5): the state as the lock table's digest says it is, how it stands, and `state repair`. */
import { setTimeout as sleep } from "node:timers/promises";
import { isObjstateError, ObjstateError } from "../errors.js";
import type { DigestItem, LockTableDriver } from "../lock/types.js";
import { listPrefixes } from "../config/layout.js";
import type { GetResult, Leftover, ObjectMeta } from "../store/types.js";
import { readWhole } from "../store/read-whole.js";
import { StreamedRead, type ReadHooks, type StateSink, type StreamOptions } from "../fast/streamed-read.js";
import { md5Hex } from "../util/md5.js";
import { commit, generationOf, judge, writeCommittedAgain } from "./commit.js";
import type { BackendContext } from "./context.js";
import type { LockHandle } from "./locks/lease.js";
import { workspaceFlag } from "./locks/lock-info.js";
import { decodeMeta, META, normalizeDigest, plainMd5, provenComplete, recordedMd5, serialOf, writeOf } from "./meta.js";
import type { DigestStatus, ReadOptions, RepairOptions, RepairReport, StateRead } from "./types.js";
import { LAST_WRITE_ATTR, lastWriteRecord } from "./workspaces.js";

/** How many of the newest versions a read looks through for the committed state, behind writes that never committed. */
const LOOKBACK_VERSIONS = 10;

/** How long a read waits for a digest item another commit holds before it reads the committed state instead. */
const READER_CLAIM_WAIT_MS = 1000;

/**
 * The state and its ETag, or null. With a lock table it follows the digest: a torn write is committed (or, while its writer holds the
 * lock, the committed version read); a superseded one passed over for the committed version (written back when the lock is free);
 * anything else retried, then `DIGEST_MISMATCH`. A read-only connection repairs nothing.
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
    const digest = recorded.then((i) => normalizeDigest(i?.digest));
    const [obj, item] = await Promise.all([fetchState(ctx, path, options, hooks, digest), recorded]);
    const expected = normalizeDigest(item?.digest);
    if (expected === undefined) return found(obj);
    // The driver's MD5 (ETag or record) is a shortcut only when it agrees with the digest; else the bytes are hashed.
    if (obj !== null && obj.md5 === expected) return found(obj, expected);
    const actual = obj === null ? "" : obj.hashed && obj.md5 !== undefined ? obj.md5 : md5Hex(obj.body);
    if (actual === expected) return found(obj, expected);
    hooks?.mismatch();
    // The lock of a stored write that is not committed yet while its writer holds the lock.
    let pending: string | undefined;
    let held = false;
    const verdict = obj === null ? "foreign" : judge(obj.meta, actual, item);
    if (obj !== null && verdict === "torn") {
      const adopted = await adoptTorn(ctx, workspace, obj.meta, actual, item, undefined);
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
      // An older objstate's write (no intent). A writer commits before it releases its lock, so a digest read after the lock
      // was seen free is final: only when it is still the one read with the object was this write torn.
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

/** `streamed`: every byte went to the sink (end the answer); otherwise nothing did, and `state` is the read's result. */
export type StreamResult =
  { readonly streamed: true; readonly size: number; readonly md5: string } | { readonly streamed: false; readonly state: StateRead | null };

/** The digest-checked read streamed to `sink`; bytes that changed or did not match once they went out are `DIGEST_MISMATCH`. */
export async function streamState(ctx: BackendContext, workspace: string, sink: StateSink, options: StreamOptions = {}): Promise<StreamResult> {
  const out = new StreamedRead(sink, options);
  let found: StateRead | null;
  try {
    found = await readCommitted(ctx, workspace, {}, out);
  } catch (e) {
    out.abandon();
    throw e;
  }
  if (!out.started) return { streamed: false, state: found };
  const md5 = out.finish(found);
  if (md5 === undefined) {
    throw new ObjstateError(
      "DIGEST_MISMATCH",
      `the state of workspace ${workspace} changed or did not match its digest while it was being sent; the answer was cut off: read it again`,
      { details: { workspace } },
    );
  }
  return { streamed: true, size: (found as StateRead).body.length, md5 };
}

/** One read of the stored state: its bytes, and their MD5 when the store vouched for it or the read hashed them. */
interface Fetched {
  readonly body: Buffer;
  readonly meta: ObjectMeta;
  readonly md5: string | undefined;
  /** `md5` was taken of these very bytes (not the store's record). */
  readonly hashed: boolean;
}

/** Read the stored state into one buffer, shown to `onData` and `hooks`; `hooks` hear early when `digest` is the store's record. */
async function fetchState(
  ctx: BackendContext,
  path: string,
  options: ReadOptions,
  hooks: ReadHooks | undefined,
  digest: Promise<string | undefined> | undefined,
): Promise<Fetched | null> {
  const got = await ctx.store.getStream(path);
  if (got === null) return null;
  const record = got.recordedMd5;
  const vouching =
    hooks === undefined || record === undefined || digest === undefined
      ? undefined
      : digest.then(
          (d) => (d === record ? hooks.vouched(record) : undefined),
          () => undefined, // the read itself reports the table's failure
        );
  const { body, hashed } = await readWhole(got, path, { ...options, hooks, hash: digest !== undefined && !got.proven });
  await vouching;
  return { body, meta: got.meta, md5: got.proven ? record : hashed, hashed: hashed !== undefined };
}

/** How a state stands against its digest, without retrying or repairing (`torn`: the next read or `state repair` commits it). */
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
  // An older objstate's write: torn only when no writer holds the lock and the digest is still the old one (see readCommitted).
  const torn =
    provenComplete(obj.meta, actual) &&
    locks !== undefined &&
    (await locks.get(ctx.lockId(workspace), "Info")) === null &&
    normalizeDigest(await locks.get(ctx.digestId(workspace), "Digest")) === recorded;
  return { status: torn ? "torn" : "mismatch", recorded, actual, size: obj.body.length };
}

/**
 * Commit a torn write with the update its writer would have made: under the caller's lock, while another ID holds the lock, or under
 * a short lock of its own. Never while its own lock is held (`held`). `moved`: another commit came first.
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
      // A reader does not wait long for an item another commit holds (its writer may be frozen inside it).
      next = await commit(ctx, workspace, locks, seen, actual, writerLock, {
        set: { Repaired: note, [LAST_WRITE_ATTR]: lastWriteRecord(actual, meta.metadata ?? {}) },
        claimWaitMs: callerLockId === undefined ? READER_CLAIM_WAIT_MS : undefined,
      });
    } catch (e) {
      if (isObjstateError(e, "STATE_CONFLICT")) return "moved";
      if (isObjstateError(e, "STORE_BUSY")) return "held";
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

/** The newest of the last {@link LOOKBACK_VERSIONS} versions whose bytes are `digest` (checked); null when there is none. */
export async function committedVersion(ctx: BackendContext, path: string, digest: string): Promise<GetResult | null> {
  let looked = 0;
  try {
    for await (const v of ctx.store.listVersions(path, { pageSize: LOOKBACK_VERSIONS + 1 })) {
      if (++looked > LOOKBACK_VERSIONS + 1) break;
      if (v.deleteMarker) continue;
      // A plain-MD5 ETag in the listing says it at once; otherwise objstate's record, from a HEAD.
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
 * Write the committed state again over a write that never committed, so every reader (the tool's too) sees it agree with the digest:
 * under a short lock of its own (`evenIfLocked`: else without one, conditional on the late write). Best effort: the new ETag.
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

/** Leftovers younger than this may belong to a writer that is still at work. */
const LEFTOVER_MIN_AGE_MS = 60 * 60 * 1000;

/** Repair a workspace under the caller's lock `lockId` (see `ObjectStoreBackend.repairState`). */
export async function repairUnderLock(ctx: BackendContext, workspace: string, lockId: string | undefined, options: RepairOptions): Promise<RepairReport> {
  const locks = ctx.table;
  const digest = locks === undefined ? { action: "no-lock-table" as const } : await repairDigest(ctx, workspace, locks, options.force === true, lockId);
  const minAge = options.leftoverMinAgeMs ?? LEFTOVER_MIN_AGE_MS;
  const now = (options.now ?? Date.now)();
  const removed: Leftover[] = [];
  const kept: Leftover[] = [];
  for (const item of await leftoversOf(ctx)) {
    if (item.since !== undefined && now - item.since.getTime() >= minAge) {
      await ctx.store.removeLeftover(item);
      removed.push(item);
    } else kept.push(item);
  }
  return { ...digest, leftoversRemoved: removed, leftoversKept: kept };
}

async function repairDigest(
  ctx: BackendContext,
  workspace: string,
  locks: LockTableDriver,
  force: boolean,
  lockId: string | undefined,
): Promise<Omit<RepairReport, "leftoversRemoved" | "leftoversKept">> {
  const digestId = ctx.digestId(workspace);
  const path = ctx.statePath(workspace);
  const [obj, item] = await Promise.all([ctx.store.get(path, { md5: true }), locks.getDigest(digestId)]);
  const recorded = normalizeDigest(item?.digest);
  if (obj === null) {
    if (recorded === undefined) return { action: "no-state" };
    await locks.delete(digestId);
    return { action: "removed-orphan-digest", previous: recorded };
  }
  const actual = md5Hex(obj.body);
  if (recorded === actual) return { action: "ok", md5: actual };
  const verdict = judge(obj.meta, actual, item);
  if (verdict === "superseded" && recorded !== undefined) {
    // The committed state is older than the newest version: written again, unless the store lost it (then only --force).
    const committed = await committedVersion(ctx, path, recorded);
    if (committed !== null) {
      await writeCommittedAgain(ctx, workspace, committed, obj.meta, recorded, lockId);
      return { action: "restored-committed", md5: recorded };
    }
    if (!force) throw committedMissing(ctx.describe(workspace), workspace, obj.meta, recorded);
  } else if (!force && !provenComplete(obj.meta, actual)) {
    throw new ObjstateError(
      "REPAIR_REFUSED",
      `the state at ${ctx.describe(workspace)} does not match its digest (recorded ${recorded ?? "none"}, object ${actual}) and does not prove it is a complete write by objstate (no objstate record of the write, or that record's MD5 does not match the bytes). ` +
        `Inspect it first; if it is the state you want, run \`objstate state repair${workspaceFlag(workspace)} --force\` to record its digest.`,
      { details: { recorded, actual } },
    );
  }
  const note = JSON.stringify({ at: new Date().toISOString(), who: ctx.who, previous: recorded ?? null, forced: force });
  const set = { Repaired: note, [LAST_WRITE_ATTR]: lastWriteRecord(actual, obj.meta.metadata ?? {}) };
  await commit(ctx, workspace, locks, item, actual, decodeMeta(obj.meta.metadata?.[META.lockId]), { set });
  return { action: "recorded-digest", md5: actual, ...(recorded === undefined ? {} : { previous: recorded }) };
}

/** Leftovers of writers of this backend's states (incomplete multipart uploads, temp files) under its prefixes, oldest first. */
export async function leftoversOf(ctx: BackendContext): Promise<Leftover[]> {
  const prefixes = listPrefixes(ctx.layout);
  if (prefixes.length === 1) return ctx.store.listLeftovers(prefixes[0] as string);
  // A leftover whose key cannot be told is listed under every prefix: once is enough.
  const seen = new Map<string, Leftover>();
  for (const prefix of prefixes) for (const l of await ctx.store.listLeftovers(prefix)) seen.set(`${l.kind} ${l.key ?? ""} ${l.id}`, l);
  return [...seen.values()].sort((a, b) => (a.since?.getTime() ?? 0) - (b.since?.getTime() ?? 0));
}

function tornWrite(where: string, workspace: string, meta: ObjectMeta, expected: string, actual: string, digestId: string): ObjstateError {
  const m = meta.metadata ?? {};
  return new ObjstateError(
    "TORN_WRITE",
    `the last write did not finish recording its digest: the state at ${where} is a complete write by objstate (${writeOf(meta)}), but the lock table still has the digest of an earlier state (${expected}; the object's is ${actual}). ` +
      `Run \`objstate state repair${workspaceFlag(workspace)}\` to record it.`,
    { details: { expected, actual, digestId, serial: m[META.serial], lockId: m[META.lockId] } },
  );
}

/** `COMMITTED_VERSION_MISSING`: the stored object never committed, and the committed state is not among the versions the bucket keeps. */
export function committedMissing(where: string, workspace: string, meta: ObjectMeta, committed: string): ObjstateError {
  const m = meta.metadata ?? {};
  return new ObjstateError(
    "COMMITTED_VERSION_MISSING",
    `the state at ${where} is a write that never committed (${writeOf(meta)}: another write was committed after it started), and the committed state (MD5 ${committed}) is not among the newest versions the bucket keeps. ` +
      `Push the committed state again if you have it (objstate state push${workspaceFlag(workspace)} --force FILE), or accept the stored one with \`objstate state repair${workspaceFlag(workspace)} --force\`.`,
    { details: { committed, serial: m[META.serial], lockId: m[META.lockId] } },
  );
}

/** `TORN_WRITE` while the torn write's own lock (`lockId`) is still held; undefined: a read-only reader, which commits nothing. */
function uncommittedUnderLock(where: string, workspace: string, meta: ObjectMeta, lockId: string | undefined): ObjstateError {
  const m = meta.metadata ?? {};
  if (lockId === undefined) {
    return new ObjstateError(
      "TORN_WRITE",
      `the state at ${where} has a write stored but not committed (${writeOf(meta)}), and a read-only reader does not commit it. ` +
        `Any read that may write commits it (objstate state pull${workspaceFlag(workspace)}), as does \`objstate state repair${workspaceFlag(workspace)}\`.`,
      { details: { serial: m[META.serial], lockId: m[META.lockId] } },
    );
  }
  return new ObjstateError(
    "TORN_WRITE",
    `the state at ${where} has a write stored but not committed (${writeOf(meta)}), and its lock${lockId === "" ? "" : ` ${lockId}`} is still held: either that write is finishing (try again), or its writer stopped. ` +
      `If the holder is gone, release its lock (\`objstate force-unlock ${lockId === "" ? "ID" : lockId}${workspaceFlag(workspace)}\`), or let its lease run out: the next read then commits the write. \`objstate state repair${workspaceFlag(workspace)}\` does it too, under the lock.`,
    { details: { lockId, serial: m[META.serial] } },
  );
}
