/** The runtime backend (docs/design.md §5, decision 058): a façade whose calls are each one line into the module that does it. */
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import type { Identity } from "../credentials/chain.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import type { ByteSource, Leftover, VersioningStatus } from "../store/types.js";
import { openConnection, type Connection, type ProbeVerdict } from "./connect.js";
import { BackendContext, defaultWarn } from "./context.js";
import { checkWorkspace, DEFAULT_WORKSPACE, workspacesPrefix } from "../config/layout.js";
import { AuditLog, type AuditLogOptions } from "./audit.js";
import { currentVersionOf, diffVersions, readVersionChecked, rollbackState, stateHistory } from "./history.js";
import type { LockHandle } from "./locks/lease.js";
import type { LockInfo } from "./locks/lock-info.js";
import type { LockListing, LockOptions, LockScope, UnlockOptions, WithLockOptions } from "./locks/locking.js";
import { lockOwnerOf } from "./principal.js";
import { digestStatusOf, leftoversOf, readCommitted, repairUnderLock, streamState, type StreamResult } from "./read.js";
import type { ReleasedLock } from "./locks/lock-places.js";
import type {
  BackendRollbackOptions,
  ConnectOptions,
  CreateWorkspaceOptions,
  DeleteWorkspaceOptions,
  DiffOptions,
  DigestStatus,
  HistoryOptions,
  LastWrite,
  ReadOptions,
  RepairOptions,
  RepairReport,
  RollbackResult,
  StateRead,
  StateVersion,
  UnderLockOptions,
  VersionDiff,
  WorkspaceObject,
  WorkspaceStatus,
  WriteOptions,
  WriteResult,
} from "./types.js";
import type { StateSink, StreamOptions } from "../fast/streamed-read.js";
import * as workspaces from "./workspaces.js";
import { writeState } from "./write.js";
import { readDecrypted, rekeyUnderLock, type RekeyOptions, type RekeyResult } from "./crypt.js";
import { ObjstateError } from "../errors.js";

export { NO_LOCK_ID } from "./locks/lock-info.js";
export type * from "./types.js";
export type { StateSink, StreamOptions } from "../fast/streamed-read.js";
export type { StreamResult } from "./read.js";
export type { LockInfo } from "./locks/lock-info.js";
export type { Principal, PrincipalVia } from "./principal.js";
export * from "./audit.js";
export { LockHandle } from "./locks/lease.js";
export type { LockListing } from "./locks/locking.js";
export type { ReleasedLock } from "./locks/lock-places.js";
export type { ProbeVerdict } from "./connect.js";
export type { VersioningStatus } from "../store/types.js";
export type { RekeyOptions, RekeyResult } from "./crypt.js";

/**
 * A connected backend: reads, writes, locks and lists the state of every workspace.
 *
 * @example
 * const backend = await ObjectStoreBackend.connect(config);
 * await backend.withLock("default", { operation: "apply", wait: { timeoutMs: 60_000 } }, async (lock) => {
 *   await backend.writeState("default", json, { lockId: lock.id });
 * });
 */
export class ObjectStoreBackend {
  /** The effective settings, with provenance. */
  readonly settings: ResolvedBackendSettings;
  /** Where the identity came from (`static keys (explicit)` …), undefined for embedded stores. */
  readonly identitySource: string | undefined;
  /** The identity's details (assumed-role session ARN, first expiry), undefined for embedded stores. */
  readonly identity: Omit<Identity, "provider"> | undefined;
  /** The conformance probe's verdict on the store, when lockfiles are on (else undefined). */
  readonly conditions: ProbeVerdict | undefined;
  private readonly ctx: BackendContext;

  private constructor(conn: Connection, options: ConnectOptions, warn: (message: string, code: string) => void) {
    this.settings = conn.settings;
    const id = conn.identity;
    this.identitySource = id?.source;
    this.identity = id === undefined ? undefined : { source: id.source, assumedRoleArn: id.assumedRoleArn, expiration: id.expiration };
    this.conditions = conn.probe;
    this.ctx = new BackendContext(conn, options, warn);
  }

  /** Resolve the settings, open the store and, with `kvstoreTable`, the lock table (its key schema checked before any state is touched). */
  static async connect(config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig, options: ConnectOptions = {}): Promise<ObjectStoreBackend> {
    const warn = options.onWarning ?? defaultWarn;
    return new ObjectStoreBackend(await openConnection(config, options, warn), options, warn);
  }

  /** Is a lock table or a lockfile configured? Without either, locks are not stored. */
  get lockingEnabled(): boolean {
    return this.ctx.locking.enabled;
  }

  /** The lease (ms) of every lock this connection takes (ConnectOptions `ttl`); undefined: none. */
  get lockTtlMs(): number | undefined {
    return this.ctx.locking.ttlMs;
  }

  /** Object key of a workspace's state: `{prefix}/{w}/{key}`; the default workspace's `{prefix}/{key}` (layout `seed`) or `{key}` (`s3`). */
  statePath(workspace: string = DEFAULT_WORKSPACE): string {
    return this.ctx.statePath(workspace);
  }

  /** Where a workspace's state lives, for people: `bucket/path`. */
  describe(workspace: string = DEFAULT_WORKSPACE): string {
    return this.ctx.describe(workspace);
  }

  /** Every workspace with a state, sorted, `default` first (it always exists). */
  listWorkspaces(): Promise<string[]> {
    return workspaces.listWorkspaceNames(this.ctx);
  }

  /** Every workspace's state object from the listing alone (size, time, ETag; no request per workspace). */
  listWorkspaceObjects(): Promise<WorkspaceObject[]> {
    return workspaces.listWorkspaceObjects(this.ctx);
  }

  /** A workspace's lock and last write (one lock read and one HEAD). */
  workspaceStatus(workspace: string = DEFAULT_WORKSPACE): Promise<WorkspaceStatus> {
    return workspaces.workspaceStatusOf(this.ctx, workspace);
  }

  /** {@link workspaceStatus} of every workspace ({@link listWorkspaces}) that `include` keeps, in its order. */
  workspaceStatuses(include?: (workspace: string) => boolean): Promise<WorkspaceStatus[]> {
    return workspaces.workspaceStatuses(this.ctx, include);
  }

  /** Create a workspace with an empty state under its lock; `WORKSPACE_EXISTS` when it has a state (or is `default`). */
  createWorkspace(workspace: string, options: CreateWorkspaceOptions = {}): Promise<WriteResult> {
    return this.withLock(workspace, { ...lockOf(options), operation: "workspace new", owner: lockOwnerOf(options.principal) }, async (lock) => {
      await workspaces.refuseExisting(this.ctx, workspace);
      return this.writeState(workspace, workspaces.emptyState(), { lockId: lock.id, onStored: options.onStored, principal: options.principal });
    });
  }

  /** Delete a workspace's digest, then its state, under its lock; `default` cannot be deleted; `mustExist`: refuse one without a state. Its versions stay. */
  async deleteWorkspace(workspace: string, options: DeleteWorkspaceOptions = {}): Promise<void> {
    workspaces.checkDeletable(workspace);
    return this.withLock(workspace, { ...lockOf(options), operation: "deleteWorkspace" }, async (lock) => {
      await this.ctx.checkCallersLock(workspace, lock);
      if (options.mustExist === true) await workspaces.refuseMissing(this.ctx, workspace);
      await workspaces.deleteUnderLock(this.ctx, workspace);
    });
  }

  /** The last write as its object records it (a HEAD: size, ETag, time, serial, who …); null without a state. */
  lastWrite(workspace: string = DEFAULT_WORKSPACE): Promise<LastWrite | null> {
    return workspaces.lastWriteOf(this.ctx, workspace);
  }

  /** The workspace's state bytes, digest-checked (see read.ts), or null when it has none. */
  async readState(workspace: string = DEFAULT_WORKSPACE, options: ReadOptions = {}): Promise<Buffer | null> {
    return (await this.readStateVersion(workspace, options))?.body ?? null;
  }

  /** Like {@link readState}, with the ETag to pass as `ifMatch`; with `encryption`, the decrypted state and how it was read. */
  readStateVersion(workspace: string = DEFAULT_WORKSPACE, options: ReadOptions = {}): Promise<StateRead | null> {
    return options.stored === true ? readCommitted(this.ctx, workspace, options) : readDecrypted(this.ctx, workspace, options, false);
  }

  /** Read the state while passing it on to `sink`, its last bytes only once proven (read.ts); an encrypted state is never streamed. */
  async streamState(workspace: string, sink: StateSink, options: StreamOptions = {}): Promise<StreamResult> {
    if (this.encrypts) return { streamed: false, state: await readDecrypted(this.ctx, workspace, {}, true) };
    return streamState(this.ctx, workspace, sink, options);
  }

  /** Does the state configuration encrypt here (`encryption` given and a method for the target)? */
  get encrypts(): boolean {
    return this.ctx.encryption !== undefined;
  }

  /** Store the state: checked (`STATE_INVALID`), guarded (`STATE_CONFLICT` unless `force`), fenced and committed under the caller's lock or one taken (write.ts). */
  writeState(workspace: string, given: Uint8Array | string | ByteSource, options: WriteOptions = {}): Promise<WriteResult> {
    return writeState(this.ctx, workspace, given, options);
  }

  /** How the state stands against its digest, without retrying or repairing. */
  digestStatus(workspace: string = DEFAULT_WORKSPACE): Promise<DigestStatus> {
    return digestStatusOf(this.ctx, workspace);
  }

  /** Under the lock: commit or write over an unfinished write, drop an orphan digest, clear old leftovers (see read.ts). */
  repairState(workspace: string = DEFAULT_WORKSPACE, options: RepairOptions = {}): Promise<RepairReport> {
    return this.withLock(workspace, { ...lockOf(options), operation: "state repair" }, async (lock) => {
      await this.ctx.checkCallersLock(workspace, lock);
      return repairUnderLock(this.ctx, workspace, lock.id, options);
    });
  }

  /** Leftovers of writers (incomplete multipart uploads, temp files) under the prefix, oldest first. */
  leftovers(): Promise<Leftover[]> {
    return leftoversOf(this.ctx);
  }

  /** Take the lock (`wait`: while someone holds it); `STATE_LOCKED` names the holder. Keep the returned `ID`. */
  lock(workspace: string = DEFAULT_WORKSPACE, options: LockOptions = {}): Promise<LockInfo> {
    return this.ctx.lock(workspace, options);
  }

  /** Take the lock and hold it: the handle renews a lease (`ttl`) and its `signal` fires on `LOCK_LOST`. */
  acquire(workspace: string = DEFAULT_WORKSPACE, options: LockOptions = {}): Promise<LockHandle> {
    return this.ctx.acquire(workspace, options);
  }

  /** Run `work` under the caller's lock (`lockId`), else under one taken for it and released after (see `Locking.withLock`). */
  withLock<T>(workspace: string, options: WithLockOptions, work: (lock: LockScope) => Promise<T>): Promise<T> {
    return this.ctx.withLock(workspace, options, work);
  }

  /** Extend the lease of lock `id`; `LOCK_LOST` when it expired and was taken over or released. */
  renewLock(workspace: string, id: string): Promise<LockInfo> {
    return this.ctx.locking.renew(workspace, id);
  }

  /** The current lock's info, or null when the workspace is not locked (or locking is off). */
  lockInfo(workspace: string = DEFAULT_WORKSPACE): Promise<LockInfo | null> {
    return this.ctx.locking.info(workspace);
  }

  /** Every lock in the table and every lockfile under the prefix. */
  locks(): Promise<LockListing[]> {
    return this.ctx.locking.list();
  }

  /** The workspace's lock as {@link locks} lists it (one read), or null when it is not locked (or locking is off). */
  currentLock(workspace: string = DEFAULT_WORKSPACE): Promise<LockListing | null> {
    return this.ctx.locking.current(workspace);
  }

  /** A lock this process took (the info {@link lock} returned) as {@link locks} lists it, without a request. */
  listedLock(workspace: string, info: LockInfo): LockListing {
    return this.ctx.locking.listed(workspace, info);
  }

  /** Release lock `id`, yours or another's by its ID (decision 059); `NO_LOCK_ID` clears an item without readable info. Recorded for an hour (decision 013). */
  unlock(workspace: string, id: string, options: UnlockOptions = {}): Promise<void> {
    return this.ctx.locking.unlock(workspace, id, { owner: options.owner, forcedBy: options.forcedBy });
  }

  /** The workspace's recent releases by ID, oldest first (the last 64, for an hour). */
  recentReleases(workspace: string = DEFAULT_WORKSPACE): Promise<ReleasedLock[]> {
    return this.ctx.locking.recent(workspace);
  }

  /** The versions of the state, newest first (delete markers included); `VERSIONING_OFF` without bucket versioning. */
  history(workspace: string = DEFAULT_WORKSPACE, options: HistoryOptions = {}): AsyncGenerator<StateVersion> {
    return stateHistory(this.ctx, workspace, options);
  }

  /** One version's exact bytes (`VERSION_NOT_FOUND`); the digest is checked when it is the current one. */
  readVersion(workspace: string, versionId: string, options: { readonly stored?: boolean } = {}): Promise<Buffer> {
    return readVersionChecked(this.ctx, workspace, versionId, options.stored);
  }

  /** Write the current state again under the primary method, as a new version with serial + 1, under the lock. */
  async rekey(workspace: string = DEFAULT_WORKSPACE, options: RekeyOptions = {}): Promise<RekeyResult> {
    const enc = this.ctx.encryption;
    if (enc === undefined) {
      throw new ObjstateError(
        "ENCRYPTION_CONFIG_INVALID",
        "rekey needs an encryption configuration with a state method (the `encryption` setting, or TF_ENCRYPTION): nothing to rewrite the state under",
      );
    }
    return this.withLock(workspace, { ...lockOf(options), operation: "state rekey", owner: lockOwnerOf(options.principal) }, (lock) =>
      rekeyUnderLock(this.ctx, enc, workspace, (body, ifMatch) =>
        this.writeState(workspace, body, { lockId: lock.id, ifMatch, operation: "rekey", principal: options.principal }),
      ),
    );
  }

  /** The fencing check alone: lock `id` holds `workspace` (and is `owner`'s, when given); for costly work before a write under it. */
  async checkLock(workspace: string, id: string, owner?: string): Promise<void> {
    if (this.lockingEnabled) await this.ctx.locking.assertHolder(workspace, id, owner);
  }

  /** The current version's ID, or null when the workspace has none (never written, or deleted). */
  currentVersion(workspace: string = DEFAULT_WORKSPACE): Promise<string | null> {
    return currentVersionOf(this.ctx, workspace);
  }

  /** What changed between two versions; by default the one before the current against the current. */
  diff(workspace: string = DEFAULT_WORKSPACE, sides: DiffOptions = {}): Promise<VersionDiff> {
    return diffVersions(this.ctx, workspace, sides);
  }

  /** What a rollback to `versionId` would change; pass its `from` as the rollback's `expectCurrent`, so a write made meanwhile refuses it. */
  async previewRollback(workspace: string, versionId: string): Promise<VersionDiff> {
    return diffVersions(this.ctx, workspace, { from: await currentVersionOf(this.ctx, workspace), to: versionId });
  }

  /** Write version `versionId`'s content as a new version (serial above the current one's), under the lock; another lineage needs `force`. */
  async rollback(workspace: string, versionId: string, options: BackendRollbackOptions = {}): Promise<RollbackResult> {
    checkWorkspace(workspace);
    const { principal } = options;
    return this.withLock(workspace, { ...lockOf(options), operation: "rollback", info: options.info, owner: lockOwnerOf(principal) }, (lock) => {
      const owner = lock.taken === undefined ? options.owner : undefined;
      return rollbackState(this.ctx, workspace, versionId, (body, w) => this.writeState(workspace, body, { lockId: lock.id, owner, principal, ...w }), options);
    });
  }

  /** The audit log of this bucket and layout (docs/decisions/076); `INVALID_LAYOUT` when the default workspace's key would lie under it. */
  auditLog(options: AuditLogOptions = {}): AuditLog {
    return new AuditLog(this.ctx.store, this.ctx.layout, options);
  }

  /** Does the bucket keep versions: `enabled` (the embedded store always), `suspended` or `off`. */
  versioning(): Promise<VersioningStatus> {
    return this.ctx.store.versioning();
  }

  /** Are the store and the lock table reachable? One listing request and one table read. */
  async probe(): Promise<void> {
    // A listing proves the bucket answers without reading any state.
    const keys = this.ctx.store.list(workspacesPrefix(this.ctx.layout), { pageSize: 1 })[Symbol.asyncIterator]();
    const listed = (await keys.next()).done !== true;
    await keys.return?.();
    // The embedded store lists a missing bucket directory as an empty one (S3 refuses the listing).
    const store = this.ctx.store;
    if (!listed && store.kind === "file" && !(await store.bucketExists()))
      throw new ObjstateError(
        "BUCKET_NOT_FOUND",
        `the bucket directory of ${store.location} is missing (moved or deleted): restore it, or create an empty one with objstate init --create-bucket`,
      );
    if (this.ctx.table !== undefined) await this.ctx.table.get(this.ctx.lockId(DEFAULT_WORKSPACE), "Info");
  }

  /** Create the embedded store's bucket directory when absent, as its first write would (an S3 bucket is the operator's). */
  async prepareBucket(): Promise<void> {
    if (this.ctx.store.kind === "file" && !this.ctx.readOnly) await this.ctx.store.createBucket();
  }

  /** Release sockets and handles. */
  close(): void {
    this.ctx.close();
  }

  /** What `JSON.stringify(backend)` shows, never the drivers: where the state lives, locking, identity source and settings, secrets redacted. */
  toJSON(): Record<string, unknown> {
    return { state: this.describe(), locking: this.lockingEnabled, identitySource: this.identitySource, settings: this.settings };
  }

  /** `ObjectStoreBackend {…}` as {@link toJSON}, secrets redacted. */
  toString(): string {
    return `ObjectStoreBackend ${JSON.stringify(this.toJSON())}`;
  }

  /** `util.inspect` shows {@link toJSON}, never the drivers. */
  [Symbol.for("nodejs.util.inspect.custom")](_depth: number, options: object, show: (v: unknown, o: object) => string): string {
    return `ObjectStoreBackend ${show(this.toJSON(), options)}`;
  }
}

/** The lock part of a call's options. */
function lockOf(options: UnderLockOptions): UnderLockOptions {
  return { lockId: options.lockId, wait: options.wait };
}
