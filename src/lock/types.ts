/**
 * The lock-table driver contract: a key-value table keyed by the string attribute
 * `LockID`, holding string attributes (`Info` for locks, `Digest` for state digests).
 * One file per driver (`dynamodb.ts`, `file.ts`), chosen by endpoint scheme in `index.ts`.
 * Drivers know nothing of lock-info JSON; the backend does.
 */

/** One attribute of the table's primary key, as the table describes it. */
export interface KeyAttribute {
  readonly name: string;
  /** DynamoDB scalar type: `S`, `N` or `B`. */
  readonly type: string;
  /** `HASH` or `RANGE`. */
  readonly keyType: string;
}

/** A lock item as leases see it. */
export interface LeaseItem {
  /** The `Info` attribute, "" when the item has none. */
  readonly info: string;
  /** The `Expires` attribute (epoch seconds), undefined when absent (a lock that never expires). */
  readonly expires: number | undefined;
}

/**
 * A state's digest item as the commit point reads it (docs/design.md §5): `Digest` (also read and
 * written by the tool's own S3 backend), `Generation` and `CommitLockID` (objstate's).
 */
export interface DigestItem {
  /** `Digest` exactly as stored (any tool's spelling), null when the item has none. */
  readonly digest: string | null;
  /**
   * `Generation`: how many commits objstate made since the item was created; 0 when absent
   * (an item of an older objstate, or one the tool's own S3 backend replaced).
   */
  readonly generation: number;
  /** `CommitLockID`: the lock of the write the last commit made current, when recorded. */
  readonly lockId: string | undefined;
}

/** What {@link LockTableDriver.commitDigest} sets. */
export interface DigestCommit {
  /** The new `Digest` (hex MD5). */
  readonly digest: string;
  /** The new `Generation` (the one seen, plus one). */
  readonly generation: number;
  /** The new `CommitLockID`; undefined removes it. */
  readonly lockId?: string | undefined;
  /** Other string attributes to set with the commit (a repair's note). */
  readonly set?: Readonly<Record<string, string>> | undefined;
}

/** An item as {@link LockTableDriver.scanAttrs} finds it. */
export interface ScannedItem {
  readonly id: string;
  /** The asked-for string attributes the item has. */
  readonly values: Readonly<Record<string, string>>;
  /** `Expires` (epoch seconds), when present. */
  readonly expires: number | undefined;
}

/** Options of {@link LockTableDriver.commitDigest}. */
export interface CommitOptions {
  /**
   * Wait at most this long for an item another call holds (the embedded table's claim;
   * default 45 s), then throw `STORE_BUSY`: for a reader that has a fallback.
   */
  readonly claimWaitMs?: number | undefined;
}

export interface LockTableDriver {
  readonly kind: "dynamodb" | "file";
  /** Human description (endpoint and table, never credentials). */
  readonly location: string;
  /** The table's key schema, or null when the table does not exist. */
  describeKeySchema(): Promise<KeyAttribute[] | null>;
  /** Create the table with key `LockID` (String). */
  createTable(): Promise<void>;
  /**
   * Write `{LockID: id, [attr]: value}` only if no item with that LockID exists.
   * Returns null when written, else the existing item's `attr` value ("" when it lacks it).
   */
  putIfAbsent(id: string, attr: string, value: string): Promise<string | null>;
  /** The item's attribute value, or null when the item or attribute is absent. */
  get(id: string, attr: string): Promise<string | null>;
  /** Unconditional write of `{LockID: id, [attr]: value}` (replaces the item). */
  put(id: string, attr: string, value: string): Promise<void>;
  /**
   * Set attributes on an existing item only if its `attr` equals `expected` — or, with
   * `expected` null, only if the item exists without `attr` (a DynamoDB conditional
   * UpdateItem); other attributes are kept. True when updated; false when the item is
   * absent or the condition failed. Repeating a successful call succeeds again.
   */
  updateIf(id: string, attr: string, expected: string | null, set: Readonly<Record<string, string>>): Promise<boolean>;
  /** Delete the item only if its `attr` equals `expected`; true when deleted. */
  deleteIf(id: string, attr: string, expected: string): Promise<boolean>;
  /** Delete unconditionally; absent is fine. */
  delete(id: string): Promise<void>;
  /**
   * Write a lock item `{LockID: id, Info: info, Expires?: expires}` (whole item replaced)
   * only if no item exists, or the existing one has an `Expires` (epoch seconds, a number
   * on DynamoDB so a TTL can sweep it) below `nowSec`. An item without `Expires` never
   * qualifies. Returns null when written, else the blocking item.
   */
  putLease(id: string, info: string, expires: number | undefined, nowSec: number): Promise<LeaseItem | null>;
  /** The item's `Info` ("" when absent) and `Expires`, or null when there is no item. */
  getLease(id: string): Promise<LeaseItem | null>;
  /** Set `Info` and `Expires` only while `Info` equals `expectedInfo`; true when updated. */
  renewLease(id: string, expectedInfo: string, info: string, expires: number): Promise<boolean>;
  /** The digest item `id`, or null when there is no item. */
  getDigest(id: string): Promise<DigestItem | null>;
  /**
   * The commit point of a state write: one atomic conditional update of digest item `id`,
   * made only while the item is still exactly as `seen` (null: absent; else its `Digest`,
   * and its `Generation`, or no `Generation` when `seen.generation` is 0). Other attributes
   * are kept. True when updated, or when the item already holds this very commit (`Digest`
   * and `Generation` equal to `next`: a retry after a lost reply, or a reader that adopted the
   * write first); false when another commit came in between.
   */
  commitDigest(id: string, seen: DigestItem | null, next: DigestCommit, options?: CommitOptions): Promise<boolean>;
  /** Every item that has attribute `attr`, with its value (a full scan: for listings). */
  scanAttr(attr: string): AsyncIterable<{ readonly id: string; readonly value: string; readonly expires: number | undefined }>;
  /** Every item that has any of `attrs`, with those of them it has (one full scan, for listings). */
  scanAttrs(attrs: readonly string[]): AsyncIterable<ScannedItem>;
  close(): void;
}

export interface LockDriverOptions {
  readonly table: string;
  /** `http(s)://…`, a bare host, or `file:` URL / path; or the endpoint already parsed. */
  readonly endpoint: import("../io/endpoint.js").EndpointInput;
  readonly region?: string | undefined;
  readonly credentials?: import("../credentials/types.js").CredentialsProvider | undefined;
  readonly cwd?: string | undefined;
  /** Connect, idle and per-request timeouts of network drivers (defaults: `DEFAULT_TIMEOUTS`). */
  readonly timeouts?: Partial<import("../io/sdk-client.js").Timeouts> | undefined;
}
