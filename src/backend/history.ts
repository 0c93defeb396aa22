/** A workspace's versions (docs/design.md §9): listed, read, diffed and rolled back to; never deleted (the store keeps them). */
import { ObjstateError } from "../errors.js";
import type { ObjectVersion, VersioningStatus } from "../store/types.js";
import { md5Hex } from "../util/md5.js";
import type { BackendContext } from "./context.js";
import { conflict, decodeMeta, META, normalizeDigest, recordOf, serialOf } from "./meta.js";
import { workspaceFlag } from "./locks/lock-info.js";
import { isEnvelope } from "../encryption/index.js";
import { readCommitted } from "./read.js";
import type { BackendRollbackOptions, DiffOptions, HistoryOptions, RollbackResult, StateVersion, VersionDiff, WriteOptions, WriteResult } from "./types.js";
import { HEADER_BYTES, scanHeader, withSerial } from "./state-header.js";

/** Bytes read of each version to find `serial` and `lineage` when objstate did not record them (the tool writes them first). */
const PEEK_BYTES = 4096;
/** Ranged reads in flight while listing history. */
const PEEK_CONCURRENCY = 8;

/** `VERSIONING_OFF`: history and rollback need the bucket to keep versions. */
function versioningOff(where: string, status: VersioningStatus): ObjstateError {
  return new ObjstateError(
    "VERSIONING_OFF",
    status === "suspended"
      ? `versioning of the bucket of ${where} is suspended: new writes replace the current version instead of keeping it, so a rollback could lose one. Turn it back on with \`objstate init --versioning\`.`
      : `the bucket of ${where} does not keep versions (bucket versioning is off): history, diff of old versions and rollback need it. Turn it on with \`objstate init --versioning\` (versions replaced before that are gone).`,
    { details: { versioning: status } },
  );
}

/** The versions of one workspace's state, newest first: a listing page and a ranged read per version, a few at a time; `VERSIONING_OFF` without versions. */
export async function* stateHistory(ctx: BackendContext, workspace: string, options: HistoryOptions = {}): AsyncGenerator<StateVersion> {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  if (limit <= 0) return;
  // Asked alongside the first page, so listing costs no extra round trip.
  const status = ctx.store.versioning();
  status.catch(() => undefined);
  const pending: Promise<StateVersion>[] = [];
  let checked = false;
  let taken = 0;
  const listing = ctx.store.listVersions(ctx.statePath(workspace), { pageSize: Math.min(1000, limit) })[Symbol.asyncIterator]();
  try {
    for (;;) {
      while (pending.length < PEEK_CONCURRENCY && taken < limit) {
        const next = await listing.next();
        if (next.done === true) break;
        taken++;
        const p = describeVersion(ctx, workspace, next.value);
        p.catch(() => undefined); // awaited in order below
        pending.push(p);
      }
      if (!checked) {
        const st = await status;
        if (st === "off") throw versioningOff(ctx.describe(workspace), st);
        checked = true;
      }
      const head = pending.shift();
      if (head === undefined) return;
      yield await head;
    }
  } finally {
    await listing.return?.();
  }
}

async function describeVersion(ctx: BackendContext, workspace: string, v: ObjectVersion): Promise<StateVersion> {
  const base = { versionId: v.versionId, isLatest: v.isLatest, deleteMarker: v.deleteMarker, lastModified: v.lastModified, size: v.size };
  // A delete marker, or a version expired by a retention rule meanwhile, has nothing to describe.
  const got = v.deleteMarker ? null : await ctx.store.get(ctx.statePath(workspace), { versionId: v.versionId, maxBytes: PEEK_BYTES });
  const m = got?.meta.metadata ?? {};
  const ours = m[META.serial] !== undefined || m[META.lockId] !== undefined || m[META.who] !== undefined || m[META.principal] !== undefined;
  const header = got === null ? undefined : scanHeader(got.body);
  const r = recordOf(m);
  return {
    ...base,
    ...r,
    serial: r.serial ?? header?.serial,
    lineage: r.lineage ?? header?.lineage,
    writer: got === null ? undefined : ours ? "objstate" : "other",
    sourceVersion: decodeMeta(m[META.sourceVersion]),
  };
}

/** One version's bytes (`VERSION_NOT_FOUND` for none, or a delete marker), decrypted unless `stored`; the current one must pass the digest-checked read too. */
export async function readVersionChecked(ctx: BackendContext, workspace: string, versionId: string, stored = false): Promise<Buffer> {
  const key = ctx.statePath(workspace);
  const [got, current] = await Promise.all([ctx.store.get(key, { versionId }), ctx.store.head(key)]);
  if (got === null) throw versionNotFound(ctx, workspace, versionId);
  if (current?.versionId === versionId && ctx.table !== undefined) {
    const expected = normalizeDigest((await ctx.table.getDigest(ctx.digestId(workspace)))?.digest);
    if (expected !== undefined && expected !== md5Hex(got.body)) await readCommitted(ctx, workspace, {});
  }
  return stored ? got.body : plainOf(ctx, workspace, got.body);
}

/** `body` decrypted when the connection encrypts. */
async function plainOf(ctx: BackendContext, workspace: string, body: Buffer): Promise<Buffer> {
  return ctx.encryption === undefined ? body : (await ctx.encryption.decrypt(body, { workspace })).state;
}

function versionNotFound(ctx: BackendContext, workspace: string, versionId: string): ObjstateError {
  return new ObjstateError(
    "VERSION_NOT_FOUND",
    `${ctx.describe(workspace)} has no version ${JSON.stringify(versionId)} with content (a wrong ID, a delete marker, or expired): list them with \`objstate state history${workspaceFlag(workspace)}\``,
    { details: { versionId } },
  );
}

/** Write version `versionId`'s content as a new version with a serial above the current one's (and its own), conditional on the current one; another lineage needs `force`. */
export async function rollbackState(
  ctx: BackendContext,
  workspace: string,
  versionId: string,
  write: (body: Buffer, options: WriteOptions) => Promise<WriteResult>,
  options: BackendRollbackOptions,
): Promise<RollbackResult> {
  const where = ctx.describe(workspace);
  if (options.expectCurrent !== undefined) {
    const now = await currentVersionOf(ctx, workspace);
    if (now !== options.expectCurrent) {
      const message = `${where} was written since the diff was shown: nothing was written; run the rollback again to review the new diff`;
      throw conflict(message, { details: { expected: options.expectCurrent, current: now } });
    }
  }
  const status = await ctx.store.versioning();
  if (status !== "enabled") throw versioningOff(where, status);
  const key = ctx.statePath(workspace);
  const [stored, current] = await Promise.all([ctx.store.get(key, { versionId }), ctx.store.get(key, { maxBytes: HEADER_BYTES })]);
  if (stored === null) throw versionNotFound(ctx, workspace, versionId);
  // An envelope's clear serial is a copy: the new serial goes into the state, which the write encrypts again.
  const source = await plainOf(ctx, workspace, stored.body);
  let base: { serial: number | undefined; lineage: string | undefined } | undefined;
  if (current !== null) {
    const h = scanHeader(current.body);
    base = { serial: h?.serial ?? serialOf(current.meta), lineage: h?.lineage ?? decodeMeta(current.meta.metadata?.[META.lineage]) };
  } else {
    // Deleted: the newest version with content stands for the state the tool last saw.
    for await (const v of stateHistory(ctx, workspace)) {
      if (v.deleteMarker) continue;
      base = { serial: v.serial, lineage: v.lineage };
      break;
    }
  }
  // An envelope without a key here goes back byte for byte: OpenTofu refuses a clear serial not the encrypted state's, so it keeps its own (forced).
  const envelope = isEnvelope(source);
  const what = `version ${versionId} of ${where} is not a state with a top-level serial in its first ${HEADER_BYTES / 1024} KiB, so it cannot be given a new one; nothing was written`;
  const next = withSerial(source, (n) => (envelope ? n : Math.max(base?.serial ?? 0, n) + 1), what, { versionId });
  const otherLineage = base?.lineage !== undefined && next.lineage !== undefined && base.lineage !== next.lineage;
  if (otherLineage && options.force !== true) {
    throw conflict(
      `version ${versionId} of ${where} belongs to another lineage (${next.lineage}) than the ${current === null ? "newest version" : "current state"} (${base?.lineage}): it is a different state history. Roll back with --force (force: true) to write it anyway; nothing was written`,
      { details: { versionId, lineage: next.lineage, currentLineage: base?.lineage } },
    );
  }
  const result = await write(envelope ? source : next.body, {
    ifMatch: current === null ? null : (current.meta.etag ?? null),
    force: otherLineage || envelope,
    operation: "rollback",
    sourceVersion: versionId,
  });
  return {
    from: versionId,
    serial: next.serial,
    lineage: next.lineage,
    previousSerial: current === null ? undefined : base?.serial,
    restored: current === null,
    md5: result.md5,
  };
}

/** The current version's ID, or null when the workspace has none (never written, or deleted). */
export async function currentVersionOf(ctx: BackendContext, workspace: string): Promise<string | null> {
  for await (const v of stateHistory(ctx, workspace, { limit: 1 })) return v.deleteMarker ? null : v.versionId;
  return null;
}

/** The sides of a diff: `to` by default the current version, `from` the version with content just before it; reads only as much history as that needs. */
async function diffSides(ctx: BackendContext, workspace: string, sides: DiffOptions): Promise<{ from: string | null; to: string | null }> {
  const { from, to } = sides;
  if (from !== undefined && to !== undefined) return { from, to };
  let toId: string | null = to ?? null;
  let reachedTo = false;
  let any = false;
  for await (const v of stateHistory(ctx, workspace)) {
    any = true;
    if (!reachedTo) {
      if (to === undefined) toId = v.deleteMarker ? null : v.versionId;
      // `to: null` ("no state") has no place in the history: the newest version stands for it.
      reachedTo = to === undefined || to === null || v.versionId === to;
      if (reachedTo && from !== undefined) break;
      if (!reachedTo || to !== null) continue;
    }
    if (!v.deleteMarker) return { from: from ?? v.versionId, to: toId };
  }
  if (!any)
    throw new ObjstateError("STATE_NOT_FOUND", `workspace ${workspace} has no versions at ${ctx.describe(workspace)}: nothing to compare`, {
      details: { workspace },
    });
  if (!reachedTo)
    throw new ObjstateError("VERSION_NOT_FOUND", `${ctx.describe(workspace)} has no version ${JSON.stringify(to)}: list them with objstate state history`, {
      details: { versionId: to },
    });
  return { from: from ?? null, to: toId };
}

/** What changed between two versions (see {@link diffSides} for the defaults). */
export async function diffVersions(ctx: BackendContext, workspace: string, sides: DiffOptions): Promise<VersionDiff> {
  // Loaded on demand: importing the package does not load the comparison (objstate/state).
  const [ids, { diffStates }] = await Promise.all([diffSides(ctx, workspace, sides), import("../state/diff.js")]);
  const read = async (id: string | null): Promise<Buffer | null> => (id === null ? null : readVersionChecked(ctx, workspace, id));
  const [a, b] = await Promise.all([read(ids.from), read(ids.to)]);
  return { from: ids.from, to: ids.to, diff: sides.compare === undefined ? diffStates(a, b) : await sides.compare(a, b) };
}
