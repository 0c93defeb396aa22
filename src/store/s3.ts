/**
 * The S3-API object-store driver, checked against Ceph RGW: path-style requests, checksums only
 * when an operation requires them (RGW Pacific rejects aws-chunked trailers), errors mapped by
 * name and HTTP status (RGW sends no messages). Loaded on demand by `index.ts`.
 */
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { setTimeout as sleep } from "node:timers/promises";
import * as S3 from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { sdkCredentials } from "../io/sdk-credentials.js";
import { isObjstateError, ObjstateError, type ErrorCode } from "../errors.js";
import { deadlineMs, displayUrl, MAX_ATTEMPTS, newSdkClient, resolveTimeouts, type Timeouts } from "../io/sdk-client.js";
import { isAccessDenied, isTlsToPlainHttp, networkFailure, sdkErrorName, sdkHttpStatus } from "../io/sdk-errors.js";
import { pauseAt } from "../util/test-pause.js";
import { endpointOfKind, plainHttpAdvice } from "../io/endpoint.js";
import { isByteSource, md5OfSource, readExactly, sizeOf } from "./byte-source.js";
import { readWhole } from "./read-whole.js";
import {
  accessHint,
  isNotFound,
  MD5_METADATA,
  metadataMd5,
  noSuchVersion,
  notS3Answer,
  plainMd5Etag,
  RETENTION_RULE_ID,
  toMeta,
  totalSize,
  toWireRequest,
  transient,
  type WireRequest,
} from "./s3-answers.js";
import type {
  ByteSource,
  GetOptions,
  GetResult,
  HeadOptions,
  Leftover,
  ListedObject,
  ListOptions,
  ObjectMeta,
  ObjectStoreDriver,
  ObjectVersion,
  PutBody,
  PutOptions,
  Retention,
  StoreDriverOptions,
  StreamedGet,
  VersioningStatus,
} from "./types.js";

export type { WireRequest };

export interface S3DriverOptions extends StoreDriverOptions {
  /** Called for every HTTP request (each retry too), after signing, just before it is sent. */
  readonly onRequest?: ((req: WireRequest) => void) | undefined;
}

const MiB = 1024 * 1024;
/** AWS's advice: multipart from 100 MB; below, one request is faster. */
const DEFAULT_MULTIPART_THRESHOLD = 100 * MiB;
const PART_SIZE = 8 * MiB;
const QUEUE_SIZE = 4;
/** Largest body S3 accepts in one PutObject. */
const SINGLE_PUT_MAX = 5 * 1024 * MiB;
const DEFAULT_PAGE_SIZE = 1000;
/** First pause before retrying a streamed PutObject (doubled per attempt, with jitter). */
const RETRY_BASE_MS = 200;
/** Bytes a streamed body reads ahead of the socket. */
const STREAM_HIGH_WATER = 1024 * 1024;

/** {@link ObjectStoreDriver} over the S3 API (`@aws-sdk/client-s3`). */
export class S3Driver implements ObjectStoreDriver {
  readonly kind = "s3" as const;
  readonly location: string;
  private readonly client: S3.S3Client;
  private readonly bucket: string;
  private readonly endpoint: string;
  private readonly multipartThreshold: number;
  /** RGW refused an If-Match that held (versioned bucket): a HEAD checks conditions; the commit point (docs/design.md §5) keeps a late write from counting. */
  private conditionsIgnored = false;
  private versionedBucket: Promise<boolean> | undefined;
  private readonly timeouts: Timeouts;
  /** A client like {@link client} with other timeouts (a streamed upload's deadline). */
  private readonly newClient: (timeouts: Timeouts) => S3.S3Client;

  constructor(options: S3DriverOptions) {
    const ep = endpointOfKind(options.endpoint, "http", "the S3 driver", options.cwd);
    this.bucket = options.bucket;
    this.endpoint = displayUrl(ep.url);
    this.location = `${this.endpoint}/${this.bucket}`;
    this.multipartThreshold = options.multipartThreshold ?? DEFAULT_MULTIPART_THRESHOLD;
    const timeouts = resolveTimeouts(options.timeouts);
    this.timeouts = timeouts;
    // Without a provider of ours the SDK would fall back to its own chain (env, ~/.aws, instance metadata).
    const credentials = sdkCredentials(options.credentials ?? (() => Promise.reject(new ObjstateError("CREDENTIALS_MISSING", NO_CREDENTIALS))));
    this.newClient = (t) => {
      const target = { service: "object store" as const, endpoint: ep.url, region: options.region, credentials, timeouts: t };
      const client = newSdkClient(
        target,
        (c) =>
          new S3.S3Client({
            ...c,
            forcePathStyle: true,
            requestChecksumCalculation: "WHEN_REQUIRED",
            responseChecksumValidation: "WHEN_REQUIRED",
            useArnRegion: false,
            disableS3ExpressSessionAuth: true,
          }),
      );
      if (options.onRequest !== undefined) addRequestHook(client, options.onRequest);
      return client;
    };
    this.client = this.newClient(timeouts);
  }

  async get(key: string, options: GetOptions = {}): Promise<GetResult | null> {
    if (options.maxBytes === undefined) {
      const got = await this.getStream(key, options);
      if (got === null) return null;
      const { body, hashed } = await readWhole(got, key, { hash: options.md5 === true && got.recordedMd5 === undefined });
      return { body, meta: got.meta, md5: options.md5 === true ? (got.recordedMd5 ?? hashed) : undefined };
    }
    try {
      const res = await this.send(key, options.versionId, `bytes=0-${Math.max(0, options.maxBytes - 1)}`);
      const { body } = await readWhole({ meta: { size: res.ContentLength ?? 0 }, body: exactBody(res.Body, res.ContentLength) }, key);
      return { body, meta: toMeta({ ...res, ContentLength: totalSize(res.ContentRange) ?? body.length }) };
    } catch (e) {
      if (this.absent(e, options.versionId)) return null;
      // A range of an empty object is unsatisfiable: it is an empty object.
      if (sdkHttpStatus(e) === 416 || sdkErrorName(e) === "InvalidRange") {
        const meta = await this.head(key, { versionId: options.versionId });
        return meta === null ? null : { body: Buffer.alloc(0), meta };
      }
      throw this.mapError(e, { op: "get", key });
    }
  }

  async getStream(key: string, options: HeadOptions = {}): Promise<StreamedGet | null> {
    try {
      const res = await this.send(key, options.versionId, undefined);
      const recordedMd5 = plainMd5Etag(res) ?? metadataMd5(res);
      return { meta: toMeta(res), recordedMd5, proven: recordedMd5 !== undefined, body: exactBody(res.Body, res.ContentLength) };
    } catch (e) {
      if (this.absent(e, options.versionId)) return null;
      throw this.mapError(e, { op: "get", key });
    }
  }

  /** One GetObject whose answer is an S3 object. */
  private async send(key: string, versionId: string | undefined, range: string | undefined): Promise<S3.GetObjectCommandOutput> {
    const res = await this.client.send(new S3.GetObjectCommand({ Bucket: this.bucket, Key: key, VersionId: versionId, Range: range }));
    // Every S3 object answer carries an ETag: a 200 without one (a web server) must not pass for a state.
    if (res.ETag === undefined) {
      const why = `cannot get "${key}" in bucket "${this.bucket}" at ${this.endpoint}: the endpoint does not speak the S3 API (its answer is not an S3 object)`;
      throw new ObjstateError("ENDPOINT_NOT_S3", `${why}; ${NOT_S3_HINT}`, { details: { key, bucket: this.bucket } });
    }
    return res;
  }

  /** A missing key (not bucket), or a version that is gone or a delete marker. */
  private absent(e: unknown, versionId: string | undefined): boolean {
    return (isNotFound(e) && sdkErrorName(e) !== "NoSuchBucket") || (versionId !== undefined && noSuchVersion(e));
  }

  async head(key: string, options: HeadOptions = {}): Promise<ObjectMeta | null> {
    try {
      return toMeta(await this.client.send(new S3.HeadObjectCommand({ Bucket: this.bucket, Key: key, VersionId: options.versionId })));
    } catch (e) {
      // A HEAD response has no body, so a missing bucket looks like a missing key here.
      if (this.absent(e, options.versionId)) return null;
      throw this.mapError(e, { op: "head", key });
    }
  }

  async put(key: string, body: PutBody, options: PutOptions = {}): Promise<void> {
    const ifMatch = options.ifMatch?.replace(/"/g, "");
    if (options.strictConditions === true) return this.putOnce(key, body, options);
    // Ceph RGW ignores If-None-Match on a versioned bucket: the absence is checked first (a late
    // version of a writer that lost the lock can no longer commit: docs/design.md §5).
    const checkAbsence = options.ifNoneMatch === true && ifMatch === undefined && (this.conditionsIgnored || (await this.isVersioned()));
    if (checkAbsence && (await this.head(key)) !== null) throw this.preconditionFailed(key, undefined);
    if (ifMatch !== undefined && this.conditionsIgnored) return this.putCheckedByHead(key, body, options, ifMatch, undefined);
    await this.putOnce(key, body, options).catch(async (e: unknown) => {
      if (ifMatch === undefined || !isObjstateError(e, "PRECONDITION_FAILED")) throw e;
      // Refused although the condition holds? Ceph RGW refuses every If-Match on a versioned bucket.
      await this.putCheckedByHead(key, body, options, ifMatch, e);
    });
  }

  /** The conditional write's check, made by hand where the store cannot make it, then the write. */
  private async putCheckedByHead(key: string, body: PutBody, options: PutOptions, ifMatch: string, refusal: unknown): Promise<void> {
    if ((await this.head(key))?.etag !== ifMatch) throw refusal ?? this.preconditionFailed(key, undefined);
    this.conditionsIgnored = true;
    pauseAt("store-checked");
    await this.putOnce(key, body, { ...options, ifMatch: undefined, ifNoneMatch: undefined });
  }

  private async isVersioned(): Promise<boolean> {
    return (this.versionedBucket ??= this.versioning()
      .then((st) => st !== "off")
      .catch(() => false));
  }

  private preconditionFailed(key: string, cause: unknown, httpStatus?: number): ObjstateError {
    return new ObjstateError(
      "PRECONDITION_FAILED",
      `${key} in ${this.location} is not what the conditional write expected (it exists already, or changed since it was read)`,
      { cause, details: httpStatus === undefined ? { key } : { key, httpStatus } },
    );
  }

  private async putOnce(key: string, body: PutBody, options: PutOptions): Promise<void> {
    const size = sizeOf(body);
    const conditional = options.ifNoneMatch === true || options.ifMatch !== undefined;
    const params: S3.PutObjectCommandInput = {
      Bucket: this.bucket,
      Key: key,
      ContentType: options.contentType,
      ACL: options.acl,
      ServerSideEncryption: options.encrypt === true ? "AES256" : undefined,
      Metadata: options.metadata === undefined ? undefined : { ...options.metadata },
      IfNoneMatch: options.ifNoneMatch === true ? "*" : undefined,
      // RGW compares If-Match against the bare ETag and refuses a quoted one (ceph.md).
      IfMatch: options.ifMatch?.replace(/"/g, ""),
    };
    try {
      // Conditional writes are always one PutObject: RGW Pacific ignores If-None-Match on
      // CompleteMultipartUpload and silently overwrites, and older S3 clones do the same.
      if (size >= this.multipartThreshold && !conditional) return await this.putMultipart(params, body, options);
      if (size > SINGLE_PUT_MAX) throw new ObjstateError("STORE_ERROR", `a write of ${size} bytes is larger than one S3 PutObject allows (5 GiB)`);
      if (isByteSource(body)) await this.putStreamed(params, body, options, conditional);
      else await this.putSingle({ ...params, Body: body }, body, options);
    } catch (e) {
      throw this.mapPutError(e, key, conditional);
    }
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<string> {
    for await (const o of this.listDetailed(prefix, options)) yield o.key;
  }

  async *listDetailed(prefix: string, options: ListOptions = {}): AsyncIterable<ListedObject> {
    let token: string | undefined;
    do {
      const command = new S3.ListObjectsV2Command({
        Bucket: this.bucket,
        Prefix: prefix === "" ? undefined : prefix,
        MaxKeys: options.pageSize ?? DEFAULT_PAGE_SIZE,
        ContinuationToken: token,
        StartAfter: token === undefined ? options.startAfter : undefined,
      });
      let page: ListPage = { objects: [], next: undefined };
      // The SDK's generic XML parse is most of a long listing's time: the page is read here instead,
      // past the check for an error sent with 200 (throw200Exceptions), and the SDK gets an empty body.
      command.middlewareStack.addRelativeTo(
        <A, R extends { response: unknown }>(next: (args: A) => Promise<R>) =>
          async (args: A): Promise<R> => {
            const out = await next(args);
            const res = out.response as { statusCode?: number; body?: unknown };
            if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) {
              const xml = await text(res.body as Readable);
              // Any other answer (a proxy's page) the SDK refuses, as before.
              const listed = xml.includes("</ListBucketResult>");
              if (listed) page = parseListPage(xml);
              res.body = listed ? new Uint8Array(0) : Buffer.from(xml);
            }
            return out;
          },
        { relation: "before", toMiddleware: "throw200ExceptionsMiddleware", name: "objstateListPage" },
      );
      try {
        await this.client.send(command);
      } catch (e) {
        throw this.mapError(e, { op: "list", key: prefix });
      }
      yield* page.objects;
      token = page.next;
    } while (token !== undefined);
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new S3.DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (e) {
      if (isNotFound(e) && sdkErrorName(e) !== "NoSuchBucket") return;
      throw this.mapError(e, { op: "delete", key });
    }
  }

  async deleteIfMatch(key: string, etag: string): Promise<boolean> {
    try {
      await this.client.send(new S3.DeleteObjectCommand({ Bucket: this.bucket, Key: key, IfMatch: etag.replace(/"/g, "") }));
      return true;
    } catch (e) {
      const status = sdkHttpStatus(e);
      // RGW answers some losers of a conditional race with 500 instead of 412 (see put).
      if (status === 412 || status === 500 || sdkErrorName(e) === "PreconditionFailed" || isNotFound(e)) return false;
      throw this.mapError(e, { op: "delete", key });
    }
  }

  async purge(key: string): Promise<void> {
    await this.delete(key);
    try {
      for await (const v of this.listVersions(key)) {
        if (v.versionId === "null") continue;
        await this.client.send(new S3.DeleteObjectCommand({ Bucket: this.bucket, Key: key, VersionId: v.versionId })).catch((e: unknown) => {
          if (!isNotFound(e)) throw this.mapError(e, { op: "delete a version of", key });
        });
      }
    } catch (e) {
      // Stores without versioning support answer "not implemented": the delete above was all.
      const cause = e instanceof ObjstateError ? e.cause : e;
      if (sdkHttpStatus(cause) !== 501 && sdkErrorName(cause) !== "NotImplemented") throw e;
    }
  }

  async *listVersions(key: string, options: Pick<ListOptions, "pageSize"> = {}): AsyncIterable<ObjectVersion> {
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new S3.ListObjectVersionsCommand({
            Bucket: this.bucket,
            Prefix: key,
            MaxKeys: options.pageSize ?? DEFAULT_PAGE_SIZE,
            KeyMarker: keyMarker,
            VersionIdMarker: versionMarker,
          }),
        );
      } catch (e) {
        throw this.mapError(e, { op: "list versions of", key });
      }
      const found: ObjectVersion[] = [];
      for (const v of page.Versions ?? []) {
        if (v.Key === key && v.VersionId !== undefined) {
          found.push({
            key,
            versionId: v.VersionId,
            isLatest: v.IsLatest === true,
            deleteMarker: false,
            lastModified: v.LastModified,
            size: v.Size ?? 0,
            etag: v.ETag?.replace(/"/g, ""),
          });
        }
      }
      for (const m of page.DeleteMarkers ?? []) {
        if (m.Key === key && m.VersionId !== undefined)
          found.push({ key, versionId: m.VersionId, isLatest: m.IsLatest === true, deleteMarker: true, lastModified: m.LastModified, size: 0 });
      }
      // The SDK splits the server's one newest-first list into versions and delete markers;
      // time puts them back together (the current one first on a tie).
      yield* found.sort((a, b) => (b.lastModified?.getTime() ?? 0) - (a.lastModified?.getTime() ?? 0) || Number(b.isLatest) - Number(a.isLatest));
      // Past this key the listing holds only other keys it prefixes (`….tflock`, longer names).
      const more = page.IsTruncated === true && (page.NextKeyMarker === undefined || page.NextKeyMarker <= key);
      keyMarker = more ? page.NextKeyMarker : undefined;
      versionMarker = more ? page.NextVersionIdMarker : undefined;
    } while (keyMarker !== undefined);
  }

  async versioning(): Promise<VersioningStatus> {
    try {
      const res = await this.client.send(new S3.GetBucketVersioningCommand({ Bucket: this.bucket }));
      return res.Status === "Enabled" ? "enabled" : res.Status === "Suspended" ? "suspended" : "off";
    } catch (e) {
      throw this.mapError(e, { op: "read the versioning of bucket" });
    }
  }

  async enableVersioning(): Promise<void> {
    this.versionedBucket = Promise.resolve(true);
    try {
      await this.client.send(new S3.PutBucketVersioningCommand({ Bucket: this.bucket, VersioningConfiguration: { Status: "Enabled" } }));
    } catch (e) {
      throw this.mapError(e, { op: "turn on versioning of bucket" });
    }
  }

  async setRetention(rule: Retention): Promise<void> {
    const before = await this.lifecycleRules();
    const days = rule.noncurrentDays === undefined ? [] : [`NoncurrentDays ${rule.noncurrentDays}`];
    const parts = rule.newerNoncurrentVersions === undefined ? days : [...days, `NewerNoncurrentVersions ${rule.newerNoncurrentVersions}`];
    const expiration = { NoncurrentDays: rule.noncurrentDays, NewerNoncurrentVersions: rule.newerNoncurrentVersions };
    const wanted = { ID: RETENTION_RULE_ID, Status: "Enabled" as const, Filter: { Prefix: rule.prefix }, NoncurrentVersionExpiration: expiration };
    try {
      await this.putRules([...before.filter((r) => r.ID !== RETENTION_RULE_ID), ...(parts.length === 0 ? [] : [wanted])]);
    } catch (e) {
      const status = sdkHttpStatus(e);
      if (parts.length > 0 && (status === 400 || status === 501)) {
        throw new ObjstateError(
          "RETENTION_UNSUPPORTED",
          `the object store at ${this.endpoint} refused the retention rule (${parts.join(", ")}; ${sdkErrorName(e) ?? `HTTP ${status}`})${rule.noncurrentDays === undefined ? ": it may need a number of days (--keep-days)" : ""}; nothing was changed`,
          { cause: e, details: { bucket: this.bucket, errorName: sdkErrorName(e), httpStatus: status } },
        );
      }
      throw this.mapError(e, { op: "set the lifecycle of bucket" });
    }
    if (parts.length === 0) return;
    // Some stores accept a rule and silently keep only the parts they know (Ceph RGW drops
    // NewerNoncurrentVersions): a rule that expires more than the operator asked is worse than none.
    const kept = (await this.lifecycleRules()).find((r) => r.ID === RETENTION_RULE_ID)?.NoncurrentVersionExpiration;
    const dropped: string[] = [];
    if (kept?.NoncurrentDays !== rule.noncurrentDays) dropped.push(`NoncurrentDays ${rule.noncurrentDays ?? "(none)"}`);
    if (kept?.NewerNoncurrentVersions !== rule.newerNoncurrentVersions) dropped.push(`NewerNoncurrentVersions ${rule.newerNoncurrentVersions ?? "(none)"}`);
    if (dropped.length === 0) return;
    await this.putRules(before).catch((e: unknown) => {
      throw this.mapError(e, { op: "restore the lifecycle of bucket" });
    });
    throw new ObjstateError(
      "RETENTION_UNSUPPORTED",
      `the object store at ${this.endpoint} accepted the retention rule but did not keep ${dropped.join(" and ")}, so it would expire other versions than asked; the earlier lifecycle rules were put back. ` +
        `Use only what the store supports (Ceph RGW: --keep-days alone).`,
      { details: { bucket: this.bucket, dropped } },
    );
  }

  private async putRules(rules: S3.LifecycleRule[]): Promise<void> {
    if (rules.length === 0) await this.client.send(new S3.DeleteBucketLifecycleCommand({ Bucket: this.bucket }));
    else await this.client.send(new S3.PutBucketLifecycleConfigurationCommand({ Bucket: this.bucket, LifecycleConfiguration: { Rules: rules } }));
  }

  async getRetention(): Promise<Retention | null> {
    const rule = (await this.lifecycleRules()).find((r) => r.ID === RETENTION_RULE_ID);
    const n = rule?.NoncurrentVersionExpiration;
    return rule === undefined
      ? null
      : { prefix: rule.Filter?.Prefix ?? rule.Prefix ?? "", noncurrentDays: n?.NoncurrentDays, newerNoncurrentVersions: n?.NewerNoncurrentVersions };
  }

  private async lifecycleRules(): Promise<S3.LifecycleRule[]> {
    try {
      return (await this.client.send(new S3.GetBucketLifecycleConfigurationCommand({ Bucket: this.bucket }))).Rules ?? [];
    } catch (e) {
      if (sdkErrorName(e) === "NoSuchLifecycleConfiguration" || (sdkHttpStatus(e) === 404 && sdkErrorName(e) !== "NoSuchBucket")) return [];
      throw this.mapError(e, { op: "read the lifecycle of bucket" });
    }
  }

  async bucketExists(): Promise<boolean> {
    try {
      await this.client.send(new S3.HeadBucketCommand({ Bucket: this.bucket }));
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw this.mapError(e, { op: "check bucket" });
    }
  }

  async createBucket(): Promise<void> {
    try {
      await this.client.send(new S3.CreateBucketCommand({ Bucket: this.bucket }));
    } catch (e) {
      if (sdkErrorName(e) === "BucketAlreadyOwnedByYou") return;
      if (sdkErrorName(e) === "BucketAlreadyExists") {
        const message = `bucket "${this.bucket}" already exists at ${this.endpoint} and belongs to another account: choose another bucket name`;
        throw new ObjstateError("STORE_ERROR", message, { cause: e });
      }
      throw this.mapError(e, { op: "create bucket" });
    }
  }

  async listLeftovers(prefix: string): Promise<Leftover[]> {
    const out: Leftover[] = [];
    let keyMarker: string | undefined;
    let uploadMarker: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new S3.ListMultipartUploadsCommand({
            Bucket: this.bucket,
            Prefix: prefix === "" ? undefined : prefix,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadMarker,
          }),
        );
      } catch (e) {
        throw this.mapError(e, { op: "list multipart uploads", key: prefix });
      }
      for (const u of page.Uploads ?? []) {
        if (u.UploadId !== undefined) out.push({ kind: "multipart-upload", key: u.Key, id: u.UploadId, since: u.Initiated });
      }
      const more = page.IsTruncated === true;
      keyMarker = more ? page.NextKeyMarker : undefined;
      uploadMarker = more ? page.NextUploadIdMarker : undefined;
    } while (keyMarker !== undefined);
    return out.sort((a, b) => (a.since?.getTime() ?? 0) - (b.since?.getTime() ?? 0));
  }

  async removeLeftover(item: Leftover): Promise<void> {
    if (item.kind !== "multipart-upload" || item.key === undefined) return;
    try {
      await this.client.send(new S3.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: item.key, UploadId: item.id }));
    } catch (e) {
      if (sdkErrorName(e) === "NoSuchUpload" || sdkHttpStatus(e) === 404) return;
      throw this.mapError(e, { op: "abort multipart upload", key: item.key });
    }
  }

  close(): void {
    this.client.destroy();
  }

  private async putSingle(params: S3.PutObjectCommandInput, body: Buffer, options: PutOptions): Promise<void> {
    const known = typeof options.md5 === "object" ? undefined : (options.md5 ?? createHash("md5").update(body).digest("hex"));
    const res = await this.client.send(new S3.PutObjectCommand({ ...params, ContentMD5: known === undefined ? undefined : base64(known) }));
    await afterPendingMd5(res, options.md5, params.Key);
  }

  private async putMultipart(params: S3.PutObjectCommandInput, body: PutBody, options: PutOptions): Promise<void> {
    // A multipart ETag is no MD5, so the MD5 travels as metadata of the version (known when
    // the upload is created, so hashed first): readers take it from there.
    const what = `the bytes for ${params.Key ?? "?"}`;
    const md5 = (await options.md5) ?? (isByteSource(body) ? await md5OfSource(body, what) : undefined);
    const Body = isByteSource(body) ? sourceStream(body, what) : body;
    const Metadata = md5 === undefined ? params.Metadata : { ...params.Metadata, [MD5_METADATA]: md5 };
    // lib-storage sends a body that fits in one part as a plain PutObject; its ETag is empty on RGW (ceph.md G4).
    const upload = new Upload({ client: this.client, params: { ...params, Body, Metadata }, partSize: PART_SIZE, queueSize: QUEUE_SIZE });
    try {
      await upload.done();
    } finally {
      if (Body instanceof Readable) Body.destroy();
    }
  }

  /** One PutObject streamed from the source, with `Content-MD5` when the hash is known; retried here (the SDK never retries a streamed body), reading it again. */
  private async putStreamed(params: S3.PutObjectCommandInput, source: ByteSource, options: PutOptions, conditional: boolean): Promise<void> {
    const what = `the bytes for ${params.Key ?? "?"}`;
    const md5 = typeof options.md5 === "object" ? undefined : (options.md5 ?? (await md5OfSource(source, what)));
    // The shared client's deadline grows only with a body it can measure: each attempt gets a
    // client whose deadline is what is left of the one this body deserves.
    const deadline = Date.now() + deadlineMs(this.timeouts, source.size);
    for (let attempt = 1; ; attempt++) {
      const client = this.newClient({ ...this.timeouts, requestMs: Math.max(1, deadline - Date.now()) });
      const controller = new AbortController();
      let failed: unknown;
      const body = sourceStream(source, what);
      // A source that fails mid-way (its file changed) ends the request at once, not at the idle timeout.
      body.once("error", (e) => {
        failed = e;
        controller.abort(e);
      });
      try {
        const input = { ...params, Body: body, ContentLength: source.size, ContentMD5: md5 === undefined ? undefined : base64(md5) };
        const res = await client.send(new S3.PutObjectCommand(input), { abortSignal: controller.signal });
        return await afterPendingMd5(res, options.md5, params.Key);
      } catch (e) {
        if (failed !== undefined) throw failed;
        const pause = RETRY_BASE_MS * 2 ** (attempt - 1) * (0.5 + Math.random());
        if (attempt >= MAX_ATTEMPTS || !transient(e, conditional) || Date.now() + pause >= deadline) throw e;
        await sleep(pause);
      } finally {
        body.destroy();
        client.destroy();
      }
    }
  }

  private mapPutError(e: unknown, key: string, conditional: boolean): ObjstateError {
    const status = sdkHttpStatus(e);
    if (sdkErrorName(e) === "BadDigest" || sdkErrorName(e) === "InvalidDigest") {
      return new ObjstateError(
        "STORE_INTEGRITY",
        `the object store refused ${key}: the bytes it received do not match their MD5 (the source changed while it was being sent, or the upload was damaged in transit); nothing was stored: write it again`,
        { cause: e, details: { key, httpStatus: status } },
      );
    }
    // RGW answers some losers of a conditional race with 500 ECANCELED instead of 412 (ceph.md G3).
    if (status === 412 || sdkErrorName(e) === "PreconditionFailed" || (conditional && status === 500)) return this.preconditionFailed(key, e, status);
    return this.mapError(e, { op: "put", key });
  }

  private mapError(e: unknown, ctx: { op: string; key?: string | undefined }): ObjstateError {
    if (e instanceof ObjstateError) return e;
    const name = sdkErrorName(e);
    const status = sdkHttpStatus(e);
    // "check bucket" + `bucket "b"` would say "bucket" twice.
    const what = `${ctx.op.replace(/ bucket$/, "")} ${ctx.key === undefined || ctx.key === "" ? `bucket "${this.bucket}"` : `"${ctx.key}" in bucket "${this.bucket}"`} at ${this.endpoint}`;
    const details = { operation: ctx.op, key: ctx.key, bucket: this.bucket, errorName: name, httpStatus: status };
    const fail = (code: ErrorCode, message: string): ObjstateError => new ObjstateError(code, message, { cause: e, details });
    const http = status === undefined ? "" : `HTTP ${status}`;
    if (name === "NoSuchBucket") return fail("BUCKET_NOT_FOUND", `bucket "${this.bucket}" does not exist at ${this.endpoint}: ${NO_BUCKET_HINT}`);
    if (isAccessDenied(e)) return fail("ACCESS_DENIED", `access denied: cannot ${what}: ${accessHint(name)}`);
    if (isTlsToPlainHttp(e)) return fail("ENDPOINT_PLAIN_HTTP", `cannot ${what}: ${plainHttpAdvice(this.endpoint)}`);
    const answer = `its answer${http === "" ? "" : `, ${http},`} is not an S3 response`;
    if (notS3Answer(e, ctx.op)) return fail("ENDPOINT_NOT_S3", `cannot ${what}: the endpoint does not speak the S3 API (${answer}); ${NOT_S3_HINT}`);
    const net = networkFailure(e);
    if (net !== undefined) return fail("ENDPOINT_UNREACHABLE", `cannot reach the object store at ${this.endpoint} (${net}): ${UNREACHABLE_HINT}`);
    return fail("STORE_ERROR", `object store error: cannot ${what}: ${name ?? "unknown error"}${http === "" ? "" : ` (${http})`}`);
  }
}

const NO_BUCKET_HINT = "check the bucket name and endpoint, or create the bucket";
const NOT_S3_HINT = "check --endpoint: is it the lock table's (DynamoDB) endpoint?";
const UNREACHABLE_HINT = "check the endpoint URL and that the server is running and reachable";

const NO_CREDENTIALS = "no credentials for the object store: give an access key and secret key (or a role) in the config or environment";

const base64 = (hex: string): string => Buffer.from(hex, "hex").toString("base64");

/** A response body as binary chunks, exactly `length` bytes when the store announced it. */
async function* exactBody(body: unknown, length: number | undefined): AsyncGenerator<Uint8Array> {
  if (typeof body !== "object" || body === null || !(Symbol.asyncIterator in body))
    throw new ObjstateError("STORE_ERROR", "object store response has no readable body");
  let offset = 0;
  for await (const chunk of body as AsyncIterable<unknown>) {
    if (!(chunk instanceof Uint8Array)) throw new ObjstateError("STORE_ERROR", "object store response body is not binary");
    offset += chunk.length;
    if (length !== undefined && offset > length) throw new ObjstateError("STORE_ERROR", `object store sent more than the announced ${length} bytes`);
    yield chunk;
  }
  if (length !== undefined && offset !== length) throw new ObjstateError("STORE_ERROR", `object store response ended after ${offset} of ${length} bytes`);
}

/** A hash still being computed as the bytes went up (no Content-MD5) is compared with the stored object's plain-MD5 ETag afterwards. */
async function afterPendingMd5(res: S3.PutObjectCommandOutput, md5: PutOptions["md5"], key: string | undefined): Promise<void> {
  const etag = typeof md5 === "object" ? plainMd5Etag(res) : undefined;
  if (etag === undefined || etag === (await md5)) return;
  throw new ObjstateError(
    "STORE_INTEGRITY",
    `the object store stored "${key ?? "?"}" with MD5 ${etag}, but the bytes sent hash to ${await md5}: the upload was damaged in transit; write it again`,
  );
}

/** A streamed request body over one read of the source: fewer or more bytes are an error of the stream, which ends the request. */
function sourceStream(source: ByteSource, what: string): Readable {
  return Readable.from(readExactly(source, what), { objectMode: false, highWaterMark: STREAM_HIGH_WATER });
}

/** Records each request after the signer ran, i.e. exactly the headers that are sent. */
interface ListPage {
  readonly objects: ListedObject[];
  readonly next: string | undefined;
}

/** A ListObjectsV2 result's objects and continuation token, in one pass over the elements it needs (each of text only). */
export function parseListPage(xml: string): ListPage {
  const objects: ListedObject[] = [];
  const top: Record<string, string> = {};
  let f: Record<string, string> | undefined;
  for (const [, tag, name, value] of xml.matchAll(/<(\/?Contents)>|<(Key|Size|LastModified|ETag|IsTruncated|NextContinuationToken)>([^<]*)<\/\2>/g)) {
    if (tag === "Contents") f = {};
    else if (tag !== undefined) {
      if (f?.Key !== undefined) {
        const lastModified = f.LastModified === undefined ? undefined : new Date(f.LastModified);
        objects.push({ key: f.Key, size: Number(f.Size ?? 0), lastModified, etag: f.ETag?.replace(/"/g, "") });
      }
      f = undefined;
    } else (f ?? top)[name as string] = xmlText(value as string);
  }
  return { objects, next: top.IsTruncated === "true" ? top.NextContinuationToken : undefined };
}

const XML_ENTITIES: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** Text as an XML parser reads it: line ends normalized, then entities decoded (most text has neither, and skips the costly replace). */
function xmlText(raw: string): string {
  if (!raw.includes("&") && !raw.includes("\r")) return raw;
  return raw
    .replace(/\r\n?/g, "\n")
    .replace(/&(?:#x([0-9a-fA-F]+)|#(\d+)|(\w+));/g, (m, hex?: string, dec?: string, named?: string) =>
      named === undefined ? String.fromCodePoint(parseInt(hex ?? (dec as string), hex === undefined ? 10 : 16)) : (XML_ENTITIES[named] ?? m),
    );
}

function addRequestHook(client: S3.S3Client, onRequest: (req: WireRequest) => void): void {
  const hook =
    <A extends { request: unknown }, R>(next: (args: A) => Promise<R>) =>
    async (args: A): Promise<R> => {
      const wire = toWireRequest(args.request);
      if (wire !== null) onRequest(wire);
      return next(args);
    };
  client.middlewareStack.addRelativeTo(hook, { relation: "after", toMiddleware: "httpSigningMiddleware", name: "objstateRequestHook" });
}
