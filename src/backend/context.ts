/**
 * What every part of a connected backend works with: the drivers, the layout and the names
 * derived from it, the lock manager, and how repairs and warnings are reported. Built once
 * by `ObjectStoreBackend.connect`; the modules beside this one (read, write, repair,
 * workspaces, versions) take it as their first argument.
 */
import { PlainMd5Memo } from "./plain-md5.js";
import { StateEncryption } from "../encryption/index.js";
import type { LockTableDriver } from "../lock/types.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import type { Acl, ObjectStoreDriver } from "../store/types.js";
import { objstateVersion } from "../version.js";
import type { Connection } from "./connect.js";
import type { VersionedState } from "./history.js";
import { DEFAULT_WORKSPACE, listPrefixes, statePath, workspaceOfKey, type Layout } from "../config/layout.js";
import { checkTtl, DEFAULT_CLOCK_MARGIN_MS, type LockHandle } from "./locks/lease.js";
import { defaultWho, type LockInfo } from "./locks/lock-info.js";
import { LOCKFILE_SUFFIX, LockfileLock, TableLock, type LockPlace } from "./locks/lock-places.js";
import { Locking, type TakeOptions } from "./locks/locking.js";
import type { ConnectOptions, LockOptions } from "./options.js";
import type { RepairEvent } from "./results.js";
import { waitWhileLocked } from "./locks/waiting.js";

const DIGEST_SUFFIX = "-md5";

/** The warning of a connection that locks nothing, given on its first write or lock. */
export const NO_LOCKING_CODE = "OBJSTATE_NO_LOCKING";
const warned = new Set<string>();

/** The default of `ConnectOptions.onWarning`: `process.emitWarning`, each kind once per process. */
export function defaultWarn(message: string, code: string): void {
  if (warned.has(code)) return;
  warned.add(code);
  process.emitWarning(message, { type: "ObjstateWarning", code });
}

export class BackendContext {
  readonly settings: ResolvedBackendSettings;
  readonly store: ObjectStoreDriver;
  /** The lock table (locks and digests), when one is configured. */
  readonly table: LockTableDriver | undefined;
  readonly layout: Layout;
  readonly bucket: string;
  /** `Who` and `Version` of the locks and writes of this connection. */
  readonly who: string;
  readonly version: string;
  /** Connected only to read: reads repair nothing. */
  readonly readOnly: boolean;
  readonly digestRetry: { readonly timeoutMs: number; readonly intervalMs: number };
  readonly listPageSize: number | undefined;
  readonly locking: Locking;
  readonly warn: (message: string, code: string) => void;
  readonly reportRepair: (event: RepairEvent) => void;
  /** How states are encrypted here; undefined: stored and read as they are. */
  readonly encryption: StateEncryption | undefined;
  /** Plaintext MD5s of envelopes read or written here. */
  readonly plainMd5s = new PlainMd5Memo();

  constructor(conn: Connection, options: ConnectOptions, warn: (message: string, code: string) => void) {
    this.settings = conn.settings;
    this.store = conn.store;
    this.table = conn.table?.driver;
    this.layout = conn.layout;
    this.bucket = conn.bucket;
    this.who = options.who ?? defaultWho();
    this.version = options.toolVersion ?? objstateVersion();
    this.readOnly = options.readOnly === true;
    this.digestRetry = options.digestRetry ?? { timeoutMs: 10_000, intervalMs: 2_000 };
    this.listPageSize = options.listPageSize;
    this.warn = warn;
    this.encryption = options.encryption === undefined ? undefined : StateEncryption.for(options.encryption, options.encryptionTarget);
    this.reportRepair = options.onRepair ?? ((e) => warn(e.message, "OBJSTATE_STATE_REPAIRED"));
    const places: LockPlace[] = [];
    if (options.lockfile === true) places.push(new LockfileLock(conn.store, conn.probe?.deleteIfMatch ?? true, options.lockClock ?? Date.now));
    if (this.table !== undefined) places.push(new TableLock(this.table));
    const l = this.layout;
    this.locking = new Locking({
      places,
      keyOf: (place, w) => (place.kind === "table" ? this.lockId(w) : `${this.statePath(w)}${LOCKFILE_SUFFIX}`),
      describe: (w) => this.describe(w),
      workspaceOf: (place, key) => {
        const p =
          place.kind === "table"
            ? key.startsWith(`${this.bucket}/`)
              ? key.slice(this.bucket.length + 1)
              : undefined
            : key.endsWith(LOCKFILE_SUFFIX)
              ? key.slice(0, -LOCKFILE_SUFFIX.length)
              : undefined;
        if (p === undefined) return null;
        return p === statePath(l, DEFAULT_WORKSPACE) ? DEFAULT_WORKSPACE : (workspaceOfKey(l, p) ?? null);
      },
      listPrefixes: listPrefixes(l),
      who: this.who,
      version: this.version,
      ttlMs: checkTtl(options.ttl, "the lock ttl"),
      marginMs: options.lockClockMarginMs ?? DEFAULT_CLOCK_MARGIN_MS,
      now: options.lockClock ?? Date.now,
    });
  }

  /** The object key of a workspace's state (see `layout.ts`). */
  statePath(workspace: string): string {
    return statePath(this.layout, workspace);
  }

  /** `bucket/path`, for messages. */
  describe(workspace: string): string {
    return `${this.bucket}/${this.statePath(workspace)}`;
  }

  /** The lock item's `LockID`. */
  lockId(workspace: string): string {
    return `${this.bucket}/${this.statePath(workspace)}`;
  }

  /** The digest item's `LockID`. */
  digestId(workspace: string): string {
    return `${this.lockId(workspace)}${DIGEST_SUFFIX}`;
  }

  /** Take the lock (waiting as `options.wait` says). */
  lock(workspace: string, options: LockOptions): Promise<LockInfo> {
    this.noteUnlocked();
    return waitWhileLocked(() => this.locking.lock(workspace, takeOptions(options), this.lockId(workspace)), options.wait);
  }

  /** Take the lock and hold it with a handle (waiting as `options.wait` says). */
  acquire(workspace: string, options: LockOptions): Promise<LockHandle> {
    this.noteUnlocked();
    return waitWhileLocked(() => this.locking.acquire(workspace, takeOptions(options), this.lockId(workspace)), options.wait);
  }

  private unlockedNoted = false;

  /**
   * Say, once per connection, that a lock or write locks nothing: only where something is
   * written, so a reader (`output`, `state pull`, remote-state outputs) is not warned about
   * writers it is not.
   */
  noteUnlocked(): void {
    if (this.locking.enabled || this.unlockedNoted) return;
    this.unlockedNoted = true;
    this.warn(
      `no lock table is configured (kvstoreTable): state in bucket ${this.bucket} is NOT locked, and concurrent writers can overwrite each other's changes. Set kvstoreTable and kvstoreEndpoint (or lockfile) to enable locking.`,
      NO_LOCKING_CODE,
    );
  }

  /** What every state write carries besides its body and conditions. */
  putOptions(): { contentType: string; acl: Acl | undefined; encrypt: boolean } {
    return { contentType: "application/json", acl: this.settings.acl.value as Acl | undefined, encrypt: this.settings.encrypt.value === true };
  }

  /** A workspace's state as the history functions take it. */
  versioned(workspace: string): VersionedState {
    const enc = this.encryption;
    const open = enc === undefined ? undefined : async (stored: Buffer): Promise<Buffer> => (await enc.decrypt(stored, { workspace })).state;
    return { store: this.store, key: this.statePath(workspace), workspace, where: this.describe(workspace), open };
  }

  close(): void {
    this.store.close();
    this.table?.close();
  }
}

function takeOptions(options: LockOptions): TakeOptions {
  const { wait: _wait, ttl, ...rest } = options;
  return { ...rest, ttlMs: checkTtl(ttl, "the lock ttl (ttl)") };
}
