/** The state lock (docs/design.md §10): taken in every place (lockfile, then table), leased, renewed, fenced, released everywhere. */
import { setTimeout as sleep } from "node:timers/promises";
import { isObjstateError, ObjstateError } from "../../errors.js";
import { checkTtl, isExpired, leaseExpiry, LockHandle, lockLost, takeoverBound } from "./lease.js";
import { nodeCrypto } from "../../util/builtins.js";
import { describeHolder, lockedError, lockIdOf, NO_LOCK_ID, notOwned, ownedBy, workspaceFlag, type LockInfo } from "./lock-info.js";
import { findRelease, type LockPlace, type ReleasedLock, type StoredLock } from "./lock-places.js";
import { waitWhileLocked, type LockWait } from "./waiting.js";

/** How long a lock request tries to learn whether a failed write was stored, or to give back what it took, before it names the lock left. */
export const SETTLE_MS = 10_000;
const RELEASED_WHY = "the lock was released (its lease ran out, or force-unlock)";
const takenOver = (holder: LockInfo): string => `its lease ran out and another holder took it: ${describeHolder(holder)}`;

/** Options of `ObjectStoreBackend.lock` and `acquire`. */
export interface LockOptions {
  /** What the holder is doing (default `objstate`). */
  readonly operation?: string | undefined;
  readonly info?: string | undefined;
  /** Take the lock under this ID (a server storing its client's lock): taking it again under this ID, by the same owner, is a retry. */
  readonly id?: string | undefined;
  /** `Who`, `Version` and `Created` (UTC ISO) of this lock (defaults: the connection's, now). */
  readonly who?: string | undefined;
  readonly version?: string | undefined;
  readonly created?: string | undefined;
  /** Lease of this lock in ms (at least 1 s); default: the connection's `ttl` (none: never expires). */
  readonly ttl?: number | undefined;
  /** The server user taking the lock, stored as `Owner`: a release or write that names an owner must name this one. */
  readonly owner?: string | undefined;
  /** Wait while someone else holds the lock (default: `STATE_LOCKED` at once). */
  readonly wait?: LockWait | undefined;
}

/** Options of `ObjectStoreBackend.withLock`: the caller's lock (`lockId`, left held), or how to take one. */
export interface WithLockOptions extends LockOptions {
  readonly lockId?: string | undefined;
}

/** The lock a `withLock` work runs under. */
export interface LockScope {
  /** The lock's ID (pass it as `lockId`): the caller's, or the one taken; undefined when locking is off. */
  readonly id: string | undefined;
  /** The lock info stored when the lock was taken for this work; undefined for the caller's own lock. */
  readonly taken: LockInfo | undefined;
  /** For a lock taken here: fires with `LOCK_LOST` when its lease is lost. */
  readonly signal: AbortSignal | undefined;
}

export interface UnlockOptions {
  /** Release only a lock whose `Owner` is this (`LOCK_NOT_OWNED` otherwise; a CLI lock belongs to no one). */
  readonly owner?: string | undefined;
  /** The principal of a force-unlock that named no lock ID (the tool's, through a server), recorded with the release. */
  readonly forcedBy?: string | undefined;
}

/** One lock as `objstate locks` lists it (`since`, `expires`: UTC ISO; "" or null when unknown or never). */
export interface LockListing {
  /** `table` (an item of the lock table) or `lockfile` (`{statePath}.tflock`). */
  readonly source: "table" | "lockfile";
  /** The table's LockID, or the lockfile's object key. */
  readonly path: string;
  /** The workspace of this backend the lock belongs to; null for a lock of another state. */
  readonly workspace: string | null;
  readonly id: string;
  readonly who: string;
  readonly operation: string;
  readonly info: string;
  readonly version: string;
  /** The server user that took it (`Owner`); null for a lock taken elsewhere. */
  readonly owner: string | null;
  readonly since: string;
  readonly expires: string | null;
  /** Has the lease ended (by this process's clock)? */
  readonly expired: boolean;
}

export interface LockingInit {
  /** In acquisition order: lockfile first, then table. */
  readonly places: readonly LockPlace[];
  keyOf(place: LockPlace, workspace: string): string;
  /** The lock info's `Path`: `{bucket}/{statePath}`. */
  path(workspace: string): string;
  describe(workspace: string): string;
  warn(message: string, code: string): void;
  workspaceOf(place: LockPlace, key: string): string | null;
  /** Where lockfiles are listed from (prefixes that do not overlap). */
  readonly listPrefixes: readonly string[];
  readonly who: string;
  readonly version: string;
  /** Default lease (ms) of every lock this connection takes; undefined: none. */
  readonly ttlMs: number | undefined;
  readonly marginMs: number;
  readonly now: () => number;
}

interface Held {
  readonly workspace: string;
  readonly ttlMs: number | undefined;
  /** By this process's clock: past this, no write goes out before a renew succeeds. */
  validUntil: number;
  readonly places: Map<LockPlace, StoredLock>;
}

export class Locking {
  /** Locks this process took, by ID: renewals and releases act on exactly what it stored. */
  private readonly held = new Map<string, Held>();
  /** Renewals in flight by lock ID: a second caller (heartbeat and fencing check at once) joins the first. */
  private readonly renewing = new Map<string, Promise<LockInfo>>();
  /** Handles by lock ID: told when a fencing check finds their lease lost. */
  private readonly handles = new Map<string, LockHandle>();

  constructor(private readonly init: LockingInit) {}

  get enabled(): boolean {
    return this.init.places.length > 0;
  }

  get ttlMs(): number | undefined {
    return this.init.ttlMs;
  }

  /** Take the lock everywhere (waiting as `options.wait` says); `STATE_LOCKED` names the holder (and its lease). */
  lock(workspace: string, options: LockOptions): Promise<LockInfo> {
    return waitWhileLocked(() => this.take(workspace, options), options.wait);
  }

  private async take(workspace: string, options: LockOptions): Promise<LockInfo> {
    const init = this.init;
    const ttl = checkTtl(options.ttl, "the lock ttl (ttl)") ?? init.ttlMs;
    const sentAt = init.now();
    // Fields in the tool's order: its lock info byte for byte, then the lease and the owner.
    const info: LockInfo = {
      ID: options.id ?? nodeCrypto().randomUUID(),
      Operation: options.operation ?? "objstate",
      Info: options.info ?? "",
      Who: options.who ?? init.who,
      Version: options.version ?? init.version,
      Created: options.created ?? new Date().toISOString(),
      Path: init.path(workspace),
      ...(ttl === undefined ? {} : { Expires: leaseExpiry(sentAt, ttl) }),
      ...(options.owner === undefined ? {} : { Owner: options.owner }),
    };
    if (!this.enabled) return info;
    const raw = JSON.stringify(info);
    const bound = takeoverBound(sentAt, init.marginMs);
    const got = new Map<LockPlace, StoredLock>();
    let result = info;
    try {
      for (const place of init.places) {
        const r = await this.create(place, init.keyOf(place, workspace), raw, info, bound, workspace);
        if ("taken" in r) {
          got.set(place, r.taken);
          continue;
        }
        // The caller's ID is the holder's: a retry of its own lock, when it is the same owner's (knowing an ID does not make it yours).
        if (options.id !== undefined && options.id !== "" && r.blocked.info.ID === options.id && ownedBy(r.blocked.info, options.owner)) {
          got.set(place, r.blocked);
          result = r.blocked.info;
          continue;
        }
        throw lockedError(init.describe(workspace), workspace, r.blocked.raw, r.blocked.info);
      }
      // A caller's ID released already is a late copy of an earlier LOCK: looked up after the write (a release records itself first).
      if (options.id !== undefined && options.id !== "") {
        const gone = await this.released(workspace, options.id);
        if (gone !== undefined) throw lateLock(init.describe(workspace), options.id, gone);
      }
    } catch (e) {
      // All or nothing: what was taken is given back, unrecorded (the tool retries a refused LOCK under the same ID).
      for (const [place, s] of got) await this.settle(() => place.release(init.keyOf(place, workspace), info.ID, s), workspace, info, e);
      throw e;
    }
    this.held.set(result.ID, { workspace, ttlMs: ttl, validUntil: ttl === undefined ? Infinity : sentAt + ttl, places: got });
    return result;
  }

  /** `place.create`; a failed one may still have been stored (a reply lost), so the lock is read back. */
  private async create(place: LockPlace, key: string, raw: string, info: LockInfo, bound: number, workspace: string) {
    try {
      return await place.create(key, raw, info.Expires, bound);
    } catch (e) {
      const now = await this.settle(() => place.read(key), workspace, info, e);
      if (now === null) throw e;
      return now.raw === raw ? { taken: now } : { blocked: now };
    }
  }

  /** `attempt` retried with backoff for {@link SETTLE_MS}; past it, `LOCK_LEFT_BEHIND` naming `info`. */
  private async settle<T>(attempt: () => Promise<T>, workspace: string, info: LockInfo, cause: unknown): Promise<T> {
    const deadline = Date.now() + SETTLE_MS;
    for (let ceiling = 250; ; ceiling = Math.min(ceiling * 2, 2000)) {
      try {
        return await attempt();
      } catch (e) {
        if (Date.now() >= deadline) throw leftBehind(this.init.describe(workspace), workspace, info, cause, e);
        await sleep(ceiling / 2 + (Math.random() * ceiling) / 2);
      }
    }
  }

  /** A held-lock handle whose heartbeat renews the lease every third of its ttl. */
  async acquire(workspace: string, options: LockOptions): Promise<LockHandle> {
    const info = await this.lock(workspace, options);
    const ttl = this.enabled ? this.held.get(info.ID)?.ttlMs : undefined;
    const handle = new LockHandle(
      info,
      {
        renew: () => this.renew(workspace, info.ID),
        release: async () => {
          this.handles.delete(info.ID);
          // A handle's lock is this process's own, under an ID no client retries: its release needs no record.
          await this.unlock(workspace, info.ID, { record: false });
        },
      },
      ttl,
    );
    if (this.enabled) this.handles.set(info.ID, handle);
    return handle;
  }

  /**
   * Run `work` under the caller's lock (`lockId`), or one taken here and released after, whatever the work did (docs/decisions/056).
   * A failed release is `LOCK_RELEASE_FAILED` after a work that succeeded, a warning after one that failed.
   */
  async withLock<T>(workspace: string, options: WithLockOptions, work: (scope: LockScope) => Promise<T>): Promise<T> {
    const { lockId, ...take } = options;
    if (lockId !== undefined || !this.enabled) return work({ id: lockId, taken: undefined, signal: undefined });
    const handle = await this.acquire(workspace, take);
    const signal = options.wait?.signal;
    if (signal?.aborted === true) {
      await this.releaseTaken(workspace, handle, true);
      throw signal.reason;
    }
    let failed = true;
    try {
      const result = await work({ id: handle.id, taken: handle.info, signal: handle.signal });
      failed = false;
      return result;
    } finally {
      await this.releaseTaken(workspace, handle, failed);
    }
  }

  /** Release a lock taken for a work; when that fails, say which lock is left and how to release it. */
  private async releaseTaken(workspace: string, handle: LockHandle, quietly: boolean): Promise<void> {
    const { describe, warn } = this.init;
    try {
      await handle.release();
    } catch (e) {
      const id = handle.id;
      const reason = e instanceof Error ? e.message : String(e);
      // Released by someone else meanwhile (force-unlock): nothing is left held, and what the work did stands.
      if (isObjstateError(e, "LOCK_NOT_FOUND") || isObjstateError(e, "LOCK_ID_MISMATCH")) {
        const done = quietly ? "failed" : "completed: what it did stands";
        warn(
          `lock ${id} on ${describe(workspace)} was released by someone else (force-unlock, or a lease taken over) while this operation held it; the operation ${done}; its lock was no longer there to release (${reason})`,
          "OBJSTATE_LOCK_GONE",
        );
        return;
      }
      const message = `could not release lock ${id} on ${describe(workspace)} (${reason}); it is still held: release it with ${forceUnlockCommand(id, workspace)} and the same settings`;
      // After a work that failed, its own error is the one thrown.
      if (quietly) warn(message, "OBJSTATE_LOCK_NOT_RELEASED");
      else throw new ObjstateError("LOCK_RELEASE_FAILED", message, { cause: e, details: { lockId: id, workspace } });
    }
  }

  /** Extend the lease of lock `id`, conditional on the version this process saw; `LOCK_LOST` when it is gone or ran out first. */
  renew(workspace: string, id: string): Promise<LockInfo> {
    const running = this.renewing.get(id);
    if (running !== undefined) return running;
    const p = this.renewOnce(workspace, id).finally(() => this.renewing.delete(id));
    this.renewing.set(id, p);
    return p;
  }

  private async renewOnce(workspace: string, id: string): Promise<LockInfo> {
    const init = this.init;
    const h = this.held.get(id);
    const ttl = h?.ttlMs ?? init.ttlMs;
    if (ttl === undefined) {
      throw new ObjstateError("NO_LEASE", `lock ${id} on ${init.describe(workspace)} has no lease to renew: take it with a ttl (--lock-ttl)`, {
        details: { lockId: id },
      });
    }
    const sentAt = init.now();
    const expires = leaseExpiry(sentAt, ttl);
    const where = init.describe(workspace);
    let info: LockInfo | undefined;
    try {
      for (const place of init.places) {
        const key = init.keyOf(place, workspace);
        const current = h?.places.get(place) ?? (await place.read(key));
        if (current === null) throw lockLost(where, id, RELEASED_WHY);
        if (lockIdOf(current.info) !== id) throw lockLost(where, id, `another holder has it: ${describeHolder(current.info)}`);
        const raw = withExpires(current.raw, expires);
        // A refused renew may be one whose first attempt was stored unanswered: then the lease there is ours.
        const next = (await place.renew(key, current, raw, expires)) ?? (await place.read(key));
        if (next === null || next.raw !== raw) throw lockLost(where, id, next === null ? RELEASED_WHY : takenOver(next.info));
        h?.places.set(place, next);
        info ??= next.info;
      }
    } catch (e) {
      if (e instanceof ObjstateError && e.code === "LOCK_LOST") throw e;
      // A failed request: the lease still stands until it runs out by our clock.
      if (h !== undefined && init.now() >= h.validUntil) throw lockLost(where, id, `its lease ran out before it could be renewed (${(e as Error).message})`);
      throw e;
    }
    if (h !== undefined) h.validUntil = sentAt + ttl;
    return info as LockInfo;
  }

  /** The fencing check right before a write: the lock carries `id` everywhere and its lease has not run out (else renewed first). */
  async assertHolder(workspace: string, id: string, owner?: string | undefined): Promise<LockInfo> {
    try {
      return await this.checkHolder(workspace, id, owner);
    } catch (e) {
      if (e instanceof ObjstateError && e.code === "LOCK_LOST") this.handles.get(id)?.lose(e);
      throw e;
    }
  }

  private async checkHolder(workspace: string, id: string, owner: string | undefined): Promise<LockInfo> {
    const init = this.init;
    const where = init.describe(workspace);
    const h = this.held.get(id);
    const leased = h?.ttlMs !== undefined;
    const found = await Promise.all(init.places.map((p) => p.read(init.keyOf(p, workspace))));
    let info: LockInfo | undefined;
    let expires: number | undefined;
    for (const current of found) {
      if (current === null || current.raw === "") {
        if (leased) throw lockLost(where, id, RELEASED_WHY);
        throw new ObjstateError(
          "LOCK_NOT_HELD",
          `the state at ${where} is not locked: lock ${id} was released or force-unlocked; take the lock again before writing`,
          { details: { lockId: id } },
        );
      }
      if (current.info.ID !== id) {
        if (leased) throw lockLost(where, id, takenOver(current.info));
        throw new ObjstateError("STATE_LOCKED", `the state at ${where} is locked by someone else: ${describeHolder(current.info)}`, {
          details: { lockInfo: current.info },
        });
      }
      if (!ownedBy(current.info, owner)) throw notOwned(where, owner as string, current.info, "write");
      info ??= current.info;
      expires ??= current.expires;
    }
    const validUntil = h !== undefined ? h.validUntil : expires === undefined ? Infinity : expires * 1000;
    if (init.now() >= validUntil) {
      if (h?.ttlMs === undefined && init.ttlMs === undefined) throw lockLost(where, id, `its lease ended at ${new Date(validUntil).toISOString()}`);
      return this.renew(workspace, id);
    }
    return info as LockInfo;
  }

  /** Release lock `id` everywhere (table first), recorded unless `record` is false; an ID released recently is `LOCK_NOT_FOUND`. */
  async unlock(workspace: string, id: string, options: UnlockOptions & { readonly record?: boolean } = {}): Promise<void> {
    const { owner, forcedBy } = options;
    const init = this.init;
    if (!this.enabled) return;
    const h = this.held.get(id);
    const recorder = this.recorder;
    let released = false;
    for (const place of [...init.places].reverse()) {
      const note = place === recorder && id !== NO_LOCK_ID && options.record !== false ? { atMs: init.now(), forcedBy } : undefined;
      const out = await place.release(init.keyOf(place, workspace), id, h?.places.get(place), owner, note);
      if (out.kind === "released") released = true;
      // Every place holds the same info: the first one refuses before anything is released.
      else if (out.kind === "not-owned") throw notOwned(init.describe(workspace), owner as string, out.holder, "release");
      else if (out.kind === "other") {
        this.held.delete(id);
        // Only here is the record read: an UNLOCK repeated after its reply was lost, once another client took the lock, is done.
        const gone = id === NO_LOCK_ID ? undefined : await this.released(workspace, id);
        if (gone !== undefined) {
          throw new ObjstateError(
            "LOCK_NOT_FOUND",
            `lock ${id} on ${init.describe(workspace)} was already released (at ${new Date(gone.at).toISOString()}); the state is locked again since, by ${describeHolder(out.holder)}, and that lock was left alone`,
            { details: { lockId: id, releasedAt: new Date(gone.at).toISOString() } },
          );
        }
        throw new ObjstateError("LOCK_ID_MISMATCH", `lock ID ${id} does not match the lock on ${init.describe(workspace)}: ${describeHolder(out.holder)}`, {
          details: { lockId: id, lockInfo: out.holder },
        });
      }
    }
    this.held.delete(id);
    this.handles.delete(id);
    if (!released) {
      const what = id === NO_LOCK_ID ? "no lock item without an ID" : `no lock with ID ${id}`;
      throw new ObjstateError("LOCK_NOT_FOUND", `the state at ${init.describe(workspace)} is not locked (${what})`, { details: { lockId: id } });
    }
  }

  /** The workspace's recent releases, oldest first (empty without locking). */
  async recent(workspace: string): Promise<ReleasedLock[]> {
    const place = this.recorder;
    return place === undefined ? [] : place.recent(this.init.keyOf(place, workspace));
  }

  private async released(workspace: string, id: string): Promise<ReleasedLock | undefined> {
    return findRelease(await this.recent(workspace), id, this.init.now());
  }

  /** The place that records releases: the table when there is one (the last place), else the lockfile. */
  private get recorder(): LockPlace | undefined {
    return this.init.places[this.init.places.length - 1];
  }

  /** The current lock's info (the first place's), or null when unlocked. */
  async info(workspace: string): Promise<LockInfo | null> {
    return (await this.readFirst(workspace))?.lock.info ?? null;
  }

  private async readFirst(workspace: string): Promise<{ place: LockPlace; key: string; lock: StoredLock } | null> {
    const place = this.init.places[0];
    if (place === undefined) return null;
    const key = this.init.keyOf(place, workspace);
    const lock = await place.read(key);
    return lock === null || lock.raw === "" ? null : { place, key, lock };
  }

  /** Every lock in the table and every lockfile under the prefix, by path. */
  async list(): Promise<LockListing[]> {
    const init = this.init;
    const now = init.now();
    const out: LockListing[] = [];
    for (const place of init.places) {
      for await (const { key, lock } of listAll(place, init.listPrefixes))
        out.push(listingOf(place, key, init.workspaceOf(place, key), lock.info, lock.expires, now));
    }
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.source < b.source ? -1 : 1));
  }

  /** The path {@link list} lists the workspace's lock under, as {@link current} reads it; undefined when locking is off. */
  keyOf(workspace: string): string | undefined {
    const first = this.init.places[0];
    return first === undefined ? undefined : this.init.keyOf(first, workspace);
  }

  /** The workspace's lock as {@link list} lists it (from the first place, as {@link info}), or null when unlocked. */
  async current(workspace: string): Promise<LockListing | null> {
    const r = await this.readFirst(workspace);
    return r === null ? null : listingOf(r.place, r.key, workspace, r.lock.info, r.lock.expires, this.init.now());
  }

  /** A lock just taken (its info as `lock` returned it) as {@link list} lists it; no request. */
  listed(workspace: string, info: LockInfo): LockListing {
    const first = this.init.places[0];
    // Without a place (locking off) nothing was stored: the info's own path stands in.
    if (first === undefined) return listingOf({ kind: "table" }, info.Path, workspace, info, info.Expires, this.init.now());
    return listingOf(first, this.init.keyOf(first, workspace), workspace, info, info.Expires, this.init.now());
  }
}

function listingOf(place: Pick<LockPlace, "kind">, key: string, workspace: string | null, i: LockInfo, expires: number | undefined, now: number): LockListing {
  return {
    source: place.kind,
    path: key,
    workspace,
    id: i.ID,
    who: i.Who,
    operation: i.Operation,
    info: i.Info,
    version: i.Version,
    owner: i.Owner ?? null,
    since: i.Created,
    expires: expires === undefined ? null : new Date(expires * 1000).toISOString(),
    expired: isExpired(expires, now, 0),
  };
}

/** Every lock of `place` under `prefixes` (the table ignores them: it is listed once). */
async function* listAll(place: LockPlace, prefixes: readonly string[]): AsyncIterable<{ key: string; lock: StoredLock }> {
  for (const prefix of place.kind === "table" ? [""] : prefixes) yield* place.list(prefix);
}

/** The exact command that releases a lock left behind. */
export function forceUnlockCommand(id: string, workspace: string): string {
  return `objstate force-unlock ${id} -w ${workspace}`;
}

/** `LOCK_ID_RELEASED`: a LOCK under the ID of a lock released since (no lock info: nothing to wait for). */
function lateLock(where: string, id: string, gone: ReleasedLock): ObjstateError {
  const at = new Date(gone.at).toISOString();
  return new ObjstateError(
    "LOCK_ID_RELEASED",
    `lock ${id} on ${where} was released at ${at}: this request to take it again is a late copy of an earlier one (a retry that arrived after its holder had finished), so the lock was not taken. To lock the state, use a new lock ID`,
    { details: { lockId: id, releasedAt: at } },
  );
}

/** `LOCK_LEFT_BEHIND`: a lock request failed and could neither tell whether its write was stored nor give it back. */
function leftBehind(where: string, ws: string, info: LockInfo, cause: unknown, last: unknown): ObjstateError {
  const why = (e: unknown): string => (e instanceof Error ? e.message : String(e));
  return new ObjstateError(
    "LOCK_LEFT_BEHIND",
    `the lock on ${where} may be left behind under ID ${info.ID}: its write failed (${why(cause)}), and for ${SETTLE_MS / 1000} s it could neither be read back nor given back (${why(last)}). A lock request under this ID takes it; otherwise, once the lock table answers, release it with \`objstate force-unlock ${info.ID}${workspaceFlag(ws)}\` (through the tool: \`terraform force-unlock ${info.ID}\`)`,
    { cause, details: { lockId: info.ID, lockInfo: info } },
  );
}

/** The stored info with a new `Expires`, every other field kept as it is. */
function withExpires(raw: string, expires: number): string {
  try {
    const o: unknown = JSON.parse(raw);
    if (typeof o === "object" && o !== null && !Array.isArray(o)) return JSON.stringify({ ...(o as Record<string, unknown>), Expires: expires });
  } catch {
    // not JSON: an item we did not write; renewing it is refused below by its ID anyway
  }
  return raw;
}
