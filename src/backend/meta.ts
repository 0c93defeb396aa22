/** What a write records in its object's metadata (docs/design.md §9), and how a stored object's MD5 is known from it. */
import { ObjstateError } from "../errors.js";
import type { ObjectMeta } from "../store/types.js";
import type { Principal } from "./principal.js";
import type { WriteRecord } from "./types.js";

/** Object metadata objstate records with every state it writes. */
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
  principalVia: "objstate-principal-via",
  /** An API token's public ID (never the token). */
  principalToken: "objstate-principal-token",
  principalIssuer: "objstate-principal-issuer",
  principalSubject: "objstate-principal-subject",
  /** The claims an OIDC rule used (JSON, at most {@link PRINCIPAL_CLAIMS_MAX}). */
  principalClaims: "objstate-principal-claims",
  /** The digest item's `Generation` this write commits (the one it saw, plus one; docs/design.md §5). */
  generation: "objstate-generation",
  /** The `Digest` the write saw and replaces (`none` when there was none). */
  parent: "objstate-parent-md5",
} as const;

/** A digest as stored by any tool: hex, any case, maybe padded; undefined when none. */
export function normalizeDigest(v: string | null | undefined): string | undefined {
  const t = v?.trim().toLowerCase();
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

/** Does the object prove it is a complete objstate write: its record, and a record of its MD5 that matches `actual`? */
export function provenComplete(meta: ObjectMeta, actual: string): boolean {
  const m = meta.metadata;
  if (m === undefined || (m[META.serial] === undefined && m[META.lockId] === undefined)) return false;
  const recorded = m[META.md5]?.toLowerCase();
  return recorded === actual || (recorded === undefined && plainMd5(meta) === actual);
}

export function decodeMeta(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

export function encodeMeta(v: string): string {
  return /^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v);
}

/** The serial objstate recorded with a write, when it did. */
export function serialOf(meta: ObjectMeta): number | undefined {
  return recordOf(meta.metadata ?? {}).serial;
}

/** What a write recorded of itself in its object metadata. */
export function recordOf(m: Readonly<Record<string, string>>): WriteRecord {
  const serial = Number(m[META.serial]);
  return {
    serial: m[META.serial] !== undefined && Number.isSafeInteger(serial) ? serial : undefined,
    lineage: decodeMeta(m[META.lineage]),
    who: decodeMeta(m[META.who]),
    lockId: decodeMeta(m[META.lockId]),
    operation: decodeMeta(m[META.operation]),
    principal: principalOf(m),
  };
}

/** `serial 7, by me@host` of a stored write, for messages. */
export function writeOf(meta: ObjectMeta): string {
  const by = decodeMeta(meta.metadata?.[META.who]);
  return `serial ${meta.metadata?.[META.serial] ?? "?"}${by === undefined ? "" : `, by ${by}`}`;
}

/** Most bytes of an OIDC principal's claims a version records (S3 keeps 2 KiB of metadata); the audit line has them all. */
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

/** The principal a write recorded in its object metadata, if any. */
function principalOf(m: Readonly<Record<string, string>>): Principal | undefined {
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

export function conflict(message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}): ObjstateError {
  return new ObjstateError("STATE_CONFLICT", message, options);
}
