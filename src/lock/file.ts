/**
 * The embedded lock table (docs/design.md §2, §5) for `file:` endpoints, shared by processes on
 * one machine (not network file systems), in `<dir>/.kvstore/<table>/` (no bucket starts with `.`):
 * - `.schema.json`: the key schema, default when absent (tests write others to get a table to refuse).
 * - `i-<encoded LockID>`: one item, JSON of string attributes. Each version is a complete fsynced
 *   file put in place by `link` (create-if-absent) or `rename` (replace), so a crash sees a whole item.
 * - `.claim-i-<encoded LockID>/`: the item's claim (`../store/claim.ts`), held by every replace and
 *   delete from compare to rename or unlink; kept with a spare file from a lock's first write, so a
 *   release needs no new inode on a full disk. putIfAbsent needs none: only a delete makes the item absent.
 * - `.tmp-<uuid>`: private to one call; left only by a crash.
 * Directories are 0700, files 0600; no path below the endpoint is followed through a symlink (`UNSAFE_PATH`).
 */
import { createHash } from "node:crypto";
import { promises as fs, type BigIntStats } from "node:fs";
import * as path from "node:path";
import { ObjstateError } from "../errors.js";
import { acquireClaim, addSpare } from "../store/claim.js";
import { endpointOfKind } from "../io/endpoint.js";
import { checkDir, errno, fsFailure, fsyncDir, lstatFile, makeDir, makeRootDir, readSmall, writeWhole } from "../io/local-fs.js";
import { pauseAt } from "../util/test-pause.js";
import { digestOf, isCommit, ItemReads, KEY, leaseOf, vanishing } from "./types.js";
import type { CommitOptions, DigestCommit, DigestItem, KeyAttribute, LeaseItem, LockDriverOptions, LockTableDriver, ScannedItem } from "./types.js";

const TABLES_DIR = ".kvstore";
const SCHEMA_FILE = ".schema.json";
const DEFAULT_SCHEMA: readonly KeyAttribute[] = [{ name: KEY, type: "S", keyType: "HASH" }];
/** DynamoDB's table-name rule, which keeps the name one safe path segment. */
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;
/** Encoded ids longer than this are shortened with a hash (file names stop at 255 bytes). */
const MAX_ENCODED = 200;
const KEEP_WHEN_SHORTENED = 150;
/** More rounds of "exists, then gone" than this means a writer is looping delete/create. */
const PUT_IF_ABSENT_ROUNDS = 100;

type Item = Readonly<Record<string, string>>;

export class FileLockTable extends ItemReads implements LockTableDriver {
  readonly kind = "file";
  readonly location: string;
  readonly dir: string;
  private readonly rootDir: string;
  private readonly tablesDir: string;
  private schemaOk = false;

  /** @throws ObjstateError `INVALID_ENDPOINT` for a non-`file:` endpoint, `LOCK_TABLE_ERROR` for a bad table name. */
  constructor(options: LockDriverOptions) {
    super();
    const parsed = endpointOfKind(options.endpoint, "file", "the embedded lock table", options.cwd);
    if (!TABLE_NAME.test(options.table)) {
      throw new ObjstateError("LOCK_TABLE_ERROR", `lock table name "${options.table}" is not valid: use 3-255 characters of A-Z a-z 0-9 _ . -`);
    }
    this.rootDir = parsed.dir;
    this.tablesDir = path.join(parsed.dir, TABLES_DIR);
    this.dir = path.join(this.tablesDir, options.table);
    this.location = `embedded lock table "${options.table}" in ${parsed.dir}`;
  }

  /** A table directory without a schema file has the default key. */
  async describeKeySchema(): Promise<KeyAttribute[] | null> {
    const file = path.join(this.dir, SCHEMA_FILE);
    let text: string | null;
    try {
      if (!(await checkDir(this.tablesDir)) || !(await checkDir(this.dir))) return null;
      text = await readSmall(file);
    } catch (e) {
      throw this.fsError(e, "describe");
    }
    if (text === null) return DEFAULT_SCHEMA.map((k) => ({ ...k }));
    const v = parseJson(text);
    const isKey = (k: unknown): k is KeyAttribute =>
      typeof k === "object" && k !== null && ["name", "type", "keyType"].every((f) => typeof (k as Record<string, unknown>)[f] === "string");
    if (!Array.isArray(v) || !v.every(isKey)) {
      const expected = `expected JSON like ${JSON.stringify(DEFAULT_SCHEMA)}`;
      throw new ObjstateError("LOCK_TABLE_ERROR", `${this.location}: ${file} is not a key schema (${expected})`);
    }
    return v.map(({ name, type, keyType }) => ({ name, type, keyType }));
  }

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
    await this.ready(true);
    return this.linkOrAnswer(id, { [KEY]: id, [attr]: value }, (existing) => existing[attr] ?? "");
  }

  async put(id: string, attr: string, value: string): Promise<void> {
    await this.ready(true);
    await this.withClaim(id, () => this.replace(id, { [KEY]: id, [attr]: value }));
  }

  async updateIf(id: string, attr: string, expected: string | null, set: Readonly<Record<string, string>>): Promise<boolean> {
    this.refuseKey(id, set);
    const matches = (item: Item): boolean => (expected === null ? item[attr] === undefined : item[attr] === expected);
    const update = Object.keys(set).length === 0 ? undefined : (item: Item) => this.replace(id, { ...item, ...set, [KEY]: id });
    return this.ifMatches(id, matches, update);
  }

  async deleteIf(id: string, attr: string, expected: string): Promise<boolean> {
    return this.ifMatches(
      id,
      (item) => item[attr] === expected,
      () => this.unlink(id),
    );
  }

  async delete(id: string): Promise<void> {
    if (!(await this.ready(false)) || (await this.statItem(id)) === null) return;
    await this.withClaim(id, async () => {
      if ((await this.statItem(id)) !== null) await this.unlink(id);
    });
  }

  async putLease(id: string, info: string, expires: number | undefined, nowSec: number): Promise<LeaseItem | null> {
    await this.ready(true);
    const item: Item = { [KEY]: id, Info: info, ...(expires === undefined ? {} : { Expires: String(expires) }) };
    // A lease without Expires (the tool's own lock) never runs out.
    const live = (x: Item | null): x is Item => x !== null && (leaseOf(x).expires ?? Infinity) >= nowSec;
    // The holder first, before anything is written: a full disk still answers "locked by".
    const first = await this.readItem(id);
    if (live(first)) return leaseOf(first);
    const blocking = await this.linkOrAnswer(id, item, (existing) =>
      live(existing)
        ? existing
        : // An expired lease is replaced under the claim, once it is seen there to be still the expired one.
          this.withClaim(id, async () => {
            const now = await this.readItem(id);
            if (live(now)) return now;
            await this.replace(id, item);
            return null;
          }),
    );
    if (blocking !== null) return leaseOf(blocking);
    // The claim directory and its spare while there is room (best effort: a release makes them too).
    const claimDir = this.claimDir(id);
    if (!(await checkDir(claimDir).catch(() => true)) && (await makeDir(claimDir).catch(() => false))) await addSpare(claimDir).catch(() => undefined);
    return null;
  }

  async renewLease(id: string, expectedInfo: string, info: string, expires: number): Promise<boolean> {
    return this.updateIf(id, "Info", expectedInfo, { Info: info, Expires: String(expires) });
  }

  async commitDigest(id: string, seen: DigestItem | null, next: DigestCommit, options: CommitOptions = {}): Promise<boolean> {
    this.refuseKey(id, next.set ?? {});
    await this.ready(true);
    const commit = async (): Promise<boolean> => {
      const item = await this.readItem(id);
      const now = item === null ? null : digestOf(item);
      const unchanged = seen === null ? now === null : now?.digest === seen.digest && now.generation === seen.generation;
      if (!unchanged) return isCommit(now, next);
      const updated: Record<string, string> = { ...item, ...next.set, Digest: next.digest, Generation: String(next.generation), [KEY]: id };
      if (next.lockId === undefined) delete updated["CommitLockID"];
      else updated["CommitLockID"] = next.lockId;
      await this.replace(id, updated);
      return true;
    };
    return this.withClaim(id, commit, options.claimWaitMs);
  }

  async *scanAttrs(attrs: readonly string[]): AsyncIterable<ScannedItem> {
    if (!(await this.ready(false))) return;
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (e) {
      if (errno(e) === "ENOENT") return;
      throw this.fsError(e, "list", this.dir);
    }
    for (const name of names.sort()) {
      if (!name.startsWith("i-")) continue;
      const text = await readSmall(path.join(this.dir, name)).catch((e: unknown) => {
        throw this.fsError(e, "list", this.dir);
      });
      // The item names its own LockID (file names of long ids are shortened).
      const item = text === null ? null : parseItem(text);
      const id = item?.[KEY];
      if (item === null || id === undefined) continue;
      const values = Object.fromEntries(attrs.flatMap((a) => (item[a] === undefined ? [] : [[a, item[a]]])));
      if (Object.keys(values).length > 0) yield { id, values, expires: leaseOf(item).expires };
    }
  }

  close(): void {}

  private itemPath(id: string): string {
    return path.join(this.dir, `i-${encodeId(id)}`);
  }

  private claimDir(id: string): string {
    return path.join(this.dir, `.claim-i-${encodeId(id)}`);
  }

  private refuseKey(id: string, set: Readonly<Record<string, string>>): void {
    if (KEY in set) throw new ObjstateError("LOCK_TABLE_ERROR", `cannot update ${KEY} of item "${id}" in ${this.location}: it is the key`);
  }

  /** Run `body` holding the item's claim; a claim of a live process is never broken, however long it is held. */
  private async withClaim<T>(id: string, body: () => Promise<T>, waitMs?: number): Promise<T> {
    const claimDir = this.claimDir(id);
    const prepare = (): Promise<boolean> => this.remaking(`claim item "${id}" in`, () => makeDir(claimDir));
    const claim = await acquireClaim(claimDir, { prepare, what: `item "${id}" of ${this.location}`, waitMs }).catch((e: unknown) => {
      throw this.fsError(e, `claim item "${id}" in`, claimDir);
    });
    try {
      return await body();
    } finally {
      await claim.release().catch(() => undefined);
    }
  }

  /** True after `act` (none: only the check) when the item `matches` before the claim (items are immutable) and under it. */
  private async ifMatches(id: string, matches: (item: Item) => boolean, act: ((item: Item) => Promise<void>) | undefined): Promise<boolean> {
    const seen = await this.readText(id);
    if (seen === null || !matches(seen)) return false;
    if (act === undefined) return true;
    return this.withClaim(id, async () => {
      const item = await this.readItem(id);
      if (item === null || !matches(item)) return false;
      await act(item);
      return true;
    });
  }

  /** Link `item` in place if absent (null); else `answer` the item found. */
  private async linkOrAnswer<T>(id: string, item: Item, answer: (existing: Item) => T | Promise<T>): Promise<T | null> {
    for (let round = 0; round < PUT_IF_ABSENT_ROUNDS; round++) {
      if (await this.remaking(`write item "${id}" in`, () => writeWhole(this.itemPath(id), serialize(item), { link: true }))) return null;
      const existing = await this.readItem(id);
      // Deleted between our link and our read: the slot is free again.
      if (existing !== null) return await answer(existing);
    }
    throw vanishing(id, this.location);
  }

  /** The caller holds the claim. */
  private async replace(id: string, item: Item): Promise<void> {
    pauseAt("table-checked");
    await this.statItem(id); // refuses a planted link or special file
    await this.remaking(`write item "${id}" in`, () => writeWhole(this.itemPath(id), serialize(item)));
  }

  /** The caller holds the claim. */
  private async unlink(id: string): Promise<void> {
    pauseAt("table-checked");
    try {
      await fs.unlink(this.itemPath(id));
      await fsyncDir(this.dir);
    } catch (e) {
      if (errno(e) !== "ENOENT") throw this.fsError(e, `delete item "${id}" from`, this.dir);
    }
  }

  /** The table checked before an item call (`create`: made first); false when absent. A table keyed otherwise is refused, as DynamoDB does. */
  private async ready(create: boolean): Promise<boolean> {
    if (this.schemaOk) return true;
    if (create) await this.createTable();
    const schema = await this.describeKeySchema();
    if (schema === null) return false;
    const ok = schema.length === 1 && schema[0]?.name === KEY && schema[0].type === "S" && schema[0].keyType === "HASH";
    if (!ok) {
      const got = schema.map((k) => `${k.name} (${k.type}, ${k.keyType})`).join(", ") || "no key";
      throw new ObjstateError("LOCK_TABLE_ERROR", `${this.location} has key ${got}; objstate needs exactly one key, LockID of type S (string)`);
    }
    this.schemaOk = true;
    return true;
  }

  /** Concurrent creators race through link: the first writes it, the rest see EEXIST. */
  private async writeSchemaIfAbsent(): Promise<void> {
    const file = path.join(this.dir, SCHEMA_FILE);
    if ((await lstatFile(file)) === null) await writeWhole(file, `${JSON.stringify(DEFAULT_SCHEMA)}\n`, { link: true });
  }

  /** `act`, once more after making the table again if its directory was removed under us. */
  private async remaking<T>(action: string, act: () => Promise<T>): Promise<T> {
    try {
      return await act().catch(async (e: unknown) => {
        if (errno(e) !== "ENOENT") throw e;
        this.schemaOk = false;
        await this.ready(true);
        return act();
      });
    } catch (e) {
      throw this.fsError(e, action, this.dir);
    }
  }

  /** lstat of an item file, refusing links and special files; null when absent. */
  private async statItem(id: string): Promise<BigIntStats | null> {
    try {
      return await lstatFile(this.itemPath(id));
    } catch (e) {
      throw this.fsError(e, "read");
    }
  }

  protected async readText(id: string): Promise<Item | null> {
    return (await this.ready(false)) ? this.readItem(id) : null;
  }

  /** Null when absent; a file that is not a well-formed item is an error. */
  private async readItem(id: string): Promise<Item | null> {
    const file = this.itemPath(id);
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
 * Percent-encode every byte outside `a-z 0-9 . _ -` (upper case too: case-insensitive disks).
 * Long ids keep a head plus a SHA-256 of the whole id, marked by `~`, which the plain form lacks.
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

function serialize(item: Item): string {
  return `${JSON.stringify(item)}\n`;
}

function parseItem(text: string): Item | null {
  const v = parseJson(text);
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  return Object.values(v).every((x) => typeof x === "string") ? (v as Item) : null;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
