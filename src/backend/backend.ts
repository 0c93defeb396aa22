/**
 * The runtime backend (DESIGN §5): state objects in a bucket, locks and digests in a
 * key-value table. The state manager; drivers below it move bytes and items.
 */
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { ObjstateError } from "../errors.js";
import { openLockTable } from "../lock/index.js";
import type { KeyAttribute, LockTableDriver } from "../lock/types.js";
import type { Env, ResolvedBackendSettings } from "../resolve/settings.js";
import { parseEndpoint } from "../store/endpoint.js";
import { openStore } from "../store/index.js";
import type { S3DriverOptions } from "../store/s3.js";
import type { Acl, ObjectStoreDriver } from "../store/types.js";
import { resolveIdentity, type Identity } from "../credentials/chain.js";
import { resolveEffectiveSettings } from "../credentials/index.js";
import type { Clock } from "../credentials/refresh.js";
import { md5Hex, md5Of } from "../util/md5.js";
import { objstateVersion } from "../version.js";
import { checkWorkspace, DEFAULT_WORKSPACE, layout, statePath, workspaceOfKey, workspacesPrefix, type Layout } from "./layout.js";
import { defaultWho, describeHolder, newLockInfo, parseLockInfo, type LockInfo } from "./lock-info.js";

export type { LockInfo } from "./lock-info.js";

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
  readonly timeouts?: Partial<import("../util/sdk-client.js").Timeouts> | undefined;
  /** Receives warnings (default: `process.emitWarning`, each kind once per process). */
  readonly onWarning?: ((message: string, code: string) => void) | undefined;
  /**
   * Connect only to read: nothing is created (an absent embedded lock table is read around,
   * as it can hold no digests). Writes still work but take no such shortcut.
   */
  readonly readOnly?: boolean | undefined;
  /** Time source for refreshing temporary credentials before they expire (default `Date.now`). */
  readonly clock?: Clock | undefined;
}

/** Options of {@link ObjectStoreBackend.readState}. */
export interface ReadOptions {
  /**
   * Sees the state as it arrives (`body` the buffer being filled, `filled` bytes in it),
   * to work during the transfer. A digest retry starts over with a new buffer. Not every
   * driver calls it.
   */
  readonly onData?: ((body: Buffer, filled: number) => void) | undefined;
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
   * Called the moment the state object is stored (before its digest is recorded), so a
   * caller that is interrupted can tell the truth about what was written.
   */
  readonly onStored?: (() => void) | undefined;
}

/** Options of {@link ObjectStoreBackend.lock}. */
export interface LockOptions {
  /** What the holder is doing (default `objstate`). */
  readonly operation?: string | undefined;
  /** Free text stored with the lock. */
  readonly info?: string | undefined;
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
  private readonly locks: LockTableDriver | undefined;
  private readonly layout: Layout;
  private readonly bucket: string;
  private readonly who: string;
  private readonly version: string;
  private readonly digestRetry: { readonly timeoutMs: number; readonly intervalMs: number };
  private readonly listPageSize: number | undefined;
  /** Lock info this instance created, by ID: lets unlock delete without reading first. */
  private readonly ownLocks = new Map<string, string>();

  private constructor(init: {
    settings: ResolvedBackendSettings;
    store: ObjectStoreDriver;
    locks: LockTableDriver | undefined;
    identity: Identity | undefined;
    options: ConnectOptions;
  }) {
    const s = init.settings;
    this.settings = s;
    this.store = init.store;
    this.locks = init.locks;
    this.identitySource = init.identity?.source;
    this.identity = init.identity === undefined ? undefined : { source: init.identity.source, assumedRoleArn: init.identity.assumedRoleArn, expiration: init.identity.expiration };
    this.layout = layout(s.prefix.value ?? "", s.key.value ?? "");
    this.bucket = s.bucket.value as string;
    this.who = init.options.who ?? defaultWho();
    this.version = init.options.toolVersion ?? objstateVersion();
    this.digestRetry = init.options.digestRetry ?? { timeoutMs: 10_000, intervalMs: 2_000 };
    this.listPageSize = init.options.listPageSize;
  }

  /**
   * Resolve the settings, open the object-store driver and, when `kvstoreTable` is set,
   * the lock table (checking its key schema before any state is touched).
   */
  static async connect(config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig, options: ConnectOptions = {}): Promise<ObjectStoreBackend> {
    const env = options.env ?? process.env;
    const warn = options.onWarning ?? defaultWarn;
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
    try {
      const table = settings.kvstoreTable.value;
      if (table === undefined || table === "") {
        warn(
          `no lock table is configured (kvstoreTable): state in bucket ${settings.bucket.value} is NOT locked, and concurrent writers can overwrite each other's changes. Set kvstoreTable and kvstoreEndpoint to enable locking.`,
          "OBJSTATE_NO_LOCKING",
        );
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
    return new ObjectStoreBackend({ settings, store, locks, identity, options });
  }

  /** Is a lock table configured? Without one, lock() and unlock() do nothing. */
  get lockingEnabled(): boolean {
    return this.locks !== undefined;
  }

  /** Object key of a workspace's state (`{prefix}/{key}`, `{prefix}/{w}/{key}`). */
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
   * The workspace's state bytes, or null when it has none. With a lock table, the bytes
   * must match the stored digest; a mismatch is retried (eventual consistency) and then
   * fails with `DIGEST_MISMATCH`.
   */
  async readState(workspace: string = DEFAULT_WORKSPACE, options: ReadOptions = {}): Promise<Buffer | null> {
    const path = this.statePath(workspace);
    const locks = this.locks;
    const onData = options.onData;
    if (locks === undefined) return (await this.store.get(path, { onData }))?.body ?? null;
    const digestId = `${this.lockId(workspace)}${DIGEST_SUFFIX}`;
    const deadline = Date.now() + this.digestRetry.timeoutMs;
    for (;;) {
      const [obj, expected] = await Promise.all([this.store.get(path, { md5: true, onData }), locks.get(digestId, "Digest")]);
      const body = obj?.body ?? null;
      if (expected === null || expected === "") return body;
      let actual = obj === null ? "" : (obj.md5 ?? md5(obj.body));
      if (actual === expected) return body;
      // The driver may have taken the MD5 from the ETag; before calling it a mismatch, hash the bytes.
      if (obj !== null && obj.md5 !== undefined) actual = md5(obj.body);
      if (actual === expected) return body;
      if (Date.now() + this.digestRetry.intervalMs > deadline) {
        throw new ObjstateError(
          "DIGEST_MISMATCH",
          `the state at ${this.describe(workspace)} does not match its digest: the lock table says ${expected}, the ${body === null ? "object is missing" : `object's MD5 is ${actual}`}. ` +
            `Either the object store has not caught up with a recent write (try again), or the state was changed outside objstate. ` +
            `If the stored state is the one you want, set the Digest of item "${digestId}" in the lock table to ${actual === "" ? "an empty string" : actual}, or delete that item.`,
          { details: { expected, actual, digestId, path } },
        );
      }
      await sleep(this.digestRetry.intervalMs);
    }
  }

  /**
   * Store the workspace's state. With a lock table: when `lockId` is given it must be the
   * current lock's ID; without one, the write takes and releases a lock itself. A write
   * while someone else holds the lock is refused (`STATE_LOCKED`). The digest is written
   * after the state; failing to write it is an error.
   */
  async writeState(workspace: string, data: Uint8Array | string, options: WriteOptions = {}): Promise<void> {
    const bytes = toBuffer(data);
    const locks = this.locks;
    if (locks !== undefined && options.lockId === undefined) {
      const lock = await this.lock(workspace, { operation: "writeState" });
      try {
        await this.putState(workspace, bytes, locks, options.onProgress);
      } finally {
        await this.unlock(workspace, lock.ID);
      }
      return;
    }
    if (locks !== undefined && options.lockId !== undefined) await this.assertHolder(workspace, options.lockId, locks);
    await this.putState(workspace, bytes, locks, options.onProgress);
  }

  private async putState(workspace: string, bytes: Buffer, locks: LockTableDriver | undefined, onProgress: WriteOptions["onProgress"]): Promise<void> {
    const s = this.settings;
    // Large states are hashed in a worker thread while they go up; the driver reuses the
    // hash to check the upload, and the lock table gets it as the digest.
    const hashing = md5Of(bytes);
    hashing.catch(() => undefined); // a failed put must not leave it unhandled; awaited below
    await this.store.put(this.statePath(workspace), bytes, { contentType: "application/json", acl: s.acl.value as Acl | undefined, encrypt: s.encrypt.value === true, md5: hashing, onProgress });
    const digest = await hashing;
    if (locks !== undefined) {
      const digestId = `${this.lockId(workspace)}${DIGEST_SUFFIX}`;
      try {
        await locks.put(digestId, "Digest", digest);
      } catch (e) {
        throw new ObjstateError(
          "DIGEST_WRITE_FAILED",
          `the state at ${this.describe(workspace)} was written, but its digest could not be stored in the lock table (${(e as Error).message}); reads will report a digest mismatch until the next successful write`,
          { cause: e },
        );
      }
    }
  }

  private async assertHolder(workspace: string, lockId: string, locks: LockTableDriver): Promise<void> {
    const raw = await locks.get(this.lockId(workspace), "Info");
    if (raw === null) {
      throw new ObjstateError("LOCK_NOT_HELD", `the state at ${this.describe(workspace)} is not locked: lock ${lockId} was released or force-unlocked; take the lock again before writing`, { details: { lockId } });
    }
    const holder = parseLockInfo(raw, this.lockId(workspace));
    if (holder.ID !== lockId) {
      throw new ObjstateError("STATE_LOCKED", `the state at ${this.describe(workspace)} is locked by someone else: ${describeHolder(holder)}`, { details: { lockInfo: holder } });
    }
  }

  /**
   * Take the workspace's lock. Returns the stored lock info (keep its `ID`). When someone
   * else holds it, throws `STATE_LOCKED` with the holder's info in `details.lockInfo`.
   * Without a lock table, returns info that was not stored (locking is off).
   */
  async lock(workspace: string = DEFAULT_WORKSPACE, options: LockOptions = {}): Promise<LockInfo> {
    const path = this.lockId(workspace);
    const info = newLockInfo({ operation: options.operation ?? "objstate", info: options.info ?? "", who: this.who, version: this.version, path });
    if (this.locks === undefined) return info;
    const raw = JSON.stringify(info);
    const existing = await this.locks.putIfAbsent(path, "Info", raw);
    if (existing !== null) {
      const holder = parseLockInfo(existing, path);
      throw new ObjstateError("STATE_LOCKED", `the state at ${this.describe(workspace)} is locked: ${describeHolder(holder)}. If that holder is gone, force-unlock with ID ${holder.ID}.`, {
        details: { lockInfo: holder },
      });
    }
    this.ownLocks.set(info.ID, raw);
    return info;
  }

  /** The current lock's info, or null when the workspace is not locked (or locking is off). */
  async lockInfo(workspace: string = DEFAULT_WORKSPACE): Promise<LockInfo | null> {
    if (this.locks === undefined) return null;
    const path = this.lockId(workspace);
    const raw = await this.locks.get(path, "Info");
    return raw === null ? null : parseLockInfo(raw, path);
  }

  /** Release the lock with this ID; `LOCK_ID_MISMATCH` when the lock has another ID. */
  async unlock(workspace: string, id: string): Promise<void> {
    const locks = this.locks;
    if (locks === undefined) return;
    const path = this.lockId(workspace);
    const own = this.ownLocks.get(id);
    // Our own lock: we know the exact stored value, so one conditional delete suffices.
    if (own !== undefined && (await locks.deleteIf(path, "Info", own))) {
      this.ownLocks.delete(id);
      return;
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      const raw = await locks.get(path, "Info");
      if (raw === null) {
        this.ownLocks.delete(id);
        throw new ObjstateError("LOCK_NOT_FOUND", `the state at ${this.describe(workspace)} is not locked (no lock with ID ${id})`, { details: { lockId: id } });
      }
      const holder = parseLockInfo(raw, path);
      if (holder.ID !== id) {
        throw new ObjstateError("LOCK_ID_MISMATCH", `lock ID ${id} does not match the lock on ${this.describe(workspace)}: ${describeHolder(holder)}`, { details: { lockId: id, lockInfo: holder } });
      }
      if (await locks.deleteIf(path, "Info", raw)) {
        this.ownLocks.delete(id);
        return;
      }
      // The item changed between read and delete: look again.
    }
    throw new ObjstateError("LOCK_TABLE_ERROR", `could not release lock ${id} on ${this.describe(workspace)}: the lock item kept changing`);
  }

  /**
   * Release someone else's lock, given the ID shown in the lock error. The same check as
   * unlock: a wrong ID is refused, so a lock taken since cannot be broken by mistake.
   */
  async forceUnlock(workspace: string, id: string): Promise<void> {
    await this.unlock(workspace, id);
  }

  /**
   * Delete a workspace's state and digest. `default` cannot be deleted; a locked
   * workspace is refused (`STATE_LOCKED`).
   */
  async deleteWorkspace(workspace: string): Promise<void> {
    checkWorkspace(workspace);
    if (workspace === DEFAULT_WORKSPACE) {
      throw new ObjstateError("CANNOT_DELETE_DEFAULT", "the default workspace cannot be deleted");
    }
    const locks = this.locks;
    const lock = await this.lock(workspace, { operation: "deleteWorkspace" });
    try {
      await this.store.delete(this.statePath(workspace));
      if (locks !== undefined) await locks.delete(`${this.lockId(workspace)}${DIGEST_SUFFIX}`);
    } finally {
      await this.unlock(workspace, lock.ID);
    }
  }

  /** Release sockets and handles. */
  close(): void {
    this.store.close();
    this.locks?.close();
  }
}

/**
 * The table must have exactly one key, `LockID` of type String (DESIGN §5). An absent
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
