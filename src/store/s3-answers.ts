/**
 * How the S3 driver reads the store's answers (s3.ts): object metadata and the MD5 it records,
 * "not found" answers, errors worth a retry, requests as they go on the wire.
 */
import type { HeadObjectCommandOutput } from "@aws-sdk/client-s3";
import { isForeignAnswer, networkFailure, sdkErrorName, sdkHttpStatus } from "../io/sdk-errors.js";
import { ObjstateError } from "../errors.js";
import type { ObjectMeta } from "./types.js";

/** A request as it leaves the client: signed, with every header that goes on the wire (names in lower case). */
export interface WireRequest {
  readonly method: string;
  /** Path and query, e.g. `/bucket/key?uploads`. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** Object metadata key holding the MD5 of a multipart-uploaded object (`x-amz-meta-objstate-md5`). */
export const MD5_METADATA = "objstate-md5";

/** The ID of objstate's own lifecycle rule (other rules of the bucket are left alone). */
export const RETENTION_RULE_ID = "objstate-noncurrent-versions";

type Answer = Partial<
  Pick<HeadObjectCommandOutput, "ContentLength" | "ContentType" | "ETag" | "LastModified" | "ServerSideEncryption" | "Metadata" | "VersionId">
>;

/** The object's MD5 from its ETag, when it is one: single-part, without KMS or a customer key (multipart ETags end in `-N`). */
export function plainMd5Etag(res: Partial<Pick<HeadObjectCommandOutput, "ETag" | "ServerSideEncryption" | "SSECustomerAlgorithm">>): string | undefined {
  const etag = res.ETag?.replace(/"/g, "").toLowerCase();
  if (etag === undefined || !/^[0-9a-f]{32}$/.test(etag)) return undefined;
  if (res.SSECustomerAlgorithm !== undefined || (res.ServerSideEncryption !== undefined && res.ServerSideEncryption !== "AES256")) return undefined;
  return etag;
}

/** The MD5 objstate recorded as metadata when it uploaded the object in parts. */
export function metadataMd5(res: Answer): string | undefined {
  const v = res.Metadata?.[MD5_METADATA]?.toLowerCase();
  return v !== undefined && /^[0-9a-f]{32}$/.test(v) ? v : undefined;
}

/** A version ID the store does not know, or one naming a delete marker (a GET of one is a 405): no bytes. */
export function noSuchVersion(e: unknown): boolean {
  const name = sdkErrorName(e);
  const status = sdkHttpStatus(e);
  if (name === "NoSuchVersion" || status === 405 || name === "MethodNotAllowed") return true;
  return status === 400 && (name === "InvalidArgument" || name === "InvalidVersionId" || name === "InvalidRequest");
}

export function toMeta(res: Answer): ObjectMeta {
  return {
    versionId: res.VersionId === undefined || res.VersionId === "null" ? undefined : res.VersionId,
    size: res.ContentLength ?? 0,
    contentType: res.ContentType,
    etag: res.ETag?.replace(/"/g, ""),
    lastModified: res.LastModified,
    serverSideEncryption: res.ServerSideEncryption,
    metadata: res.Metadata === undefined ? undefined : Object.fromEntries(Object.entries(res.Metadata).map(([k, v]) => [k.toLowerCase(), v])),
  };
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
  const query: string[] = [];
  for (const [k, v] of Object.entries(typeof r.query === "object" && r.query !== null ? r.query : {})) {
    for (const one of Array.isArray(v) ? v : [v])
      query.push(one === null || one === undefined ? encodeURIComponent(k) : `${encodeURIComponent(k)}=${encodeURIComponent(String(one))}`);
  }
  return { method: r.method, path: r.path + (query.length === 0 ? "" : `?${query.join("&")}`), headers };
}

const ACCESS_HINTS = new Map([
  ["InvalidAccessKeyId", "the server does not know the access key ID; check the access key and that the credentials belong to this endpoint"],
  ["SignatureDoesNotMatch", "the request signature does not match; check the secret key (and the region)"],
  ["RequestTimeTooSkewed", "the clock of this machine is too far from the server's; fix the system clock"],
]);

export function accessHint(name: string | undefined): string {
  return ACCESS_HINTS.get(name ?? "") ?? "check the access key and secret key, and that this identity is allowed to use the bucket";
}

export function isNotFound(e: unknown): boolean {
  const name = sdkErrorName(e);
  return sdkHttpStatus(e) === 404 || name === "NotFound" || name === "NoSuchKey" || name === "NoSuchBucket";
}

/**
 * Did something other than an S3 API answer? The SDK could not parse the body as S3 XML, or a
 * write or list got a 404 with no S3 error code (every S3 "not found" names what is missing).
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
