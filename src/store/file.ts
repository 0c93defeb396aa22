/**
 * The embedded object store: a bucket is a directory on local disk (DESIGN §2).
 *
 * On-disk layout for endpoint `file:ROOT` and bucket `B`:
 *
 * ```text
 * ROOT/B/                               the bucket; absent until createBucket() or the first put()
 * ROOT/B/<enc(key)>                     one flat file per object, holding exactly its bytes
 * ROOT/B/.meta/<sha256(key)>/<ino>-<mtimeNs>.json
 *                                       metadata of that one version of the object file:
 *                                       {key, size, etag (md5 hex), contentType, acl,
 *                                        serverSideEncryption, lastModified}
 * ROOT/B/.tmp-<uuid>                    an object being written (never listed; one left
 *                                       by a crashed writer is safe to delete)
 * ```
 *
 * Files are created 0600 and directories 0700: state files often hold secrets.
 *
 * `enc` is `encodeURIComponent` with `*` and a leading `.` also percent-encoded, so keys
 * may hold `/` and `:` and `a` may coexist with `a/b`; object files never start with `.`
 * and internal files always do. Metadata is keyed by the identity of the object file
 * version it describes (inode + nanosecond mtime), and is written *before* that version
 * becomes visible, so a reader that opens the object file always finds the metadata that
 * belongs to those bytes, even while other processes replace the object.
 *
 * Writes: temp file in the bucket directory, fsync, metadata (fsynced), then `rename` over
 * the final name (or `link`, which fails with EEXIST, for create-if-absent), then fsync of
 * the directory. Readers therefore see the old object or the new one, never a partial one.
 * Needs a local file system with hard links and POSIX rename (not FAT, not SMB).
 */
import { createHash, randomUUID } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import type { BigIntStats } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ObjstateError } from "../errors.js";
import { parseEndpoint } from "./endpoint.js";
import type { Acl, GetOptions, Leftover, GetResult, ListOptions, ObjectMeta, ObjectStoreDriver, PutOptions, StoreDriverOptions } from "./types.js";

const META_DIR = ".meta";
const TEMP_PREFIX = ".tmp-";
/** Most file systems limit one name to 255 bytes. */
const NAME_MAX = 255;
/** Same limit as S3 keys. */
const KEY_MAX_BYTES = 1024;
/** Metadata of replaced versions younger than this may belong to a write in flight. */
const META_GC_GRACE_MS = 60_000;
/** A reader retries this often when the object is replaced under it. */
const READ_ATTEMPTS = 50;

/** The JSON stored beside an object version. */
interface StoredMeta {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
  readonly contentType?: string | undefined;
  readonly acl?: Acl | undefined;
  readonly serverSideEncryption?: string | undefined;
  readonly lastModified: string;
}

/** One opened version of an object file. */
interface Version {
  readonly handle: fs.FileHandle;
  readonly stat: BigIntStats;
  readonly id: string;
}

/**
 * {@link ObjectStoreDriver} over a local directory (`file:` endpoints). Safe for
 * concurrent use by several processes on the same machine.
 */
export class FileDriver implements ObjectStoreDriver {
  readonly kind = "file" as const;
  readonly location: string;
  /** Absolute directory of the bucket. */
  readonly bucketDir: string;
  private readonly metaRoot: string;

  constructor(options: StoreDriverOptions) {
    const ep = parseEndpoint(options.endpoint, options.cwd);
    if (ep.kind !== "file") {
      throw new ObjstateError("INVALID_ENDPOINT", `the embedded store needs a file: endpoint, got "${options.endpoint}"`);
    }
    checkBucketName(options.bucket);
    this.bucketDir = path.join(ep.dir, options.bucket);
    this.metaRoot = path.join(this.bucketDir, META_DIR);
    this.location = `file:${this.bucketDir}`;
  }

  async get(key: string, options: GetOptions = {}): Promise<GetResult | null> {
    const file = this.objectPath(key);
    return this.withVersion(key, file, async (v, meta) => {
      const body = await readWhole(v.handle, v.stat.size);
      // Hash what was actually read: a file edited in place must not pass for the stored etag.
      return { body, meta, md5: options.md5 === true ? createHash("md5").update(body).digest("hex") : undefined };
    });
  }

  async head(key: string): Promise<ObjectMeta | null> {
    const file = this.objectPath(key);
    return this.withVersion(key, file, async (_v, meta) => meta);
  }

  async put(key: string, body: Buffer, options: PutOptions = {}): Promise<void> {
    const file = this.objectPath(key);
    await this.createBucket();
    const temp = path.join(this.bucketDir, `${TEMP_PREFIX}${randomUUID()}`);
    try {
      const stat = await writeDurably(temp, body);
      const id = versionId(stat);
      await this.writeMeta(key, id, {
        key,
        size: body.length,
        etag: (await options.md5) ?? createHash("md5").update(body).digest("hex"),
        contentType: options.contentType,
        acl: options.acl,
        serverSideEncryption: options.encrypt === true ? "AES256" : undefined,
        lastModified: new Date(Number(stat.mtimeMs)).toISOString(),
      });
      if (options.ifNoneMatch === true) await this.commitIfAbsent(key, temp, file, id);
      else await this.commitReplace(key, temp, file, id);
    } finally {
      await fs.rm(temp, { force: true });
    }
    options.onProgress?.(body.length, body.length);
  }

  async *list(prefix: string, _options?: ListOptions): AsyncIterable<string> {
    // One directory read is already a consistent snapshot; paging it would add nothing.
    let names: string[];
    try {
      names = await fs.readdir(this.bucketDir);
    } catch (e) {
      if (errno(e) === "ENOENT") return;
      throw storeError(e, `cannot list ${this.location}`);
    }
    const keys = names
      .filter((n) => !n.startsWith("."))
      .map(decodeName)
      .filter((k): k is string => k !== null && k.startsWith(prefix));
    // S3 orders keys by their UTF-8 bytes, which differs from UTF-16 order above U+FFFF.
    keys.sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
    yield* keys;
  }

  async delete(key: string): Promise<void> {
    const file = this.objectPath(key);
    // Renaming away first tells us exactly which version we removed, so its metadata goes too.
    const doomed = path.join(this.bucketDir, `${TEMP_PREFIX}${randomUUID()}`);
    try {
      await fs.rename(file, doomed);
    } catch (e) {
      if (errno(e) === "ENOENT") return;
      throw storeError(e, `cannot delete ${key} in ${this.location}`);
    }
    const stat = await fs.stat(doomed, { bigint: true });
    await fs.rm(doomed, { force: true });
    await fsyncDir(this.bucketDir);
    const dir = this.metaDir(key);
    await fs.rm(path.join(dir, `${versionId(stat)}.json`), { force: true });
    await fs.rmdir(dir).catch(() => undefined); // not empty: another writer is using it
  }

  async bucketExists(): Promise<boolean> {
    try {
      return (await fs.stat(this.bucketDir)).isDirectory();
    } catch (e) {
      if (errno(e) === "ENOENT") return false;
      throw storeError(e, `cannot check ${this.location}`);
    }
  }

  async createBucket(): Promise<void> {
    try {
      await fs.mkdir(this.metaRoot, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw storeError(e, `cannot create ${this.location}`);
    }
  }

  listLeftovers(_prefix: string): Promise<Leftover[]> {
    // TODO(embedded-store helper): temp files of dead writers.
    return Promise.resolve([]);
  }

  removeLeftover(_item: Leftover): Promise<void> {
    return Promise.resolve();
  }

  close(): void {
    // Nothing is held open between calls.
  }

  /** The object file for `key`, after checking that the key is acceptable. */
  private objectPath(key: string): string {
    return path.join(this.bucketDir, encodeKey(key));
  }

  private metaDir(key: string): string {
    return path.join(this.metaRoot, createHash("sha256").update(key, "utf8").digest("hex"));
  }

  /**
   * Open the current version of `key` and call `use` with it and its metadata; null when
   * the object is absent. Retries when the version is replaced between open and metadata read.
   */
  private async withVersion<T>(key: string, file: string, use: (v: Version, meta: ObjectMeta) => Promise<T>): Promise<T | null> {
    let previousId: string | undefined;
    for (let attempt = 1; ; attempt++) {
      const v = await openVersion(file);
      if (v === null) return null;
      try {
        const stored = await this.readMeta(key, v.id);
        if (stored !== null) return await use(v, toObjectMeta(stored));
        // Metadata missing for a version that stays put: damaged store; fall back to what the file says.
        if (v.id === previousId || attempt >= READ_ATTEMPTS) return await use(v, await derivedMeta(v));
        previousId = v.id;
      } finally {
        await v.handle.close();
      }
      await sleep(attempt);
    }
  }

  private async readMeta(key: string, id: string): Promise<StoredMeta | null> {
    let text: string;
    try {
      text = await fs.readFile(path.join(this.metaDir(key), `${id}.json`), "utf8");
    } catch (e) {
      if (errno(e) === "ENOENT") return null;
      throw storeError(e, `cannot read metadata of ${key} in ${this.location}`);
    }
    return parseStoredMeta(text);
  }

  private async writeMeta(key: string, id: string, meta: StoredMeta): Promise<void> {
    const dir = this.metaDir(key);
    // A concurrent delete() may remove the (empty) directory between mkdir and write.
    for (let attempt = 1; ; attempt++) {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
      const temp = path.join(dir, `${TEMP_PREFIX}${randomUUID()}`);
      try {
        await writeDurably(temp, Buffer.from(JSON.stringify(meta)));
        await fs.rename(temp, path.join(dir, `${id}.json`));
        await fsyncDir(dir);
        return;
      } catch (e) {
        await fs.rm(temp, { force: true });
        if (errno(e) !== "ENOENT" || attempt >= 5) throw storeError(e, `cannot write metadata of ${key} in ${this.location}`);
      }
    }
  }

  private async commitIfAbsent(key: string, temp: string, file: string, id: string): Promise<void> {
    try {
      await fs.link(temp, file);
    } catch (e) {
      await fs.rm(path.join(this.metaDir(key), `${id}.json`), { force: true });
      if (errno(e) === "EEXIST") {
        throw new ObjstateError("PRECONDITION_FAILED", `${key} already exists in ${this.location} (create-if-absent refused)`, {
          details: { key },
        });
      }
      throw storeError(e, `cannot write ${key} in ${this.location}`);
    }
    await fsyncDir(this.bucketDir);
  }

  private async commitReplace(key: string, temp: string, file: string, id: string): Promise<void> {
    const previous = await fs.stat(file, { bigint: true }).catch(() => null);
    try {
      await fs.rename(temp, file);
    } catch (e) {
      await fs.rm(path.join(this.metaDir(key), `${id}.json`), { force: true });
      throw storeError(e, `cannot write ${key} in ${this.location}`);
    }
    await fsyncDir(this.bucketDir);
    await this.collectMeta(key, id, previous === null ? undefined : versionId(previous));
  }

  /**
   * Drop metadata of versions that are gone: the one just replaced, and any left behind by
   * racing writers once they are old enough not to belong to a write still in flight.
   */
  private async collectMeta(key: string, current: string, replaced: string | undefined): Promise<void> {
    const dir = this.metaDir(key);
    const names = await fs.readdir(dir).catch(() => [] as string[]);
    const now = Date.now();
    for (const name of names) {
      if (name === `${current}.json` || name.startsWith(TEMP_PREFIX)) continue;
      const full = path.join(dir, name);
      const stale = name === `${replaced}.json` || now - ((await fs.stat(full).catch(() => null))?.mtimeMs ?? now) > META_GC_GRACE_MS;
      if (stale) await fs.rm(full, { force: true });
    }
  }
}

/** Bucket names become a directory name: allow only what DESIGN §3 allows. */
function checkBucketName(bucket: string): void {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket) || bucket.includes("..")) {
    throw new ObjstateError("INVALID_BUCKET", `bucket "${bucket}" is not a valid bucket name (3-63 characters of a-z, 0-9, "." and "-")`);
  }
}

/**
 * The file name for `key`. Rejects keys that are not S3-style relative keys: a `.` or `..`
 * segment or a leading `/` would mean a different place on any path-based store.
 */
function encodeKey(key: string): string {
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
function decodeName(name: string): string | null {
  try {
    const key = decodeURIComponent(name);
    return encodeKey(key) === name ? key : null;
  } catch {
    return null;
  }
}

/** Identity of one version of an object file; replacing the file always changes it. */
function versionId(stat: BigIntStats): string {
  return `${stat.ino}-${stat.mtimeNs}`;
}

async function openVersion(file: string): Promise<Version | null> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, fsConstants.O_RDONLY);
  } catch (e) {
    if (errno(e) === "ENOENT") return null;
    throw storeError(e, `cannot open ${file}`);
  }
  try {
    const stat = await handle.stat({ bigint: true });
    return { handle, stat, id: versionId(stat) };
  } catch (e) {
    await handle.close();
    throw storeError(e, `cannot stat ${file}`);
  }
}

/** Read the whole file into one buffer of its exact size (no chunk list, no concat copy). */
async function readWhole(handle: fs.FileHandle, size: bigint): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(Number(size));
  let offset = 0;
  while (offset < buf.length) {
    const { bytesRead } = await handle.read(buf, offset, buf.length - offset, offset);
    if (bytesRead === 0) throw new ObjstateError("STORE_ERROR", "object file shrank while being read (was it edited by hand?)");
    offset += bytesRead;
  }
  return buf;
}

/** Create `file` exclusively, write `body`, fsync; returns the stat of the durable result. */
async function writeDurably(file: string, body: Buffer): Promise<BigIntStats> {
  const handle = await fs.open(file, "wx", 0o600);
  try {
    await handle.writeFile(body);
    await handle.sync();
    return await handle.stat({ bigint: true });
  } finally {
    await handle.close();
  }
}

/** Make a rename or link in `dir` durable. */
async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, fsConstants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function derivedMeta(v: Version): Promise<ObjectMeta> {
  const body = await readWhole(v.handle, v.stat.size);
  return { size: body.length, etag: createHash("md5").update(body).digest("hex"), lastModified: new Date(Number(v.stat.mtimeMs)) };
}

function toObjectMeta(m: StoredMeta): ObjectMeta {
  return {
    size: m.size,
    etag: m.etag,
    contentType: m.contentType,
    acl: m.acl,
    serverSideEncryption: m.serverSideEncryption,
    lastModified: new Date(m.lastModified),
  };
}

function parseStoredMeta(text: string): StoredMeta | null {
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== "object" || v === null) return null;
    const o = v as Record<string, unknown>;
    if (typeof o.key !== "string" || typeof o.size !== "number" || typeof o.etag !== "string" || typeof o.lastModified !== "string") return null;
    return {
      key: o.key,
      size: o.size,
      etag: o.etag,
      lastModified: o.lastModified,
      contentType: typeof o.contentType === "string" ? o.contentType : undefined,
      acl: isAcl(o.acl) ? o.acl : undefined,
      serverSideEncryption: typeof o.serverSideEncryption === "string" ? o.serverSideEncryption : undefined,
    };
  } catch {
    return null;
  }
}

function isAcl(v: unknown): v is Acl {
  return v === "private" || v === "public-read" || v === "public-read-write";
}

function errno(e: unknown): string | undefined {
  return typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined;
}

function storeError(e: unknown, what: string): ObjstateError {
  if (e instanceof ObjstateError) return e;
  const code = errno(e);
  return new ObjstateError("STORE_ERROR", `${what}${code === undefined ? "" : ` (${code})`}`, { cause: e });
}
