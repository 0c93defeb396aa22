/**
 * How the S3 driver reads the store's answers (s3.ts): object metadata and the MD5 it
 * records, lifecycle rules, version and "not found" answers, errors worth a retry, and
 * requests as they go on the wire. No requests are made here.
 */
import type { LifecycleRule } from "@aws-sdk/client-s3";
import { isForeignAnswer, networkFailure, sdkErrorName, sdkHttpStatus } from "../io/sdk-errors.js";
import { ObjstateError } from "../errors.js";
import type { ObjectMeta, Retention } from "./types.js";

/** A request as it leaves the client: signed, with every header that goes on the wire. */
export interface WireRequest {
  readonly method: string;
  /** Path and query, e.g. `/bucket/key?uploads`. */
  readonly path: string;
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
}

/** Object metadata key holding the MD5 of a multipart-uploaded object (`x-amz-meta-objstate-md5`). */
export const MD5_METADATA = "objstate-md5";

/** The ID of objstate's own lifecycle rule (other rules of the bucket are left alone). */
export const RETENTION_RULE_ID = "objstate-noncurrent-versions";

export interface MetaSource {
  readonly ContentLength?: number | undefined;
  readonly ContentType?: string | undefined;
  readonly ETag?: string | undefined;
  readonly LastModified?: Date | undefined;
  readonly ServerSideEncryption?: string | undefined;
  readonly Metadata?: Record<string, string> | undefined;
  readonly VersionId?: string | undefined;
}

/** Etags are returned without the quotes S3 puts around them (the file driver's are bare md5 hex). */
/**
 * The object's MD5 from its ETag, when the ETag is one: a single-part upload stored without
 * KMS or a customer key. Multipart ETags end in `-N` and are not an MD5 of the bytes.
 */
export function plainMd5Etag(res: {
  readonly ETag?: string | undefined;
  readonly ServerSideEncryption?: string | undefined;
  readonly SSECustomerAlgorithm?: string | undefined;
}): string | undefined {
  const etag = res.ETag?.replace(/"/g, "").toLowerCase();
  if (etag === undefined || !/^[0-9a-f]{32}$/.test(etag)) return undefined;
  if (res.SSECustomerAlgorithm !== undefined || (res.ServerSideEncryption !== undefined && res.ServerSideEncryption !== "AES256")) return undefined;
  return etag;
}

/** The MD5 objstate recorded as metadata when it uploaded the object in parts. */
export function metadataMd5(res: { readonly Metadata?: Record<string, string> | undefined }): string | undefined {
  const v = res.Metadata?.[MD5_METADATA]?.toLowerCase();
  return v !== undefined && /^[0-9a-f]{32}$/.test(v) ? v : undefined;
}

export function retentionRule(r: Retention): LifecycleRule | undefined {
  if (r.noncurrentDays === undefined && r.newerNoncurrentVersions === undefined) return undefined;
  return {
    ID: RETENTION_RULE_ID,
    Status: "Enabled",
    Filter: { Prefix: r.prefix },
    NoncurrentVersionExpiration: { NoncurrentDays: r.noncurrentDays, NewerNoncurrentVersions: r.newerNoncurrentVersions },
  };
}

export function fromRule(rule: LifecycleRule, prefix: string): Retention {
  const n = rule.NoncurrentVersionExpiration;
  return { prefix, noncurrentDays: n?.NoncurrentDays, newerNoncurrentVersions: n?.NewerNoncurrentVersions };
}

export function describeRetention(r: Retention): string {
  return [
    r.noncurrentDays === undefined ? undefined : `NoncurrentDays ${r.noncurrentDays}`,
    r.newerNoncurrentVersions === undefined ? undefined : `NewerNoncurrentVersions ${r.newerNoncurrentVersions}`,
  ]
    .filter((x) => x !== undefined)
    .join(", ");
}

/**
 * A version ID the store does not know, or one naming a delete marker (S3 answers a GET of
 * one with 405): there are no bytes to read.
 */
export function noSuchVersion(e: unknown): boolean {
  const name = sdkErrorName(e);
  const status = sdkHttpStatus(e);
  return (
    name === "NoSuchVersion" ||
    status === 405 ||
    name === "MethodNotAllowed" ||
    (status === 400 && (name === "InvalidArgument" || name === "InvalidVersionId" || name === "InvalidRequest"))
  );
}

export function toMeta(res: MetaSource): ObjectMeta {
  return {
    versionId: res.VersionId === undefined || res.VersionId === "null" ? undefined : res.VersionId,
    size: res.ContentLength ?? 0,
    contentType: res.ContentType,
    etag: res.ETag?.replace(/"/g, ""),
    lastModified: res.LastModified,
    serverSideEncryption: res.ServerSideEncryption,
    metadata: res.Metadata === undefined ? undefined : lowerKeys(res.Metadata),
  };
}

function lowerKeys(m: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m)) out[k.toLowerCase()] = v;
  return out;
}

/** The whole object's size from a `Content-Range: bytes 0-99/1234` header. */
export function totalSize(range: string | undefined): number | undefined {
  const m = range === undefined ? null : /\/(\d+)\s*$/.exec(range);
  return m === null ? undefined : Number(m[1]);
}

export function toWireRequest(request: unknown): WireRequest | null {
  if (typeof request !== "object" || request === null) return null;
  const r = request as { method?: unknown; path?: unknown; query?: unknown; headers?: unknown };
  if (typeof r.method !== "string" || typeof r.path !== "string" || typeof r.headers !== "object" || r.headers === null) return null;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers)) if (typeof v === "string") headers[k.toLowerCase()] = v;
  return { method: r.method, path: r.path + queryString(r.query), headers };
}

function queryString(query: unknown): string {
  if (typeof query !== "object" || query === null) return "";
  const parts: string[] = [];
  for (const [k, v] of Object.entries(query)) {
    for (const one of Array.isArray(v) ? v : [v])
      parts.push(one === null || one === undefined ? encodeURIComponent(k) : `${encodeURIComponent(k)}=${encodeURIComponent(String(one))}`);
  }
  return parts.length === 0 ? "" : `?${parts.join("&")}`;
}

export function accessHint(name: string | undefined): string {
  switch (name) {
    case "InvalidAccessKeyId":
      return "the server does not know the access key ID; check the access key and that the credentials belong to this endpoint";
    case "SignatureDoesNotMatch":
      return "the request signature does not match; check the secret key (and the region)";
    case "RequestTimeTooSkewed":
      return "the clock of this machine is too far from the server's; fix the system clock";
    default:
      return "check the access key and secret key, and that this identity is allowed to use the bucket";
  }
}

export function isNotFound(e: unknown): boolean {
  const name = sdkErrorName(e);
  return sdkHttpStatus(e) === 404 || name === "NotFound" || name === "NoSuchKey" || name === "NoSuchBucket";
}

/**
 * Did something other than an S3 API answer? The SDK could not parse the body as S3 XML
 * ("Deserialization error"), or a write / list got a 404 with no S3 error code at all
 * (every S3 "not found" names what is missing: NoSuchBucket, NoSuchKey, NoSuchUpload).
 */
export function notS3Answer(e: unknown, op: string): boolean {
  return isForeignAnswer(e) || (sdkHttpStatus(e) === 404 && sdkErrorName(e) === "NotFound" && op !== "head" && op !== "get");
}

/** Worth another attempt: the network failed, or the server was busy (a conditional write's 500 is RGW's "precondition failed"). */
export function transient(e: unknown, conditional: boolean): boolean {
  if (e instanceof ObjstateError) return false;
  const status = sdkHttpStatus(e);
  if (status === undefined) return networkFailure(e) !== undefined;
  if (status === 500) return !conditional;
  return status === 502 || status === 503 || status === 504 || status === 429 || sdkErrorName(e) === "RequestTimeout" || sdkErrorName(e) === "SlowDown";
}

export function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof v === "object" && v !== null && Symbol.asyncIterator in v;
}
