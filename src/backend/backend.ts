/**
 * The runtime backend (docs/design.md §5): state objects in a bucket, locks and digests in a
 * key-value table. The state manager; drivers below it move bytes and items.
 */
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { isObjstateError, ObjstateError } from "../errors.js";
import { openLockTable } from "../lock/index.js";
import type { DigestItem, KeyAttribute, LockTableDriver } from "../lock/types.js";
import type { Env, ResolvedBackendSettings } from "../resolve/settings.js";
import { parseEndpoint } from "../io/endpoint.js";
import { openStore } from "../store/index.js";
import type { S3DriverOptions } from "../store/s3.js";
import { isByteSource, md5OfSource, prefixOf, sizeOf } from "../store/byte-source.js";
import type { Acl, ByteSource, ObjectStoreDriver, VersioningStatus } from "../store/types.js";
import { resolveIdentity, type Identity } from "../credentials/chain.js";
import { resolveEffectiveSettings } from "../credentials/index.js";
import type { Clock } from "../credentials/refresh.js";
import { md5Hex, md5Of, PARALLEL_MD5_MIN } from "../util/md5.js";
import { objstateVersion } from "../version.js";
import { checkWorkspace, DEFAULT_WORKSPACE, layout, layoutNameOf, listPrefixes, statePath, workspaceOfKey, workspacesPrefix, type Layout, type LayoutName } from "../config/layout.js";
import { defaultWho, type LockInfo } from "./lock-info.js";
import type { Principal } from "./principal.js";
import { checkTtl, DEFAULT_CLOCK_MARGIN_MS, type LockHandle } from "./lease.js";
import { LOCKFILE_SUFFIX, LockfileLock, TableLock, type LockPlace } from "./lock-places.js";
import { Locking, type LockListing, type TakeOptions } from "./locking.js";
import type { ReleasedLock } from "./released.js";
import { probeConditions, requireLockfileSupport, type ProbeVerdict } from "./probe.js";
import { scanHeader, stateHeader, type StateHeader } from "./state-header.js";
import { principalOf, readStateVersionById, rollbackState, stateHistory, type HistoryOptions, type RollbackOptions, type RollbackResult, type StateVersion, type VersionedState } from "./history.js";
import { committedMissing, conflict, decodeMeta, encodeMeta, guardRefusal, META, normalizeDigest, plainMd5, provenComplete, recordedMd5, tornWrite, uncommittedUnderLock, workspaceFlag, writeMetadata } from "./fencing.js";
import { generationOf, intentMetadata, judge } from "./commit.js";

export { META, NO_LOCK_ID, normalizeDigest } from "./fencing.js";
export type { HistoryEntryJson, HistoryOptions, RollbackOptions, RollbackResult, StateVersion } from "./history.js";
import type { GetResult, ObjectMeta, Leftover } from "../store/types.js";

export type { LockInfo } from "./lock-info.js";
export type { Principal, PrincipalVia } from "./principal.js";
export { LockHandle } from "./lease.js";
export type { LockListing } from "./locking.js";
export type { ReleasedLock } from "./released.js";
export type { ProbeVerdict } from "./probe.js";
export type { VersioningStatus } from "../store/types.js";
export type { LayoutName } from "../config/layout.js";

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
  readonly timeouts?: Partial<import("../io/sdk-client.js").Timeouts> | undefined;
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
   * otherwise: the lock expires unless renewed (a {@link LockHandle} renews it every third
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
}

/**
 * A repair made by a read or a write without being asked ({@link ConnectOptions.onRepair}):
 * - `adopted`: the stored state was a complete write whose commit never happened (its writer
 *   stopped between storing and committing) and nothing was committed since: it was committed;
 * - `restored`: the newest version was a write that never committed (another write was
 *   committed after it started): the committed state was written again as the newest version.
 */
export interface RepairEvent {
  readonly workspace: string;
  readonly action: "adopted" | "restored";
  /** Hex MD5 of the state that is committed now. */
  readonly md5: string;
  /** The digest item's generation now. */
  readonly generation: number;
  /** The serial of the write adopted, or of the committed state restored, when recorded. */
  readonly serial: number | undefined;
  /** The lock the adopted write was made under, or the lock of the write restored over. */
  readonly lockId: string | undefined;
  /** One line for the operator. */
  readonly message: string;
}

/** Options of {@link ObjectStoreBackend.readState}. */
export interface ReadOptions {
  /**
   * Sees the state as it arrives (`body` the buffer being filled, `filled` bytes in it),
   * to work during the transfer. A digest retry starts over with a new buffer. Not every
   * driver calls it. The bytes are unchecked until the read returns (they may still fail
   * the digest): act on them only in ways that can be taken back.
   */
  readonly onData?: ((body: Buffer, filled: number) => void) | undefined;
  /**
   * `onData` hands the bytes to a worker thread that reads them while they arrive: a large
   * state is then read into shared memory where the store's driver can (S3), so the worker
   * needs no copy. Not for long-running readers of many large states: V8 does not count
   * shared memory towards the pressure that triggers a collection.
   */
  readonly sharedBody?: boolean | undefined;
  /**
   * Called at most once per attempt, before the bytes are checked (usually before most of
   * them arrive), when the digest recorded for the state and the store's own MD5 record of
   * the object agree on this MD5: the bytes will very likely match it. A reader that passes
   * the bytes on while they arrive (the server's GET) announces it as their MD5. Not called
   * when they disagree (a store behind a recent write, a state changed outside objstate):
   * the read then retries as usual before anything is declared.
   */
  readonly onVouched?: ((md5: string) => void) | undefined;
  /**
   * Called when an attempt's bytes did not match the recorded digest, before the read looks
   * again (or fails): whoever passed those bytes on must take them back at once.
   */
  readonly onMismatch?: (() => void) | undefined;
}

/** Options of {@link ObjectStoreBackend.writeState}. */
export interface WriteOptions {
  /** The ID of the lock the caller holds; without one the write takes the lock itself. */
  readonly lockId?: string | undefined;
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
   * saves a pass over a {@link ByteSource}. The store refuses the write when the bytes do
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
export interface BackendRollbackOptions extends RollbackOptions {
  /** The ID of the lock the caller holds; without one the rollback takes the lock itself. */
  readonly lockId?: string | undefined;
  /** Recorded with the version the rollback writes (see {@link WriteOptions.principal}). */
  readonly principal?: Principal | undefined;
  /** Roll back under `lockId` only when that lock belongs to this owner (see {@link WriteOptions.owner}). */
  readonly owner?: string | undefined;
}

/** Options of {@link ObjectStoreBackend.lock}. */
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

const DIGEST_SUFFIX = "-md5";
const warned = new Set<string>();

function defaultWarn(message: string, code: string): void {
  if (warned.has(code)) return;
  warned.add(code);
  process.emitWarning(message, { type: "ObjstateWarning", code });
}

const md5 = md5Hex;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));


function toBuffer(data: Uint8Array | string): Buffer {
  if (typeof data === "string") return Buffer.from(data, "utf8");
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

function describeSchema(keys: readonly KeyAttribute[]): string {
  return keys.length === 0 ? "no key" : keys.map((k) => `${k.name} (${k.type}, ${k.keyType})`).join(", ");
}

/**
 * A connected backend: reads, writes, locks and lists the state of every workspace.
 *
 * @example
 * const backend = await ObjectStoreBackend.connect(config);
 * const lock = await backend.lock("default", { operation: "apply" });
 * try { await backend.writeState("default", json, { lockId: lock.ID }); }
 * finally { await backend.unlock("default", lock.ID); }
 */
export class ObjectStoreBackend {
  /** The effective settings, with provenance. */
  readonly settings: ResolvedBackendSettings;
  /** Where the identity came from (`static keys (explicit)` …), undefined for embedded stores. */
  readonly identitySource: string | undefined;
  /** The identity's details (assumed-role session ARN, first expiry), undefined for embedded stores. */
  readonly identity: Omit<Identity, "provider"> | undefined;
  private readonly store: ObjectStoreDriver;
  private readonly table: LockTableDriver | undefined;
  private readonly layout: Layout;
  private readonly bucket: string;
  private readonly who: string;
  private readonly version: string;
  private readonly digestRetry: { readonly timeoutMs: number; readonly intervalMs: number };
  private readonly listPageSize: number | undefined;
  private readonly locking: Locking;
  /** The lockfile probe's verdict, when lockfiles are on. */
  private readonly probeVerdict: ProbeVerdict | undefined;
  /** Connected only to read: reads repair nothing. */
  private readonly readOnly: boolean;
  private readonly reportRepair: (event: RepairEvent) => void;

  private constructor(init: {
    settings: ResolvedBackendSettings;
    store: ObjectStoreDriver;
    locks: LockTableDriver | undefined;
    identity: Identity | undefined;
    options: ConnectOptions;
    probe: ProbeVerdict | undefined;
  }) {
    const s = init.settings;
    this.settings = s;
    this.store = init.store;
    this.table = init.locks;
    this.identitySource = init.identity?.source;
    this.identity = init.identity === undefined ? undefined : { source: init.identity.source, assumedRoleArn: init.identity.assumedRoleArn, expiration: init.identity.expiration };
    this.layout = layout(s.prefix.value ?? "", s.key.value ?? "", init.store.kind, layoutNameOf(init.options.layout, "layout"));
    this.bucket = s.bucket.value as string;
    this.who = init.options.who ?? defaultWho();
    this.version = init.options.toolVersion ?? objstateVersion();
    this.digestRetry = init.options.digestRetry ?? { timeoutMs: 10_000, intervalMs: 2_000 };
    this.listPageSize = init.options.listPageSize;
    this.probeVerdict = init.probe;
    this.readOnly = init.options.readOnly === true;
    const warn = init.options.onWarning ?? defaultWarn;
    this.reportRepair = init.options.onRepair ?? ((e) => warn(e.message, "OBJSTATE_STATE_REPAIRED"));
    const places: LockPlace[] = [];
    if (init.options.lockfile === true) places.push(new LockfileLock(this.store, init.probe?.deleteIfMatch ?? true, init.options.lockClock ?? Date.now));
    if (this.table !== undefined) places.push(new TableLock(this.table));
    const l = this.layout;
    this.locking = new Locking({
      places,
      keyOf: (place, w) => (place.kind === "table" ? this.lockId(w) : `${this.statePath(w)}${LOCKFILE_SUFFIX}`),
      describe: (w) => this.describe(w),
      workspaceOf: (place, key) => {
        const p = place.kind === "table" ? (key.startsWith(`${this.bucket}/`) ? key.slice(this.bucket.length + 1) : undefined) : key.endsWith(LOCKFILE_SUFFIX) ? key.slice(0, -LOCKFILE_SUFFIX.length) : undefined;
        if (p === undefined) return null;
        return p === statePath(l, DEFAULT_WORKSPACE) ? DEFAULT_WORKSPACE : (workspaceOfKey(l, p) ?? null);
      },
      listPrefixes: listPrefixes(l),
      who: this.who,
      version: this.version,
      ttlMs: checkTtl(init.options.ttl, "the lock ttl"),
      marginMs: init.options.lockClockMarginMs ?? DEFAULT_CLOCK_MARGIN_MS,
      now: init.options.lockClock ?? Date.now,
    });
  }

  /**
   * Resolve the settings, open the object-store driver and, when `kvstoreTable` is set,
   * the lock table (checking its key schema before any state is touched).
   */
  static async connect(config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig, options: ConnectOptions = {}): Promise<ObjectStoreBackend> {
    const env = options.env ?? process.env;
    const warn = options.onWarning ?? defaultWarn;
    // Refused before anything is resolved or opened.
    const layoutName = layoutNameOf(options.layout, "the layout option (ConnectOptions.layout)");
    const settings = resolveEffectiveSettings(config, env, { onWarning: warn });
    const endpoint = settings.endpoint.value;
    if (endpoint === undefined) {
      throw new ObjstateError(
        "NO_ENDPOINT",
        "no object-store endpoint: set `endpoint` in the config, or PROVIDER_OBJECT_STORE_ENDPOINT (or OBJECT_STORE_ENDPOINT) in the environment — http(s)://host for an S3 API, file:./dir for the embedded store",
      );
    }
    const region = settings.region.value ?? "us-east-1";
    let identity: Identity | undefined;
    // The chain runs only when an HTTP endpoint needs it (embedded stores need no identity).
    const needIdentity = async (): Promise<Identity> => (identity ??= await resolveIdentity(settings, { env, clock: options.clock, cwd: options.cwd, timeouts: options.timeouts }));
    if (parseEndpoint(endpoint, options.cwd).kind === "http") await needIdentity();

    const store = await openStore({
      bucket: settings.bucket.value as string,
      endpoint,
      region,
      credentials: identity?.provider,
      multipartThreshold: options.multipartThreshold,
      cwd: options.cwd,
      timeouts: options.timeouts,
      ...options.s3,
    });
    let locks: LockTableDriver | undefined;
    let probe: ProbeVerdict | undefined;
    try {
      checkTtl(options.ttl, "the lock ttl (ttl)");
      // A read-only connection takes no lock, and writes nothing, not even a probe key.
      if (options.lockfile === true && options.readOnly !== true) {
        probe = await probeConditions(store, statePath(layout(settings.prefix.value ?? "", settings.key.value ?? "", undefined, layoutName), DEFAULT_WORKSPACE));
        requireLockfileSupport(probe, store.location);
      }
      const table = settings.kvstoreTable.value;
      if (table === undefined || table === "") {
        // With lockfiles the state is locked; there is just no table for digests.
        if (options.lockfile !== true) {
          warn(
            `no lock table is configured (kvstoreTable): state in bucket ${settings.bucket.value} is NOT locked, and concurrent writers can overwrite each other's changes. Set kvstoreTable and kvstoreEndpoint (or lockfile) to enable locking.`,
            "OBJSTATE_NO_LOCKING",
          );
        }
      } else {
        const kvEndpoint = settings.kvstoreEndpoint.value;
        if (kvEndpoint === undefined || kvEndpoint === "") {
          throw new ObjstateError(
            "NO_LOCK_ENDPOINT",
            `kvstoreTable "${table}" is set but kvstoreEndpoint is not: set kvstoreEndpoint to the lock table's endpoint (http(s)://host for the DynamoDB API, file:./dir for the embedded table)`,
          );
        }
        const http = parseEndpoint(kvEndpoint, options.cwd).kind === "http";
        locks = await openLockTable({ table, endpoint: kvEndpoint, region, credentials: http ? (await needIdentity()).provider : undefined, cwd: options.cwd, timeouts: options.timeouts });
        if (!(await checkLockTable(locks, table, options.readOnly === true))) {
          // Read-only, and the embedded table was never created: it holds no digests to check.
          locks.close();
          locks = undefined;
        }
      }
    } catch (e) {
      store.close();
      locks?.close();
      throw e;
    }
    return new ObjectStoreBackend({ settings, store, locks, identity, options, probe });
  }

  /** Is a lock table or a lockfile configured? Without either, lock() and unlock() do nothing. */
  get lockingEnabled(): boolean {
    return this.locking.enabled;
  }

  /** The conformance probe's verdict on the store, when lockfiles are on (else undefined). */
  get conditions(): ProbeVerdict | undefined {
    return this.probeVerdict;
  }

  /**
   * Object key of a workspace's state: `{prefix}/{w}/{key}`, and for the default workspace
   * `{prefix}/{key}` (layout `seed`) or `{key}` (layout `s3`).
   */
  statePath(workspace: string = DEFAULT_WORKSPACE): string {
    return statePath(this.layout, workspace);
  }

  /** Human description of where a workspace's state lives: `bucket/path`. */
  describe(workspace: string = DEFAULT_WORKSPACE): string {
    return `${this.bucket}/${this.statePath(workspace)}`;
  }

  private lockId(workspace: string): string {
    return `${this.bucket}/${this.statePath(workspace)}`;
  }

  /** Every workspace with a state, sorted, `default` first (it always exists). */
  async listWorkspaces(): Promise<string[]> {
    const found = new Set<string>();
    for await (const key of this.store.list(workspacesPrefix(this.layout), { pageSize: this.listPageSize })) {
      const w = workspaceOfKey(this.layout, key);
      if (w !== undefined) found.add(w);
    }
    return [DEFAULT_WORKSPACE, ...[...found].sort()];
  }

  /**
   * The state object of every workspace that has one, from the listing alone (a request
   * per 1,000 workspaces on S3, none per workspace): size, time and ETag, not what objstate
   * records with a write (serial, who: {@link lastWrite}). Sorted as {@link listWorkspaces},
   * `default` first when it has a state.
   */
  async listWorkspaceObjects(): Promise<WorkspaceObject[]> {
    const found: WorkspaceObject[] = [];
    let fallback: WorkspaceObject | undefined;
    const defaultKey = statePath(this.layout, DEFAULT_WORKSPACE);
    // In the s3 layout the default workspace's key is outside the workspaces' prefix: a listing of its own.
    for (const prefix of listPrefixes(this.layout)) {
      for await (const o of this.store.listDetailed(prefix, { pageSize: this.listPageSize })) {
        const described = { size: o.size, lastModified: o.lastModified?.toISOString(), etag: o.etag };
        if (o.key === defaultKey) fallback = { workspace: DEFAULT_WORKSPACE, ...described };
        const w = workspaceOfKey(this.layout, o.key);
        if (w !== undefined) found.push({ workspace: w, ...described });
      }
    }
    found.sort((a, b) => (a.workspace < b.workspace ? -1 : a.workspace > b.workspace ? 1 : 0));
    return fallback === undefined ? found : [fallback, ...found];
  }

  /**
   * The workspace's state bytes, or null when it has none. With a lock table, the read
   * follows the committed digest (docs/design.md §5):
   * - a stored write that was never committed, with nothing committed since (its writer
   *   stopped between the two steps), is committed by the read (reported to `onRepair`), under
   *   a short lock of its own when the lock is free, or while the lock is held under another
   *   ID than that write's; while its own writer holds the lock, the committed version is
   *   read instead (on a bucket that keeps versions), else the read waits, then fails with
   *   `TORN_WRITE`;
   * - a write that another commit overtook is passed over: the newest of the last versions
   *   that is the committed state is read (and written again as the newest, when the lock
   *   is free); `COMMITTED_VERSION_MISSING` when the bucket no longer has it;
   * - anything else that does not match is retried (eventual consistency), then fails with
   *   `DIGEST_MISMATCH` (or `TORN_WRITE` for an older objstate's unfinished write).
   * A read-only connection repairs nothing.
   */
  async readState(workspace: string = DEFAULT_WORKSPACE, options: ReadOptions = {}): Promise<Buffer | null> {
    return (await this.readStateVersion(workspace, options))?.body ?? null;
  }

  /**
   * Like {@link readState}, with the stored object's ETag: pass it as `ifMatch` to
   * {@link writeState} to make the write conditional on exactly what was read.
   */
  async readStateVersion(workspace: string = DEFAULT_WORKSPACE, options: ReadOptions = {}): Promise<StateRead | null> {
    const path = this.statePath(workspace);
    const locks = this.table;
    const { onData, onVouched, onMismatch, sharedBody } = options;
    const found = (obj: GetResult | null, md5?: string): StateRead | null => (obj === null ? null : { body: obj.body, etag: obj.meta.etag, md5 });
    if (locks === undefined) return found(await this.store.get(path, { onData, sharedBody }));
    const digestId = this.digestId(workspace);
    const deadline = Date.now() + this.digestRetry.timeoutMs;
    for (;;) {
      // The lock table's digest and the store's record, whichever comes second, vouch together.
      const seen: { digest?: string | undefined; record?: string | undefined } = {};
      const vouch = (k: "digest" | "record", md5: string | undefined): void => {
        seen[k] = md5;
        if ("digest" in seen && "record" in seen && seen.digest !== undefined && seen.digest === seen.record) onVouched?.(seen.digest);
      };
      const recorded = locks.getDigest(digestId).then((item) => {
        vouch("digest", normalizeDigest(item?.digest));
        return item;
      });
      const onStart = onVouched === undefined ? undefined : (md5: string | undefined): void => vouch("record", md5);
      const [obj, item] = await Promise.all([this.store.get(path, { md5: true, onData, onStart, sharedBody }), recorded]);
      const expected = normalizeDigest(item?.digest);
      if (expected === undefined) return found(obj);
      // The driver's MD5 may come from the ETag or objstate's metadata: a shortcut only when it
      // agrees with the digest; otherwise the bytes are hashed before anything is declared.
      if (obj !== null && obj.md5 === expected) return found(obj, expected);
      const actual = obj === null ? "" : md5(obj.body);
      if (actual === expected) return found(obj, expected);
      onMismatch?.();
      // The lock of a stored write that is not committed yet while its writer holds the lock.
      let pending: string | undefined;
      let held = false;
      const verdict = obj === null ? "foreign" : judge(obj.meta, actual, item);
      if (obj !== null && verdict === "torn") {
        const adopted = await this.adoptTorn(workspace, obj.meta, actual, item, undefined);
        if (adopted === "moved") continue;
        if (adopted !== "held") return found(obj, actual);
        // Its writer may commit it any moment; until then the committed state stands.
        const committed = await this.committedVersion(path, expected);
        if (committed !== null) return { body: committed.body, etag: obj.meta.etag, md5: expected };
        pending = this.readOnly ? undefined : (decodeMeta(obj.meta.metadata?.[META.lockId]) ?? "");
        held = true;
      } else if (obj !== null && verdict === "superseded") {
        // A write that never happened (a writer that lost its lock, arriving late): readers follow the table.
        const committed = await this.committedVersion(path, expected);
        if (committed === null) throw committedMissing(this.describe(workspace), workspace, obj.meta, expected);
        const etag = await this.restoreCommitted(workspace, committed, obj.meta, expected, generationOf(item));
        return { body: committed.body, etag: etag ?? obj.meta.etag, md5: expected };
      } else if (obj !== null && provenComplete(obj.meta, actual) && (await locks.get(this.lockId(workspace), "Info")) === null) {
        // An older objstate's write (no intent recorded). A writer commits before it releases
        // its lock, so the digest read now, after the lock was seen free, is final for every
        // write that finished: only when it is still the one read with the object was this
        // write torn. (Read together with the object, it may have been a finishing writer's
        // previous digest.)
        const now = normalizeDigest((await locks.getDigest(digestId))?.digest);
        if (now === actual) return found(obj, actual);
        if (now !== expected) continue;
        throw tornWrite(this.describe(workspace), workspace, obj.meta, expected, actual, digestId);
      }
      if (Date.now() + this.digestRetry.intervalMs > deadline) {
        if (obj !== null && held) throw uncommittedUnderLock(this.describe(workspace), workspace, obj.meta, pending);
        throw new ObjstateError(
          "DIGEST_MISMATCH",
          `the state at ${this.describe(workspace)} does not match its digest: the lock table says ${expected}, the ${obj === null ? "object is missing" : `object's MD5 is ${actual}`}. ` +
            `Either the object store has not caught up with a recent write (try again), or the state was changed outside objstate. ` +
            `If the stored state is the one you want, run \`objstate state repair${workspaceFlag(workspace)} --force\` to record its digest.`,
          { details: { expected, actual, digestId, path } },
        );
      }
      await sleep(this.digestRetry.intervalMs);
    }
  }

  /**
   * Store the workspace's state, guarded and fenced:
   * - the lineage guard (the tool's own `state push` rule): over a stored state that is not
   *   empty and has a lineage, a different lineage, a lower serial, or the same serial with
   *   other content is refused with `STATE_CONFLICT` unless `force`; the same content again
   *   is a no-op (no new write);
   * - the write is conditional on the stored object being the one the guard saw (or
   *   `ifMatch`), and on the lock still carrying `lockId`, checked right before the write;
   *   a failed condition changes nothing (`STATE_CONFLICT`, `LOCK_NOT_HELD`, `STATE_LOCKED`).
   * Without a `lockId` (and with a lock table) the write takes and releases a lock itself.
   * With a lock table the write happens at its commit point, after the state is stored: one
   * conditional update of the digest item (`Digest`, `Generation` + 1), made only while the
   * item is still what the write saw at its start. A refused commit is `STATE_CONFLICT` (the
   * stored bytes are a version nobody reads); a commit that could not be sent is
   * `DIGEST_WRITE_FAILED` (writing the same state again completes it). The guard judges
   * against the committed state, which a stored write that never committed does not replace.
   */
  async writeState(workspace: string, data: Uint8Array | string | ByteSource, options: WriteOptions = {}): Promise<WriteResult> {
    const body = isByteSource(data) ? data : toBuffer(data);
    const size = sizeOf(body);
    // Bytes that are not a JSON object carry no lineage or serial: the guard then lets them
    // replace only what it would let anything replace. (The CLI refuses such input earlier.)
    const head = isByteSource(body) ? await prefixOf(body, HEADER_BYTES) : body.subarray(0, HEADER_BYTES);
    const incoming = scanHeader(head) ?? { complete: false };
    // Large states are hashed in a worker thread (bytes in memory) or in one streamed pass
    // (a source) while other work goes on.
    const hashing = options.md5 !== undefined ? Promise.resolve(options.md5.toLowerCase()) : isByteSource(body) ? md5OfSource(body, "the state") : md5Of(body);
    hashing.catch(() => undefined); // awaited later; a failure before then must not go unhandled
    const input: Incoming = { body, size, header: incoming, hashing, streamed: isByteSource(body) };
    const locks = this.table;
    if (this.locking.enabled && options.lockId === undefined) {
      const held = await this.acquire(workspace, { operation: "writeState", owner: options.principal?.name });
      try {
        return await this.writeFenced(workspace, input, locks, held.info, options);
      } finally {
        await held.release();
      }
    }
    return this.writeFenced(workspace, input, locks, undefined, options);
  }

  private async writeFenced(workspace: string, input: Incoming, locks: LockTableDriver | undefined, ownLock: LockInfo | undefined, options: WriteOptions): Promise<WriteResult> {
    const path = this.statePath(workspace);
    const where = this.describe(workspace);
    const lockId = ownLock?.ID ?? options.lockId;
    const { hashing, header: incoming } = input;
    // The lock this call took is its own: only a lock the caller names is checked for its owner.
    const owner = ownLock === undefined ? options.owner : undefined;
    const checkHolder = (): Promise<LockInfo | undefined> => (this.locking.enabled && lockId !== undefined ? this.assertHolder(workspace, lockId, owner) : Promise.resolve(ownLock));
    // The digest item is read beside what the write reads anyway: the commit is conditional on it.
    const [current, firstHolder, item] = await Promise.all([this.inspect(path, where), checkHolder(), locks === undefined ? Promise.resolve(null) : locks.getDigest(this.digestId(workspace))]);
    let holder = firstHolder;

    if (options.ifMatch !== undefined && (current?.etag ?? null) !== options.ifMatch) {
      throw conflict(`the state at ${where} changed since it was read (${options.ifMatch === null ? "there was none" : `version ${options.ifMatch}`}, now ${current?.etag ?? "none"}); nothing was written. Read it again, reapply the change and write again.`, {});
    }
    // What the guard judges against: the committed state, which is not the stored object when
    // that is a write that never committed (see settleForWrite).
    const settled = locks === undefined || current === null ? { base: current, seen: item, extraRead: false } : await this.settleForWrite(workspace, current, item, lockId, options.force === true);
    const { base } = settled;
    const { seen } = settled;
    let { extraRead } = settled;
    // Identical bytes have identical headers: only then is the hash worth waiting for before
    // the upload (for a large state it would otherwise run alongside it).
    if (base !== null && base.size === input.size && base.header.serial === incoming.serial && base.header.lineage === incoming.lineage) {
      // Possibly the same content again: a no-op, but one that makes sure the digest is recorded.
      const sum = await hashing;
      const stored = base.md5 ?? (extraRead = true, (await this.storedDigest(path))?.md5);
      if (stored === sum) {
        // Re-checked after the extra read: only the holder may commit.
        if (extraRead) await checkHolder();
        if (locks !== undefined && normalizeDigest(seen?.digest) !== sum) await this.commit(workspace, locks, seen, sum, lockId);
        return { written: false, md5: sum };
      }
    }
    if (base !== null && options.force !== true) {
      const refusal = guardRefusal(base.header, incoming, where);
      if (refusal !== undefined) throw refusal;
    }
    if (extraRead) holder = await checkHolder();

    // A streamed state's MD5 is known before it is sent (it was read once to hash it).
    const known = input.streamed || input.size < PARALLEL_MD5_MIN ? await hashing : undefined;
    const metadata = writeMetadata({ incoming, lockId, holder, who: this.who, md5: known, principal: options.principal });
    if (options.operation !== undefined) metadata[META.operation] = encodeMeta(options.operation);
    if (options.sourceVersion !== undefined) metadata[META.sourceVersion] = encodeMeta(options.sourceVersion);
    if (locks !== undefined) Object.assign(metadata, intentMetadata(seen));
    const s = this.settings;
    try {
      await this.store.put(path, input.body, {
        contentType: "application/json",
        acl: s.acl.value as Acl | undefined,
        encrypt: s.encrypt.value === true,
        md5: known ?? hashing,
        onProgress: options.onProgress,
        metadata,
        ...(current === null ? { ifNoneMatch: true } : current.etag === undefined ? {} : { ifMatch: current.etag }),
      });
    } catch (e) {
      if (!isObjstateError(e, "PRECONDITION_FAILED")) throw e;
      // A PUT retried after its reply was lost finds its own first attempt stored: that is success.
      if (!(await this.storedIsOurs(path, await hashing, lockId))) throw await this.lostRace(workspace, locks, lockId, e);
    }
    await options.onStored?.();
    const digest = await hashing;
    // The commit point: only now did the write happen.
    if (locks !== undefined) await this.commit(workspace, locks, seen, digest, lockId);
    return { written: true, md5: digest };
  }

  /**
   * The stored object against the committed digest, before a write under `lockId` judges it.
   * Usually one and the same (no request). Otherwise, proven from the bytes: a torn write is
   * committed first (the caller holds the lock, so no writer of it is still at work), and it
   * is the base; behind a write that never committed, the committed version is the base
   * (`COMMITTED_VERSION_MISSING` when the store no longer has it, unless `force`).
   */
  private async settleForWrite(workspace: string, current: Current, item: DigestItem | null, lockId: string | undefined, force: boolean): Promise<{ base: Current | null; seen: DigestItem | null; extraRead: boolean }> {
    const expected = normalizeDigest(item?.digest);
    if (expected === undefined || current.md5 === expected) return { base: current, seen: item, extraRead: false };
    const path = this.statePath(workspace);
    const stored = await this.storedDigest(path);
    if (stored === null || stored.md5 === undefined || stored.md5 === expected || !stored.proven) return { base: current, seen: item, extraRead: true };
    const verdict = judge(stored.meta, stored.md5, item);
    if (verdict === "torn") {
      const adopted = await this.adoptTorn(workspace, stored.meta, stored.md5, item, lockId);
      if (typeof adopted === "string") {
        throw conflict(`another write was committed to ${this.describe(workspace)} just as this one started; nothing was written. Pull the state, reapply the change and push again.`, {});
      }
      return { base: { ...current, md5: stored.md5 }, seen: adopted, extraRead: true };
    }
    if (verdict === "superseded") {
      const committed = await this.committedVersion(path, expected);
      if (committed !== null) return { base: currentOf(committed, this.describe(workspace)), seen: item, extraRead: true };
      if (!force) throw committedMissing(this.describe(workspace), workspace, stored.meta, expected);
    }
    return { base: current, seen: item, extraRead: true };
  }

  /**
   * The commit point of a write: one conditional update of the digest item, made only while
   * it is still as `seen`. A refusal means another write was committed after this one started:
   * this one did not happen (`STATE_CONFLICT`), whatever the store holds.
   */
  private async commit(workspace: string, locks: LockTableDriver, seen: DigestItem | null, digest: string, lockId: string | undefined, set?: Readonly<Record<string, string>>): Promise<DigestItem> {
    const generation = generationOf(seen) + 1;
    let ok: boolean;
    try {
      ok = await locks.commitDigest(this.digestId(workspace), seen, { digest, generation, lockId, set });
    } catch (e) {
      throw new ObjstateError(
        "DIGEST_WRITE_FAILED",
        `the state at ${this.describe(workspace)} was stored, but its commit (the digest in the lock table) could not be recorded (${(e as Error).message}): the write has not happened yet. ` +
          `Send the same state again: that completes it (so does the next read, once the lock is released, or \`objstate state repair${workspaceFlag(workspace)}\`)`,
        { cause: e, details: { written: true } },
      );
    }
    if (!ok) {
      throw conflict(
        `another write was committed to ${this.describe(workspace)} after this one started (the lock table's digest is no longer generation ${generationOf(seen)}, ${normalizeDigest(seen?.digest) ?? "none"}), so this write did not happen: nothing of it counts, and what it stored is a version nobody reads. Pull the state, reapply the change and push again.`,
        { details: { generation: generationOf(seen), digest: normalizeDigest(seen?.digest) ?? null } },
      );
    }
    return { digest, generation, lockId };
  }

  /**
   * Commit a torn write (stored, never committed) with the very update its writer would have
   * made. Under the caller's lock (`callerLockId`); or when the lock is held under another ID
   * than the torn write's (its writer lost the lock: none of its writes is at work, and the
   * holder may well be the caller, which a GET does not say); or under a short lock of its
   * own when the lock is free (or expired). Never while the torn write's own lock is held:
   * its writer may be committing it right now (`held`). `moved`: another commit came first.
   */
  private async adoptTorn(workspace: string, meta: ObjectMeta, actual: string, seen: DigestItem | null, callerLockId: string | undefined): Promise<DigestItem | "held" | "moved"> {
    const locks = this.table;
    if (locks === undefined) return "held";
    const writerLock = decodeMeta(meta.metadata?.[META.lockId]);
    let own: LockHandle | undefined;
    if (callerLockId === undefined) {
      if (this.readOnly) return "held";
      const holder = await this.locking.info(workspace);
      if (holder === null || holder.ID === writerLock) {
        try {
          own = await this.acquire(workspace, { operation: "adopt an uncommitted write" });
        } catch (e) {
          if (isObjstateError(e, "STATE_LOCKED")) return "held";
          throw e;
        }
      }
    }
    try {
      const previous = normalizeDigest(seen?.digest) ?? null;
      const note = JSON.stringify({ at: new Date().toISOString(), who: this.who, previous, forced: false, adopted: writerLock ?? null });
      let next: DigestItem;
      try {
        next = await this.commit(workspace, locks, seen, actual, writerLock, { Repaired: note });
      } catch (e) {
        if (isObjstateError(e, "STATE_CONFLICT")) return "moved";
        throw e;
      }
      const serial = serialOf(meta);
      const by = decodeMeta(meta.metadata?.[META.who]);
      this.reportRepair({
        workspace,
        action: "adopted",
        md5: actual,
        generation: next.generation,
        serial,
        lockId: writerLock,
        message: `committed the last write to ${this.describe(workspace)} (serial ${serial ?? "?"}${by === undefined ? "" : ` by ${by}`}${writerLock === undefined ? "" : `, lock ${writerLock}`}): it was stored, but its writer stopped before committing it, and nothing was committed since`,
      });
      return next;
    } finally {
      if (own !== undefined) await own.release();
    }
  }

  /**
   * The newest of the last {@link LOOKBACK_VERSIONS} versions whose bytes are `digest` (the
   * committed state, behind writes that never committed), bytes checked; null when there is
   * none (a bucket without versions, or one that no longer keeps it).
   */
  private async committedVersion(path: string, digest: string): Promise<GetResult | null> {
    let looked = 0;
    try {
      for await (const v of this.store.listVersions(path, { pageSize: LOOKBACK_VERSIONS + 1 })) {
        if (++looked > LOOKBACK_VERSIONS + 1) break;
        if (v.deleteMarker) continue;
        // A plain-MD5 ETag in the listing says it at once; otherwise (another version, or an
        // ETag that is not an MD5: KMS) objstate's record of the write, from a HEAD.
        if (plainMd5({ size: v.size, etag: v.etag }) !== digest) {
          const meta = await this.store.head(path, { versionId: v.versionId });
          if (meta === null || (recordedMd5(meta) ?? plainMd5(meta)) !== digest) continue;
        }
        const got = await this.store.get(path, { versionId: v.versionId });
        if (got !== null && md5(got.body) === digest) return got;
      }
    } catch (e) {
      // A store or bucket without version listings has no older versions to offer.
      if (isObjstateError(e) && (e.code.startsWith("ENDPOINT_") || e.code === "CREDENTIALS_MISSING")) throw e;
      return null;
    }
    return null;
  }

  /**
   * Write the committed state again as the newest version, over a write that never committed,
   * so that every reader of the bucket (the tool's own S3 backend compares the current object
   * with `Digest`) sees them agree. Only under a short lock of its own while the lock is free:
   * a holder's next write does the same. Best effort; returns the new ETag when it wrote.
   */
  private async restoreCommitted(workspace: string, committed: GetResult, over: ObjectMeta, digest: string, generation: number): Promise<string | undefined> {
    if (this.readOnly || !this.locking.enabled) return undefined;
    let own: LockHandle;
    try {
      own = await this.acquire(workspace, { operation: "restore the committed state" });
    } catch {
      return undefined;
    }
    try {
      await this.writeCommittedAgain(workspace, committed, over, digest, own.id);
      const serial = serialOf(committed.meta);
      const by = decodeMeta(over.metadata?.[META.who]);
      this.reportRepair({
        workspace,
        action: "restored",
        md5: digest,
        generation,
        serial,
        lockId: decodeMeta(over.metadata?.[META.lockId]),
        message: `the newest version of ${this.describe(workspace)} (serial ${serialOf(over) ?? "?"}${by === undefined ? "" : ` by ${by}`}) was a write that never committed (another write was committed after it started); wrote the committed state (serial ${serial ?? "?"}) again over it`,
      });
      return (await this.store.head(this.statePath(workspace)))?.etag;
    } catch {
      return undefined;
    } finally {
      await own.release().catch(() => undefined);
    }
  }

  /**
   * PUT the committed version's bytes again, with its record (so it judges as committed),
   * conditional on the write it goes over. The digest is already theirs: nothing to commit.
   */
  private async writeCommittedAgain(workspace: string, committed: GetResult, over: ObjectMeta, digest: string, lockId: string | undefined): Promise<void> {
    const metadata: Record<string, string> = { ...(committed.meta.metadata ?? {}), [META.md5]: digest, [META.operation]: "restore", [META.who]: encodeMeta(this.who) };
    if (lockId !== undefined) metadata[META.lockId] = encodeMeta(lockId);
    if (committed.meta.versionId !== undefined) metadata[META.sourceVersion] = encodeMeta(committed.meta.versionId);
    const s = this.settings;
    await this.store.put(this.statePath(workspace), committed.body, {
      contentType: "application/json",
      acl: s.acl.value as Acl | undefined,
      encrypt: s.encrypt.value === true,
      md5: digest,
      metadata,
      ...(over.etag === undefined ? {} : { ifMatch: over.etag }),
    });
  }

  /** Is the stored object exactly these bytes, written under this lock (or by this call without one)? */
  private async storedIsOurs(path: string, sum: string, lockId: string | undefined): Promise<boolean> {
    const stored = await this.storedDigest(path);
    if (stored === null || stored.md5 !== sum) return false;
    const by = stored.meta.metadata?.[META.lockId];
    return lockId === undefined ? by === undefined : by === encodeMeta(lockId);
  }

  /**
   * The stored object's metadata and MD5 without holding a large object in memory: up to
   * {@link HASH_READ_MAX} bytes are read and hashed (the bytes themselves are the truth);
   * a larger object's MD5 is its record (the store's plain MD5 ETag, else objstate's
   * metadata), undefined when it has none. `proven` says the MD5 comes from the bytes (or
   * from the store's own ETag, which it computed from them).
   */
  private async storedDigest(path: string): Promise<{ meta: ObjectMeta; md5: string | undefined; proven: boolean } | null> {
    const obj = await this.store.get(path, { maxBytes: HASH_READ_MAX });
    if (obj === null) return null;
    if (obj.body.length >= obj.meta.size) return { meta: obj.meta, md5: md5(obj.body), proven: true };
    const etag = plainMd5(obj.meta);
    return { meta: obj.meta, md5: etag ?? recordedMd5(obj.meta), proven: etag !== undefined };
  }

  /**
   * The write's condition failed: another write landed between the guard's read and ours
   * (a lock-free writer, or an abandoned write of an earlier holder arriving late). When
   * that write is torn (stored, never committed, and nothing committed since), and we hold
   * the lock, commit it, so readers get the newest state anyone meant.
   */
  private async lostRace(workspace: string, locks: LockTableDriver | undefined, lockId: string | undefined, cause: unknown): Promise<ObjstateError> {
    const where = this.describe(workspace);
    let note = "";
    if (locks !== undefined && lockId !== undefined) {
      try {
        const [obj, item] = await Promise.all([this.storedDigest(this.statePath(workspace)), locks.getDigest(this.digestId(workspace))]);
        if (obj !== null && obj.md5 !== undefined && obj.proven && judge(obj.meta, obj.md5, item) === "torn" && typeof (await this.adoptTorn(workspace, obj.meta, obj.md5, item, lockId)) !== "string") {
          note = ` That write (serial ${obj.meta.metadata?.[META.serial] ?? "?"}, by ${decodeMeta(obj.meta.metadata?.[META.who]) ?? "unknown"}) had not been committed; it is committed now, so the stored state reads again.`;
        }
      } catch {
        // Best effort: the conflict is the answer either way.
      }
    }
    return conflict(`another write reached ${where} while this one was in flight, so this one was refused and nothing was overwritten.${note} Pull the state, reapply the change and push again.`, { cause });
  }

  /** The stored object as the guard sees it: size, ETag, header, and its MD5 when cheaply known. */
  private async inspect(path: string, where: string): Promise<Current | null> {
    const obj = await this.store.get(path, { maxBytes: GUARD_READ_BYTES });
    if (obj === null) return null;
    const whole = obj.body.length >= obj.meta.size;
    let header: StateHeader;
    try {
      header = stateHeader(obj.body, whole, `the stored state at ${where}`);
    } catch {
      // Whatever is stored is not a state (hand-written, or junk): nothing to guard.
      header = { lineage: undefined, serial: undefined, version: undefined, empty: true };
    }
    const md5Known = whole ? md5(obj.body) : (plainMd5(obj.meta) ?? recordedMd5(obj.meta));
    return { etag: obj.meta.etag, size: obj.meta.size, header, md5: md5Known, meta: obj.meta };
  }

  private digestId(workspace: string): string {
    return `${this.lockId(workspace)}${DIGEST_SUFFIX}`;
  }

  /** The fencing check right before a write (see {@link Locking.assertHolder}). */
  private assertHolder(workspace: string, lockId: string, owner?: string | undefined): Promise<LockInfo> {
    return this.locking.assertHolder(workspace, lockId, owner);
  }

  /**
   * Take the workspace's lock. Returns the stored lock info (keep its `ID`). When someone
   * else holds it, throws `STATE_LOCKED` with the holder's info in `details.lockInfo`.
   * Without a lock table, returns info that was not stored (locking is off). A lock write
   * retried after its reply was lost finds this very lock and counts as taken.
   */
  async lock(workspace: string = DEFAULT_WORKSPACE, options: LockOptions = {}): Promise<LockInfo> {
    return this.locking.lock(workspace, this.takeOptions(options), this.lockId(workspace));
  }

  /**
   * Take the workspace's lock and hold it: the handle's heartbeat renews a lease (`ttl`)
   * every third of its length for as long as the work runs, and its `signal` fires with a
   * `LOCK_LOST` error the moment the lease is lost. Release it with `handle.release()`.
   *
   * @example
   * const held = await backend.acquire("default", { operation: "apply", ttl: 60_000 });
   * try { await backend.writeState("default", json, { lockId: held.id }); }
   * finally { await held.release(); }
   */
  async acquire(workspace: string = DEFAULT_WORKSPACE, options: LockOptions = {}): Promise<LockHandle> {
    return this.locking.acquire(workspace, this.takeOptions(options), this.lockId(workspace));
  }

  /**
   * Extend the lease of lock `id` by its ttl (the connection's `ttl` for a lock another
   * process took); `LOCK_LOST` when it expired and was taken over or released.
   */
  async renewLock(workspace: string, id: string): Promise<LockInfo> {
    return this.locking.renew(workspace, id);
  }

  private takeOptions(options: LockOptions): TakeOptions {
    return { ...options, ttlMs: checkTtl(options.ttl, "the lock ttl (ttl)") };
  }

  /** The current lock's info, or null when the workspace is not locked (or locking is off). */
  async lockInfo(workspace: string = DEFAULT_WORKSPACE): Promise<LockInfo | null> {
    return this.locking.info(workspace);
  }

  /**
   * Every lock held in the lock table and every lockfile under the prefix: workspace, ID,
   * who, operation, since and lease expiry (for dashboards and automation).
   */
  async locks(): Promise<LockListing[]> {
    return this.locking.list();
  }

  /**
   * Release the lock with this ID; `LOCK_ID_MISMATCH` when the lock has another ID,
   * `LOCK_NOT_FOUND` when there is none. A table lock is released in two conditional
   * steps, each safe to repeat (marked released by this ID, then deleted only with that
   * mark); a lockfile by a read, an ID check and a conditional delete. `NO_ID` (see
   * {@link NO_LOCK_ID}) clears an item that has no readable lock info. With `owner`, only a
   * lock that belongs to it is released (`LOCK_NOT_OWNED`, the lock left as it is).
   */
  async unlock(workspace: string, id: string, options: UnlockOptions = {}): Promise<void> {
    await this.locking.unlock(workspace, id, { owner: options.owner, forcedBy: options.forcedBy });
  }

  /**
   * The workspace's recent releases, oldest first: every {@link unlock} and
   * {@link forceUnlock} records its lock ID and time beside the lock (the last 64, for an
   * hour; not the release of an {@link acquire} handle, whose ID no client knows). A release of an ID that is not the
   * holder's but is in here is `LOCK_NOT_FOUND` (already released), and taking a lock under
   * such an ID is refused (`LOCK_ID_RELEASED`): both are late copies of earlier requests.
   */
  async recentReleases(workspace: string = DEFAULT_WORKSPACE): Promise<ReleasedLock[]> {
    return this.locking.recent(workspace);
  }

  /**
   * Release someone else's lock, given the ID shown in the lock error. The same check as
   * unlock: a wrong ID is refused, so a lock taken since cannot be broken by mistake.
   */
  async forceUnlock(workspace: string, id: string): Promise<void> {
    await this.locking.unlock(workspace, id);
  }

  /**
   * The versions of the workspace's state, newest first (delete markers included), each with
   * its serial, lineage and who wrote it (see {@link StateVersion}). Needs bucket versioning
   * (`VERSIONING_OFF` otherwise), no lock table; reads a few KiB per version, never a whole one.
   */
  history(workspace: string = DEFAULT_WORKSPACE, options: HistoryOptions = {}): AsyncGenerator<StateVersion> {
    return stateHistory(this.versioned(workspace), options);
  }

  /**
   * The bytes of one version of the workspace's state, exactly as stored. Needs no lock
   * table; the digest is checked only when the version is the current one.
   * @throws ObjstateError `VERSION_NOT_FOUND`, `DIGEST_MISMATCH`
   */
  async readVersion(workspace: string, versionId: string): Promise<Buffer> {
    const got = await readStateVersionById(this.versioned(workspace), versionId);
    const locks = this.table;
    if (!got.isLatest || locks === undefined) return got.body;
    const expected = normalizeDigest((await locks.getDigest(this.digestId(workspace)))?.digest);
    if (expected === undefined || expected === md5(got.body)) return got.body;
    // The current version against its digest: the whole read with its retries and repairs. It
    // fails unless the current version is committed, or a complete objstate write that never
    // committed (a version like any other: these are its bytes).
    await this.readStateVersion(workspace);
    return got.body;
  }

  /**
   * Roll the workspace back to version `versionId`: its content is written as a new version
   * with serial = current + 1 (same lineage), under the lock, recording `Operation: rollback`
   * and the source version. Another lineage is refused unless `force`. Deletes nothing, so a
   * rollback can itself be rolled back; restores a deleted workspace.
   */
  async rollback(workspace: string, versionId: string, options: BackendRollbackOptions = {}): Promise<RollbackResult> {
    checkWorkspace(workspace);
    const own = options.lockId === undefined ? await this.acquire(workspace, { operation: "rollback", owner: options.principal?.name }) : undefined;
    try {
      const lockId = own?.id ?? options.lockId;
      const owner = own === undefined ? options.owner : undefined;
      return await rollbackState(this.versioned(workspace), versionId, (body, w) => this.writeState(workspace, body, { lockId, owner, principal: options.principal, ...w }), options);
    } finally {
      if (own !== undefined) await own.release();
    }
  }

  private versioned(workspace: string): VersionedState {
    return { store: this.store, key: this.statePath(workspace), workspace, where: this.describe(workspace) };
  }

  /**
   * Delete a workspace's state and digest. `default` cannot be deleted; a locked
   * workspace is refused (`STATE_LOCKED`). The digest goes first: a crash in between
   * leaves a state without a digest, which reads fine, never a digest without a state.
   */
  async deleteWorkspace(workspace: string, options: { readonly lockId?: string | undefined } = {}): Promise<void> {
    checkWorkspace(workspace);
    if (workspace === DEFAULT_WORKSPACE) {
      throw new ObjstateError("CANNOT_DELETE_DEFAULT", "the default workspace cannot be deleted");
    }
    const locks = this.table;
    const own = options.lockId === undefined ? await this.acquire(workspace, { operation: "deleteWorkspace" }) : undefined;
    try {
      if (this.locking.enabled && options.lockId !== undefined) await this.assertHolder(workspace, options.lockId);
      if (locks !== undefined) await locks.delete(this.digestId(workspace));
      await this.store.delete(this.statePath(workspace));
    } finally {
      if (own !== undefined) await own.release();
    }
  }

  /**
   * How a workspace's state stands against its digest, without retrying or repairing:
   * `no-state`, `no-digest` (nothing recorded: nothing to check), `match`, `torn` (a complete
   * objstate write that was never committed, and nothing was committed since: the next read
   * commits it once no writer of it holds the lock, as does `state repair`), `superseded` (the
   * newest version is a write that never committed; reads serve the committed one) or
   * `mismatch`.
   */
  async digestStatus(workspace: string = DEFAULT_WORKSPACE): Promise<DigestStatus> {
    const locks = this.table;
    const [obj, item] = await Promise.all([this.store.get(this.statePath(workspace), { md5: true }), locks === undefined ? Promise.resolve(null) : locks.getDigest(this.digestId(workspace))]);
    const recorded = normalizeDigest(item?.digest);
    if (recorded === undefined) return obj === null ? { status: "no-state" } : { status: "no-digest", size: obj.body.length };
    if (obj === null) return { status: "mismatch", recorded, actual: undefined };
    const actual = obj.md5 === recorded ? recorded : md5(obj.body);
    if (actual === recorded) return { status: "match", recorded, size: obj.body.length };
    const verdict = judge(obj.meta, actual, item);
    if (verdict === "torn" || verdict === "superseded") return { status: verdict, recorded, actual, size: obj.body.length };
    // An older objstate's write (no intent recorded): torn only once no writer holds the lock and the digest, read after that, is still the old
    // one (see readStateVersion); a writer still at work is a mismatch of the moment.
    const torn = provenComplete(obj.meta, actual) && locks !== undefined && (await locks.get(this.lockId(workspace), "Info")) === null && normalizeDigest(await locks.get(this.digestId(workspace), "Digest")) === recorded;
    return { status: torn ? "torn" : "mismatch", recorded, actual, size: obj.body.length };
  }

  /**
   * Leftovers of writers of this backend's states (incomplete multipart uploads, the
   * embedded store's temp files) under its prefix, and in the `s3` layout under the default
   * workspace's key too, oldest first, with their age as the store reports it.
   */
  async leftovers(): Promise<Leftover[]> {
    const prefixes = listPrefixes(this.layout);
    if (prefixes.length === 1) return this.store.listLeftovers(prefixes[0] as string);
    // A leftover whose key cannot be told is listed under every prefix: once is enough.
    const seen = new Map<string, Leftover>();
    for (const prefix of prefixes) for (const l of await this.store.listLeftovers(prefix)) seen.set(`${l.kind} ${l.key ?? ""} ${l.id}`, l);
    return [...seen.values()].sort((a, b) => (a.since?.getTime() ?? 0) - (b.since?.getTime() ?? 0));
  }

  /**
   * Repair a workspace after a write that did not finish, under its lock:
   * - a state whose digest was never recorded (a torn write) gets its digest recorded,
   *   only when the object proves it is a complete write by objstate (its own record of the
   *   write and of its MD5 match the bytes) — unless `force`, which accepts whatever is
   *   stored; the repair is recorded on the digest item (`Repaired`: when, who, previous);
   * - a digest left without a state (a delete that did not finish) is removed;
   * - leftovers older than `leftoverMinAgeMs` (default one hour) are removed; younger ones
   *   may belong to a live writer and are kept.
   * Refuses (`REPAIR_REFUSED`) a mismatch it cannot prove to be a torn write.
   */
  async repairState(workspace: string = DEFAULT_WORKSPACE, options: RepairOptions = {}): Promise<RepairReport> {
    const locks = this.table;
    const own = this.locking.enabled && options.lockId === undefined ? await this.acquire(workspace, { operation: "state repair" }) : undefined;
    try {
      if (this.locking.enabled && options.lockId !== undefined) await this.assertHolder(workspace, options.lockId);
      const digest = locks === undefined ? { action: "no-lock-table" as const } : await this.repairDigest(workspace, locks, options.force === true, own?.id ?? options.lockId);
      const minAge = options.leftoverMinAgeMs ?? LEFTOVER_MIN_AGE_MS;
      const now = (options.now ?? Date.now)();
      const removed: Leftover[] = [];
      const kept: Leftover[] = [];
      for (const item of await this.leftovers()) {
        if (item.since !== undefined && now - item.since.getTime() >= minAge) {
          await this.store.removeLeftover(item);
          removed.push(item);
        } else kept.push(item);
      }
      return { ...digest, leftoversRemoved: removed, leftoversKept: kept };
    } finally {
      if (own !== undefined) await own.release();
    }
  }

  private async repairDigest(workspace: string, locks: LockTableDriver, force: boolean, lockId: string | undefined): Promise<Omit<RepairReport, "leftoversRemoved" | "leftoversKept">> {
    const digestId = this.digestId(workspace);
    const path = this.statePath(workspace);
    const [obj, item] = await Promise.all([this.store.get(path, { md5: true }), locks.getDigest(digestId)]);
    const recorded = normalizeDigest(item?.digest);
    if (obj === null) {
      if (recorded === undefined) return { action: "no-state" };
      await locks.delete(digestId);
      return { action: "removed-orphan-digest", previous: recorded };
    }
    const actual = md5(obj.body);
    if (recorded === actual) return { action: "ok", md5: actual };
    const verdict = judge(obj.meta, actual, item);
    if (verdict === "superseded" && recorded !== undefined) {
      // The committed state is older than the newest version: it is written again, unless the
      // store no longer has it; then only --force accepts what is stored.
      const committed = await this.committedVersion(path, recorded);
      if (committed !== null) {
        await this.writeCommittedAgain(workspace, committed, obj.meta, recorded, lockId);
        return { action: "restored-committed", md5: recorded };
      }
      if (!force) throw committedMissing(this.describe(workspace), workspace, obj.meta, recorded);
    } else if (!force && !provenComplete(obj.meta, actual)) {
      throw new ObjstateError(
        "REPAIR_REFUSED",
        `the state at ${this.describe(workspace)} does not match its digest (recorded ${recorded ?? "none"}, object ${actual}) and does not prove it is a complete write by objstate (no objstate record of the write, or that record's MD5 does not match the bytes). ` +
          `Inspect it first; if it is the state you want, run \`objstate state repair${workspaceFlag(workspace)} --force\` to record its digest.`,
        { details: { recorded, actual } },
      );
    }
    const note = JSON.stringify({ at: new Date().toISOString(), who: this.who, previous: recorded ?? null, forced: force });
    await this.commit(workspace, locks, item, actual, decodeMeta(obj.meta.metadata?.[META.lockId]), { Repaired: note });
    return { action: "recorded-digest", md5: actual, ...(recorded === undefined ? {} : { previous: recorded }) };
  }

  /**
   * The last write of a workspace's state as its object records it (a HEAD, never the
   * body): size, ETag, time, and what objstate noted (serial, lineage, who, lock ID,
   * operation; undefined for writes by other clients). Null when it has no state.
   */
  async lastWrite(workspace: string = DEFAULT_WORKSPACE): Promise<LastWrite | null> {
    const meta = await this.store.head(this.statePath(workspace));
    if (meta === null) return null;
    const m = meta.metadata ?? {};
    const serial = m[META.serial] === undefined ? undefined : Number(m[META.serial]);
    return {
      size: meta.size,
      etag: meta.etag,
      lastModified: meta.lastModified?.toISOString(),
      serial: serial !== undefined && Number.isSafeInteger(serial) ? serial : undefined,
      lineage: decodeMeta(m[META.lineage]),
      who: decodeMeta(m[META.who]),
      lockId: decodeMeta(m[META.lockId]),
      operation: decodeMeta(m[META.operation]),
      principal: principalOf(m),
    };
  }

  /**
   * Does the bucket keep versions (what history and rollback need)? `enabled` (the
   * embedded store always), `suspended` (old versions kept, new writes replace the current
   * one) or `off`. One request; needs no lock table.
   */
  versioning(): Promise<VersioningStatus> {
    return this.store.versioning();
  }

  /**
   * Are the object store and the lock table reachable? One listing request (at most one
   * key) and one table read; throws what they throw.
   */
  async probe(): Promise<void> {
    // A listing proves the bucket answers without reading any state.
    for await (const key of this.store.list(workspacesPrefix(this.layout), { pageSize: 1 })) {
      void key;
      break;
    }
    if (this.table !== undefined) await this.table.get(this.lockId(DEFAULT_WORKSPACE), "Info");
  }

  /** Release sockets and handles. */
  close(): void {
    this.store.close();
    this.table?.close();
  }

  // Printing: the drivers and `settings` hold credentials, so a backend prints only this
  // view (settings print themselves redacted).
  /** What `JSON.stringify(backend)` shows: where the state lives, locking, identity source and settings, secrets redacted. */
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


/** How much of a stored state the guard reads: whole small states, the header of large ones. */
const GUARD_READ_BYTES = 64 * 1024;
/** How much of a state to write is scanned for its lineage and serial. */
const HEADER_BYTES = 64 * 1024;
/**
 * Largest stored state read whole to learn its MD5 (same-content check, a lost race): a
 * larger one is judged by its MD5 record, so a write never pulls a huge object into memory.
 */
const HASH_READ_MAX = 256 * 1024 * 1024;

/**
 * How many of the newest versions a read looks through for the committed state, behind
 * writes that never committed (each a late writer that lost its lock: there are rarely more
 * than one or two).
 */
const LOOKBACK_VERSIONS = 10;

/** The serial objstate recorded with a write, when it did. */
function serialOf(meta: ObjectMeta): number | undefined {
  const n = Number(meta.metadata?.[META.serial]);
  return meta.metadata?.[META.serial] !== undefined && Number.isSafeInteger(n) ? n : undefined;
}

/** The committed version as the guard sees a stored state (its bytes are proven: they are the digest's). */
function currentOf(committed: GetResult, where: string): Current {
  const whole = committed.body.length <= GUARD_READ_BYTES;
  let header: StateHeader;
  try {
    header = stateHeader(committed.body.subarray(0, GUARD_READ_BYTES), whole, `the committed state at ${where}`);
  } catch {
    header = { lineage: undefined, serial: undefined, version: undefined, empty: true };
  }
  return { etag: committed.meta.etag, size: committed.body.length, header, md5: md5(committed.body), meta: committed.meta };
}

/** Leftovers younger than this may belong to a writer that is still at work. */
const LEFTOVER_MIN_AGE_MS = 60 * 60 * 1000;

/** Options of {@link ObjectStoreBackend.repairState}. */
export interface RepairOptions {
  /** The ID of a lock the caller holds; without one, the repair takes the lock itself. */
  readonly lockId?: string | undefined;
  /** Record the digest of whatever is stored, even when it does not prove a complete objstate write. */
  readonly force?: boolean | undefined;
  /** Remove leftovers at least this old (default one hour). */
  readonly leftoverMinAgeMs?: number | undefined;
  /** Time source for leftover ages (default `Date.now`). */
  readonly now?: (() => number) | undefined;
}

/** What {@link ObjectStoreBackend.repairState} found and did. */
export interface RepairReport {
  /**
   * `ok` the digest matched; `recorded-digest` a torn write was committed (its digest recorded);
   * `restored-committed` the newest version was a write that never committed, and the
   * committed state was written again over it;
   * `removed-orphan-digest` a digest without a state was removed; `no-state` nothing stored;
   * `no-lock-table` no digests to repair.
   */
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
}

/** The state being written, as {@link ObjectStoreBackend.writeState} prepared it. */
interface Incoming {
  readonly body: Buffer | ByteSource;
  readonly size: number;
  readonly header: { lineage?: string; serial?: number };
  /** Hex MD5 of the body (computed, or given by the caller). */
  readonly hashing: Promise<string>;
  /** Streamed from a source (its MD5 is then known before the write starts). */
  readonly streamed: boolean;
}

/** The stored state as the guard sees it. */
interface Current {
  readonly etag: string | undefined;
  readonly size: number;
  readonly header: StateHeader;
  readonly md5: string | undefined;
  readonly meta: ObjectMeta;
}

/**
 * The table must have exactly one key, `LockID` of type String (docs/design.md §5). An absent
 * embedded table is created (zero setup, like the embedded bucket), except read-only:
 * then false says "absent, go without it".
 */
async function checkLockTable(locks: LockTableDriver, table: string, readOnly: boolean): Promise<boolean> {
  let schema = await locks.describeKeySchema();
  if (schema === null) {
    if (locks.kind === "file" && readOnly) return false;
    if (locks.kind === "file") {
      await locks.createTable();
      schema = await locks.describeKeySchema();
    }
    if (schema === null) {
      throw new ObjstateError("TABLE_NOT_FOUND", `lock table "${table}" does not exist (${locks.location}): create it with one key, LockID of type String (objstate init --create-table)`);
    }
  }
  const only = schema.length === 1 ? schema[0] : undefined;
  if (only === undefined || only.name !== "LockID" || only.type !== "S" || only.keyType !== "HASH") {
    throw new ObjstateError(
      "TABLE_SCHEMA_INVALID",
      `lock table "${table}" must have exactly one key, LockID of type String (S); it has ${describeSchema(schema)}. Use a table keyed by LockID (String), or create one with objstate init --create-table`,
      { details: { schema } },
    );
  }
  return true;
}

/** A stored state as {@link ObjectStoreBackend.readStateVersion} read it. */
export interface StateRead {
  readonly body: Buffer;
  /** The stored object's ETag: pass it as `ifMatch` to make a write conditional on this read. */
  readonly etag: string | undefined;
  /** Hex MD5 of `body` when the read proved it (it matched the recorded digest); undefined otherwise. */
  readonly md5: string | undefined;
}

/** One workspace's state object as a listing describes it ({@link ObjectStoreBackend.listWorkspaceObjects}). */
export interface WorkspaceObject {
  readonly workspace: string;
  readonly size: number;
  /** UTC ISO time the store reports, when it does. */
  readonly lastModified: string | undefined;
  /** The same ETag {@link LastWrite.etag} reports for this write. */
  readonly etag: string | undefined;
}

/** What {@link ObjectStoreBackend.lastWrite} reports. */
export interface LastWrite {
  readonly size: number;
  readonly etag: string | undefined;
  /** UTC ISO time the store reports, when it does. */
  readonly lastModified: string | undefined;
  readonly serial: number | undefined;
  readonly lineage: string | undefined;
  readonly who: string | undefined;
  readonly lockId: string | undefined;
  readonly operation: string | undefined;
  /** The server user the write was made for, when it went through `objstate serve`. */
  readonly principal: Principal | undefined;
}
