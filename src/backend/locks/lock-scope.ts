/** "Use the caller's lock, else take one" (docs/decisions/056): every call that writes under the lock runs through {@link withLock}. */
import { isObjstateError, ObjstateError } from "../../errors.js";
import type { LockHandle } from "./lease.js";
import type { LockInfo } from "./lock-info.js";
import type { LockOptions } from "./locking.js";
import type { LockWait } from "./waiting.js";

/** How a call that needs the lock gets it: the caller's (`lockId`), or one it takes itself (and releases). */
export interface UnderLockOptions {
  /** The ID of the lock the caller holds; each write checks it right before writing. */
  readonly lockId?: string | undefined;
  /** Without `lockId`: wait while someone else holds the lock (default: `STATE_LOCKED` at once). */
  readonly wait?: LockWait | undefined;
}

/** Options of `ObjectStoreBackend.withLock`: the caller's lock (`lockId`, left held), or how to take one. */
export interface WithLockOptions extends LockOptions {
  readonly lockId?: string | undefined;
}

/** The lock a `withLock` work runs under. */
export interface LockScope {
  /** The lock's ID (pass it as `lockId`): the caller's, or the one taken; undefined when locking is off. */
  readonly id: string | undefined;
  /** The lock info stored when the lock was taken for this work; undefined for the caller's own lock. */
  readonly taken: LockInfo | undefined;
  /** For a lock taken here: fires with `LOCK_LOST` when its lease is lost. */
  readonly signal: AbortSignal | undefined;
}

/** What {@link withLock} needs of a connection. */
export interface LockScopeDeps {
  /** Is there any place to lock? Without one the work runs unlocked. */
  readonly lockingEnabled: boolean;
  acquire(workspace: string, options: LockOptions): Promise<LockHandle>;
  describe(workspace: string): string;
  warn(message: string, code: string): void;
}

/**
 * Run `work` under the caller's lock, or one taken here and released after, whatever the work did. A failed release is
 * `LOCK_RELEASE_FAILED` after a work that succeeded, a warning after one that failed.
 */
export async function withLock<T>(deps: LockScopeDeps, workspace: string, options: WithLockOptions, work: (scope: LockScope) => Promise<T>): Promise<T> {
  const { lockId, ...take } = options;
  if (lockId !== undefined || !deps.lockingEnabled) return work({ id: lockId, taken: undefined, signal: undefined });
  const handle = await deps.acquire(workspace, take);
  const signal = options.wait?.signal;
  if (signal?.aborted === true) {
    await release(deps, workspace, handle, true);
    throw signal.reason;
  }
  let failed = true;
  try {
    const result = await work({ id: handle.id, taken: handle.info, signal: handle.signal });
    failed = false;
    return result;
  } finally {
    await release(deps, workspace, handle, failed);
  }
}

/** The exact command that releases a lock left behind. */
export function forceUnlockCommand(id: string, workspace: string): string {
  return `objstate force-unlock ${id} -w ${workspace}`;
}

/** Release a lock taken for a work; when that fails, say which lock is left and how to release it. */
async function release(deps: LockScopeDeps, workspace: string, handle: LockHandle, quietly: boolean): Promise<void> {
  try {
    await handle.release();
  } catch (e) {
    const id = handle.id;
    const reason = e instanceof Error ? e.message : String(e);
    // Released by someone else meanwhile (force-unlock): nothing is left held, and what the work did stands.
    if (isObjstateError(e, "LOCK_NOT_FOUND") || isObjstateError(e, "LOCK_ID_MISMATCH")) {
      const done = quietly ? "failed" : "completed: what it did stands";
      deps.warn(
        `lock ${id} on ${deps.describe(workspace)} was released by someone else (force-unlock, or a lease taken over) while this operation held it; the operation ${done}; its lock was no longer there to release (${reason})`,
        "OBJSTATE_LOCK_GONE",
      );
      return;
    }
    const message = `could not release lock ${id} on ${deps.describe(workspace)} (${reason}); it is still held: release it with ${forceUnlockCommand(id, workspace)} and the same settings`;
    // After a work that failed, its own error is the one thrown.
    if (quietly) deps.warn(message, "OBJSTATE_LOCK_NOT_RELEASED");
    else throw new ObjstateError("LOCK_RELEASE_FAILED", message, { cause: e, details: { lockId: id, workspace } });
  }
}
