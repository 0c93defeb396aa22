/**
 * The lock-table driver contract: a table keyed by the string `LockID`, of string attributes
 * (`Info` for locks, `Digest` for state digests). Drivers know nothing of lock-info JSON.
 */
import { ObjstateError } from "../errors.js";
import type { CredentialsProvider } from "../credentials/types.js";
import type { EndpointInput } from "../io/endpoint.js";
import type { Timeouts } from "../io/sdk-client.js";

export const KEY = "LockID";

/** One attribute of the table's primary key: DynamoDB's scalar `type` (`S`, `N`, `B`) and `keyType` (`HASH`, `RANGE`). */
export interface KeyAttribute {
  readonly name: string;
  readonly type: string;
  readonly keyType: string;
}

/** A lock item: its `Info` ("" when it has none) and `Expires` (epoch seconds; undefined never expires). */
export interface LeaseItem {
  readonly info: string;
  readonly expires: number | undefined;
}

/**
 * A state's digest item (docs/design.md §5): `Digest` as stored (any tool's spelling, the tool's
 * S3 backend writes it too; null when absent), `Generation` (objstate's commits since the item
 * was made; 0 when absent) and `CommitLockID` (the lock of the write the last commit made current).
 */
export interface DigestItem {
  readonly digest: string | null;
  readonly generation: number;
  readonly lockId: string | undefined;
}

/** What {@link LockTableDriver.commitDigest} sets: `lockId` undefined removes `CommitLockID`; `set` adds a repair's note. */
export interface DigestCommit {
  readonly digest: string;
  readonly generation: number;
  readonly lockId?: string | undefined;
  readonly set?: Readonly<Record<string, string>> | undefined;
}

/** An item {@link LockTableDriver.scanAttrs} found: the asked-for attributes it has, and `Expires`. */
export interface ScannedItem {
  readonly id: string;
  readonly values: Readonly<Record<string, string>>;
  readonly expires: number | undefined;
}

/** `claimWaitMs`: wait at most this long for an item another call holds (the embedded table's claim), then `STORE_BUSY`. */
export interface CommitOptions {
  readonly claimWaitMs?: number | undefined;
}

/** Reads answer null for an absent table, item or attribute. */
export interface LockTableDriver {
  readonly kind: "dynamodb" | "file";
  /** Never credentials. */
  readonly location: string;
  describeKeySchema(): Promise<KeyAttribute[] | null>;
  /** Create the table keyed by `LockID` (String); an existing one is left as it is. */
  createTable(): Promise<void>;
  /** Write `{LockID: id, [attr]: value}` only if no item exists; null when written, else the item's `attr` ("" without it). */
  putIfAbsent(id: string, attr: string, value: string): Promise<string | null>;
  get(id: string, attr: string): Promise<string | null>;
  /** Replace the whole item with `{LockID: id, [attr]: value}`. */
  put(id: string, attr: string, value: string): Promise<void>;
  /** Set attributes on an existing item only while its `attr` equals `expected` (null: lacks it); false when absent or not. */
  updateIf(id: string, attr: string, expected: string | null, set: Readonly<Record<string, string>>): Promise<boolean>;
  /** Delete only while `attr` equals `expected`; true when deleted. */
  deleteIf(id: string, attr: string, expected: string): Promise<boolean>;
  /** Delete unconditionally; absent is fine. */
  delete(id: string): Promise<void>;
  /**
   * Write `{LockID, Info, Expires?}` only if no item exists or its `Expires` (a DynamoDB number,
   * for TTL) is below `nowSec` (none never is). Null when written, else the blocking item.
   */
  putLease(id: string, info: string, expires: number | undefined, nowSec: number): Promise<LeaseItem | null>;
  getLease(id: string): Promise<LeaseItem | null>;
  /** Set `Info` and `Expires` only while `Info` equals `expectedInfo`. */
  renewLease(id: string, expectedInfo: string, info: string, expires: number): Promise<boolean>;
  getDigest(id: string): Promise<DigestItem | null>;
  /**
   * The commit point of a state write: one atomic update of digest item `id` while it is exactly
   * `seen` (null: absent), other attributes kept. True when updated or already `next` (a retry
   * after a lost reply, or an adopting reader); false when another commit came between.
   */
  commitDigest(id: string, seen: DigestItem | null, next: DigestCommit, options?: CommitOptions): Promise<boolean>;
  /** Every item with any of `attrs` (a full scan, for listings). */
  scanAttrs(attrs: readonly string[]): AsyncIterable<ScannedItem>;
  close(): void;
}

export interface LockDriverOptions {
  readonly table: string;
  /** `http(s)://…`, a bare host, or `file:` URL / path; or the endpoint already parsed. */
  readonly endpoint: EndpointInput;
  readonly region?: string | undefined;
  readonly credentials?: CredentialsProvider | undefined;
  readonly cwd?: string | undefined;
  /** Network drivers' timeouts (defaults: `DEFAULT_TIMEOUTS`). */
  readonly timeouts?: Partial<Timeouts> | undefined;
}

/** An item's attributes as text (a DynamoDB number as its digits). */
export type ItemText = Readonly<Record<string, string | undefined>>;

export function leaseOf(item: ItemText): LeaseItem {
  const expires = item["Expires"] === undefined ? undefined : Number(item["Expires"]);
  return { info: item["Info"] ?? "", expires: expires !== undefined && Number.isFinite(expires) ? expires : undefined };
}

export function digestOf(item: ItemText): DigestItem {
  const g = item["Generation"] === undefined ? 0 : Number(item["Generation"]);
  return { digest: item["Digest"] ?? null, generation: Number.isSafeInteger(g) && g > 0 ? g : 0, lockId: item["CommitLockID"] };
}

/** The reads both drivers build on their one read of an item. */
export abstract class ItemReads {
  protected abstract readText(id: string): Promise<ItemText | null>;

  async get(id: string, attr: string): Promise<string | null> {
    return (await this.readText(id))?.[attr] ?? null;
  }

  async getLease(id: string): Promise<LeaseItem | null> {
    const item = await this.readText(id);
    return item === null ? null : leaseOf(item);
  }

  async getDigest(id: string): Promise<DigestItem | null> {
    const item = await this.readText(id);
    return item === null ? null : digestOf(item);
  }
}

/** The item already holds this commit (a retry's first attempt, or an adopter's). */
export function isCommit(item: DigestItem | null, next: DigestCommit): boolean {
  return item !== null && item.digest?.trim().toLowerCase() === next.digest && item.generation === next.generation;
}

/** A create-if-absent that kept finding the item gone when it looked: something deletes and re-creates it in a loop. */
export function vanishing(id: string, location: string): ObjstateError {
  return new ObjstateError("LOCK_TABLE_ERROR", `item "${id}" in ${location} kept appearing and vanishing; gave up writing it`);
}
