/**
 * The object-store driver contract. One file per driver (`s3.ts`, `file.ts`), chosen by
 * endpoint scheme in `index.ts`. Drivers know nothing of state, workspaces or locks:
 * they move bytes and a little metadata.
 */

import type { CredentialsProvider } from "../credentials/types.js";

/** Canned ACLs the backend may apply (docs/design.md §3). */
export type Acl = "private" | "public-read" | "public-read-write";

/** What a driver knows of a stored object. */
export interface ObjectMeta {
  readonly size: number;
  readonly contentType?: string | undefined;
  readonly acl?: Acl | undefined;
  /** `AES256` when the object was written with server-side encryption requested. */
  readonly serverSideEncryption?: string | undefined;
  readonly etag?: string | undefined;
  readonly lastModified?: Date | undefined;
  /** The store's ID of this version of the object, when the store keeps versions. */
  readonly versionId?: string | undefined;
  /**
   * User metadata stored with this version of the object (S3 `x-amz-meta-*`), keys in lower
   * case without the prefix. objstate records `objstate-md5`, `objstate-serial`,
   * `objstate-lineage`, `objstate-lock-id`, `objstate-who` and `objstate-operation`.
   */
  readonly metadata?: Readonly<Record<string, string>> | undefined;
}

/**
 * Bytes that can be read more than once, in order, without ever being held in memory
 * whole (a large state pushed from a file). Each {@link open} starts again from the first
 * byte, so a caller can read it once to check and hash it, and a driver again to send it.
 * A caller that wants progress wraps the source.
 */
export interface ByteSource {
  /** How many bytes every read yields; a read that finds more or fewer throws. */
  readonly size: number;
  /** A fresh read from the first byte, in chunks of bounded size that stay as they are. */
  open(): AsyncIterable<Uint8Array>;
  /**
   * Hex MD5 the source guarantees for bytes it already holds (a request body hashed as it
   * arrived): a driver given this same `md5` writes them without hashing them again.
   */
  readonly verifiedMd5?: string | undefined;
}

/** What a driver stores: bytes in memory, or a {@link ByteSource} streamed to the store. */
export type PutBody = Buffer | ByteSource;

export interface PutOptions {
  readonly contentType?: string | undefined;
  readonly acl?: Acl | undefined;
  /** When true, request `x-amz-server-side-encryption: AES256`. */
  readonly encrypt?: boolean | undefined;
  /** Create only if absent (`If-None-Match: *`); a conflict throws code `PRECONDITION_FAILED`. */
  readonly ifNoneMatch?: boolean | undefined;
  /**
   * Replace only if the stored object's ETag is this one (`If-Match`, ETag without quotes);
   * an absent object or another ETag throws code `PRECONDITION_FAILED` and changes nothing.
   */
  readonly ifMatch?: string | undefined;
  /** User metadata to store with the object (see {@link ObjectMeta.metadata}). */
  readonly metadata?: Readonly<Record<string, string>> | undefined;
  /**
   * Send `ifNoneMatch`/`ifMatch` to the store as they are and trust only its answer: no check
   * made by hand where the driver knows the store ignores a condition (Ceph RGW on a
   * versioned bucket). For the conformance probe, which must see what the store itself does.
   */
  readonly strictConditions?: boolean | undefined;
  /**
   * Hex MD5 of `body`, when the caller has it or is computing it (saves hashing twice).
   * A string is sent as Content-MD5; a promise lets the upload start at once, and the
   * driver checks the stored object's ETag against it afterwards.
   */
  readonly md5?: string | Promise<string> | undefined;
}

export interface GetOptions {
  /**
   * Also return the hex MD5 of the bytes read: the store's record where it proves the bytes
   * (S3: a plain-MD5 ETag, or the MD5 objstate recorded for a multipart upload), else
   * hashed as they arrive.
   */
  readonly md5?: boolean | undefined;
  /**
   * Read at most the first `maxBytes` bytes (an HTTP Range request on S3). `meta.size` is
   * still the whole object's size; `md5` is not computed for a partial read.
   */
  readonly maxBytes?: number | undefined;
  /**
   * Read this version of the object (an ID from {@link ObjectStoreDriver.listVersions})
   * instead of the current one. A version that does not exist, or a delete marker, reads as
   * null.
   */
  readonly versionId?: string | undefined;
}

/** What {@link ObjectStoreDriver.getStream} returns: the object found, its bytes still to come. */
export interface StreamedGet {
  /** `size` is the number of bytes `body` yields (it throws if the store sends more or fewer). */
  readonly meta: ObjectMeta;
  /** The MD5 the store records for the object (S3: a plain-MD5 ETag or objstate's metadata), if any. */
  readonly recordedMd5: string | undefined;
  /**
   * The record proves the bytes served (S3 computed its ETag from the bytes it holds);
   * false where it is only a record (the embedded store's, kept when a file is edited in
   * place): hash the bytes to know.
   */
  readonly proven: boolean;
  /** The bytes in order; stop iterating to stop reading. Each chunk stays as it is. */
  readonly body: AsyncIterable<Uint8Array>;
}

/** Options of {@link ObjectStoreDriver.head}. */
export interface HeadOptions {
  /** Describe this version instead of the current one (see {@link GetOptions.versionId}). */
  readonly versionId?: string | undefined;
}

/** One version of one key, as the store lists it. */
export interface ObjectVersion {
  readonly key: string;
  /** Opaque; pass it to `get`/`head` as `versionId`. */
  readonly versionId: string;
  /** The current version (a delete marker when the key is deleted). */
  readonly isLatest: boolean;
  /** A delete marker: the key was deleted at this point; it has no bytes. */
  readonly deleteMarker: boolean;
  readonly lastModified: Date | undefined;
  /** Bytes of the version (0 for a delete marker). */
  readonly size: number;
  readonly etag?: string | undefined;
}

/** Options of {@link ObjectStoreDriver.listVersions}. */
export interface ListVersionsOptions {
  /** Versions asked of the server per page (S3 MaxKeys); a caller that stops early reads no further page. */
  readonly pageSize?: number | undefined;
}

/**
 * Whether the bucket keeps versions: `enabled`; `suspended` (it did once: old versions are
 * kept, new writes replace the current one); `off` (never turned on).
 */
export type VersioningStatus = "enabled" | "suspended" | "off";

/**
 * How long noncurrent versions are kept (an S3 lifecycle rule `NoncurrentVersionExpiration`,
 * or the embedded store's own rule). A version is expired only when every rule given allows
 * it: noncurrent for more than `noncurrentDays`, and more than `newerNoncurrentVersions`
 * newer noncurrent versions exist.
 */
export interface Retention {
  /** Keep noncurrent versions at least this many days after they stopped being current. */
  readonly noncurrentDays?: number | undefined;
  /** Keep at least this many newest noncurrent versions of each key. */
  readonly newerNoncurrentVersions?: number | undefined;
  /** Apply to keys under this prefix only ("" for the whole bucket). */
  readonly prefix: string;
}

/** What `get` returns: the bytes, metadata, and the MD5 when asked for. */
export interface GetResult {
  readonly body: Buffer;
  readonly meta: ObjectMeta;
  readonly md5?: string | undefined;
}

export interface ListOptions {
  /** Page size asked of the server (S3 MaxKeys); listing always follows every page. */
  readonly pageSize?: number | undefined;
  /** Only keys after this one (S3 StartAfter), in the listing's byte order. */
  readonly startAfter?: string | undefined;
}

/**
 * Something a writer that died left behind: an incomplete multipart upload (S3) or a temp
 * file of the embedded store. Reported by `doctor`, removed by `state repair`.
 */
export interface Leftover {
  readonly kind: "multipart-upload" | "temp-file";
  /** The object key it was meant for, when known. */
  readonly key: string | undefined;
  /** Upload ID, or the temp file's name: what {@link ObjectStoreDriver.removeLeftover} needs. */
  readonly id: string;
  /** When it was started (upload initiated, temp file last modified). */
  readonly since: Date | undefined;
  /** Size in bytes when known. */
  readonly size?: number | undefined;
}

/** One object as a listing describes it (S3 ListObjectsV2 `Contents`): no metadata, no bytes. */
export interface ListedObject {
  readonly key: string;
  readonly size: number;
  readonly lastModified: Date | undefined;
  /** Without quotes, as {@link ObjectMeta.etag}; undefined when the store does not say. */
  readonly etag: string | undefined;
}

/** A bucket-scoped object store. Keys are S3-style (`/`-separated, no leading `/`). */
export interface ObjectStoreDriver {
  /** Short name for messages: `s3` or `file`. */
  readonly kind: "s3" | "file";
  /** Human description of where data lives (endpoint and bucket; never credentials). */
  readonly location: string;
  /** The object's bytes and metadata, or null when absent. */
  get(key: string, options?: GetOptions): Promise<GetResult | null>;
  /** The object's metadata and recorded MD5 at once, its bytes as they arrive; null when absent. */
  getStream(key: string, options?: HeadOptions): Promise<StreamedGet | null>;
  /** Metadata only, or null when absent. */
  head(key: string, options?: HeadOptions): Promise<ObjectMeta | null>;
  /**
   * Every version of exactly `key` (not of other keys it prefixes), newest first, delete
   * markers included. Pages through the store's listing lazily: stop iterating to stop
   * reading. On a bucket that never had versioning, the one current object (ID `null`).
   */
  listVersions(key: string, options?: ListVersionsOptions): AsyncIterable<ObjectVersion>;
  /** Does the bucket keep versions? (The embedded store always does.) */
  versioning(): Promise<VersioningStatus>;
  /** Turn versioning on (no-op when on). */
  enableVersioning(): Promise<void>;
  /**
   * Set objstate's retention rule for noncurrent versions (replacing an earlier one of
   * objstate's; other lifecycle rules are kept), or remove it with `undefined` fields.
   * A store that refuses or silently drops a part of the rule gets its earlier rules back
   * and this throws `RETENTION_UNSUPPORTED` naming the part.
   */
  setRetention(rule: Retention): Promise<void>;
  /** Objstate's retention rule, or null when none is set. */
  getRetention(): Promise<Retention | null>;
  /**
   * Store bytes atomically: readers see the old object or the new one, never a mix. A
   * {@link ByteSource} is streamed (memory stays bounded whatever its size), and with an
   * `md5` its bytes must hash to it or nothing is stored (`STORE_INTEGRITY`): it may have
   * changed since it was hashed.
   */
  put(key: string, body: PutBody, options?: PutOptions): Promise<void>;
  /** Every key starting with `prefix`, in lexicographic order, all pages followed. */
  list(prefix: string, options?: ListOptions): AsyncIterable<string>;
  /**
   * {@link list} with what the listing itself says of each key (size, time, ETag), so a
   * caller needing those for thousands of keys makes no request per key. User metadata is
   * not in a listing: `head` a key for it.
   */
  listDetailed(prefix: string, options?: ListOptions): AsyncIterable<ListedObject>;
  /** Delete; absent keys are not an error. */
  delete(key: string): Promise<void>;
  /**
   * Lockfiles: delete only while the object's ETag is `etag` (`If-Match` on DELETE). True
   * when deleted, false when it was absent or another version. A store that ignores the
   * condition deletes anyway (the lock probe reports that).
   */
  deleteIfMatch(key: string, etag: string): Promise<boolean>;
  /**
   * Delete the key and, on a versioned bucket, every version and delete marker of exactly
   * that key, so nothing of it is left behind (for objstate's own probe objects, never for
   * states: their versions are history).
   */
  purge(key: string): Promise<void>;
  /** Does the bucket exist (and is it reachable with these credentials)? */
  bucketExists(): Promise<boolean>;
  /** Create the bucket (no-op when it already exists and is ours). */
  createBucket(): Promise<void>;
  /**
   * Leftovers of writers under `prefix` (S3: incomplete multipart uploads; embedded: temp
   * files), oldest first. Includes live ones: callers decide by age.
   */
  listLeftovers(prefix: string): Promise<Leftover[]>;
  /** Remove one leftover (abort the upload, delete the temp file); gone already is fine. */
  removeLeftover(item: Leftover): Promise<void>;
  /** Release sockets and handles. */
  close(): void;
}

/** Options common to all object-store drivers. */
export interface StoreDriverOptions {
  readonly bucket: string;
  /** `http(s)://…`, a bare host, or `file:` URL / path; or the endpoint already parsed. */
  readonly endpoint: import("../io/endpoint.js").EndpointInput;
  readonly region?: string | undefined;
  readonly credentials?: CredentialsProvider | undefined;
  /** Bodies at or above this size go up in multipart uploads (S3 driver). Default 100 MiB. */
  readonly multipartThreshold?: number | undefined;
  /** Base directory for relative `file:` endpoints (default `process.cwd()`). */
  readonly cwd?: string | undefined;
  /** Connect, idle and per-request timeouts of network drivers (defaults: `DEFAULT_TIMEOUTS`). */
  readonly timeouts?: Partial<import("../io/sdk-client.js").Timeouts> | undefined;
}
