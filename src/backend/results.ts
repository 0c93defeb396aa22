/** What {@link ObjectStoreBackend}'s calls return and report: the shapes the CLI, the server and the console render. */
import type { Leftover } from "../store/types.js";
import type { LockListing } from "./locks/locking.js";
import type { StateDiff } from "../state/diff.js";
import type { Principal } from "./principal.js";

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
