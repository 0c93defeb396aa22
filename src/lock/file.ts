/**
 * The embedded lock table (docs/design.md §2, §5) for `file:` kvstore endpoints: a directory per
 * table on local disk, safe to share between processes on one machine.
 *
 * Layout of `<dir>/.kvstore/<table>/` (bucket names cannot start with `.`, so a table never
 * shares a directory with a bucket of the embedded object store under the same endpoint):
 * - `.schema.json` — the key schema, `[{"name":"LockID","type":"S","keyType":"HASH"}]`.
 *   A table directory without it has that default schema; tests write other schemas to
 *   get a table the backend must refuse, as a DynamoDB table with the wrong key would be.
 * - `i-<encoded LockID>` — one item, JSON `{"LockID": id, "<attr>": "<value>", …}` (any
 *   number of string attributes). Items are never written in place: each version is a
 *   complete, fsynced file that is put in place by `link` (create-if-absent) or `rename`
 *   (replace), so a reader sees a whole item or none, never part of one.
 * - `.claim-i-<encoded LockID>/` — while a call replaces or deletes that item, it holds the
 *   item's claim there (see `../store/claim.ts`). Kept, with one empty `.spare-*` file in it,
 *   and made when a lock item is first written: releasing a lock then needs no new block or
 *   inode, so it works on a full disk.
 * - `.tmp-<uuid>` — private to one call. Left behind only by a crash; safe to delete when
 *   no process uses the table.
 * Directories are 0700 and files 0600 whatever the umask; no path below the endpoint
 * directory is followed if it is a symbolic link (`UNSAFE_PATH`).
 *
 * Concurrency (across processes, POSIX semantics of link/rename/unlink):
 * - putIfAbsent: `link(tmp, item)` is atomic create-if-absent; EEXIST means present.
 *   If the blocking item is gone before we can read it, the slot is free: link again.
 *   It takes no claim: it can only succeed while the item is absent, and an item only
 *   becomes absent through a delete, which holds the claim.
 * - put, delete, deleteIf, updateIf hold the item's claim from their read to their
 *   rename or unlink, so "compare, then replace or delete" is one step for every other
 *   writer. deleteIf and updateIf first read without the claim: items are immutable, so a
 *   mismatch there is a true answer for that moment and needs no claim.
 * - get: a plain read of an immutable file.
 * - Crash safety: temp files are fsynced before they are linked or renamed into place,
 *   and the directory is fsynced after, so a crash leaves the old item or the new one. A
 *   crash while holding a claim leaves a claim that the next caller breaks (its process is
 *   gone); a claim of a live process is never broken, however long it is held.
 * - Full disk: putLease reads the holder before it writes anything, so a blocked lock is
 *   answered with its holder even when nothing could be written.
 */
import { createHash, randomUUID } from "node:crypto";
import { promises as fs, type BigIntStats } from "node:fs";
import * as path from "node:path";
import { ObjstateError } from "../errors.js";
import { acquireClaim, addSpare, type Claim } from "../store/claim.js";
import { endpointOfKind } from "../io/endpoint.js";
import { checkDir, createFile, errno, fsFailure, fsyncDir, lstatFile, makeDir, makeRootDir, readSmall, removeFile } from "../io/local-fs.js";
import { pauseAt } from "../util/test-pause.js";
import type { CommitOptions, DigestCommit, DigestItem, KeyAttribute, LeaseItem, LockDriverOptions, LockTableDriver, ScannedItem } from "./types.js";

const KEY = "LockID";
/** Tables live below this directory of the endpoint, apart from the store's buckets. */
const TABLES_DIR = ".kvstore";
const SCHEMA_FILE = ".schema.json";
const DEFAULT_SCHEMA: readonly KeyAttribute[] = [{ name: KEY, type: "S", keyType: "HASH" }];
/** DynamoDB's table-name rule; it also keeps the name a single safe path segment. */
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;
/** Encoded ids longer than this are shortened with a hash (file names stop at 255 bytes). */
const MAX_ENCODED = 200;
const KEEP_WHEN_SHORTENED = 150;
/** See putIfAbsent: more rounds than this means a writer is looping delete/create. */
const PUT_IF_ABSENT_ROUNDS = 100;

type Item = Readonly<Record<string, string>>;

/**
 * A {@link LockTableDriver} kept in a local directory. Correct across processes on one
 * machine (see the module comment for the races considered); not for network file
 * systems whose link/rename are not atomic.
 */
export class FileLockTable implements LockTableDriver {
  readonly kind = "file";
  readonly location: string;
  /** The table's directory, `<endpoint dir>/.kvstore/<table>`. */
  readonly dir: string;
  private readonly rootDir: string;
  private readonly tablesDir: string;
  /** Set once the schema is known good, so item calls stop re-reading it. */
  private schemaOk = false;

  /** @throws ObjstateError `INVALID_ENDPOINT` for a non-`file:` endpoint, `LOCK_TABLE_ERROR` for a bad table name. */
  constructor(options: LockDriverOptions) {
    const parsed = endpointOfKind(options.endpoint, "file", "the embedded lock table", options.cwd);
    if (!TABLE_NAME.test(options.table)) {
      throw new ObjstateError("LOCK_TABLE_ERROR", `lock table name "${options.table}" is not valid: use 3-255 characters of A-Z a-z 0-9 _ . -`);
    }
    this.rootDir = parsed.dir;
    this.tablesDir = path.join(parsed.dir, TABLES_DIR);
    this.dir = path.join(this.tablesDir, options.table);
    this.location = `embedded lock table "${options.table}" in ${parsed.dir}`;
  }

  async describeKeySchema(): Promise<KeyAttribute[] | null> {
    try {
      if (!(await checkDir(this.tablesDir)) || !(await checkDir(this.dir))) return null;
    } catch (e) {
      throw this.fsError(e, "describe");
    }
    return this.readSchema();
  }

  /** Create the table directory and its schema file; an existing table is left as it is. */
  async createTable(): Promise<void> {
    try {
      await makeRootDir(this.rootDir);
      await makeDir(this.tablesDir);
      await makeDir(this.dir);
      await this.writeSchemaIfAbsent();
    } catch (e) {
      throw this.fsError(e, "create");
    }
  }

  async putIfAbsent(id: string, attr: string, value: string): Promise<string | null> {
    await this.ensureTable();
    const target = this.itemPath(id);
    const tmp = await this.stage(serialize({ [KEY]: id, [attr]: value }));
    try {
      for (let round = 0; round < PUT_IF_ABSENT_ROUNDS; round++) {
        if (await this.linkIfAbsent(tmp, target, id)) return null;
        const existing = await this.readItem(target, id);
        if (existing !== null) return existing[attr] ?? "";
        // Deleted between our link and our read: the slot is free again, try once more.
      }
      throw new ObjstateError("LOCK_TABLE_ERROR", `item "${id}" in ${this.location} kept appearing and vanishing; gave up writing it`);
    } finally {
      await removeFile(tmp).catch(() => undefined);
    }
  }

  async get(id: string, attr: string): Promise<string | null> {
    if (!(await this.tableReadyIfPresent())) return null;
    const item = await this.readItem(this.itemPath(id), id);
    return item?.[attr] ?? null;
  }

  async put(id: string, attr: string, value: string): Promise<void> {
    await this.ensureTable();
    const target = this.itemPath(id);
    await this.withClaim(id, async () => {
      await this.replace(target, id, { [KEY]: id, [attr]: value });
    });
  }

  async updateIf(id: string, attr: string, expected: string | null, set: Readonly<Record<string, string>>): Promise<boolean> {
    if (KEY in set) throw new ObjstateError("LOCK_TABLE_ERROR", `cannot update ${KEY} of item "${id}" in ${this.location}: it is the key`);
    if (!(await this.tableReadyIfPresent())) return false;
    const target = this.itemPath(id);
    // null: the item exists without `attr` (an item written by hand or by another tool).
    const matches = (item: Readonly<Record<string, string>> | null): boolean =>
      item !== null && (expected === null ? item[attr] === undefined : item[attr] === expected);
    if (!matches(await this.readItem(target, id))) return false;
    if (Object.keys(set).length === 0) return true;
    return this.withClaim(id, async () => {
      const item = await this.readItem(target, id);
      if (item === null || !matches(item)) return false;
      await this.replace(target, id, { ...item, ...set, [KEY]: id });
      return true;
    });
  }

  async deleteIf(id: string, attr: string, expected: string): Promise<boolean> {
    if (!(await this.tableReadyIfPresent())) return false;
    const target = this.itemPath(id);
    const seen = await this.readItem(target, id);
    if (seen === null || seen[attr] !== expected) return false;
    return this.withClaim(id, async () => {
      const item = await this.readItem(target, id);
      if (item === null || item[attr] !== expected) return false;
      await this.unlinkIfPresent(target, id);
      return true;
    });
  }

  async delete(id: string): Promise<void> {
    if (!(await this.tableReadyIfPresent())) return;
    const target = this.itemPath(id);
    if ((await this.statItem(target)) === null) return;
    await this.withClaim(id, async () => {
      if ((await this.statItem(target)) !== null) await this.unlinkIfPresent(target, id);
    });
  }

  async putLease(id: string, info: string, expires: number | undefined, nowSec: number): Promise<LeaseItem | null> {
    await this.ensureTable();
    const target = this.itemPath(id);
    const item: Item = { [KEY]: id, Info: info, ...(expires === undefined ? {} : { Expires: String(expires) }) };
    const expired = (x: Item): boolean => {
      const e = leaseOfItem(x).expires;
      return e !== undefined && e < nowSec;
    };
    // The holder first, before anything is written: a full disk still answers "locked by".
    const first = await this.readItem(target, id);
    if (first !== null && !expired(first)) return leaseOfItem(first);
    const tmp = await this.stage(serialize(item));
    try {
      for (let round = 0; round < PUT_IF_ABSENT_ROUNDS; round++) {
        if (await this.linkIfAbsent(tmp, target, id)) {
          await this.readyClaimDir(id);
          return null;
        }
        const existing = await this.readItem(target, id);
        if (existing === null) continue; // deleted between our link and our read: try again
        if (!expired(existing)) return leaseOfItem(existing);
        // An expired lease: replaced under the claim, after checking again that it is still the expired one.
        const blocking = await this.withClaim(id, async () => {
          const now = await this.readItem(target, id);
          if (now !== null && !expired(now)) return now;
          await this.replace(target, id, item);
          return null;
        });
        return blocking === null ? null : leaseOfItem(blocking);
      }
      throw new ObjstateError("LOCK_TABLE_ERROR", `item "${id}" in ${this.location} kept appearing and vanishing; gave up writing it`);
    } finally {
      await removeFile(tmp).catch(() => undefined);
    }
  }

  async getLease(id: string): Promise<LeaseItem | null> {
    if (!(await this.tableReadyIfPresent())) return null;
    const item = await this.readItem(this.itemPath(id), id);
    return item === null ? null : leaseOfItem(item);
  }

  async renewLease(id: string, expectedInfo: string, info: string, expires: number): Promise<boolean> {
    return this.updateIf(id, "Info", expectedInfo, { Info: info, Expires: String(expires) });
  }

  async getDigest(id: string): Promise<DigestItem | null> {
    if (!(await this.tableReadyIfPresent())) return null;
    const item = await this.readItem(this.itemPath(id), id);
    return item === null ? null : digestOfItem(item);
  }

  async commitDigest(id: string, seen: DigestItem | null, next: DigestCommit, options: CommitOptions = {}): Promise<boolean> {
    if (next.set !== undefined && KEY in next.set)
      throw new ObjstateError("LOCK_TABLE_ERROR", `cannot update ${KEY} of item "${id}" in ${this.location}: it is the key`);
    await this.ensureTable();
    const target = this.itemPath(id);
    // Under the item's claim, like updateIf: the compare and the replace are one step for every other writer.
    return this.withClaim(
      id,
      async () => {
        const item = await this.readItem(target, id);
        const now = item === null ? null : digestOfItem(item);
        const unchanged = seen === null ? now === null : now !== null && now.digest === seen.digest && now.generation === seen.generation;
        if (!unchanged) return now !== null && now.digest?.trim().toLowerCase() === next.digest && now.generation === next.generation;
        const updated: Record<string, string> = { ...item, ...next.set, Digest: next.digest, Generation: String(next.generation), [KEY]: id };
        if (next.lockId === undefined) delete updated["CommitLockID"];
        else updated["CommitLockID"] = next.lockId;
        await this.replace(target, id, updated);
        return true;
      },
      options.claimWaitMs,
    );
  }

  async *scanAttr(attr: string): AsyncIterable<{ readonly id: string; readonly value: string; readonly expires: number | undefined }> {
    for await (const item of this.scanAttrs([attr])) yield { id: item.id, value: item.values[attr] as string, expires: item.expires };
  }

  async *scanAttrs(attrs: readonly string[]): AsyncIterable<ScannedItem> {
    if (!(await this.tableReadyIfPresent())) return;
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (e) {
      if (errno(e) === "ENOENT") return;
      throw this.fsError(e, "list", this.dir);
    }
    for (const name of names.sort()) {
      if (!name.startsWith("i-")) continue;
      // The item names its own LockID (file names of long ids are shortened).
      let text: string | null;
      try {
        text = await readSmall(path.join(this.dir, name));
      } catch (e) {
        throw this.fsError(e, "list", this.dir);
      }
      const item = text === null ? null : parseItem(text);
      const id = item?.[KEY];
      if (item === null || id === undefined) continue;
      const values = Object.fromEntries(attrs.flatMap((a) => (item[a] === undefined ? [] : [[a, item[a]]])));
      if (Object.keys(values).length > 0) yield { id, values, expires: leaseOfItem(item).expires };
    }
  }

  close(): void {
    // Nothing is held open between calls.
  }

  /** The file name of an item: injective, portable, and safe on case-insensitive disks. */
  private itemPath(id: string): string {
    return path.join(this.dir, `i-${encodeId(id)}`);
  }

  private claimDir(id: string): string {
    return path.join(this.dir, `.claim-i-${encodeId(id)}`);
  }

  /**
   * Make the item's claim directory and its spare now, while there is room, so that the
   * release of the lock just written needs none (best effort: the release makes them too).
   */
  private async readyClaimDir(id: string): Promise<void> {
    const claimDir = this.claimDir(id);
    try {
      if (!(await checkDir(claimDir)) && (await makeDir(claimDir))) await addSpare(claimDir);
    } catch {
      // Room ran out right now: a release that finds room makes them.
    }
  }

  /** Run `body` holding the item's claim (the claim directory stays, see the module comment). */
  private async withClaim<T>(id: string, body: () => Promise<T>, waitMs?: number): Promise<T> {
    const claimDir = this.claimDir(id);
    let claim: Claim;
    try {
      claim = await acquireClaim(claimDir, { prepare: () => this.prepareClaimDir(claimDir), what: `item "${id}" of ${this.location}`, waitMs });
    } catch (e) {
      throw this.fsError(e, `claim item "${id}" in`, claimDir);
    }
    try {
      return await body();
    } finally {
      await claim.release().catch(() => undefined);
    }
  }

  private async prepareClaimDir(claimDir: string): Promise<void> {
    try {
      await makeDir(claimDir);
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e;
      // The table directory itself was removed under us.
      this.schemaOk = false;
      await this.ensureTable();
      await makeDir(claimDir);
    }
  }

  /** Replace the item with a new complete version (the caller holds the claim). */
  private async replace(target: string, id: string, item: Item): Promise<void> {
    pauseAt("table-checked");
    await this.statItem(target); // refuses a planted link or special file
    const tmp = await this.stage(serialize(item));
    try {
      await fs.rename(tmp, target);
      await fsyncDir(this.dir);
    } catch (e) {
      await removeFile(tmp).catch(() => undefined);
      throw this.fsError(e, `write item "${id}" in`, this.dir);
    }
  }

  /** Make sure the table exists with the right schema before a write (first write creates it). */
  private async ensureTable(): Promise<void> {
    if (this.schemaOk) return;
    await this.createTable();
    await this.checkSchema(await this.readSchema());
  }

  /** For reads and deletes: false when the table does not exist (nothing to read or delete). */
  private async tableReadyIfPresent(): Promise<boolean> {
    if (this.schemaOk) return true;
    const schema = await this.describeKeySchema();
    if (schema === null) return false;
    await this.checkSchema(schema);
    return true;
  }

  /** Refuse a table keyed differently, as DynamoDB refuses an item that does not match its key. */
  private async checkSchema(schema: readonly KeyAttribute[]): Promise<void> {
    const ok = schema.length === 1 && schema[0]?.name === KEY && schema[0].type === "S" && schema[0].keyType === "HASH";
    if (!ok) {
      const got = schema.map((k) => `${k.name} (${k.type}, ${k.keyType})`).join(", ") || "no key";
      throw new ObjstateError("LOCK_TABLE_ERROR", `${this.location} has key ${got}; objstate needs exactly one key, LockID of type S (string)`);
    }
    this.schemaOk = true;
  }

  private async readSchema(): Promise<KeyAttribute[]> {
    const file = path.join(this.dir, SCHEMA_FILE);
    let text: string | null;
    try {
      text = await readSmall(file);
    } catch (e) {
      throw this.fsError(e, "describe");
    }
    // A directory without a schema file is a table with the default key (older layouts, hand-made).
    if (text === null) return DEFAULT_SCHEMA.map((k) => ({ ...k }));
    const schema = parseSchema(text);
    if (schema === null) {
      throw new ObjstateError(
        "LOCK_TABLE_ERROR",
        `${this.location}: ${file} is not a key schema (expected JSON like [{"name":"LockID","type":"S","keyType":"HASH"}])`,
      );
    }
    return schema;
  }

  /** Concurrent creators race through link: whoever is first writes it, the rest see EEXIST. */
  private async writeSchemaIfAbsent(): Promise<void> {
    const file = path.join(this.dir, SCHEMA_FILE);
    if ((await lstatFile(file)) !== null) return;
    const tmp = await this.writeTemp(`${JSON.stringify(DEFAULT_SCHEMA)}\n`);
    try {
      await fs.link(tmp, file);
      await fsyncDir(this.dir);
    } catch (e) {
      if (errno(e) !== "EEXIST") throw e;
    } finally {
      await removeFile(tmp).catch(() => undefined);
    }
  }

  /** Stage an item's new version; if the table directory was removed under us, make it again once. */
  private async stage(content: string): Promise<string> {
    try {
      return await this.writeTemp(content);
    } catch (e) {
      if (errno(e) !== "ENOENT") throw this.fsError(e, "write to", this.dir);
    }
    this.schemaOk = false;
    await this.ensureTable();
    try {
      return await this.writeTemp(content);
    } catch (e) {
      throw this.fsError(e, "write to", this.dir);
    }
  }

  /** A complete, fsynced, owner-only file under a name nobody else uses, ready to be linked or renamed into place. */
  private async writeTemp(content: string): Promise<string> {
    const tmp = path.join(this.dir, `.tmp-${randomUUID()}`);
    try {
      await createFile(tmp, content);
      return tmp;
    } catch (e) {
      await removeFile(tmp).catch(() => undefined);
      throw e;
    }
  }

  private async linkIfAbsent(from: string, to: string, id: string): Promise<boolean> {
    try {
      await fs.link(from, to);
      await fsyncDir(this.dir);
    } catch (e) {
      if (errno(e) === "EEXIST") return false;
      throw this.fsError(e, `write item "${id}" in`, this.dir);
    }
    return true;
  }

  /** Delete the item (the caller holds the claim). */
  private async unlinkIfPresent(file: string, id: string): Promise<void> {
    pauseAt("table-checked");
    try {
      await fs.unlink(file);
      await fsyncDir(this.dir);
    } catch (e) {
      if (errno(e) === "ENOENT") return;
      throw this.fsError(e, `delete item "${id}" from`, this.dir);
    }
  }

  /** lstat of an item file, refusing links and special files; null when absent. */
  private async statItem(file: string): Promise<BigIntStats | null> {
    try {
      return await lstatFile(file);
    } catch (e) {
      throw this.fsError(e, "read");
    }
  }

  /** The item at `file`, or null when absent. A file that is not a well-formed item is an error. */
  private async readItem(file: string, id: string): Promise<Item | null> {
    let text: string | null;
    try {
      text = await readSmall(file);
    } catch (e) {
      throw this.fsError(e, `read item "${id}" from`);
    }
    if (text === null) return null;
    const item = parseItem(text);
    if (item === null || item[KEY] !== id) {
      throw new ObjstateError("LOCK_TABLE_ERROR", `${this.location}: ${file} does not hold item "${id}" (corrupt or edited by hand)`);
    }
    return item;
  }

  private fsError(e: unknown, action: string, at?: string): ObjstateError {
    return fsFailure(e, `could not ${action} ${this.location}`, "LOCK_TABLE_ERROR", at);
  }
}

/**
 * Percent-encode every byte outside `a-z 0-9 . _ -` (upper case too, so two ids never
 * differ only by case). Very long ids keep a readable head plus a SHA-256 of the whole
 * id; `~` marks that form and never appears in the plain one.
 */
export function encodeId(id: string): string {
  let out = "";
  for (const byte of Buffer.from(id, "utf8")) {
    const isPlain = (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte === 0x2e || byte === 0x5f || byte === 0x2d;
    out += isPlain ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  if (out.length <= MAX_ENCODED) return out;
  return `${out.slice(0, KEEP_WHEN_SHORTENED)}~${createHash("sha256").update(id, "utf8").digest("hex")}`;
}

function leaseOfItem(item: Item): LeaseItem {
  const raw = item["Expires"];
  const n = raw === undefined ? undefined : Number(raw);
  return { info: item["Info"] ?? "", expires: n !== undefined && Number.isFinite(n) ? n : undefined };
}

/** `Generation` is stored as decimal text here; absent or unreadable is 0. */
function digestOfItem(item: Item): DigestItem {
  const g = item["Generation"] === undefined ? 0 : Number(item["Generation"]);
  return { digest: item["Digest"] ?? null, generation: Number.isSafeInteger(g) && g > 0 ? g : 0, lockId: item["CommitLockID"] };
}

function serialize(item: Item): string {
  return `${JSON.stringify(item)}\n`;
}

function parseItem(text: string): Item | null {
  const v = parseJson(text);
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const entries = Object.entries(v);
  return entries.every(([, x]) => typeof x === "string") ? (Object.fromEntries(entries) as Item) : null;
}

function parseSchema(text: string): KeyAttribute[] | null {
  const v = parseJson(text);
  if (!Array.isArray(v)) return null;
  const out: KeyAttribute[] = [];
  for (const k of v as unknown[]) {
    if (typeof k !== "object" || k === null) return null;
    const { name, type, keyType } = k as Record<string, unknown>;
    if (typeof name !== "string" || typeof type !== "string" || typeof keyType !== "string") return null;
    out.push({ name, type, keyType });
  }
  return out;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
