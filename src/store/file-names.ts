/** The embedded store's names and records on disk (layout in file.ts): keys, temp files, version IDs, metadata. No I/O. */
import { createHash, randomUUID } from "node:crypto";
import type { BigIntStats } from "node:fs";
import { ObjstateError } from "../errors.js";
import type { Acl, Leftover, ObjectMeta, Retention } from "./types.js";

/** A public version ID: inverted mtime in ns (16 hex digits), then `o` + inode or `m` + random. */
export const VERSION_ID = /^[0-9a-f]{16}-(?:o[0-9a-z]+|m[0-9a-f]{8})$/;

const MAX_NS = 0xffffffffffffffffn;
export const TEMP_PREFIX = ".tmp-";
/** `.tmp-` + a UUID: what comes after names the key (see {@link tempName}). */
const TEMP_HEAD = TEMP_PREFIX.length + 36;
/** Most file systems limit one name to 255 bytes. */
const NAME_MAX = 255;
/** Same limit as S3 keys. */
const KEY_MAX_BYTES = 1024;
export const META_NAME = /^\d+-\d+\.json$/;

/** The JSON stored beside an object version. */
export interface StoredMeta {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
  readonly contentType?: string | undefined;
  readonly acl?: Acl | undefined;
  readonly serverSideEncryption?: string | undefined;
  readonly lastModified: string;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
}

export function alreadyExists(key: string, location: string): ObjstateError {
  return new ObjstateError("PRECONDITION_FAILED", `${key} already exists in ${location} (create-if-absent refused)`, { details: { key } });
}

/** Temp file name: a UUID, then the encoded key when it fits, so leftovers can name their key. */
export function tempName(key: string): string {
  const base = `${TEMP_PREFIX}${randomUUID()}`;
  const enc = encodeKey(key);
  return base.length + 1 + enc.length <= NAME_MAX ? `${base}.${enc}` : base;
}

export function keyOfTemp(name: string): string | undefined {
  return name.length > TEMP_HEAD + 1 && name[TEMP_HEAD] === "." ? (decodeName(name.slice(TEMP_HEAD + 1)) ?? undefined) : undefined;
}

export function hashKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** Oldest first. */
export function sortLeftovers(items: Leftover[]): Leftover[] {
  return items.sort((a, b) => (a.since?.getTime() ?? 0) - (b.since?.getTime() ?? 0));
}

/** S3 returns user-metadata keys in lower case; so does the embedded store. */
export function normalizeMetadata(m: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
  if (m === undefined) return undefined;
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k.toLowerCase(), String(v)]));
}

/** Bucket names become a directory name: allow only what docs/design.md §3 allows. */
export function checkBucketName(bucket: string): void {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket) || bucket.includes("..")) {
    throw new ObjstateError("INVALID_BUCKET", `bucket "${bucket}" is not a valid bucket name (3-63 characters of a-z, 0-9, "." and "-")`);
  }
}

/** The file name for `key`: `encodeURIComponent` with `*` and a leading `.` encoded; a `.`/`..` segment or a leading `/` is refused. */
export function encodeKey(key: string): string {
  const bad = (why: string): ObjstateError => new ObjstateError("INVALID_KEY", `invalid object key ${JSON.stringify(key)}: ${why}`);
  if (key === "") throw bad("it is empty");
  if (key.startsWith("/")) throw bad("it starts with /");
  if (key.split("/").some((s) => s === "." || s === "..")) throw bad('it has a "." or ".." segment, which would escape its directory');
  if (Buffer.byteLength(key, "utf8") > KEY_MAX_BYTES) throw bad(`it is longer than ${KEY_MAX_BYTES} bytes`);
  let name: string;
  try {
    name = encodeURIComponent(key);
  } catch {
    throw bad("it is not well-formed Unicode");
  }
  name = name.replace(/\*/g, "%2A").replace(/^\./, "%2E");
  if (name.length > NAME_MAX) throw bad(`its encoded file name is longer than ${NAME_MAX} bytes`);
  return name;
}

/** The key a file name stands for, or null when the file is not one of ours. */
export function decodeName(name: string): string | null {
  try {
    const key = decodeURIComponent(name);
    return encodeKey(key) === name ? key : null;
  } catch {
    return null;
  }
}

/** Identity of one version of an object file; replacing the file always changes it. */
export function versionId(stat: BigIntStats): string {
  return `${stat.ino}-${stat.mtimeNs}`;
}

export function toObjectMeta(m: StoredMeta): ObjectMeta {
  return {
    size: m.size,
    etag: m.etag,
    contentType: m.contentType,
    acl: m.acl,
    serverSideEncryption: m.serverSideEncryption,
    lastModified: new Date(m.lastModified),
    metadata: m.metadata === undefined ? undefined : { ...m.metadata },
  };
}

export function parseStoredMeta(text: string): StoredMeta | null {
  const o = parseObject(text);
  if (o === null || typeof o.key !== "string" || typeof o.size !== "number" || typeof o.etag !== "string" || typeof o.lastModified !== "string") return null;
  return {
    key: o.key,
    size: o.size,
    etag: o.etag,
    lastModified: o.lastModified,
    contentType: typeof o.contentType === "string" ? o.contentType : undefined,
    acl: o.acl === "private" || o.acl === "public-read" || o.acl === "public-read-write" ? o.acl : undefined,
    serverSideEncryption: typeof o.serverSideEncryption === "string" ? o.serverSideEncryption : undefined,
    metadata: isStringRecord(o.metadata) ? o.metadata : undefined,
  };
}

function isStringRecord(v: unknown): v is Record<string, string> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === "string");
}

/** The public ID of an object file version: sorts newest first, stable once archived. */
export function publicId(stat: BigIntStats): string {
  return `${idOfTime(stat.mtimeNs)}-o${stat.ino.toString(36)}`;
}

/** The public ID of the version whose metadata file is `<ino>-<mtimeNs>.json`. */
export function publicIdOfMetaName(name: string): string {
  const [ino, ns] = name.slice(0, -".json".length).split("-");
  return `${idOfTime(BigInt(ns ?? "0"))}-o${BigInt(ino ?? "0").toString(36)}`;
}

export function idOfTime(ns: bigint): string {
  return (MAX_NS - ns).toString(16).padStart(16, "0");
}

export function timeOfId(id: string): Date {
  return new Date(Number((MAX_NS - BigInt(`0x${id.slice(0, 16)}`)) / 1_000_000n));
}

/** The JSON object in `text`; null for anything else, damaged JSON included. */
function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export function parseRetention(text: string): Retention | null {
  const o = parseObject(text);
  if (o === null) return null;
  const count = (x: unknown): number | undefined => (typeof x === "number" && Number.isInteger(x) && x >= 0 ? x : undefined);
  return {
    prefix: typeof o.prefix === "string" ? o.prefix : "",
    noncurrentDays: count(o.noncurrentDays),
    newerNoncurrentVersions: count(o.newerNoncurrentVersions),
  };
}
