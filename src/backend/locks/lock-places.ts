/**
 * Where a lock lives (docs/design.md §10): an item of the lock table, or a lockfile `{statePath}.tflock` beside the state; and the
 * record of its recent releases (docs/decisions/013), which tells a retried UNLOCK or a late LOCK from one naming a lock that never was.
 */
import { isObjstateError, ObjstateError } from "../../errors.js";
import type { LockTableDriver } from "../../lock/types.js";
import type { ObjectStoreDriver } from "../../store/types.js";
import { remember } from "../../util/memo.js";
import { lockIdOf, NO_LOCK_ID, ownedBy, parseLockInfo, type LockInfo } from "./lock-info.js";

export interface StoredLock {
  /** The stored lock info, byte for byte ("" when a table item has no `Info`). */
  readonly raw: string;
  readonly info: LockInfo;
  /** The lease's end, epoch seconds; undefined for a lock that never expires. */
  readonly expires: number | undefined;
  /** What a conditional renew or release of exactly this version needs (the raw info, or the lockfile's ETag). */
  readonly token: string;
}

export type ReleaseOutcome =
  | { readonly kind: "released" }
  | { readonly kind: "absent" }
  | { readonly kind: "other"; readonly holder: LockInfo; readonly raw: string }
  /** The ID matches, but the lock belongs to another owner than the one asking (nothing was released). */
  | { readonly kind: "not-owned"; readonly holder: LockInfo };

/** One place a lock lives; keys are the table's LockID or the lockfile's object key. */
export interface LockPlace {
  readonly kind: "table" | "lockfile";
  /** Take the lock: written when absent or its lease ended before `nowSec` (the takeover bound). */
  create(key: string, raw: string, expires: number | undefined, nowSec: number): Promise<{ readonly taken: StoredLock } | { readonly blocked: StoredLock }>;
  read(key: string): Promise<StoredLock | null>;
  /** Store `raw` (a renewed lease) only while the lock is still `held`; null when the condition failed (the caller reads what is there). */
  renew(key: string, held: StoredLock, raw: string, expires: number): Promise<StoredLock | null>;
  /** Release lock `id` (`known`: what this process stored last) when it is `owner`'s; a `note` is recorded before the lock goes. */
  release(key: string, id: string, known: StoredLock | undefined, owner?: string | undefined, note?: ReleaseNote | undefined): Promise<ReleaseOutcome>;
  /** The recent releases of the lock at `key`, oldest first. */
  recent(key: string): Promise<ReleasedLock[]>;
  /** Every lock in this place (the whole table; lockfiles under `prefix`). */
  list(prefix: string): AsyncIterable<{ readonly key: string; readonly lock: StoredLock }>;
}

/** The lock table item attribute that marks a release in progress (see {@link TableLock.release}). */
const RELEASED = "Released";
/** Rounds of a conditional step that keeps finding the lock changed before giving up. */
const ROUNDS = 20;
/** The table item beside a lock (`{LockID}-released`) that records its recent releases, and its attribute. */
const RECORD_SUFFIX = "-released";
const RECORD_ATTR = "ReleasedIDs";
const RECORDS_MEMO = 1024;
/** The object beside a lockfile that records its recent releases (no longer than `.tflock`, so every name fits). */
const RECORD_OBJECT_SUFFIX = ".tfrel";
export const LOCKFILE_SUFFIX = ".tflock";

/** Swallow `STORE_NO_SPACE` (a release's record is best effort on a full disk); rethrow anything else. */
function unlessFull(e: unknown): void {
  if (!isObjstateError(e, "STORE_NO_SPACE")) throw e;
}

function stored(key: string, raw: string, expires: number | undefined, token: string): StoredLock {
  const info = parseLockInfo(raw, key);
  return { raw, info, expires: expires ?? info.Expires, token };
}

/** A lock item of the lock table: `{LockID, Info, Expires?}`, byte-compatible with the tool's. */
export class TableLock implements LockPlace {
  readonly kind = "table";
  /** Release records as this process last read or wrote them, by lock key (a server's LOCK reads the one its UNLOCK updates). */
  private readonly records = new Map<string, string | null>();
  constructor(private readonly table: LockTableDriver) {}

  async create(key: string, raw: string, expires: number | undefined, nowSec: number): Promise<{ taken: StoredLock } | { blocked: StoredLock }> {
    const existing = await this.table.putLease(key, raw, expires, nowSec);
    // Finding exactly our own info: a write retried after its reply was lost.
    if (existing === null || existing.info === raw) return { taken: stored(key, raw, expires, raw) };
    return { blocked: stored(key, existing.info, existing.expires, existing.info) };
  }

  async read(key: string): Promise<StoredLock | null> {
    const item = await this.table.getLease(key);
    return item === null ? null : stored(key, item.info, item.expires, item.info);
  }

  async renew(key: string, held: StoredLock, raw: string, expires: number): Promise<StoredLock | null> {
    return (await this.table.renewLease(key, held.token, raw, expires)) ? stored(key, raw, expires, raw) : null;
  }

  /**
   * A recorded release: the lock read, the record written, then the item deleted while it carries that info, so a delete retried after
   * its reply was lost finds it gone with its ID recorded. An unrecorded one marks the item released by this ID, then deletes it while
   * marked: the mark proves the same. Every step is safe to repeat. The embedded table's answers are never lost: one conditional delete.
   */
  async release(key: string, id: string, known: StoredLock | undefined, owner?: string | undefined, note?: ReleaseNote | undefined): Promise<ReleaseOutcome> {
    let record = note === undefined ? undefined : this.recordOf(key);
    let tried = false;
    for (let attempt = 0; attempt < 5; attempt++) {
      // What this process stored stands in for a read only where nothing is recorded of it and a refusal is made on a fresh read.
      const mine = attempt === 0 && note === undefined && known !== undefined && ownedBy(known.info, owner) ? known.raw : undefined;
      const raw = mine ?? (await this.table.get(key, "Info"));
      if (raw === null && id !== NO_LOCK_ID) return { kind: tried ? "released" : "absent" };
      if (raw !== null) {
        const holder = parseLockInfo(raw, key);
        if (lockIdOf(holder) !== id) return { kind: "other", holder, raw };
        if (!ownedBy(holder, owner)) return { kind: "not-owned", holder };
      } else if (owner !== undefined) {
        // An item without lock info belongs to no one: only a release without an owner clears it.
        return { kind: "not-owned", holder: parseLockInfo("", key) };
      }
      if (record !== undefined && note !== undefined) {
        // A full disk (the embedded table) must not keep the lock: the release goes on without its record.
        await this.remember(key, id, note, await record).catch(unlessFull);
        record = undefined;
      }
      if ((note === undefined && this.table.kind !== "file") || raw === null) {
        if (await this.table.updateIf(key, "Info", raw, { [RELEASED]: id })) {
          await this.table.deleteIf(key, RELEASED, id);
          return { kind: "released" };
        }
        if (raw === null) return { kind: "absent" };
        continue;
      }
      if (await this.table.deleteIf(key, "Info", raw)) return { kind: "released" };
      // Only a delete of the info read here may have been this release when the item is found gone.
      tried = mine === undefined;
    }
    throw new ObjstateError("LOCK_TABLE_ERROR", `could not release lock ${id} (${key}) in ${this.table.location}: the lock item kept changing`);
  }

  async recent(key: string): Promise<ReleasedLock[]> {
    const text = await this.table.get(key + RECORD_SUFFIX, RECORD_ATTR);
    this.note(key, text);
    return parseReleased(text);
  }

  /** The record as last seen here, else read (a failed read counts as none: the conditional write then finds what is there). */
  private recordOf(key: string): Promise<string | null> {
    const seen = this.records.get(key);
    return seen !== undefined ? Promise.resolve(seen) : this.table.get(key + RECORD_SUFFIX, RECORD_ATTR).catch(() => null);
  }

  private note(key: string, text: string | null): void {
    remember(this.records, key, text, RECORDS_MEMO);
  }

  /** Add a release to the record item, conditional on what was read (`null`: no item, or not read). */
  private async remember(key: string, id: string, note: ReleaseNote, read: string | null | undefined): Promise<void> {
    const item = key + RECORD_SUFFIX;
    let current = read ?? null;
    for (let round = 0; round < ROUNDS; round++) {
      const next = withRelease(parseReleased(current), id, note);
      if (current === null) {
        const existing = await this.table.putIfAbsent(item, RECORD_ATTR, next);
        if (existing === null) return this.note(key, next);
        current = existing;
      } else {
        // "" is an item without the attribute (written by hand): updateIf's `null` condition.
        if (await this.table.updateIf(item, RECORD_ATTR, current === "" ? null : current, { [RECORD_ATTR]: next })) return this.note(key, next);
        current = await this.table.get(item, RECORD_ATTR);
      }
    }
    throw new ObjstateError("LOCK_TABLE_ERROR", `could not record the release of lock ${id} in ${item} of ${this.table.location}: the item kept changing`);
  }

  async *list(): AsyncIterable<{ key: string; lock: StoredLock }> {
    for await (const { id, values, expires } of this.table.scanAttrs(["Info"]))
      yield { key: id, lock: stored(id, values["Info"] as string, expires, values["Info"] as string) };
  }
}

/** A lockfile: created with `If-None-Match: *`, renewed and taken over with `If-Match`, released by a read, an ID check and a conditional delete. */
export class LockfileLock implements LockPlace {
  readonly kind = "lockfile";
  /** `atomicDelete`: the store honours `If-Match` on DELETE; without it an expired lease is left to be taken over, not deleted. */
  constructor(
    private readonly store: ObjectStoreDriver,
    private readonly atomicDelete: boolean = true,
    private readonly now: () => number = Date.now,
  ) {}

  async create(key: string, raw: string, expires: number | undefined, nowSec: number): Promise<{ taken: StoredLock } | { blocked: StoredLock }> {
    for (let round = 0; round < ROUNDS; round++) {
      if (await this.putIf(key, raw, { ifNoneMatch: true })) return { taken: await this.confirm(key, raw) };
      const current = await this.read(key);
      if (current === null) continue; // released between our write and our read: try again
      if (current.raw === raw) return { taken: current };
      if (current.expires === undefined || current.expires >= nowSec) return { blocked: current };
      // An expired lease: replaced only while it is still that very version.
      if (await this.putIf(key, raw, { ifMatch: current.token })) return { taken: await this.confirm(key, raw) };
    }
    throw new ObjstateError("LOCK_ERROR", `the lockfile ${key} in ${this.store.location} kept changing; gave up taking the lock`);
  }

  async read(key: string): Promise<StoredLock | null> {
    const obj = await this.store.get(key);
    if (obj === null) return null;
    const raw = obj.body.toString("utf8");
    return stored(key, raw, undefined, obj.meta.etag ?? "");
  }

  async renew(key: string, held: StoredLock, raw: string, _expires: number): Promise<StoredLock | null> {
    return (await this.putIf(key, raw, { ifMatch: held.token })) ? this.confirm(key, raw) : null;
  }

  async release(key: string, id: string, _known: StoredLock | undefined, owner?: string | undefined, note?: ReleaseNote | undefined): Promise<ReleaseOutcome> {
    let tried = false;
    let record = note === undefined ? undefined : this.readRecord(key);
    record?.catch(() => undefined);
    for (let round = 0; round < ROUNDS; round++) {
      const current = await this.read(key);
      // Gone after our own conditional delete was sent: its reply was lost, the release is done.
      if (current === null) return tried ? { kind: "released" } : { kind: "absent" };
      if (lockIdOf(current.info) !== id) return { kind: "other", holder: current.info, raw: current.raw };
      if (!ownedBy(current.info, owner)) return { kind: "not-owned", holder: current.info };
      // Recorded once, right before the conditional delete (the decision and the removal), after a fresh read found this lock.
      if (record !== undefined && note !== undefined) {
        // A full disk must not keep the lock: the release goes on without its record.
        await this.remember(key, id, note, await record).catch(unlessFull);
        record = undefined;
      }
      if (!this.atomicDelete && current.expires !== undefined && current.expires * 1000 <= this.now()) return { kind: "released" };
      if (await this.store.deleteIfMatch(key, current.token)) return { kind: "released" };
      tried = true;
    }
    throw new ObjstateError("LOCK_ERROR", `could not release lock ${id}: the lockfile ${key} in ${this.store.location} kept changing`);
  }

  async recent(key: string): Promise<ReleasedLock[]> {
    return parseReleased((await this.readRecord(key)).text);
  }

  private async readRecord(key: string): Promise<{ text: string | null; etag: string | undefined }> {
    const obj = await this.store.get(recordKeyOf(key));
    return obj === null ? { text: null, etag: undefined } : { text: obj.body.toString("utf8"), etag: obj.meta.etag ?? "" };
  }

  /** Add a release to the record object: created with `If-None-Match: *`, replaced with `If-Match`. */
  private async remember(key: string, id: string, note: ReleaseNote, read: { text: string | null; etag: string | undefined }): Promise<void> {
    const object = recordKeyOf(key);
    let current = read;
    for (let round = 0; round < ROUNDS; round++) {
      const next = withRelease(parseReleased(current.text), id, note);
      if (await this.putIf(object, next, current.etag === undefined ? { ifNoneMatch: true } : { ifMatch: current.etag })) return;
      current = await this.readRecord(key);
    }
    throw new ObjstateError("LOCK_ERROR", `could not record the release of lock ${id} in ${object} of ${this.store.location}: the object kept changing`);
  }

  async *list(prefix: string): AsyncIterable<{ key: string; lock: StoredLock }> {
    for await (const key of this.store.list(prefix)) {
      if (!key.endsWith(LOCKFILE_SUFFIX)) continue;
      const lock = await this.read(key);
      if (lock !== null) yield { key, lock };
    }
  }

  private async putIf(key: string, raw: string, condition: { ifNoneMatch: true } | { ifMatch: string }): Promise<boolean> {
    try {
      await this.store.put(key, Buffer.from(raw, "utf8"), { contentType: "application/json", ...condition });
      return true;
    } catch (e) {
      if (isObjstateError(e, "PRECONDITION_FAILED")) return false;
      throw e;
    }
  }

  /** The version just written (its ETag is what renew and release are conditional on). */
  private async confirm(key: string, raw: string): Promise<StoredLock> {
    const now = await this.read(key);
    if (now === null || now.raw !== raw) {
      throw new ObjstateError(
        "LOCK_LOST",
        `the lockfile ${key} in ${this.store.location} was replaced right after it was written (this process was paused past its lease?); take the lock again`,
      );
    }
    return now;
  }
}

/** The record object of the lockfile at `key` (`{statePath}.tflock` → `{statePath}.tfrel`). */
function recordKeyOf(lockfileKey: string): string {
  return (lockfileKey.endsWith(LOCKFILE_SUFFIX) ? lockfileKey.slice(0, -LOCKFILE_SUFFIX.length) : lockfileKey) + RECORD_OBJECT_SUFFIX;
}

/** How many releases a workspace's record keeps (the newest). */
export const RELEASED_KEEP = 64;
/** How long a release is remembered (ms, by the clocks of the releaser and the reader). */
export const RELEASED_MAX_AGE_MS = 60 * 60 * 1000;

/** One remembered release. */
export interface ReleasedLock {
  /** The released lock's ID. */
  readonly id: string;
  /** When it was released: epoch ms by the releasing process's clock. */
  readonly at: number;
  /** The principal of a force-unlock that named no ID (the tool's), else undefined. */
  readonly forcedBy?: string | undefined;
}

/** What a release records about itself (see `LockPlace.release`). */
export interface ReleaseNote {
  readonly atMs: number;
  readonly forcedBy?: string | undefined;
}

/** The releases in a stored record (`[{"ID": …, "At": ms, "ForcedBy"?: …}, …]`, oldest first); anything unreadable counts as none (it only ever widens a refusal). */
export function parseReleased(text: string | null | undefined): ReleasedLock[] {
  if (text === null || text === undefined || text === "") return [];
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(v)) return [];
  const out: ReleasedLock[] = [];
  for (const e of v as unknown[]) {
    if (typeof e !== "object" || e === null) continue;
    const s = e as Partial<Record<"ID" | "At" | "ForcedBy", unknown>>;
    if (typeof s.ID !== "string" || typeof s.At !== "number") continue;
    out.push({ id: s.ID, at: s.At, forcedBy: typeof s.ForcedBy === "string" ? s.ForcedBy : undefined });
  }
  return out;
}

/** The record with one more release: the same ID once, nothing past the age limit, at most {@link RELEASED_KEEP}. */
export function withRelease(list: readonly ReleasedLock[], id: string, note: ReleaseNote): string {
  const kept = list.filter((r) => r.id !== id && Math.abs(note.atMs - r.at) <= RELEASED_MAX_AGE_MS);
  kept.push({ id, at: note.atMs, forcedBy: note.forcedBy });
  const stored = kept.slice(-RELEASED_KEEP).map((r) => (r.forcedBy === undefined ? { ID: r.id, At: r.at } : { ID: r.id, At: r.at, ForcedBy: r.forcedBy }));
  return JSON.stringify(stored);
}

/** The release of `id` in the record, if it is younger than the age limit at `nowMs`. */
export function findRelease(list: readonly ReleasedLock[], id: string, nowMs: number): ReleasedLock | undefined {
  return list.find((r) => r.id === id && nowMs - r.at <= RELEASED_MAX_AGE_MS);
}
