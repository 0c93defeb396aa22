/**
 * A workspace's versions (docs/design.md §9): listing them with who wrote each, reading one, and
 * rolling back to one. The store keeps the versions (S3 bucket versioning, the embedded
 * store natively); this module reads them and never deletes one. The backend calls these
 * functions with its driver and the workspace's object key, and keeps the lock.
 */
import { ObjstateError } from "../errors.js";
import type { ObjectStoreDriver, ObjectVersion, VersioningStatus } from "../store/types.js";
import { decodeMeta, META } from "./fencing.js";
import type { Principal } from "./principal.js";
import { isEnvelope } from "../encryption/index.js";
import { scanHeader } from "./state-header.js";

/**
 * Bytes read of each version to find `serial` and `lineage` when objstate did not record
 * them (the tool writes `version`, `terraform_version`, `serial`, `lineage` first: a few
 * hundred bytes). The same ranged read brings the object metadata objstate records.
 */
export const PEEK_BYTES = 4096;
/** Ranged reads in flight while listing history. */
const PEEK_CONCURRENCY = 8;

/** One version of a workspace's state, newest first in {@link stateHistory}. */
export interface StateVersion {
  /** The store's version ID: give it to `readVersion`, `state pull --version`, `rollback`. */
  readonly versionId: string;
  /** The current version (a delete marker when the workspace is deleted). */
  readonly isLatest: boolean;
  /** The workspace was deleted here: no bytes. */
  readonly deleteMarker: boolean;
  readonly lastModified: Date | undefined;
  readonly size: number;
  readonly serial: number | undefined;
  readonly lineage: string | undefined;
  /** `objstate` when objstate wrote this version (it recorded its metadata), else `other`. */
  readonly writer: "objstate" | "other" | undefined;
  /**
   * `Who` of the lock the write was made under (or the writer's user@host): what the
   * writing client said, not checked by anyone.
   */
  readonly who: string | undefined;
  /**
   * The server user the write was made for, as `objstate serve` authenticated it; undefined
   * for a write that did not go through a server (the CLI, the library, other clients).
   */
  readonly principal: Principal | undefined;
  /** The lock's `Operation` (`rollback` for a rollback). */
  readonly operation: string | undefined;
  /** The lock's `ID`. */
  readonly lockId: string | undefined;
  /** For a rollback: the version whose content it restored. */
  readonly sourceVersion: string | undefined;
}

/** Options of {@link stateHistory}. */
export interface HistoryOptions {
  /** Stop after this many versions (delete markers count); pages no further than needed. */
  readonly limit?: number | undefined;
}

/** Where a workspace's state lives, for the functions here. */
export interface VersionedState {
  readonly store: ObjectStoreDriver;
  /** The state's object key. */
  readonly key: string;
  readonly workspace: string;
  /** For messages: `bucket/key at endpoint`. */
  readonly where: string;
  /** The state in stored bytes (decrypted), when states are encrypted here. */
  readonly open?: ((stored: Buffer) => Promise<Buffer>) | undefined;
}

/** `VERSIONING_OFF`: history and rollback need the bucket to keep versions. */
export function versioningOff(s: VersionedState, status: VersioningStatus): ObjstateError {
  return new ObjstateError(
    "VERSIONING_OFF",
    status === "suspended"
      ? `versioning of the bucket of ${s.where} is suspended: new writes replace the current version instead of keeping it, so a rollback could lose one. Turn it back on with \`objstate init --versioning\`.`
      : `the bucket of ${s.where} does not keep versions (bucket versioning is off): history, diff of old versions and rollback need it. Turn it on with \`objstate init --versioning\` (versions replaced before that are gone).`,
    { details: { versioning: status } },
  );
}

/**
 * The versions of one workspace's state, newest first, each with its serial, lineage and
 * who wrote it with which operation. Reads one listing page at a time and, per version, one
 * ranged read of {@link PEEK_BYTES} (in parallel, a few at a time), never a whole version.
 * Throws `VERSIONING_OFF` on a bucket that never kept versions.
 */
export async function* stateHistory(s: VersionedState, options: HistoryOptions = {}): AsyncGenerator<StateVersion> {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  if (limit <= 0) return;
  // Asked alongside the first page, so listing costs no extra round trip.
  const status = s.store.versioning();
  status.catch(() => undefined);
  const pageSize = Number.isFinite(limit) ? Math.min(1000, limit) : 1000;
  const pending: Promise<StateVersion>[] = [];
  let checked = false;
  let taken = 0;
  const listing = s.store.listVersions(s.key, { pageSize })[Symbol.asyncIterator]();
  try {
    for (;;) {
      while (pending.length < PEEK_CONCURRENCY && taken < limit) {
        const next = await listing.next();
        if (next.done === true) break;
        taken++;
        const p = describeVersion(s, next.value);
        p.catch(() => undefined); // awaited in order below
        pending.push(p);
      }
      if (!checked) {
        const st = await status;
        if (st === "off") throw versioningOff(s, st);
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

async function describeVersion(s: VersionedState, v: ObjectVersion): Promise<StateVersion> {
  const base = { versionId: v.versionId, isLatest: v.isLatest, deleteMarker: v.deleteMarker, lastModified: v.lastModified, size: v.size };
  const none = {
    serial: undefined,
    lineage: undefined,
    writer: undefined,
    who: undefined,
    principal: undefined,
    operation: undefined,
    lockId: undefined,
    sourceVersion: undefined,
  };
  if (v.deleteMarker) return { ...base, ...none };
  const got = await s.store.get(s.key, { versionId: v.versionId, maxBytes: PEEK_BYTES });
  if (got === null) return { ...base, ...none }; // expired by a retention rule meanwhile
  const m = got.meta.metadata ?? {};
  const ours = m[META.serial] !== undefined || m[META.lockId] !== undefined || m[META.who] !== undefined || m[META.principal] !== undefined;
  const header = scanHeader(got.body);
  const recordedSerial = m[META.serial] === undefined ? undefined : Number(m[META.serial]);
  return {
    ...base,
    serial: recordedSerial !== undefined && Number.isFinite(recordedSerial) ? recordedSerial : header?.serial,
    lineage: decodeMeta(m[META.lineage]) ?? header?.lineage,
    writer: ours ? "objstate" : "other",
    who: decodeMeta(m[META.who]),
    principal: principalOf(m),
    operation: decodeMeta(m[META.operation]),
    lockId: decodeMeta(m[META.lockId]),
    sourceVersion: decodeMeta(m[META.sourceVersion]),
  };
}

/** The principal a write recorded in its object metadata, if any. */
export function principalOf(m: Readonly<Record<string, string>>): Principal | undefined {
  const name = decodeMeta(m[META.principal]);
  if (name === undefined) return undefined;
  // A via left out (a store that dropped it) is unknown, not `none`.
  const p: { name: string; via: string; tokenId?: string; oidc?: NonNullable<Principal["oidc"]> } = {
    name,
    via: decodeMeta(m[META.principalVia]) ?? "unknown",
  };
  const tokenId = decodeMeta(m[META.principalToken]);
  if (tokenId !== undefined) p.tokenId = tokenId;
  const issuer = decodeMeta(m[META.principalIssuer]);
  const subject = decodeMeta(m[META.principalSubject]);
  if (issuer !== undefined && subject !== undefined) p.oidc = { issuer, subject, claims: claimsOf(m[META.principalClaims]) };
  return p;
}

/** Recorded claims: string values of a JSON object; none when absent (left out for size) or unreadable. */
function claimsOf(raw: string | undefined): Readonly<Record<string, string>> {
  let v: unknown;
  try {
    v = raw === undefined ? {} : JSON.parse(decodeURIComponent(raw));
  } catch {
    return {};
  }
  const out: Record<string, string> = {};
  if (typeof v === "object" && v !== null && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) if (typeof x === "string") out[k] = x;
  return out;
}

/** One version's bytes, exactly as stored, and whether it is the current version. */
export interface VersionRead {
  readonly body: Buffer;
  readonly versionId: string;
  readonly isLatest: boolean;
}

/**
 * The bytes of version `versionId` of the workspace's state. `VERSION_NOT_FOUND` when the
 * store has no such version (or it is a delete marker).
 */
export async function readStateVersionById(s: VersionedState, versionId: string): Promise<VersionRead> {
  const [got, current] = await Promise.all([s.store.get(s.key, { versionId }), s.store.head(s.key)]);
  if (got === null) throw versionNotFound(s, versionId);
  return { body: got.body, versionId, isLatest: current !== null && current.versionId === versionId };
}

export function versionNotFound(s: VersionedState, versionId: string): ObjstateError {
  const flag = s.workspace === "default" ? "" : ` -w ${s.workspace}`;
  return new ObjstateError(
    "VERSION_NOT_FOUND",
    `${s.where} has no version ${JSON.stringify(versionId)} with content (a wrong ID, a delete marker, or expired): list them with \`objstate state history${flag}\``,
    {
      details: { versionId },
    },
  );
}

/** What a rollback needs of the backend: a guarded, fenced write under the caller's lock. */
export type RollbackWrite = (
  body: Buffer,
  options: { readonly ifMatch: string | null; readonly force: boolean; readonly operation: string; readonly sourceVersion: string },
) => Promise<{ readonly written: boolean; readonly md5: string }>;

/** Options of {@link rollbackState}. */
export interface RollbackOptions {
  /** Roll back to a version of another lineage than the current state's. */
  readonly force?: boolean | undefined;
}

/** What a rollback did. */
export interface RollbackResult {
  /** The version whose content was restored. */
  readonly from: string;
  /** The serial the restored content now carries. */
  readonly serial: number;
  readonly lineage: string | undefined;
  /** The serial of the state it replaced (undefined when the workspace was deleted). */
  readonly previousSerial: number | undefined;
  /** The workspace had no current state (deleted): the rollback restored it. */
  readonly restored: boolean;
  readonly md5: string;
}

/**
 * Write version `versionId`'s content as a new version whose `serial` is one more than the
 * current one's (or than the newest version's, for a deleted workspace) and never lower
 * than its own, so the tool accepts it as newer. The caller holds the workspace's lock;
 * the write is conditional on the current version seen here. Refuses a version of another
 * lineage than the current state's (`STATE_CONFLICT`) unless `force`. Deletes nothing.
 */
export async function rollbackState(s: VersionedState, versionId: string, write: RollbackWrite, options: RollbackOptions = {}): Promise<RollbackResult> {
  const status = await s.store.versioning();
  if (status !== "enabled") throw versioningOff(s, status);
  const [stored, current] = await Promise.all([s.store.get(s.key, { versionId }), s.store.get(s.key, { maxBytes: HEADER_READ })]);
  if (stored === null) throw versionNotFound(s, versionId);
  // An envelope's clear serial is a copy: the new serial goes into the state, which the write encrypts again.
  const source = s.open === undefined ? stored : { body: await s.open(stored.body) };
  const src = scanHeader(source.body.subarray(0, HEADER_READ));
  if (src?.serialAt === undefined || src.serial === undefined) {
    throw new ObjstateError(
      "STATE_INVALID",
      `version ${versionId} of ${s.where} is not a state with a top-level serial in its first ${HEADER_READ / 1024} KiB, so it cannot be given a new one; nothing was written`,
      {
        details: { versionId },
      },
    );
  }
  let base: { serial: number | undefined; lineage: string | undefined } | undefined;
  if (current !== null) {
    const h = scanHeader(current.body);
    const m = current.meta.metadata ?? {};
    const recorded = m[META.serial] === undefined ? undefined : Number(m[META.serial]);
    base = { serial: h?.serial ?? (Number.isFinite(recorded) ? recorded : undefined), lineage: h?.lineage ?? decodeMeta(m[META.lineage]) };
  } else {
    // Deleted: the newest version with content stands for the state the tool last saw.
    for await (const v of stateHistory(s)) {
      if (v.deleteMarker) continue;
      base = { serial: v.serial, lineage: v.lineage };
      break;
    }
  }
  const otherLineage = base?.lineage !== undefined && src.lineage !== undefined && base.lineage !== src.lineage;
  if (otherLineage && options.force !== true) {
    throw new ObjstateError(
      "STATE_CONFLICT",
      `version ${versionId} of ${s.where} belongs to another lineage (${src.lineage}) than the ${current === null ? "newest version" : "current state"} (${base?.lineage}): it is a different state history. Roll back with --force (force: true) to write it anyway; nothing was written`,
      { details: { versionId, lineage: src.lineage, currentLineage: base?.lineage } },
    );
  }
  // An envelope there is no key for here (a client encrypts its states itself: `open` is
  // unset) goes back byte for byte: its clear serial must stay
  // the encrypted state's (OpenTofu refuses a mismatch as tampering), so it keeps its older
  // serial, which the guard would refuse (forced: the rollback is the operator's choice).
  // Its clients write the next serial on from it.
  const envelope = isEnvelope(source.body);
  const serial = envelope ? src.serial : Math.max(base?.serial ?? 0, src.serial) + 1;
  const [at, end] = src.serialAt;
  const body = envelope ? source.body : Buffer.concat([source.body.subarray(0, at), Buffer.from(String(serial), "utf8"), source.body.subarray(end)]);
  const result = await write(body, {
    ifMatch: current === null ? null : (current.meta.etag ?? null),
    force: otherLineage || envelope,
    operation: "rollback",
    sourceVersion: versionId,
  });
  return {
    from: versionId,
    serial,
    lineage: src.lineage,
    previousSerial: current === null ? undefined : base?.serial,
    restored: current === null,
    md5: result.md5,
  };
}

/** How much of a state is scanned for its header when rolling back (matches the write guard). */
const HEADER_READ = 64 * 1024;
