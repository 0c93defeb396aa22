/** What every part of a connected backend works with: drivers, layout, names, locks, and how repairs and warnings are reported. */
import { StateEncryption } from "../encryption/index.js";
import type { LockTableDriver } from "../lock/types.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import type { Acl, ObjectStoreDriver } from "../store/types.js";
import { objstateVersion } from "../version.js";
import { remember } from "../util/memo.js";
import type { Connection } from "./connect.js";
import { DEFAULT_WORKSPACE, listPrefixes, statePath, workspaceOfKey, type Layout } from "../config/layout.js";
import { checkTtl, DEFAULT_CLOCK_MARGIN_MS, type LockHandle } from "./locks/lease.js";
import { defaultWho, type LockInfo } from "./locks/lock-info.js";
import { LOCKFILE_SUFFIX, LockfileLock, TableLock, type LockPlace } from "./locks/lock-places.js";
import { Locking, type LockOptions } from "./locks/locking.js";
import type { ConnectOptions, LockScope, RepairEvent, WithLockOptions } from "./types.js";

const PLAIN_MD5_MEMO = 256;

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
  readonly who: string;
  /** Connected only to read: reads repair nothing. */
  readonly readOnly: boolean;
  readonly digestRetry: { readonly timeoutMs: number; readonly intervalMs: number };
  readonly listPageSize: number | undefined;
  readonly locking: Locking;
  readonly warn: (message: string, code: string) => void;
  readonly reportRepair: (event: RepairEvent) => void;
  /** How states are encrypted here; undefined: stored and read as they are. */
  readonly encryption: StateEncryption | undefined;
  /** Plaintext MD5s by envelope MD5 (oldest out first): a server's Content-MD5 of a decrypted state is hashed once per version. */
  private readonly plainMd5s = new Map<string, string>();
  private unlockedNoted = false;

  constructor(conn: Connection, options: ConnectOptions, warn: (message: string, code: string) => void) {
    this.settings = conn.settings;
    this.store = conn.store;
    this.table = conn.table;
    this.layout = conn.layout;
    this.bucket = conn.bucket;
    this.who = options.who ?? defaultWho();
    this.readOnly = options.readOnly === true;
    this.digestRetry = options.digestRetry ?? { timeoutMs: 10_000, intervalMs: 2_000 };
    this.listPageSize = options.listPageSize;
    this.warn = warn;
    this.encryption = options.encryption === undefined ? undefined : StateEncryption.for(options.encryption, options.encryptionTarget);
    this.reportRepair = options.onRepair ?? ((e) => warn(e.message, "OBJSTATE_STATE_REPAIRED"));
    const places: LockPlace[] = [];
    if (options.lockfile === true) places.push(new LockfileLock(conn.store, conn.probe?.deleteIfMatch ?? true, options.lockClock ?? Date.now));
    if (this.table !== undefined) places.push(new TableLock(this.table));
    this.locking = new Locking({
      places,
      keyOf: (place, w) => (place.kind === "table" ? this.lockId(w) : `${this.statePath(w)}${LOCKFILE_SUFFIX}`),
      path: (w) => this.lockId(w),
      describe: (w) => this.describe(w),
      warn,
      workspaceOf: (place, key) => (place.kind === "table" ? this.workspaceOfLockId(key) : this.workspaceOfLockfile(key)) ?? null,
      listPrefixes: listPrefixes(this.layout),
      who: this.who,
      version: options.toolVersion ?? objstateVersion(),
      ttlMs: checkTtl(options.ttl, "the lock ttl"),
      marginMs: options.lockClockMarginMs ?? DEFAULT_CLOCK_MARGIN_MS,
      now: options.lockClock ?? Date.now,
    });
  }

  statePath(workspace: string): string {
    return statePath(this.layout, workspace);
  }

  describe(workspace: string): string {
    return `${this.bucket}/${this.statePath(workspace)}`;
  }

  /** The lock item's `LockID`. */
  lockId(workspace: string): string {
    return `${this.bucket}/${this.statePath(workspace)}`;
  }

  /** The digest item's `LockID`. */
  digestId(workspace: string): string {
    return `${this.lockId(workspace)}-md5`;
  }

  workspaceOfPath(path: string): string | undefined {
    return path === this.statePath(DEFAULT_WORKSPACE) ? DEFAULT_WORKSPACE : workspaceOfKey(this.layout, path);
  }

  /** The workspace whose lockfile is `key` (`{state path}.tflock`), if any. */
  private workspaceOfLockfile(key: string): string | undefined {
    return key.endsWith(LOCKFILE_SUFFIX) ? this.workspaceOfPath(key.slice(0, -LOCKFILE_SUFFIX.length)) : undefined;
  }

  /** The workspace whose lock item is `id` (`{bucket}/{state path}`), if any. */
  workspaceOfLockId(id: string): string | undefined {
    return id.startsWith(`${this.bucket}/`) ? this.workspaceOfPath(id.slice(this.bucket.length + 1)) : undefined;
  }

  get lockingEnabled(): boolean {
    return this.locking.enabled;
  }

  lock(workspace: string, options: LockOptions): Promise<LockInfo> {
    this.noteUnlocked();
    return this.locking.lock(workspace, options);
  }

  acquire(workspace: string, options: LockOptions): Promise<LockHandle> {
    this.noteUnlocked();
    return this.locking.acquire(workspace, options);
  }

  /** Run `work` under the caller's lock (`lockId`), else under one taken for it and released after (see `Locking.withLock`). */
  withLock<T>(workspace: string, options: WithLockOptions, work: (lock: LockScope) => Promise<T>): Promise<T> {
    this.noteUnlocked();
    return this.locking.withLock(workspace, options, work);
  }

  /** The fencing read before a call under the caller's own lock that writes no state object (delete, repair). */
  async checkCallersLock(workspace: string, lock: LockScope): Promise<void> {
    if (lock.taken === undefined && lock.id !== undefined && this.lockingEnabled) await this.locking.assertHolder(workspace, lock.id);
  }

  /** Say, once per connection, that a lock or write locks nothing (a mere reader is not warned). */
  noteUnlocked(): void {
    if (this.locking.enabled || this.unlockedNoted) return;
    this.unlockedNoted = true;
    this.warn(
      `no lock table is configured (kvstoreTable): state in bucket ${this.bucket} is NOT locked, and concurrent writers can overwrite each other's changes. Set kvstoreTable and kvstoreEndpoint (or lockfile) to enable locking.`,
      "OBJSTATE_NO_LOCKING",
    );
  }

  putOptions(): { contentType: string; acl: Acl | undefined; encrypt: boolean } {
    return { contentType: "application/json", acl: this.settings.acl.value as Acl | undefined, encrypt: this.settings.encrypt.value === true };
  }

  plainMd5Of(envelopeMd5: string): string | undefined {
    return this.plainMd5s.get(envelopeMd5);
  }

  rememberPlainMd5(envelopeMd5: string, plainMd5: string): void {
    remember(this.plainMd5s, envelopeMd5, plainMd5, PLAIN_MD5_MEMO);
  }

  close(): void {
    this.store.close();
    this.table?.close();
  }
}
