/**
 * What the lineage guard and the fencing decide, and what a write records: pure functions
 * over state headers, object metadata and lock info, so the backend keeps only the order
 * of the requests (docs/design.md §9–§10).
 */
import { ObjstateError } from "../errors.js";
import type { ObjectMeta } from "../store/types.js";
import { DEFAULT_WORKSPACE } from "../config/layout.js";
import { describeHolder, type LockInfo } from "./locks/lock-info.js";
import type { Principal } from "./principal.js";
import type { StateHeader } from "./state-header.js";

/**
 * The lock ID that names a lock item with no readable lock info (written by hand or by
 * another tool): `objstate force-unlock no-id` clears such an item.
 */
export const NO_LOCK_ID = "no-id";

/** Object metadata objstate records with every state it writes (docs/design.md §9). */
export const META = {
  md5: "objstate-md5",
  serial: "objstate-serial",
  lineage: "objstate-lineage",
  lockId: "objstate-lock-id",
  who: "objstate-who",
  operation: "objstate-operation",
  /** The version a rollback restored. */
  sourceVersion: "objstate-source-version",
  /** The server user the write was made for (`objstate serve`); `who` is what its client claimed. */
  principal: "objstate-principal",
  /** How that user authenticated (`password`, `certificate`, `token`, `oidc`, `none` …). */
  principalVia: "objstate-principal-via",
  /** An API token's public ID (never the token). */
  principalToken: "objstate-principal-token",
  /** An OIDC identity: the issuer, the subject, and the claims its rule used (JSON, bounded: {@link PRINCIPAL_CLAIMS_MAX}). */
  principalIssuer: "objstate-principal-issuer",
  principalSubject: "objstate-principal-subject",
  principalClaims: "objstate-principal-claims",
  /** The digest item's `Generation` this write commits (the one it saw, plus one; docs/design.md §5). */
  generation: "objstate-generation",
  /** The `Digest` the write saw and replaces (`none` when there was none). */
  parent: "objstate-parent-md5",
} as const;

/** A digest as stored by any tool: hex, any case, maybe padded; undefined when none. */
export function normalizeDigest(v: string | null | undefined): string | undefined {
  if (v === null || v === undefined) return undefined;
  const t = v.trim().toLowerCase();
  return t === "" ? undefined : t;
}

/** The MD5 of an object's bytes when its ETag is one (single PUT, no KMS or customer key). */
export function plainMd5(meta: ObjectMeta): string | undefined {
  const etag = meta.etag?.replace(/"/g, "").toLowerCase();
  if (etag === undefined || !/^[0-9a-f]{32}$/.test(etag)) return undefined;
  if (meta.serverSideEncryption !== undefined && meta.serverSideEncryption !== "AES256") return undefined;
  return etag;
}

/** The MD5 objstate recorded in an object's metadata, if any. */
export function recordedMd5(meta: ObjectMeta): string | undefined {
  const v = meta.metadata?.[META.md5]?.toLowerCase();
  return v !== undefined && /^[0-9a-f]{32}$/.test(v) ? v : undefined;
}

/**
 * Does the object prove it is a complete write by objstate? It must carry objstate's own
 * record of the write, and a record of its MD5 (objstate's metadata, or the store's plain
 * MD5 ETag) that matches the bytes actually read.
 */
export function provenComplete(meta: ObjectMeta, actual: string): boolean {
  const m = meta.metadata;
  if (m === undefined || (m[META.serial] === undefined && m[META.lockId] === undefined)) return false;
  const recorded = m[META.md5]?.toLowerCase();
  return recorded === actual || (recorded === undefined && plainMd5(meta) === actual);
}

export function workspaceFlag(workspace: string): string {
  return workspace === DEFAULT_WORKSPACE ? "" : ` -w ${workspace}`;
}

export function decodeMeta(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

/** Header-safe (ASCII) metadata value. */
export function encodeMeta(v: string): string {
  return /^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v);
}

export function writeMetadata(w: {
  incoming: { lineage?: string; serial?: number };
  lockId: string | undefined;
  holder: LockInfo | undefined;
  who: string;
  md5: string | undefined;
  principal?: Principal | undefined;
}): Record<string, string> {
  const m: Record<string, string> = {};
  if (w.incoming.serial !== undefined) m[META.serial] = String(w.incoming.serial);
  if (w.incoming.lineage !== undefined) m[META.lineage] = encodeMeta(w.incoming.lineage);
  if (w.lockId !== undefined) m[META.lockId] = encodeMeta(w.lockId);
  m[META.who] = encodeMeta(w.holder?.Who || w.who);
  if (w.holder?.Operation) m[META.operation] = encodeMeta(w.holder.Operation);
  if (w.md5 !== undefined) m[META.md5] = w.md5;
  if (w.principal !== undefined) Object.assign(m, principalMetadata(w.principal));
  return m;
}

/**
 * Most bytes of an OIDC principal's claims (as stored) a version records. S3 keeps 2 KiB of
 * user metadata per object, shared with the rest of the record: claims beyond this are left
 * out of the version (the issuer and subject stay), and the audit line still has them all.
 */
export const PRINCIPAL_CLAIMS_MAX = 512;

/** The metadata that records who a write was made for: name and how, and a token's ID or an OIDC identity. */
export function principalMetadata(p: Principal): Record<string, string> {
  const m: Record<string, string> = { [META.principal]: encodeMeta(p.name), [META.principalVia]: encodeMeta(p.via) };
  if (p.tokenId !== undefined) m[META.principalToken] = encodeMeta(p.tokenId);
  if (p.oidc !== undefined) {
    m[META.principalIssuer] = encodeMeta(p.oidc.issuer);
    m[META.principalSubject] = encodeMeta(p.oidc.subject);
    const claims = encodeURIComponent(JSON.stringify(p.oidc.claims));
    if (claims.length <= PRINCIPAL_CLAIMS_MAX) m[META.principalClaims] = claims;
  }
  return m;
}

export function conflict(message: string, options: { cause?: unknown; details?: Record<string, unknown> }): ObjstateError {
  return new ObjstateError("STATE_CONFLICT", message, options);
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

/** The ID a holder is released with: its own, or {@link NO_LOCK_ID} when it has none. */
export function lockIdOf(holder: LockInfo): string {
  return holder.ID === "" ? NO_LOCK_ID : holder.ID;
}

export function lockedError(where: string, workspace: string, raw: string, holder: LockInfo): ObjstateError {
  if (holder.ID === "") {
    return new ObjstateError(
      "STATE_LOCKED",
      `the state at ${where} is locked by an item with no readable lock info (${raw === "" ? "no Info attribute" : "Info has no ID"}; written by hand or by another tool). If nothing holds it, clear it with \`objstate force-unlock ${NO_LOCK_ID}${workspaceFlag(workspace)}\`.`,
      { details: { lockInfo: holder } },
    );
  }
  return new ObjstateError(
    "STATE_LOCKED",
    `the state at ${where} is locked: ${describeHolder(holder)}. If that holder is gone, unlock it with \`objstate force-unlock ${holder.ID}${workspaceFlag(workspace)}\` (through the tool: \`terraform force-unlock ${holder.ID}\`).`,
    {
      details: { lockInfo: holder },
    },
  );
}

/**
 * `LOCK_NOT_OWNED`: `asking` (a server user) wanted to release lock `holder` or write under
 * it, and the lock belongs to another principal, or to none (taken by the CLI or library).
 */
export function notOwned(where: string, asking: string, holder: LockInfo, action: "release" | "write"): ObjstateError {
  const owner =
    holder.Owner === undefined
      ? `no server user: it was taken outside objstate serve (by the CLI or the library, as ${holder.Who || "unknown"})`
      : `user ${holder.Owner}`;
  return new ObjstateError(
    "LOCK_NOT_OWNED",
    `user ${asking} may not ${action === "release" ? "release" : "write under"} lock ${lockIdOf(holder)} on ${where}: the lock belongs to ${owner}. Only the user who took the lock, or a user with the force role, may release it or write under it.`,
    { details: { lockId: lockIdOf(holder), owner: holder.Owner ?? null, user: asking, lockInfo: holder } },
  );
}

export function tornWrite(where: string, workspace: string, meta: ObjectMeta, expected: string, actual: string, digestId: string): ObjstateError {
  const m = meta.metadata ?? {};
  const by = decodeMeta(m[META.who]);
  return new ObjstateError(
    "TORN_WRITE",
    `the last write did not finish recording its digest: the state at ${where} is a complete write by objstate (serial ${m[META.serial] ?? "?"}${by === undefined ? "" : `, by ${by}`}), but the lock table still has the digest of an earlier state (${expected}; the object's is ${actual}). ` +
      `Run \`objstate state repair${workspaceFlag(workspace)}\` to record it.`,
    { details: { expected, actual, digestId, serial: m[META.serial], lockId: m[META.lockId] } },
  );
}

/**
 * `COMMITTED_VERSION_MISSING`: the stored object is a write that never committed (another
 * write was committed after it started), and the store no longer has the committed state's
 * bytes among its newest versions (or keeps no versions).
 */
export function committedMissing(where: string, workspace: string, meta: ObjectMeta, committed: string): ObjstateError {
  const m = meta.metadata ?? {};
  const by = decodeMeta(m[META.who]);
  return new ObjstateError(
    "COMMITTED_VERSION_MISSING",
    `the state at ${where} is a write that never committed (serial ${m[META.serial] ?? "?"}${by === undefined ? "" : `, by ${by}`}: another write was committed after it started), and the committed state (MD5 ${committed}) is not among the newest versions the bucket keeps. ` +
      `Push the committed state again if you have it (objstate state push${workspaceFlag(workspace)} --force FILE), or accept the stored one with \`objstate state repair${workspaceFlag(workspace)} --force\`.`,
    { details: { committed, serial: m[META.serial], lockId: m[META.lockId] } },
  );
}

/**
 * `TORN_WRITE` while the torn write's own lock (`lockId`) is still held: the write may be
 * finishing, or its writer stopped (then releasing its lock lets the next read commit it).
 * Undefined: the reader is read-only and commits nothing.
 */
export function uncommittedUnderLock(where: string, workspace: string, meta: ObjectMeta, lockId: string | undefined): ObjstateError {
  const m = meta.metadata ?? {};
  const by = decodeMeta(m[META.who]);
  if (lockId === undefined) {
    return new ObjstateError(
      "TORN_WRITE",
      `the state at ${where} has a write stored but not committed (serial ${m[META.serial] ?? "?"}${by === undefined ? "" : `, by ${by}`}), and a read-only reader does not commit it. ` +
        `Any read that may write commits it (objstate state pull${workspaceFlag(workspace)}), as does \`objstate state repair${workspaceFlag(workspace)}\`.`,
      { details: { serial: m[META.serial], lockId: m[META.lockId] } },
    );
  }
  return new ObjstateError(
    "TORN_WRITE",
    `the state at ${where} has a write stored but not committed (serial ${m[META.serial] ?? "?"}${by === undefined ? "" : `, by ${by}`}), and its lock${lockId === "" ? "" : ` ${lockId}`} is still held: either that write is finishing (try again), or its writer stopped. ` +
      `If the holder is gone, release its lock (\`objstate force-unlock ${lockId === "" ? "ID" : lockId}${workspaceFlag(workspace)}\`), or let its lease run out: the next read then commits the write. \`objstate state repair${workspaceFlag(workspace)}\` does it too, under the lock.`,
    { details: { lockId, serial: m[META.serial] } },
  );
}
