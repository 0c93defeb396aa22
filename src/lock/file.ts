/**
 * The embedded lock table (DESIGN §2, §5) for `file:` kvstore endpoints: a directory per
 * table on local disk, safe to share between processes on one machine.
 *
 * Layout of `<dir>/.kvstore/<table>/` (bucket names cannot start with `.`, so a table never
 * shares a directory with a bucket of the embedded object store under the same endpoint):
 * - `.schema.json` — the key schema, `[{"name":"LockID","type":"S","keyType":"HASH"}]`.
 *   A table directory without it has that default schema; tests write other schemas to
 *   get a table the backend must refuse, as a DynamoDB table with the wrong key would be.
 * - `i-<encoded LockID>` — one item, JSON `{"LockID": id, "<attr>": "<value>"}`. Items
 *   are never written in place: each version is a complete, fsynced file that is put in
 *   place by `link` (create-if-absent) or `rename` (replace), so a reader sees a whole
 *   item or none, never part of one.
 * - `.tmp-<uuid>`, `.claim-<uuid>` — private to one call. Left behind only by a crash;
 *   safe to delete when no process uses the table.
 *
 * Concurrency (across processes, POSIX semantics of link/rename/unlink):
 * - putIfAbsent: `link(tmp, item)` is atomic create-if-absent; EEXIST means present.
 *   If the blocking item is gone before we can read it, the slot is free: link again.
 * - put: `rename(tmp, item)` atomically replaces.
 * - deleteIf: there is no atomic "unlink if content is X", so:
 *     1. read the item; absent or not X → false. Items are immutable, so a mismatch
 *        here is a true answer for that moment and nothing was disturbed.
 *     2. `rename(item, claim)` to a name only this call knows. ENOENT → another
 *        deleter won → false. Exactly one concurrent deleter can take a given file.
 *     3. read the claim. It is X → unlink it → true: the delete took effect at the
 *        rename, and any item created since then is a different, newer item.
 *     4. It is not X: between 1 and 2 the item was replaced (deleted and re-created,
 *        or put) by someone else, and we took the newer item. Put it back with
 *        `link(claim, item)` and return false.
 *   Residual race, only in step 4 (the item was replaced within the microseconds
 *   between steps 1 and 2 with a different value): while the newer item sits under
 *   the claim name it is invisible, so a putIfAbsent or delete in that window
 *   succeeds as if it were absent; if a putIfAbsent does, our link back fails with
 *   EEXIST and the newer item is lost to that writer. For locks this needs an unlock
 *   and a force-unlock of the same ID racing with two acquirers at once. A deleteIf
 *   with a stale value never gets past step 1, so it can never disturb a held lock.
 * - get: a plain read of an immutable file.
 * - Crash safety: temp files are fsynced before they are linked or renamed into place,
 *   and the directory is fsynced after, so a crash leaves the old item or the new one.
 */
import { createHash, randomUUID } from "node:crypto";
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { ObjstateError } from "../errors.js";
import { parseEndpoint } from "../store/endpoint.js";
import type { KeyAttribute, LockDriverOptions, LockTableDriver } from "./types.js";

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
  /** Set once the schema is known good, so item calls stop re-reading it. */
  private schemaOk = false;

  /** @throws ObjstateError `INVALID_ENDPOINT` for a non-`file:` endpoint, `LOCK_TABLE_ERROR` for a bad table name. */
  constructor(options: LockDriverOptions) {
    const parsed = parseEndpoint(options.endpoint, options.cwd);
    if (parsed.kind !== "file") {
      throw new ObjstateError("INVALID_ENDPOINT", `the embedded lock table needs a file: endpoint, got "${options.endpoint}"`);
    }
    if (!TABLE_NAME.test(options.table)) {
      throw new ObjstateError("LOCK_TABLE_ERROR", `lock table name "${options.table}" is not valid: use 3-255 characters of A-Z a-z 0-9 _ . -`);
    }
    this.dir = path.join(parsed.dir, TABLES_DIR, options.table);
    this.location = `embedded lock table "${options.table}" in ${parsed.dir}`;
  }

  async describeKeySchema(): Promise<KeyAttribute[] | null> {
    try {
      const st = await fs.stat(this.dir);
      if (!st.isDirectory()) throw new ObjstateError("LOCK_TABLE_ERROR", `${this.location}: ${this.dir} is not a directory`);
    } catch (e) {
      if (errno(e) === "ENOENT") return null;
      throw this.fsError(e, "describe");
    }
    return this.readSchema();
  }

  /** Create the table directory and its schema file; an existing table is left as it is. */
  async createTable(): Promise<void> {
    try {
      await fs.mkdir(this.dir, { recursive: true });
      await this.writeSchemaIfAbsent();
    } catch (e) {
      throw this.fsError(e, "create");
    }
  }

  async putIfAbsent(id: string, attr: string, value: string): Promise<string | null> {
    await this.ensureTable();
    const target = this.itemPath(id);
    const tmp = await this.stage(serialize(id, attr, value));
    try {
      for (let round = 0; round < PUT_IF_ABSENT_ROUNDS; round++) {
        if (await this.linkIfAbsent(tmp, target, id)) return null;
        const existing = await this.readItem(target, id);
        if (existing !== null) return existing[attr] ?? "";
        // Deleted between our link and our read: the slot is free again, try once more.
      }
      throw new ObjstateError("LOCK_TABLE_ERROR", `item "${id}" in ${this.location} kept appearing and vanishing; gave up writing it`);
    } finally {
      await unlinkQuietly(tmp);
    }
  }

  async get(id: string, attr: string): Promise<string | null> {
    if (!(await this.tableReadyIfPresent())) return null;
    const item = await this.readItem(this.itemPath(id), id);
    return item?.[attr] ?? null;
  }

  async put(id: string, attr: string, value: string): Promise<void> {
    await this.ensureTable();
    const tmp = await this.stage(serialize(id, attr, value));
    try {
      await fs.rename(tmp, this.itemPath(id));
      await fsyncDir(this.dir);
    } catch (e) {
      await unlinkQuietly(tmp);
      throw this.fsError(e, `write item "${id}" in`);
    }
  }

  async updateIf(id: string, attr: string, expected: string | null, set: Readonly<Record<string, string>>): Promise<boolean> {
    if (!(await this.tableReadyIfPresent())) return false;
    const target = this.itemPath(id);
    const matches = (item: Item | null): boolean => item !== null && (expected === null ? item[attr] === undefined : item[attr] === expected);
    if (!matches(await this.readItem(target, id))) return false;
    // Same claim technique as deleteIf: move the item aside, check, write the new one back.
    const claim = path.join(this.dir, `.claim-${randomUUID()}`);
    if (!(await this.renameIfPresent(target, claim, id))) return false;
    const taken = await this.readItem(claim, id);
    if (taken === null) return false;
    if (!matches(taken)) {
      await this.putBack(claim, target, id);
      return false;
    }
    const tmp = await this.stage(`${JSON.stringify({ ...taken, ...set, [KEY]: id })}\n`);
    try {
      await this.linkIfAbsent(tmp, target, id);
    } finally {
      await unlinkQuietly(tmp);
      await this.unlinkIfPresent(claim, id);
    }
    return true;
  }

  async deleteIf(id: string, attr: string, expected: string): Promise<boolean> {
    if (!(await this.tableReadyIfPresent())) return false;
    const target = this.itemPath(id);
    const seen = await this.readItem(target, id);
    if (seen === null || seen[attr] !== expected) return false;
    const claim = path.join(this.dir, `.claim-${randomUUID()}`);
    if (!(await this.renameIfPresent(target, claim, id))) return false;
    const taken = await this.readItem(claim, id);
    if (taken === null) return false; // only a hand-made mess removes a claim
    if (taken[attr] === expected) {
      await this.unlinkIfPresent(claim, id);
      return true;
    }
    await this.putBack(claim, target, id);
    return false;
  }

  async delete(id: string): Promise<void> {
    if (!(await this.tableReadyIfPresent())) return;
    await this.unlinkIfPresent(this.itemPath(id), id);
  }

  close(): void {
    // Nothing is held open between calls.
  }

  /** The file name of an item: injective, portable, and safe on case-insensitive disks. */
  private itemPath(id: string): string {
    return path.join(this.dir, `i-${encodeId(id)}`);
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
    let text: string;
    try {
      text = await fs.readFile(file, "utf8");
    } catch (e) {
      // A directory without a schema file is a table with the default key (older layouts, hand-made).
      if (errno(e) === "ENOENT") return DEFAULT_SCHEMA.map((k) => ({ ...k }));
      throw this.fsError(e, "describe");
    }
    const schema = parseSchema(text);
    if (schema === null) {
      throw new ObjstateError("LOCK_TABLE_ERROR", `${this.location}: ${file} is not a key schema (expected JSON like [{"name":"LockID","type":"S","keyType":"HASH"}])`);
    }
    return schema;
  }

  /** Concurrent creators race through link: whoever is first writes it, the rest see EEXIST. */
  private async writeSchemaIfAbsent(): Promise<void> {
    const file = path.join(this.dir, SCHEMA_FILE);
    try {
      await fs.access(file);
      return;
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e;
    }
    const tmp = await this.writeTemp(`${JSON.stringify(DEFAULT_SCHEMA)}\n`);
    try {
      await fs.link(tmp, file);
      await fsyncDir(this.dir);
    } catch (e) {
      if (errno(e) !== "EEXIST") throw e;
    } finally {
      await unlinkQuietly(tmp);
    }
  }

  /** Stage an item's new version; if the table directory was removed under us, make it again once. */
  private async stage(content: string): Promise<string> {
    try {
      return await this.writeTemp(content);
    } catch (e) {
      if (errno(e) !== "ENOENT") throw this.fsError(e, "write to");
    }
    this.schemaOk = false;
    await this.ensureTable();
    try {
      return await this.writeTemp(content);
    } catch (e) {
      throw this.fsError(e, "write to");
    }
  }

  /** A complete, fsynced file under a name nobody else uses, ready to be linked or renamed into place. */
  private async writeTemp(content: string): Promise<string> {
    const tmp = path.join(this.dir, `.tmp-${randomUUID()}`);
    try {
      await writeSynced(tmp, content);
      return tmp;
    } catch (e) {
      await unlinkQuietly(tmp);
      throw e;
    }
  }

  private async linkIfAbsent(from: string, to: string, id: string): Promise<boolean> {
    try {
      await fs.link(from, to);
    } catch (e) {
      if (errno(e) === "EEXIST") return false;
      throw this.fsError(e, `write item "${id}" in`);
    }
    await fsyncDir(this.dir);
    return true;
  }

  private async renameIfPresent(from: string, to: string, id: string): Promise<boolean> {
    try {
      await fs.rename(from, to);
      return true;
    } catch (e) {
      if (errno(e) === "ENOENT") return false;
      throw this.fsError(e, `delete item "${id}" from`);
    }
  }

  private async unlinkIfPresent(file: string, id: string): Promise<void> {
    try {
      await fs.unlink(file);
    } catch (e) {
      if (errno(e) === "ENOENT") return;
      throw this.fsError(e, `delete item "${id}" from`);
    }
    await fsyncDir(this.dir);
  }

  /**
   * deleteIf took an item it must not delete (step 4 of the module comment). If a newer
   * item appeared meanwhile, that one stands and ours is dropped: the writer who made it
   * saw the slot empty, and two items cannot share one name.
   */
  private async putBack(claim: string, target: string, id: string): Promise<void> {
    // If the link fails for any other reason the claim stays on disk, so the item is not lost.
    await this.linkIfAbsent(claim, target, id);
    await this.unlinkIfPresent(claim, id);
  }

  /** The item at `file`, or null when absent. A file that is not a well-formed item is an error. */
  private async readItem(file: string, id: string): Promise<Item | null> {
    let text: string;
    try {
      text = await fs.readFile(file, "utf8");
    } catch (e) {
      if (errno(e) === "ENOENT") return null;
      throw this.fsError(e, `read item "${id}" from`);
    }
    const item = parseItem(text);
    if (item === null || item[KEY] !== id) {
      throw new ObjstateError("LOCK_TABLE_ERROR", `${this.location}: ${file} does not hold item "${id}" (corrupt or edited by hand)`);
    }
    return item;
  }

  private fsError(e: unknown, action: string): ObjstateError {
    if (e instanceof ObjstateError) return e;
    const code = errno(e) ?? "error";
    const detail = e instanceof Error ? e.message : String(e);
    const kind = code === "EACCES" || code === "EPERM" ? "ACCESS_DENIED" : "LOCK_TABLE_ERROR";
    return new ObjstateError(kind, `could not ${action} ${this.location}: ${detail}`, { cause: e });
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

function serialize(id: string, attr: string, value: string): string {
  return `${JSON.stringify({ [KEY]: id, [attr]: value })}\n`;
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

/** Exclusive create, so a name collision can never let two calls share a temp file. */
async function writeSynced(file: string, content: string): Promise<void> {
  const handle = await fs.open(file, "wx");
  try {
    await handle.writeFile(content, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Make a link, rename or unlink durable. Some platforms cannot fsync a directory; that only costs durability. */
async function fsyncDir(dir: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(dir, "r");
    await handle.sync();
  } catch {
    // EISDIR/EPERM/EINVAL on platforms without directory fsync.
  } finally {
    await handle?.close();
  }
}

async function unlinkQuietly(file: string): Promise<void> {
  try {
    await fs.unlink(file);
  } catch {
    // Already gone, or never made: either way nothing is left to clean.
  }
}

function errno(e: unknown): string | undefined {
  return typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined;
}
