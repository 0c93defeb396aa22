/**
 * The embedded object store: a bucket is a directory on local disk (docs/design.md §2).
 *
 * ```text
 * ROOT/B/<enc(key)>                     one flat file per object, holding exactly its bytes
 * ROOT/B/.meta/<sha256(key)>/<ino>-<mtimeNs>.json   metadata of that one version of the file
 * ROOT/B/.meta/<sha256(key)>/.claim-*   a writer's claim on the key (claim.ts), .spare-* for full disks
 * ROOT/B/.tmp-<uuid>[.<enc(key)>]       an object being written (a crashed writer's is a leftover)
 * ROOT/B/.versions/<sha256(key)>/<vid>[.marker]  an older version (a hard link), or a delete marker
 * ROOT/B/.retention.json                the retention rule for noncurrent versions, if set
 * ```
 *
 * A replacing write hard-links the current file into `.versions/` under the key's claim, then
 * renames the new one over it; a delete renames the file there (no new block or inode). Version
 * IDs (inverted nanosecond mtime, inode) sort newest first. Metadata is keyed by its version's
 * identity and written before that version becomes visible, so a reader of an open file always
 * finds the metadata of those bytes. Writes: temp file, fsync, metadata, `rename` (`link` for
 * create-if-absent), fsync of the directory. Replacing writes and deletes hold the key's claim
 * from their check to their rename, so an If-Match check and the replace are one step however
 * long a holder is stopped. Files are 0600, directories 0700, no symbolic link below ROOT is
 * followed (`UNSAFE_PATH`). Needs hard links and POSIX rename (not FAT, not SMB).
 */
import { createHash, randomUUID } from "node:crypto";
import { closeSync, read, readSync } from "node:fs";
import type { BigIntStats } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { ObjstateError } from "../errors.js";
import { acquireClaim, addSpare, CLAIM_PREFIX, claimIsDead, SPARE_PREFIX } from "./claim.js";
import * as layout from "./file-names.js";
import type { StoredMeta } from "./file-names.js";
import { endpointOfKind } from "../io/endpoint.js";
import {
  checkDir,
  createFile,
  errno,
  fsFailure,
  fsyncDir,
  lstatFile,
  makeDir,
  makeRootDir,
  openRead,
  readSmall,
  removeFile,
  writeWhole,
} from "../io/local-fs.js";
import { isByteSource, readExactly, sizeOf } from "./byte-source.js";
import { hasherFor, type Hasher } from "../util/md5.js";
import { pauseAt } from "../util/test-pause.js";
import type {
  ByteSource,
  GetOptions,
  HeadOptions,
  Leftover,
  GetResult,
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

const META_DIR = ".meta";
const VERSIONS_DIR = ".versions";
const RETENTION_FILE = ".retention.json";
const MARKER_SUFFIX = ".marker";
const DAY_MS = 86_400_000;
/** Metadata of replaced versions younger than this may belong to a write in flight. */
const META_GC_GRACE_MS = 60_000;
/** A reader retries this often when the object is replaced under it. */
const READ_ATTEMPTS = 50;
const LIST_DETAIL_BATCH = 64;
/** Reads up to this size are made synchronously: cheaper than a trip through libuv's pool. */
const SYNC_READ_MAX = 64 * 1024;
/** Reads per call when the bytes are hashed as they arrive, and a streamed get's chunks. */
const READ_CHUNK = 1024 * 1024;

const readAt = promisify(read);
/** Leftover ids: only files this driver makes. */
const LEFTOVER_ID = /^(?:\.tmp-[^/]+|\.meta\/[0-9a-f]{64}\/(?:\.tmp-[^/]+|\.claim-[^/]+|\d+-\d+\.json))$/;

interface Version {
  /** Closed by {@link FileDriver.withVersion} unless `kept` (a streamed get's body closes it). */
  readonly fd: number;
  readonly stat: BigIntStats;
  readonly id: string;
  kept?: boolean;
}

/** {@link ObjectStoreDriver} over a local directory, safe for concurrent use by several processes on one machine. */
export class FileDriver implements ObjectStoreDriver {
  readonly kind = "file" as const;
  readonly location: string;
  readonly bucketDir: string;
  private readonly rootDir: string;
  private readonly metaRoot: string;
  private readonly versionsRoot: string;

  constructor(options: StoreDriverOptions) {
    const ep = endpointOfKind(options.endpoint, "file", "the embedded store", options.cwd);
    layout.checkBucketName(options.bucket);
    this.rootDir = ep.dir;
    this.bucketDir = path.join(ep.dir, options.bucket);
    this.metaRoot = path.join(this.bucketDir, META_DIR);
    this.versionsRoot = path.join(this.bucketDir, VERSIONS_DIR);
    this.location = `file:${this.bucketDir}`;
  }

  async get(key: string, options: GetOptions = {}): Promise<GetResult | null> {
    return this.withVersionOf(key, options.versionId, async (v, meta) => {
      const whole = Number(v.stat.size);
      const partial = options.maxBytes !== undefined && options.maxBytes < whole;
      // Hash what was read: a file edited in place must not pass for the stored etag.
      const hash = options.md5 === true && !partial ? hasherFor(whole) : undefined;
      const body = await readWhole(v.fd, partial ? Math.max(0, options.maxBytes ?? 0) : whole, hash).catch(async (e: unknown) => {
        await Promise.resolve(hash?.digest()).catch(() => undefined); // ends the worker's job
        throw e;
      });
      return { body, meta, md5: await hash?.digest() };
    });
  }

  async getStream(key: string, options: HeadOptions = {}): Promise<StreamedGet | null> {
    // The version's file stays open for the body: a later rename cannot mix versions.
    return this.withVersionOf(key, options.versionId, async (v, meta) => {
      v.kept = true;
      return { meta, recordedMd5: meta.etag, proven: false, body: chunksOf(v) };
    });
  }

  async head(key: string, options: HeadOptions = {}): Promise<ObjectMeta | null> {
    return this.withVersionOf(key, options.versionId, async (_v, meta) => meta);
  }

  async *listVersions(key: string): AsyncIterable<ObjectVersion> {
    const what = `cannot list versions of ${key} in ${this.location}`;
    if (!(await this.hasBucket(what))) return;
    const current = await typed(what, () => lstatFile(this.objectPath(key)));
    const names = await typed(what, async () => ((await this.dirs(this.versionsRoot, this.archiveDir(key))) ? fs.readdir(this.archiveDir(key)) : []));
    const currentId = current === null ? undefined : layout.publicId(current);
    if (current !== null) yield await this.versionEntry(key, current, true);
    const entries = names
      .map((n) => ({ id: n.endsWith(MARKER_SUFFIX) ? n.slice(0, -MARKER_SUFFIX.length) : n, marker: n.endsWith(MARKER_SUFFIX) }))
      // A writer killed between link and rename left the current version archived too.
      .filter((e) => layout.VERSION_ID.test(e.id) && e.id !== currentId)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const [i, e] of entries.entries()) {
      const isLatest = current === null && i === 0;
      if (e.marker) {
        yield { key, versionId: e.id, isLatest, deleteMarker: true, lastModified: layout.timeOfId(e.id), size: 0 };
        continue;
      }
      const st = await lstatFile(path.join(this.archiveDir(key), e.id)).catch(() => null);
      if (st !== null) yield await this.versionEntry(key, st, isLatest, e.id); // else expired meanwhile
    }
  }

  private async versionEntry(key: string, st: BigIntStats, isLatest: boolean, id = layout.publicId(st)): Promise<ObjectVersion> {
    const etag = (await this.readMeta(key, layout.versionId(st)).catch(() => null))?.etag;
    return { key, versionId: id, isLatest, deleteMarker: false, lastModified: new Date(Number(st.mtimeMs)), size: Number(st.size), etag };
  }

  versioning(): Promise<VersioningStatus> {
    return Promise.resolve("enabled");
  }

  enableVersioning(): Promise<void> {
    return Promise.resolve(); // always on
  }

  async setRetention(rule: Retention): Promise<void> {
    const file = path.join(this.bucketDir, RETENTION_FILE);
    const { prefix, noncurrentDays, newerNoncurrentVersions } = rule;
    await this.createBucket();
    await typed<unknown>(`cannot set the retention rule of ${this.location}`, () =>
      noncurrentDays === undefined && newerNoncurrentVersions === undefined
        ? removeFile(file)
        : writeWhole(file, JSON.stringify({ prefix, noncurrentDays, newerNoncurrentVersions })),
    );
  }

  async getRetention(): Promise<Retention | null> {
    const what = `cannot read the retention rule of ${this.location}`;
    if (!(await this.hasBucket(what))) return null;
    const text = await typed(what, () => readSmall(path.join(this.bucketDir, RETENTION_FILE)));
    return text === null ? null : layout.parseRetention(text);
  }

  async put(key: string, body: PutBody, options: PutOptions = {}): Promise<void> {
    pauseAt("store-put");
    const file = this.objectPath(key);
    if (options.ifNoneMatch === true && options.ifMatch !== undefined) {
      throw new ObjstateError("PRECONDITION_FAILED", `${key} in ${this.location}: a write cannot require the object to be both absent and present`, {
        details: { key },
      });
    }
    await this.createBucket();
    // Refused before anything is written: a lockfile's holder is found even on a full disk.
    if (options.ifNoneMatch === true && (await this.currentId(key)) !== undefined) throw layout.alreadyExists(key, this.location);
    const temp = path.join(this.bucketDir, layout.tempName(key));
    try {
      const written = await typed(`cannot write ${key} in ${this.location}`, () => writeTemp(temp, body, options, `the bytes for ${key}`), this.bucketDir);
      const stat = written.stat;
      // The source changed since the caller hashed it: not stored.
      const expected = isByteSource(body) ? await options.md5 : undefined;
      if (expected !== undefined && expected !== written.md5) {
        throw new ObjstateError(
          "STORE_INTEGRITY",
          `the bytes written for ${key} in ${this.location} hash to ${written.md5}, not to the MD5 given (${expected}): the source changed while it was being written; nothing was stored`,
          { details: { key, expected, actual: written.md5 } },
        );
      }
      const id = layout.versionId(stat);
      const meta: StoredMeta = {
        key,
        size: sizeOf(body),
        etag: written.md5,
        contentType: options.contentType,
        acl: options.acl,
        serverSideEncryption: options.encrypt === true ? "AES256" : undefined,
        lastModified: new Date(Number(stat.mtimeMs)).toISOString(),
        metadata: layout.normalizeMetadata(options.metadata),
      };
      await this.writeMeta(key, id, meta);
      if (options.ifNoneMatch === true) await this.commitIfAbsent(key, temp, file, id, meta);
      else await this.commitReplace(key, temp, file, id, meta, options.ifMatch?.replace(/"/g, ""));
    } finally {
      await removeFile(temp).catch(() => undefined);
    }
  }

  async *list(prefix: string, options?: ListOptions): AsyncIterable<string> {
    const what = `cannot list ${this.location}`;
    if (!(await this.hasBucket(what))) return;
    const names = await typed(what, () => fs.readdir(this.bucketDir));
    const keys = names
      .filter((n) => !n.startsWith("."))
      .map(layout.decodeName)
      .filter((k): k is string => k !== null && k.startsWith(prefix));
    // S3 orders keys by their UTF-8 bytes, which differs from UTF-16 order above U+FFFF.
    keys.sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
    const after = options?.startAfter === undefined ? undefined : Buffer.from(options.startAfter, "utf8");
    yield* after === undefined ? keys : keys.filter((k) => Buffer.compare(Buffer.from(k, "utf8"), after) > 0);
  }

  async *listDetailed(prefix: string, options?: ListOptions): AsyncIterable<ListedObject> {
    const keys: string[] = [];
    for await (const key of this.list(prefix, options)) keys.push(key);
    // A stat and a metadata read per key, a few at a time; a key replaced meanwhile is described as it is now.
    for (let i = 0; i < keys.length; i += LIST_DETAIL_BATCH) {
      const batch = await Promise.all(keys.slice(i, i + LIST_DETAIL_BATCH).map((key) => this.describeListed(key)));
      for (const o of batch) if (o !== null) yield o;
    }
  }

  private async describeListed(key: string): Promise<ListedObject | null> {
    const st = await typed(`cannot list ${this.location}`, () => lstatFile(this.objectPath(key)));
    if (st === null) return null; // deleted since the directory was read
    const meta = await this.readMeta(key, layout.versionId(st));
    return { key, size: Number(st.size), lastModified: new Date(Number(st.mtimeMs)), etag: meta?.etag };
  }

  /** Keeps the object as an older version behind a delete marker (S3 with versioning on); an absent key gets none. */
  async delete(key: string): Promise<void> {
    await this.deleteChecked(key, undefined);
  }

  async deleteIfMatch(key: string, etag: string): Promise<boolean> {
    return this.deleteChecked(key, etag.replace(/"/g, ""));
  }

  /** Delete under the key's claim; with `ifMatch`, only while that version is current. */
  private async deleteChecked(key: string, ifMatch: string | undefined): Promise<boolean> {
    const file = this.objectPath(key);
    const what = `cannot delete ${key} in ${this.location}`;
    if (!(await typed(what, async () => (await checkDir(this.bucketDir)) && (await lstatFile(file)) !== null))) return false;
    const deleted = await this.underClaim(key, what, async () => {
      if (ifMatch !== undefined && (await this.withVersion(key, file, async (_v, meta) => meta.etag)) !== ifMatch) return false;
      pauseAt("store-delete-checked");
      const st = await lstatFile(file);
      if (st === null) return false;
      await this.retire(key, file, st);
      await fsyncDir(this.bucketDir);
      // The marker comes last: a crash leaves a deleted key without one, never one before a current version.
      const now = BigInt(Date.now()) * 1_000_000n;
      const ns = now > st.mtimeNs ? now : st.mtimeNs + 1n;
      const marker = path.join(this.archiveDir(key), `${layout.idOfTime(ns)}-m${randomUUID().slice(0, 8)}${MARKER_SUFFIX}`);
      try {
        await createFile(marker, "");
        await fsyncDir(this.archiveDir(key));
      } catch (e) {
        // No inode left for it: the delete stands without its marker, as after a crash here.
        if (errno(e) !== "ENOSPC" && errno(e) !== "EDQUOT") throw e;
        await removeFile(marker).catch(() => undefined);
      }
      return true;
    });
    if (deleted) await this.prune(key).catch(() => undefined);
    return deleted;
  }

  async purge(key: string): Promise<void> {
    const file = this.objectPath(key);
    const what = `cannot purge ${key} in ${this.location}`;
    if (!(await this.hasBucket(what))) return;
    await this.underClaim(key, what, async () => {
      await removeFile(file);
      const archive = this.archiveDir(key);
      if (await this.dirs(this.versionsRoot, archive)) {
        for (const name of await fs.readdir(archive)) await removeFile(path.join(archive, name));
        await fs.rmdir(archive).catch(() => undefined);
      }
      const dir = this.metaDir(key);
      for (const name of await fs.readdir(dir).catch(() => [] as string[]))
        if (layout.META_NAME.test(name) || name.startsWith(SPARE_PREFIX)) await removeFile(path.join(dir, name));
      await fsyncDir(this.bucketDir);
    });
    await fs.rmdir(this.metaDir(key)).catch(() => undefined); // not empty: another writer is using it
  }

  async bucketExists(): Promise<boolean> {
    return this.hasBucket(`cannot check ${this.location}`);
  }

  private async hasBucket(what: string): Promise<boolean> {
    return typed(what, () => checkDir(this.bucketDir));
  }

  async createBucket(): Promise<void> {
    await typed(`cannot create ${this.location}`, async () => {
      await makeRootDir(this.rootDir);
      await makeDir(this.bucketDir);
      await makeDir(this.metaRoot);
    });
  }

  /**
   * Temp files, dead claims, and metadata of versions that never became current; live writers'
   * files too (they are young). One whose key cannot be told is listed under every prefix.
   */
  async listLeftovers(prefix: string): Promise<Leftover[]> {
    const out: Leftover[] = [];
    await typed(`cannot list leftovers in ${this.location}`, async () => {
      if (!(await checkDir(this.bucketDir))) return;
      const keysByHash = new Map<string, string>();
      for (const name of await fs.readdir(this.bucketDir)) {
        const key = name.startsWith(".") ? null : layout.decodeName(name);
        if (key !== null) keysByHash.set(layout.hashKey(key), key);
        if (name.startsWith(layout.TEMP_PREFIX)) await this.addLeftover(out, prefix, name, layout.keyOfTemp(name));
      }
      if (!(await checkDir(this.metaRoot))) return;
      for (const hash of await fs.readdir(this.metaRoot)) {
        const dir = path.join(this.metaRoot, hash);
        if (!/^[0-9a-f]{64}$/.test(hash) || !(await checkDir(dir).catch(() => false))) continue;
        const names = await fs.readdir(dir).catch(() => [] as string[]);
        let key = keysByHash.get(hash);
        const current = key === undefined ? undefined : await this.currentId(key);
        const archived = await this.archivedIds(hash);
        for (const name of names) {
          const id = `${META_DIR}/${hash}/${name}`;
          if (name.startsWith(layout.TEMP_PREFIX)) await this.addLeftover(out, prefix, id, layout.keyOfTemp(name) ?? key);
          // Only a claim whose process is provably gone: a live writer may hold one for any time.
          else if (name.startsWith(CLAIM_PREFIX)) {
            if (claimIsDead(name)) await this.addLeftover(out, prefix, id, key);
          } else if (layout.META_NAME.test(name) && name !== `${current}.json` && !archived.has(layout.publicIdOfMetaName(name))) {
            key ??= layout.parseStoredMeta((await readSmall(path.join(dir, name)).catch(() => null)) ?? "")?.key;
            await this.addLeftover(out, prefix, id, key);
          }
        }
      }
    });
    return layout.sortLeftovers(out);
  }

  async removeLeftover(item: Leftover): Promise<void> {
    if (item.kind !== "temp-file") return;
    if (!LEFTOVER_ID.test(item.id)) {
      const why = `${JSON.stringify(item.id)} is not a leftover of ${this.location} (objstate removes only its own temp, claim and metadata files)`;
      throw new ObjstateError("INVALID_LEFTOVER", why);
    }
    const file = path.join(this.bucketDir, item.id);
    await typed(`cannot remove ${item.id} in ${this.location}`, async () => {
      if (!(await checkDir(this.bucketDir))) return;
      const dir = path.dirname(file);
      if (dir !== this.bucketDir && !(await this.dirs(this.metaRoot, dir))) return;
      if (path.basename(file).startsWith(CLAIM_PREFIX) && !claimIsDead(path.basename(file))) return;
      if (layout.META_NAME.test(path.basename(file))) {
        // Metadata may have become current since it was listed (a slow writer committed).
        const meta = layout.parseStoredMeta((await readSmall(file)) ?? "");
        if (meta !== null && (await this.currentId(meta.key)) === path.basename(file, ".json")) return;
        // Metadata of an older version belongs to history, not to a crashed writer.
        if ((await this.archivedIds(path.basename(dir))).has(layout.publicIdOfMetaName(path.basename(file)))) return;
      }
      await removeFile(file);
      if (dir !== this.bucketDir) await fs.rmdir(dir).catch(() => undefined);
    });
  }

  /** Nothing is held open between calls. */
  close(): void {}

  /** Are these nested directories, each checked in turn, all there (and none a link)? */
  private async dirs(...chain: string[]): Promise<boolean> {
    for (const dir of chain) if (!(await checkDir(dir))) return false;
    return true;
  }

  /** The object file for `key` (the key checked). */
  private objectPath(key: string): string {
    return path.join(this.bucketDir, layout.encodeKey(key));
  }

  private metaDir(key: string): string {
    return path.join(this.metaRoot, layout.hashKey(key));
  }

  private metaFile(key: string, id: string): string {
    return path.join(this.metaDir(key), `${id}.json`);
  }

  private async ensureMetaDir(key: string): Promise<void> {
    await makeDir(this.metaRoot);
    // A new key's claim directory gets its spare now, while there is room (see claim.ts).
    if (await makeDir(this.metaDir(key))) await addSpare(this.metaDir(key)).catch(() => undefined);
  }

  /** Run `run` holding the exclusive right to replace or delete `key` (see claim.ts), only around the commit; failures typed by `what`. */
  private async underClaim<T>(key: string, what: string, run: () => Promise<T>): Promise<T> {
    const dir = this.metaDir(key);
    const prepare = (): Promise<void> => this.ensureMetaDir(key);
    const claim = await typed(`cannot write ${key} in ${this.location}`, () => acquireClaim(dir, { prepare, what: `object ${key} in ${this.location}` }), dir);
    try {
      return await typed(what, run);
    } finally {
      await claim.release().catch(() => undefined);
    }
  }

  private async currentId(key: string): Promise<string | undefined> {
    const st = await lstatFile(this.objectPath(key)).catch(() => null);
    return st === null ? undefined : layout.versionId(st);
  }

  private async addLeftover(out: Leftover[], prefix: string, id: string, key: string | undefined): Promise<void> {
    if (key !== undefined && !key.startsWith(prefix)) return;
    const st = await fs.lstat(path.join(this.bucketDir, id)).catch(() => null);
    if (st === null || !st.isFile()) return;
    out.push({ kind: "temp-file", key, id, since: st.mtime, size: st.size });
  }

  /** Call `use` with the opened version at `file` and its metadata, null when absent; retried when it is replaced between the two. */
  private async withVersion<T>(key: string, file: string, use: (v: Version, meta: ObjectMeta) => Promise<T>): Promise<T | null> {
    let previousId: string | undefined;
    for (let attempt = 1; ; attempt++) {
      const opened = await typed(`cannot read ${key} in ${this.location}`, async () => ((await checkDir(this.bucketDir)) ? openRead(file) : null), file);
      if (opened === null) return null;
      const v: Version = { ...opened, id: layout.versionId(opened.stat) };
      try {
        const stored = await this.readMeta(key, v.id);
        if (stored !== null) return await use(v, layout.toObjectMeta(stored));
        // Metadata missing for a version that stays put: damaged store; fall back to what the file says.
        if (v.id === previousId || attempt >= READ_ATTEMPTS) {
          const body = await readWhole(v.fd, Number(v.stat.size));
          return await use(v, { size: body.length, etag: createHash("md5").update(body).digest("hex"), lastModified: new Date(Number(v.stat.mtimeMs)) });
        }
        previousId = v.id;
      } finally {
        if (v.kept !== true) closeSync(v.fd);
      }
      await sleep(attempt);
    }
  }

  private async readMeta(key: string, id: string): Promise<StoredMeta | null> {
    const text = await typed(`cannot read metadata of ${key} in ${this.location}`, async () =>
      (await this.dirs(this.metaRoot, this.metaDir(key))) ? readSmall(this.metaFile(key, id)) : null,
    );
    return text === null ? null : layout.parseStoredMeta(text);
  }

  private async writeMeta(key: string, id: string, meta: StoredMeta): Promise<void> {
    const dir = this.metaDir(key);
    // A concurrent delete() may remove the (empty) directory between mkdir and write.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.ensureMetaDir(key);
        await writeWhole(this.metaFile(key, id), JSON.stringify(meta), { temp: layout.tempName(key) });
        return;
      } catch (e) {
        if (errno(e) !== "ENOENT" || attempt >= 5) throw fsFailure(e, `cannot write metadata of ${key} in ${this.location}`, "STORE_ERROR", dir);
      }
    }
  }

  private async commitIfAbsent(key: string, temp: string, file: string, id: string, meta: StoredMeta): Promise<void> {
    try {
      await fs.link(temp, file).catch(async (e: unknown) => {
        await removeFile(this.metaFile(key, id)).catch(() => undefined);
        throw errno(e) === "EEXIST" ? layout.alreadyExists(key, this.location) : e;
      });
      await fsyncDir(this.bucketDir);
      await this.keepMeta(key, id, meta);
    } catch (e) {
      throw fsFailure(e, `cannot write ${key} in ${this.location}`, "STORE_ERROR", this.bucketDir);
    }
    // Where a delete of this object will move it: made now, while there is room.
    if (!(await this.dirs(this.versionsRoot, this.archiveDir(key)).catch(() => false))) await this.makeArchiveDir(key).catch(() => undefined);
  }

  /** Write the metadata of `id` again if it was collected as a leftover while its writer was stopped. */
  private async keepMeta(key: string, id: string, meta: StoredMeta): Promise<void> {
    if ((await lstatFile(this.metaFile(key, id))) === null) await this.writeMeta(key, id, meta);
  }

  /** Replace the object under its claim: an If-Match check and the rename are one step for every other writer. */
  private async commitReplace(key: string, temp: string, file: string, id: string, meta: StoredMeta, ifMatch: string | undefined): Promise<void> {
    const what = `cannot write ${key} in ${this.location}`;
    await this.underClaim(key, what, async () => {
      pauseAt("store-claimed");
      try {
        const previous = await lstatFile(file);
        if (ifMatch !== undefined) {
          const current = previous === null ? null : await this.withVersion(key, file, async (_v, meta) => meta.etag);
          if (current !== ifMatch) {
            throw new ObjstateError(
              "PRECONDITION_FAILED",
              current === null
                ? `${key} does not exist in ${this.location} (the write required version ${ifMatch})`
                : `${key} in ${this.location} changed (the write required version ${ifMatch}, found ${current})`,
              { details: { key, expected: ifMatch, actual: current } },
            );
          }
        }
        pauseAt("store-checked");
        await this.keepMeta(key, id, meta);
        if (previous !== null) await this.archive(key, file, previous);
        await fs.rename(temp, file);
        await fsyncDir(this.bucketDir);
      } catch (e) {
        await removeFile(this.metaFile(key, id)).catch(() => undefined);
        throw fsFailure(e, what, "STORE_ERROR", this.bucketDir);
      }
      pauseAt("store-renamed");
      // Under the claim: what is current then cannot change, so only true leftovers go.
      await this.collectMeta(key, id).catch(() => undefined);
    });
    pauseAt("store-released");
    await this.prune(key).catch(() => undefined);
  }

  /** Drop metadata of racing writers' versions that never became current, once too old to be in flight. */
  private async collectMeta(key: string, current: string): Promise<void> {
    const dir = this.metaDir(key);
    const names = await fs.readdir(dir).catch(() => [] as string[]);
    const now = Date.now();
    let archived: Set<string> | undefined;
    for (const name of names) {
      if (name === `${current}.json` || !layout.META_NAME.test(name)) continue;
      // Ruled out by name first: a write costs no stat per version ever kept.
      archived ??= await this.archivedIds(layout.hashKey(key));
      if (archived.has(layout.publicIdOfMetaName(name))) continue;
      const full = path.join(dir, name);
      if (now - ((await fs.lstat(full).catch(() => null))?.mtimeMs ?? now) <= META_GC_GRACE_MS) continue;
      await removeFile(full).catch(() => undefined);
    }
  }

  /** The version `id` of `key` (archived or current; undefined: the current one), read through {@link withVersion}. */
  private async withVersionOf<T>(key: string, id: string | undefined, use: (v: Version, meta: ObjectMeta) => Promise<T>): Promise<T | null> {
    const file = this.objectPath(key);
    if (id === undefined) return this.withVersion(key, file, (v, meta) => use(v, { ...meta, versionId: layout.publicId(v.stat) }));
    if (!layout.VERSION_ID.test(id) || id.includes("-m")) return null;
    const archived = path.join(this.archiveDir(key), id);
    const what = `cannot read versions in ${this.location}`;
    // Archived before it stops being current: the archive first, and again if the current one was replaced.
    for (let attempt = 0; attempt < 2; attempt++) {
      const kept = await typed(what, async () => (await this.dirs(this.versionsRoot, this.archiveDir(key))) && (await lstatFile(archived)) !== null);
      const found = await this.withVersion(key, kept ? archived : file, async (v, meta) =>
        layout.publicId(v.stat) === id ? { value: await use(v, { ...meta, versionId: id }) } : null,
      );
      if (found !== null) return found.value;
      if (kept) return null; // edited by hand: not that version any more
    }
    return null;
  }

  private archiveDir(key: string): string {
    return path.join(this.versionsRoot, layout.hashKey(key));
  }

  private async makeArchiveDir(key: string): Promise<void> {
    await makeDir(this.versionsRoot);
    await makeDir(this.archiveDir(key));
  }

  /** Keep `stat`, the current object file of `key`, as an older version (under the claim). */
  private async archive(key: string, file: string, stat: BigIntStats): Promise<void> {
    const dir = this.archiveDir(key);
    await this.makeArchiveDir(key);
    try {
      await fs.link(file, path.join(dir, layout.publicId(stat)));
    } catch (e) {
      // Archived already by a writer that died before replacing it.
      if (errno(e) !== "EEXIST") throw e;
    }
    await fsyncDir(dir);
  }

  /** Delete `stat`, the current object file, by moving it into the archive (under the claim). */
  private async retire(key: string, file: string, stat: BigIntStats): Promise<void> {
    const dir = this.archiveDir(key);
    await this.makeArchiveDir(key);
    await fs.rename(file, path.join(dir, layout.publicId(stat)));
    // Archived already by a writer that died (a rename between two links does nothing): only that file goes.
    const left = await lstatFile(file);
    if (left !== null && left.ino === stat.ino && left.dev === stat.dev) await removeFile(file);
    await fsyncDir(dir);
  }

  private async archivedIds(hash: string): Promise<Set<string>> {
    const dir = path.join(this.versionsRoot, hash);
    if (!(await this.dirs(this.versionsRoot, dir).catch(() => false))) return new Set();
    return new Set((await fs.readdir(dir).catch(() => [] as string[])).filter((n) => layout.VERSION_ID.test(n)));
  }

  /** Apply the retention rule to the versions of `key`; after a write or delete, whose success its failure must not undo. */
  private async prune(key: string): Promise<void> {
    const rule = await this.getRetention();
    if (rule === null || !key.startsWith(rule.prefix)) return;
    const all: ObjectVersion[] = [];
    for await (const v of this.listVersions(key)) all.push(v);
    const now = Date.now();
    for (let j = 1; j < all.length; j++) {
      const v = all[j] as ObjectVersion;
      const since = all[j - 1]?.lastModified?.getTime() ?? now;
      const oldEnough = rule.noncurrentDays === undefined || now - since >= rule.noncurrentDays * DAY_MS;
      const beyond = rule.newerNoncurrentVersions === undefined || j - 1 >= rule.newerNoncurrentVersions;
      if (!oldEnough || !beyond) continue;
      const file = path.join(this.archiveDir(key), v.deleteMarker ? `${v.versionId}${MARKER_SUFFIX}` : v.versionId);
      const st = v.deleteMarker ? null : await lstatFile(file).catch(() => null);
      await removeFile(file).catch(() => undefined);
      if (st !== null && st.nlink <= 1n) await removeFile(path.join(this.metaDir(key), `${layout.versionId(st)}.json`)).catch(() => undefined);
    }
  }
}

/** `run`, a failed file-system call in it typed by {@link fsFailure} (`STORE_ERROR` when no code fits). */
async function typed<T>(what: string, run: () => Promise<T>, at?: string): Promise<T> {
  try {
    return await run();
  } catch (e) {
    throw fsFailure(e, what, "STORE_ERROR", at);
  }
}

/** Create the temp file of a write (0600, no link followed, fsynced), hashing what is written. */
async function writeTemp(temp: string, body: PutBody, options: PutOptions, what: string): Promise<{ stat: BigIntStats; md5: string }> {
  if (!isByteSource(body)) return { stat: await createFile(temp, body), md5: (await options.md5) ?? createHash("md5").update(body).digest("hex") };
  // Never awaits a promised MD5: it may be taken from this very read.
  const trusted = body.verifiedMd5 !== undefined && body.verifiedMd5 === options.md5 ? body.verifiedMd5 : undefined;
  const hash = createHash("md5");
  async function* hashed(source: ByteSource): AsyncGenerator<Uint8Array> {
    for await (const chunk of readExactly(source, what)) {
      if (trusted === undefined) hash.update(chunk);
      yield chunk;
    }
  }
  return { stat: await createFile(temp, hashed(body)), md5: trusted ?? hash.digest("hex") };
}

/** The bytes of `v` read from its open file, closed at the end, on an error, or when the reader stops. */
function chunksOf(v: Version): AsyncIterable<Uint8Array> {
  const size = Number(v.stat.size);
  let offset = 0;
  let reading: Promise<Buffer> | undefined;
  let open = true;
  const close = async (): Promise<IteratorReturnResult<undefined>> => {
    await reading?.catch(() => undefined); // never while a read of this fd is in flight
    if (open) closeSync(v.fd);
    open = false;
    return { done: true, value: undefined };
  };
  const next = async (): Promise<IteratorResult<Uint8Array>> => {
    if (!open || offset >= size) return close();
    try {
      const chunk = await (reading = readWhole(v.fd, Math.min(READ_CHUNK, size - offset), undefined, offset));
      offset += chunk.length;
      return { done: false, value: chunk };
    } catch (e) {
      await close();
      throw e;
    }
  };
  return { [Symbol.asyncIterator]: () => ({ next, return: close }) };
}

/** Read `size` bytes from `position` into one buffer; in {@link READ_CHUNK} pieces when each is hashed on arrival. */
async function readWhole(fd: number, size: number, hash?: Hasher, position = 0): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(size);
  const step = hash === undefined ? size : READ_CHUNK;
  const small = size <= SYNC_READ_MAX;
  let offset = 0;
  while (offset < buf.length) {
    const length = Math.min(step, buf.length - offset);
    const at = position + offset;
    const bytesRead = small ? readSync(fd, buf, offset, length, at) : (await readAt(fd, buf, offset, length, at)).bytesRead;
    if (bytesRead === 0) throw new ObjstateError("STORE_ERROR", "object file shrank while being read (was it edited by hand?)");
    await hash?.write(buf.subarray(offset, offset + bytesRead));
    offset += bytesRead;
  }
  return buf;
}
