/** The options and results of {@link ObjectStoreBackend}'s calls: one vocabulary for the façade, the modules below it and what renders them. */
import type { EncryptionConfig, EncryptionTarget } from "../encryption/index.js";
import type { Env } from "../resolve/settings.js";
import type { S3DriverOptions } from "../store/s3.js";
import type { Clock } from "../credentials/refresh.js";
import type { Timeouts } from "../io/sdk-client.js";
import type { LayoutName } from "../config/layout.js";
import type { Leftover } from "../store/types.js";
import type { LockListing } from "./locks/locking.js";
import type { LockWait } from "./locks/waiting.js";
import type { Principal } from "./principal.js";
import type { StateDiff } from "../state/diff.js";

export type { LockOptions, LockScope, UnlockOptions, WithLockOptions } from "./locks/locking.js";
export type { LockWait } from "./locks/waiting.js";

/** How a call that needs the lock gets it: the caller's (`lockId`), or one it takes itself (and releases). */
export interface UnderLockOptions {
  /** The ID of the lock the caller holds; each write checks it right before writing. */
  readonly lockId?: string | undefined;
  /** Without `lockId`: wait while someone else holds the lock (default: `STATE_LOCKED` at once). */
  readonly wait?: LockWait | undefined;
}

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
  /** Deadlines of requests to the store, the lock table and STS (defaults: connect 5 s, idle 20 s, request 60 s); then `ENDPOINT_TIMEOUT`. */
  readonly timeouts?: Partial<Timeouts> | undefined;
  /** Receives warnings (default: `process.emitWarning`, each kind once per process). */
  readonly onWarning?: ((message: string, code: string) => void) | undefined;
  /** Connect only to read: nothing is created (an absent embedded lock table is read around). */
  readonly readOnly?: boolean | undefined;
  /** Time source for refreshing temporary credentials before they expire (default `Date.now`). */
  readonly clock?: Clock | undefined;
  /** Lease (ms, at least 1 s) of every lock this connection takes, renewed by a `LockHandle`; default none (never expire). */
  readonly ttl?: number | undefined;
  /** Lock with a lockfile `{statePath}.tflock` (the tool's S3 layout; with a lock table, both); conditional writes are probed first. */
  readonly lockfile?: boolean | undefined;
  /** Where the default workspace's state lives: `seed` (default) at `{prefix}/{key}`, `s3` at `{key}` (docs/design.md §5). */
  readonly layout?: LayoutName | undefined;
  /** How far apart the clocks of lock holders may be (default 1 s; see docs/design.md §10). */
  readonly lockClockMarginMs?: number | undefined;
  /** Time source for leases (default `Date.now`). */
  readonly lockClock?: (() => number) | undefined;
  /** Told of every repair a read or write makes on its own (default: `onWarning`, code `OBJSTATE_STATE_REPAIRED`). */
  readonly onRepair?: ((event: RepairEvent) => void) | undefined;
  /** State encryption in OpenTofu's format: envelopes written under the primary method, read with it or a fallback. */
  readonly encryption?: EncryptionConfig | undefined;
  /** Whose methods of `encryption` apply: `state` (default), or a remote state data source by name. */
  readonly encryptionTarget?: EncryptionTarget | undefined;
}

/** Options of {@link ObjectStoreBackend.readState}. */
export interface ReadOptions {
  /** Sees the state as it arrives (unchecked until the read returns; a retry starts over); to pass it on, use `streamState`. */
  readonly onData?: ((body: Buffer, filled: number) => void) | undefined;
  /** The bytes as stored: an envelope is not decrypted (`state pull --raw-envelope`, a server passing envelopes through). */
  readonly stored?: boolean | undefined;
}

/** Options of {@link ObjectStoreBackend.writeState}. */
export interface WriteOptions extends UnderLockOptions {
  /** Store the bytes as they are, even with `encryption` configured (an envelope a client made). */
  readonly stored?: boolean | undefined;
  /** Reports bytes sent so far (for progress bars; per part for multipart uploads). */
  readonly onProgress?: ((sent: number, total: number) => void) | undefined;
  /** Write even when the lineage guard refuses. Fencing still applies. */
  readonly force?: boolean | undefined;
  /** The ETag the caller last read (null: "no state"): the write is conditional on it instead of on what it sees itself. */
  readonly ifMatch?: string | null | undefined;
  /** Called the moment the state object is stored (before the commit, which waits for it). */
  readonly onStored?: (() => void | Promise<void>) | undefined;
  /** Hex MD5 of the state, when the caller already hashed it; the store refuses bytes that do not hash to it. */
  readonly md5?: string | undefined;
  /** Recorded as the write's `Operation` instead of the lock's (a rollback records `rollback`). */
  readonly operation?: string | undefined;
  /** The version whose content this write restores (recorded as `objstate-source-version`). */
  readonly sourceVersion?: string | undefined;
  /** Who the write is made for (a server's user): recorded with the version, and the `Owner` of a lock the write takes. */
  readonly principal?: Principal | undefined;
  /** Write under `lockId` only when that lock's `Owner` is this (`LOCK_NOT_OWNED` otherwise). */
  readonly owner?: string | undefined;
}

/** Options of {@link ObjectStoreBackend.rollback}: `principal` and `owner` as a write's. */
export interface BackendRollbackOptions extends UnderLockOptions, Pick<WriteOptions, "principal" | "owner"> {
  /** Roll back to a version of another lineage than the current state's. */
  readonly force?: boolean | undefined;
  /** Free text of the lock the rollback takes itself (its `Info`). */
  readonly info?: string | undefined;
  /** The version the caller saw as current (null: none): a rollback over anything else is `STATE_CONFLICT`. */
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

/** Options of {@link ObjectStoreBackend.createWorkspace}: those of the empty state's write. */
export interface CreateWorkspaceOptions extends UnderLockOptions, Pick<WriteOptions, "onStored" | "principal"> {}

/** Options of {@link ObjectStoreBackend.deleteWorkspace}. */
export interface DeleteWorkspaceOptions extends UnderLockOptions {
  /** Refuse a workspace without a state (`WORKSPACE_NOT_FOUND`); by default a retried delete succeeds. */
  readonly mustExist?: boolean | undefined;
}

/** Options of {@link ObjectStoreBackend.diff}: the two sides, by version ID (null: "no state"). */
export interface DiffOptions {
  /** The older side; default: the newest version with content before `to`. */
  readonly from?: string | null | undefined;
  /** The newer side; default: the current version. */
  readonly to?: string | null | undefined;
  /** How the two states are compared (default: `diffStates` on this thread; `serve` passes its worker's, decision 007). */
  readonly compare?: ((from: Buffer | null, to: Buffer | null) => Promise<StateDiff>) | undefined;
}

/** A repair made without being asked (`ConnectOptions.onRepair`): a torn write `adopted`, or the committed state `restored` over a late write. */
export interface RepairEvent {
  readonly workspace: string;
  readonly action: "adopted" | "restored";
  /** Hex MD5 of the state that is committed now, and the digest item's generation. */
  readonly md5: string;
  readonly generation: number;
  /** The serial of the write adopted, or of the committed state restored, when recorded. */
  readonly serial: number | undefined;
  /** The lock the adopted write was made under, or the lock of the write restored over. */
  readonly lockId: string | undefined;
  /** One line for the operator. */
  readonly message: string;
}

/** What {@link ObjectStoreBackend.repairState} found and did. */
export interface RepairReport {
  readonly action: "ok" | "recorded-digest" | "restored-committed" | "removed-orphan-digest" | "no-state" | "no-lock-table";
  readonly md5?: string | undefined;
  /** The digest recorded before, when it changed. */
  readonly previous?: string | undefined;
  readonly leftoversRemoved: readonly Leftover[];
  readonly leftoversKept: readonly Leftover[];
}

/** What {@link ObjectStoreBackend.digestStatus} found. */
export type DigestStatus =
  | { readonly status: "no-state" }
  | { readonly status: "no-digest"; readonly size: number }
  | { readonly status: "match"; readonly recorded: string; readonly size: number }
  | { readonly status: "torn" | "superseded" | "mismatch"; readonly recorded: string; readonly actual: string | undefined; readonly size?: number };

/** What {@link ObjectStoreBackend.writeState} did. */
export interface WriteResult {
  /** False when the same content was already stored (nothing was written). */
  readonly written: boolean;
  /** Hex MD5 of the state, as recorded in the digest. */
  readonly md5: string;
  /** The state's top-level `serial`, when it has one. */
  readonly serial?: number | undefined;
}

/** A stored state as {@link ObjectStoreBackend.readStateVersion} read it. */
export interface StateRead {
  readonly body: Buffer;
  /** The stored object's ETag: pass it as `ifMatch` to make a write conditional on this read. */
  readonly etag: string | undefined;
  /** Hex MD5 of `body` when the read proved it (it matched the recorded digest). */
  readonly md5: string | undefined;
  /** How an encrypted state was read (with `encryption` configured). */
  readonly encryption?: StateReadEncryption | undefined;
}

/** How a state was decrypted. */
export interface StateReadEncryption {
  /** The stored bytes were an envelope (false: a plain state, read through `unencrypted`). */
  readonly encrypted: boolean;
  /** The method that read it (`method.TYPE.NAME`). */
  readonly method: string;
  /** Read by a fallback (or plain while the primary encrypts): `state rekey` writes it under the primary method. */
  readonly migration: boolean;
}

/** One workspace's state object as a listing describes it (`lastModified`: UTC ISO, when the store reports it). */
export interface WorkspaceObject {
  readonly workspace: string;
  readonly size: number;
  readonly lastModified: string | undefined;
  readonly etag: string | undefined;
}

/** What a write recorded of itself in its object's metadata (see `recordOf` in meta.ts). */
export interface WriteRecord {
  readonly serial: number | undefined;
  readonly lineage: string | undefined;
  /** `Who` of the lock the write was made under (or the writer's user@host), as its client said. */
  readonly who: string | undefined;
  readonly lockId: string | undefined;
  /** The lock's `Operation` (`rollback` for a rollback). */
  readonly operation: string | undefined;
  /** The server user the write was made for, when it went through `objstate serve`. */
  readonly principal: Principal | undefined;
}

/** What {@link ObjectStoreBackend.lastWrite} reports. */
export interface LastWrite extends WriteRecord {
  readonly size: number;
  readonly etag: string | undefined;
  readonly lastModified: string | undefined;
}

/** What {@link ObjectStoreBackend.diff} compared (version IDs; null: "no state"), and what changed. */
export interface VersionDiff {
  readonly from: string | null;
  readonly to: string | null;
  readonly diff: StateDiff;
}

/** A workspace as {@link ObjectStoreBackend.workspaceStatus} reports it: its lock (null: unlocked) and its last write (null: no state). */
export interface WorkspaceStatus {
  readonly name: string;
  readonly lock: LockListing | null;
  readonly lastWrite: LastWrite | null;
}

/** One version of a workspace's state, newest first in {@link ObjectStoreBackend.history} (`serial` and `lineage` read from its bytes when unrecorded). */
export interface StateVersion extends WriteRecord {
  /** The store's version ID: give it to `readVersion`, `state pull --version`, `rollback`. */
  readonly versionId: string;
  /** The current version (a delete marker when the workspace is deleted). */
  readonly isLatest: boolean;
  /** The workspace was deleted here: no bytes. */
  readonly deleteMarker: boolean;
  readonly lastModified: Date | undefined;
  readonly size: number;
  /** `objstate` when objstate wrote this version (it recorded its metadata), else `other`. */
  readonly writer: "objstate" | "other" | undefined;
  /** For a rollback: the version whose content it restored. */
  readonly sourceVersion: string | undefined;
}

export interface HistoryOptions {
  /** Stop after this many versions (delete markers count); pages no further than needed. */
  readonly limit?: number | undefined;
}

export interface RollbackResult {
  readonly from: string;
  /** The serial the restored content now carries. */
  readonly serial: number;
  readonly lineage: string | undefined;
  /** The serial of the state it replaced (undefined when the workspace was deleted). */
  readonly previousSerial: number | undefined;
  /** The workspace had no current state (deleted): the rollback restored it. */
  readonly restored: boolean;
  readonly md5: string;
}
