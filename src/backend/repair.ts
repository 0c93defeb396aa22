/**
 * `state repair` (docs/design.md §5, decisions 012 and 031): under the lock, a write that did
 * not finish is committed or written over with the committed state, a digest left without a
 * state is removed, and leftovers of dead writers are cleared.
 */
import { ObjstateError } from "../errors.js";
import type { LockTableDriver } from "../lock/types.js";
import type { Leftover } from "../store/types.js";
import { md5Hex } from "../util/md5.js";
import { judge } from "./commit.js";
import type { BackendContext } from "./context.js";
import { committedMissing, decodeMeta, META, normalizeDigest, provenComplete, workspaceFlag } from "./fencing.js";
import { listPrefixes } from "../config/layout.js";
import type { RepairOptions } from "./options.js";
import { commit, committedVersion, writeCommittedAgain } from "./reconcile.js";
import type { RepairReport } from "./results.js";

/** Leftovers younger than this may belong to a writer that is still at work. */
const LEFTOVER_MIN_AGE_MS = 60 * 60 * 1000;

/**
 * Repair a workspace under the lock `lockId` (the caller holds it; see
 * `ObjectStoreBackend.repairState` for what is repaired).
 */
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
    // The committed state is older than the newest version: it is written again, unless the
    // store no longer has it; then only --force accepts what is stored.
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
  await commit(ctx, workspace, locks, item, actual, decodeMeta(obj.meta.metadata?.[META.lockId]), { Repaired: note });
  return { action: "recorded-digest", md5: actual, ...(recorded === undefined ? {} : { previous: recorded }) };
}

/**
 * Leftovers of writers of this backend's states (incomplete multipart uploads, the
 * embedded store's temp files) under its prefix, and in the `s3` layout under the default
 * workspace's key too, oldest first, with their age as the store reports it.
 */
export async function leftoversOf(ctx: BackendContext): Promise<Leftover[]> {
  const prefixes = listPrefixes(ctx.layout);
  if (prefixes.length === 1) return ctx.store.listLeftovers(prefixes[0] as string);
  // A leftover whose key cannot be told is listed under every prefix: once is enough.
  const seen = new Map<string, Leftover>();
  for (const prefix of prefixes) for (const l of await ctx.store.listLeftovers(prefix)) seen.set(`${l.kind} ${l.key ?? ""} ${l.id}`, l);
  return [...seen.values()].sort((a, b) => (a.since?.getTime() ?? 0) - (b.since?.getTime() ?? 0));
}
