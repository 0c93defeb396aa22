/**
 * The options of {@link ObjectStoreBackend}'s calls: one place for what a caller can ask,
 * so the façade (backend.ts) stays a list of calls and the modules below it share one
 * vocabulary.
 */
import type { EncryptionConfig, EncryptionTarget } from "../encryption/index.js";
import type { Env } from "../resolve/settings.js";
import type { S3DriverOptions } from "../store/s3.js";
import type { Clock } from "../credentials/refresh.js";
import type { Timeouts } from "../io/sdk-client.js";
import type { LayoutName } from "../config/layout.js";
import type { LockInfo } from "./locks/lock-info.js";
import type { Principal } from "./principal.js";
import type { RepairEvent } from "./results.js";
import type { RollbackOptions } from "./history.js";
import type { StateDiff } from "../state/diff.js";

/** Options of {@link ObjectStoreBackend.connect}. */
export interface ConnectOptions {
  /** Environment for resolution (default `process.env`). */
  readonly env?: Env | undefined;
  /** `Who` in lock info (default `user@host`). */
  readonly who?: string | undefined;
  /** `Version` in lock info (default objstate's version). */
  readonly toolVersion?: string | undefined;
  /** Base directory of relative `file:` endpoints (default `process.cwd()`). */
  readonly cwd?: string | undefined;
  /** How long a read retries while the state does not match its digest (default 10 s, every 2 s). */
  readonly digestRetry?: { readonly timeoutMs: number; readonly intervalMs: number } | undefined;
  /** Keys per page when listing workspaces (default: the driver's, 1,000 for S3). */
  readonly listPageSize?: number | undefined;
  /** States at or above this size go up in multipart uploads (default 100 MiB). */
  readonly multipartThreshold?: number | undefined;
  /** Extra options for the S3 driver (a hook that sees every signed request). */
  readonly s3?: Pick<S3DriverOptions, "onRequest"> | undefined;
  /**
   * How long requests to the object store, the lock table and STS may take: connect and
   * idle timeouts per attempt, and an overall deadline per request (retries included,
   * longer for large bodies). Defaults: connect 5 s, idle 20 s, request 60 s
   * (`DEFAULT_TIMEOUTS`); a given `requestMs` also caps the other two. A request past its
   * deadline fails with `ENDPOINT_TIMEOUT` naming the endpoint.
   */
  readonly timeouts?: Partial<Timeouts> | undefined;
  /** Receives warnings (default: `process.emitWarning`, each kind once per process). */
  readonly onWarning?: ((message: string, code: string) => void) | undefined;
  /**
   * Connect only to read: nothing is created (an absent embedded lock table is read around,
   * as it can hold no digests). Writes still work but take no such shortcut.
   */
  readonly readOnly?: boolean | undefined;
  /** Time source for refreshing temporary credentials before they expire (default `Date.now`). */
  readonly clock?: Clock | undefined;
  /**
   * Lease (ms, at least 1 s) of every lock this connection takes, unless a lock says
   * otherwise: the lock expires unless renewed (a `LockHandle` renews it every third
   * of this), and an expired one is taken over by the next acquirer. Default: none, locks
   * never expire (like the tool's own).
   */
  readonly ttl?: number | undefined;
  /**
   * Lock with a lockfile `{statePath}.tflock` in the bucket (the tool's S3 backend layout),
   * created with `If-None-Match: *`; with a lock table too, both are taken (lockfile first).
   * The store's conditional writes are probed first (`LOCKFILE_UNSUPPORTED` when ignored).
   */
  readonly lockfile?: boolean | undefined;
  /**
   * Where the default workspace's state lives (docs/design.md §5): `seed` (default) at
   * `{prefix}/{key}`, as the tool's OSS backend keeps it; `s3` at `{key}`, as the tool's S3
   * backend keeps it (with `workspace_key_prefix` = prefix), so the two share one bucket and
   * one table. Named workspaces are at `{prefix}/{name}/{key}` in both. Anything else is
   * `INVALID_LAYOUT`.
   */
  readonly layout?: LayoutName | undefined;
  /** How far apart the clocks of lock holders may be (default 1 s; see docs/design.md §10). */
  readonly lockClockMarginMs?: number | undefined;
  /** Time source for leases (default `Date.now`). */
  readonly lockClock?: (() => number) | undefined;
  /**
   * Told of every repair a read or write makes on its own (docs/design.md §5): a torn write
   * committed, or the committed state written again over a write that never committed.
   * Default: `onWarning` with code `OBJSTATE_STATE_REPAIRED`.
   */
  readonly onRepair?: ((event: RepairEvent) => void) | undefined;
  /**
   * State encryption in OpenTofu's format (issue 26; parse it once with
   * `parseEncryptionConfig` or `encryptionConfigFromEnv`): writes store the envelope of the
   * state under the primary method, reads decrypt with the primary method, then each
   * fallback. Without it, states are stored and read as they are (an envelope a client
   * encrypted itself stays an envelope).
   */
  readonly encryption?: EncryptionConfig | undefined;
  /** Whose methods of `encryption` apply: `state` (default), or a remote state data source by name. */
  readonly encryptionTarget?: EncryptionTarget | undefined;
}

/** Options of {@link ObjectStoreBackend.readState}. */
export interface ReadOptions {
  /**
   * Sees the state as it arrives (`body` the buffer being filled, `filled` bytes in it),
   * to work during the transfer. A digest retry starts over with a new buffer. Not every
   * driver calls it. The bytes are unchecked until the read returns (they may still fail
   * the digest): act on them only in ways that can be taken back. To pass the bytes on
   * while they arrive, use {@link ObjectStoreBackend.streamState}, which holds back what
   * is not proven yet.
   */
  readonly onData?: ((body: Buffer, filled: number) => void) | undefined;
  /**
   * `onData` hands the bytes to a worker thread that reads them while they arrive: a large
   * state is then read into shared memory where the store's driver can (S3), so the worker
   * needs no copy. Not for long-running readers of many large states: shared memory does not
   * count towards what starts a garbage collection.
   */
  readonly sharedBody?: boolean | undefined;
  /** The bytes as stored: an envelope is not decrypted (`state pull --raw-envelope`, a server passing envelopes through). */
  readonly stored?: boolean | undefined;
}

/**
 * Waiting while someone else holds the lock (docs/decisions/055): attempts again with
 * exponential backoff and jitter (a quarter second at first, at most 4 s apart) until the
 * lock is taken, the time is up, or `signal` aborts.
 */
export interface LockWait {
  /**
   * How long to keep trying (ms). 0: one attempt. Past it, the last `STATE_LOCKED` is thrown
   * again (holder in `details.lockInfo`), saying how long it waited.
   */
  readonly timeoutMs: number;
  /**
   * Ends the wait: the call rejects with the signal's reason. A lock request in flight
   * settles first; a lock it took is given back by {@link ObjectStoreBackend.withLock} and
   * every call that takes the lock itself, and returned by `lock` and `acquire` (check the
   * signal).
   */
  readonly signal?: AbortSignal | undefined;
  /** Called once, with the holder, when the first attempt found the lock held and waiting starts. */
  readonly onWait?: ((holder: LockInfo | undefined) => void) | undefined;
  /** How messages name the timeout (default `wait.timeoutMs`; the CLI passes `--lock-timeout`). */
  readonly setting?: string | undefined;
}

/** Options of {@link ObjectStoreBackend.lock} and {@link ObjectStoreBackend.acquire}. */
export interface LockOptions {
  /** What the holder is doing (default `objstate`). */
  readonly operation?: string | undefined;
  /** Free text stored with the lock. */
  readonly info?: string | undefined;
  /**
   * Take the lock under this ID instead of a new UUID (a server storing its client's lock
   * info). Taking it again while it is held under the same ID succeeds and returns the stored
   * info, so a client's retried LOCK is not refused by its own first attempt.
   */
  readonly id?: string | undefined;
  /** `Who` for this lock (default: the connection's). */
  readonly who?: string | undefined;
  /** `Version` for this lock (default: the connection's). */
  readonly version?: string | undefined;
  /** `Created` for this lock (UTC ISO time; default now). */
  readonly created?: string | undefined;
  /** Lease of this lock in ms (at least 1 s); default: the connection's `ttl` (none: never expires). */
  readonly ttl?: number | undefined;
  /**
   * The principal (a server's user) taking the lock, stored in the lock as `Owner`: a
   * release or write that names an owner ({@link UnlockOptions.owner}, {@link WriteOptions.owner})
   * must then name this one. Taking the lock again under its ID is a retry only for the same owner.
   */
  readonly owner?: string | undefined;
  /** Wait while someone else holds the lock (default: `STATE_LOCKED` at once). */
  readonly wait?: LockWait | undefined;
}

/** Options of {@link ObjectStoreBackend.withLock}: the caller's lock, or how to take one. */
export interface WithLockOptions extends LockOptions {
  /**
   * The ID of a lock the caller holds: the work runs under it and it stays held (each write
   * checks it right before writing). Without it the lock is taken for the work (waiting as
   * `wait` says) and released after it.
   */
  readonly lockId?: string | undefined;
}

/** The lock a {@link ObjectStoreBackend.withLock} work runs under. */
export interface LockScope {
  /** The lock's ID (pass it as `lockId`): the caller's, or the one taken; undefined when locking is off. */
  readonly id: string | undefined;
  /** The lock info stored when the lock was taken for this work; undefined for the caller's own lock. */
  readonly taken: LockInfo | undefined;
  /** For a lock taken here: fires with `LOCK_LOST` when its lease is lost. */
  readonly signal: AbortSignal | undefined;
}

/** How a call that needs the lock gets it: the caller's (`lockId`), or one it takes itself. */
export interface UnderLockOptions {
  /** The ID of the lock the caller holds; without one the call takes the lock itself (and releases it). */
  readonly lockId?: string | undefined;
  /** Without `lockId`: wait while someone else holds the lock (default: `STATE_LOCKED` at once). */
  readonly wait?: LockWait | undefined;
}

/** Options of {@link ObjectStoreBackend.unlock}. */
export interface UnlockOptions {
  /**
   * Release the lock only when it belongs to this owner (its `Owner`): `LOCK_NOT_OWNED`
   * otherwise, and a lock without an owner (taken by the CLI or the library) belongs to no
   * one. Checked on the read the release makes anyway. Undefined: no check.
   */
  readonly owner?: string | undefined;
  /**
   * The principal of a force-unlock that named no lock ID (the tool's, through a server):
   * recorded with the release (see {@link ObjectStoreBackend.recentReleases}).
   */
  readonly forcedBy?: string | undefined;
}

/** Options of {@link ObjectStoreBackend.writeState}. */
export interface WriteOptions extends UnderLockOptions {
  /**
   * Store the bytes as they are, even with `encryption` configured: an envelope a client
   * encrypted itself (pass-through). The guard reads its clear `serial` and `lineage`.
   */
  readonly stored?: boolean | undefined;
  /** Reports bytes sent so far (for progress bars; per part for multipart uploads). */
  readonly onProgress?: ((sent: number, total: number) => void) | undefined;
  /**
   * Write even when the lineage guard refuses (another lineage, a lower serial, the same
   * serial with other content). Fencing still applies: the lock and the stored version
   * must still be what the writer saw.
   */
  readonly force?: boolean | undefined;
  /**
   * The ETag of the stored state the caller last read (from {@link ObjectStoreBackend.readStateVersion}),
   * or null when it read "no state": the write is then conditional on that, instead of on
   * what the write itself sees just before writing.
   */
  readonly ifMatch?: string | null | undefined;
  /**
   * Called the moment the state object is stored (before the write commits), so a caller
   * that is interrupted can tell the truth about what was written. The commit waits for
   * what it returns.
   */
  readonly onStored?: (() => void | Promise<void>) | undefined;
  /**
   * Hex MD5 of the state, when the caller already hashed it (while checking a large file):
   * saves a pass over a `ByteSource`. The store refuses the write when the bytes do
   * not hash to it.
   */
  readonly md5?: string | undefined;
  /** Recorded as the write's `Operation` instead of the lock's (a rollback records `rollback`). */
  readonly operation?: string | undefined;
  /** The version whose content this write restores (recorded as `objstate-source-version`). */
  readonly sourceVersion?: string | undefined;
  /**
   * Who the write is made for (a server's authenticated user): recorded with the version
   * (`objstate-principal`, `objstate-principal-via`), beside the `Who` its client claimed,
   * and as the `Owner` of a lock the write takes itself.
   */
  readonly principal?: Principal | undefined;
  /**
   * Write under `lockId` only when that lock belongs to this owner (its `Owner`, see
   * {@link LockOptions.owner}): `LOCK_NOT_OWNED` otherwise, nothing written. Checked on the
   * fencing read every write under a lock makes anyway. Undefined: no check.
   */
  readonly owner?: string | undefined;
}

/** Options of {@link ObjectStoreBackend.rollback}. */
export interface BackendRollbackOptions extends RollbackOptions, UnderLockOptions {
  /** Recorded with the version the rollback writes (see {@link WriteOptions.principal}). */
  readonly principal?: Principal | undefined;
  /** Roll back under `lockId` only when that lock belongs to this owner (see {@link WriteOptions.owner}). */
  readonly owner?: string | undefined;
  /** Free text of the lock the rollback takes itself (its `Info`). */
  readonly info?: string | undefined;
  /**
   * The version the caller saw as current when it decided (a diff it showed), null for
   * none: checked under the lock, and a rollback over anything else is `STATE_CONFLICT`,
   * nothing written.
   */
  readonly expectCurrent?: string | null | undefined;
}

/** Options of {@link ObjectStoreBackend.repairState}. */
export interface RepairOptions extends UnderLockOptions {
  /** Record the digest of whatever is stored, even when it does not prove a complete objstate write. */
  readonly force?: boolean | undefined;
  /** Remove leftovers at least this old (default one hour). */
  readonly leftoverMinAgeMs?: number | undefined;
  /** Time source for leftover ages (default `Date.now`). */
  readonly now?: (() => number) | undefined;
}

/** Options of {@link ObjectStoreBackend.createWorkspace}. */
export interface CreateWorkspaceOptions extends UnderLockOptions {
  /** See {@link WriteOptions.onStored}. */
  readonly onStored?: (() => void | Promise<void>) | undefined;
  /** Recorded with the empty state written (see {@link WriteOptions.principal}). */
  readonly principal?: Principal | undefined;
}

/** Options of {@link ObjectStoreBackend.deleteWorkspace}. */
export interface DeleteWorkspaceOptions extends UnderLockOptions {
  /**
   * Refuse a workspace without a state (`WORKSPACE_NOT_FOUND`), checked under the lock right
   * before the delete. Default false: deleting what is gone succeeds, so a retried delete
   * (its reply lost) does too.
   */
  readonly mustExist?: boolean | undefined;
}

/** Options of {@link ObjectStoreBackend.diff}: the two sides, by version ID. */
export interface DiffOptions {
  /**
   * The older side: a version ID, or null for "no state". Default: the newest version with
   * content before `to`, or "no state" when there is none.
   */
  readonly from?: string | null | undefined;
  /** The newer side: a version ID, or null for "no state". Default: the current version ("no state" when deleted). */
  readonly to?: string | null | undefined;
  /** How the two states are compared (default: `diffStates`, on this thread); `serve` passes its worker's (docs/decisions/007). */
  readonly compare?: ((from: Buffer | null, to: Buffer | null) => Promise<StateDiff>) | undefined;
}
