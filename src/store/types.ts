/** The object-store driver contract (`s3.ts`, `file.ts`): drivers move bytes and a little metadata, nothing of state or locks. */

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
  /** User metadata of this version (S3 `x-amz-meta-*`), keys in lower case without the prefix. */
  readonly metadata?: Readonly<Record<string, string>> | undefined;
}

/** Bytes that can be read more than once, never held whole (a large state pushed from a file). */
export interface ByteSource {
  /** How many bytes every read yields; a read that finds more or fewer throws. */
  readonly size: number;
  /** A fresh read from the first byte, in bounded chunks that stay as they are. */
  open(): AsyncIterable<Uint8Array>;
  /** Hex MD5 of bytes already hashed (a request body): a driver given this same `md5` need not hash again. */
  readonly verifiedMd5?: string | undefined;
}

/** What a driver stores: bytes in memory, or a {@link ByteSource} streamed to the store. */
export type PutBody = Buffer | ByteSource;

export interface PutOptions {
  readonly contentType?: string | undefined;
  readonly acl?: Acl | undefined;
  /** Request `x-amz-server-side-encryption: AES256`. */
  readonly encrypt?: boolean | undefined;
  /** Create only if absent (`If-None-Match: *`); a conflict throws code `PRECONDITION_FAILED`. */
  readonly ifNoneMatch?: boolean | undefined;
  /** Replace only if the stored ETag is this one (`If-Match`); else `PRECONDITION_FAILED`, nothing changed. */
  readonly ifMatch?: string | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
  /** Trust only the store's own answer to the conditions, never a check by hand (for the conformance probe). */
  readonly strictConditions?: boolean | undefined;
  /** Hex MD5 of `body`: a string is sent as Content-MD5; a promise lets the upload start at once, checked after. */
  readonly md5?: string | Promise<string> | undefined;
}

export interface GetOptions extends HeadOptions {
  /** Also return the hex MD5 of the bytes: the store's record where it proves them, else hashed as they arrive. */
  readonly md5?: boolean | undefined;
  /** Read at most the first `maxBytes` bytes; `meta.size` is still the whole size, and no `md5`. */
  readonly maxBytes?: number | undefined;
}

/** What {@link ObjectStoreDriver.getStream} returns: the object found, its bytes still to come. */
export interface StreamedGet {
  /** `size` is the number of bytes `body` yields (it throws on more or fewer). */
  readonly meta: ObjectMeta;
  readonly recordedMd5: string | undefined;
  /** The record proves the bytes (S3's ETag); false for a mere record (the embedded store's): hash to know. */
  readonly proven: boolean;
  /** The bytes in order; stop iterating to stop reading. Each chunk stays as it is. */
  readonly body: AsyncIterable<Uint8Array>;
}

export interface HeadOptions {
  /** This version instead of the current one; an unknown version or a delete marker reads as null. */
  readonly versionId?: string | undefined;
}

/** One version of one key, as the store lists it. */
export interface ObjectVersion {
  readonly key: string;
  /** Opaque; pass it to `get`/`head` as `versionId`. */
  readonly versionId: string;
  readonly isLatest: boolean;
  /** The key was deleted at this point; no bytes. */
  readonly deleteMarker: boolean;
  readonly lastModified: Date | undefined;
  readonly size: number;
  readonly etag?: string | undefined;
}

/** `suspended`: it did once (old versions are kept, new writes replace the current one). */
export type VersioningStatus = "enabled" | "suspended" | "off";

/** How long noncurrent versions are kept (S3 `NoncurrentVersionExpiration`): expired only when every part given allows it. */
export interface Retention {
  /** Keep noncurrent versions at least this many days after they stopped being current. */
  readonly noncurrentDays?: number | undefined;
  /** Keep at least this many newest noncurrent versions of each key. */
  readonly newerNoncurrentVersions?: number | undefined;
  /** Apply to keys under this prefix only ("" for the whole bucket). */
  readonly prefix: string;
}

export interface GetResult {
  readonly body: Buffer;
  readonly meta: ObjectMeta;
  readonly md5?: string | undefined;
}

export interface ListOptions {
  /** Page size asked of the server (S3 MaxKeys); every page is followed. */
  readonly pageSize?: number | undefined;
  /** Only keys after this one (S3 StartAfter), in the listing's byte order. */
  readonly startAfter?: string | undefined;
}

/** What a writer that died left behind (a multipart upload, a temp file): `doctor` reports it, `state repair` removes it. */
export interface Leftover {
  readonly kind: "multipart-upload" | "temp-file";
  readonly key: string | undefined;
  /** Upload ID, or the temp file's name. */
  readonly id: string;
  readonly since: Date | undefined;
  readonly size?: number | undefined;
}

/** One object as a listing describes it (S3 ListObjectsV2 `Contents`): no metadata, no bytes. */
export interface ListedObject {
  readonly key: string;
  readonly size: number;
  readonly lastModified: Date | undefined;
  readonly etag: string | undefined;
}

/** A bucket-scoped object store. Keys are S3-style (`/`-separated, no leading `/`). */
export interface ObjectStoreDriver {
  readonly kind: "s3" | "file";
  /** Where data lives, for messages (endpoint and bucket; never credentials). */
  readonly location: string;
  /** Null when absent (as for every read). */
  get(key: string, options?: GetOptions): Promise<GetResult | null>;
  /** The metadata and recorded MD5 at once, the bytes as they arrive. */
  getStream(key: string, options?: HeadOptions): Promise<StreamedGet | null>;
  head(key: string, options?: HeadOptions): Promise<ObjectMeta | null>;
  /** Every version of exactly `key`, newest first, delete markers included, paged lazily (unversioned: ID `null`). */
  listVersions(key: string, options?: Pick<ListOptions, "pageSize">): AsyncIterable<ObjectVersion>;
  versioning(): Promise<VersioningStatus>;
  enableVersioning(): Promise<void>;
  /**
   * Set objstate's retention rule (other lifecycle rules kept), or remove it with `undefined`
   * fields; a store that refuses or drops a part gets its rules back: `RETENTION_UNSUPPORTED`.
   */
  setRetention(rule: Retention): Promise<void>;
  getRetention(): Promise<Retention | null>;
  /**
   * Store bytes atomically (readers see the old object or the new one); a {@link ByteSource}
   * is streamed, and with an `md5` it must hash to it or nothing is stored (`STORE_INTEGRITY`).
   */
  put(key: string, body: PutBody, options?: PutOptions): Promise<void>;
  /** Every key starting with `prefix`, in lexicographic order, all pages followed. */
  list(prefix: string, options?: ListOptions): AsyncIterable<string>;
  /** {@link list} with what the listing says of each key (size, time, ETag): no request per key. */
  listDetailed(prefix: string, options?: ListOptions): AsyncIterable<ListedObject>;
  /** Delete; absent keys are not an error. */
  delete(key: string): Promise<void>;
  /** Delete only while the ETag is `etag` (lockfiles); false when absent or another version. */
  deleteIfMatch(key: string, etag: string): Promise<boolean>;
  /** Delete the key with every version and delete marker of it (probe objects; never states). */
  purge(key: string): Promise<void>;
  bucketExists(): Promise<boolean>;
  /** No-op when it already exists and is ours. */
  createBucket(): Promise<void>;
  /** Leftovers under `prefix`, oldest first, live ones included: callers decide by age. */
  listLeftovers(prefix: string): Promise<Leftover[]>;
  /** Gone already is fine. */
  removeLeftover(item: Leftover): Promise<void>;
  close(): void;
}

export interface StoreDriverOptions {
  readonly bucket: string;
  /** `http(s)://…`, a bare host, a `file:` URL or path, or the endpoint already parsed. */
  readonly endpoint: import("../io/endpoint.js").EndpointInput;
  readonly region?: string | undefined;
  readonly credentials?: CredentialsProvider | undefined;
  /** Bodies at or above this size go up in multipart uploads (S3 driver). Default 100 MiB. */
  readonly multipartThreshold?: number | undefined;
  /** Base directory for relative `file:` endpoints (default `process.cwd()`). */
  readonly cwd?: string | undefined;
  /** Timeouts of network drivers (defaults: `DEFAULT_TIMEOUTS`). */
  readonly timeouts?: Partial<import("../io/sdk-client.js").Timeouts> | undefined;
}
