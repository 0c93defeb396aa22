/**
 * Lease arithmetic and the held-lock handle (docs/design.md §10): the holder stops writing at sent + ttl, another process takes over only
 * when `Expires` < floor((now - margin) / 1 s); skew beyond the margin costs liveness, not data (fencing).
 */
import { ObjstateError } from "../../errors.js";
import type { LockInfo } from "./lock-info.js";

/** How far apart the clocks of a holder and an acquirer may be (default of `lockClockMargin`). */
export const DEFAULT_CLOCK_MARGIN_MS = 1_000;
/** The shortest lease: below a second the epoch-second `Expires` cannot express it. */
const MIN_TTL_MS = 1_000;

/** `Expires` of a lease taken or renewed at `nowMs` (epoch seconds). */
export function leaseExpiry(nowMs: number, ttlMs: number): number {
  return Math.ceil((nowMs + ttlMs) / 1000);
}

/** The `:now` of the takeover condition `Expires < :now`, for an acquirer whose clock says `nowMs`. */
export function takeoverBound(nowMs: number, marginMs: number): number {
  return Math.floor((nowMs - marginMs) / 1000);
}

/** May an acquirer at `nowMs` take over a lock expiring at `expires`? Never for a lock without one. */
export function isExpired(expires: number | undefined, nowMs: number, marginMs: number): boolean {
  return expires !== undefined && expires < takeoverBound(nowMs, marginMs);
}

/** The check of a `ttl` option or flag: at least {@link MIN_TTL_MS}, a whole number of ms. */
export function checkTtl(ttlMs: number | undefined, what: string): number | undefined {
  if (ttlMs === undefined) return undefined;
  if (!Number.isInteger(ttlMs) || ttlMs < MIN_TTL_MS) {
    throw new ObjstateError("INVALID_LOCK_TTL", `${what} must be at least 1s (a lease's expiry is stored in whole seconds), got ${ttlMs} ms`);
  }
  return ttlMs;
}

/** The `LOCK_LOST` error: the lease ended or another holder has the lock; nothing more is written. */
export function lockLost(where: string, id: string, why: string): ObjstateError {
  return new ObjstateError(
    "LOCK_LOST",
    `lost the lock on ${where} (ID ${id}): ${why}; nothing more was written. Take the lock again, read the state again and redo the change`,
    { details: { lockId: id } },
  );
}

/** A held lock: its info, a heartbeat that renews a lease every third of its ttl, and a signal that fires the moment the lease is lost. */
export class LockHandle {
  /** The lock info as last stored (its `Expires` moves with each renew). */
  info: LockInfo;
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private inflight: Promise<unknown> | undefined;
  private released = false;
  private stopped = false;

  constructor(
    info: LockInfo,
    /** What renews the stored lock (rejecting with `LOCK_LOST` when it is gone) and releases it. */
    private readonly ops: Pick<LockHandle, "renew" | "release">,
    private readonly ttlMs: number | undefined,
  ) {
    this.info = info;
    if (ttlMs !== undefined) this.schedule();
  }

  get id(): string {
    return this.info.ID;
  }

  /** Fires with a `LOCK_LOST` error as its reason when the lease is lost. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get lost(): boolean {
    return this.controller.signal.aborted;
  }

  /** Renew now (the heartbeat does it on its own); rejects with `LOCK_LOST` when it is gone. */
  async renew(): Promise<LockInfo> {
    if (this.lost) throw this.controller.signal.reason as Error;
    try {
      const p = this.ops.renew();
      this.inflight = p.catch(() => undefined);
      this.info = await p;
      return this.info;
    } catch (e) {
      if (e instanceof ObjstateError && e.code === "LOCK_LOST") this.lose(e);
      throw e;
    }
  }

  /** Stop the heartbeat and release the lock (after any renew in flight has settled). */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.stop();
    await this.inflight;
    if (!this.lost) {
      this.controller.abort(new ObjstateError("LOCK_RELEASED", `lock ${this.info.ID} was released`));
      await this.ops.release();
      return;
    }
    // Lost: an expired lease nobody took over yet is still ours to clear; anything else is not.
    await this.ops.release().catch((e: unknown) => {
      if (!(e instanceof ObjstateError && (e.code === "LOCK_ID_MISMATCH" || e.code === "LOCK_NOT_FOUND"))) throw e;
    });
  }

  /** Stop renewing without releasing (the lease then runs out): for tests and for a holder that must not go on. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    const ttl = this.ttlMs as number;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.renew().then(
          () => {
            if (!this.stopped && !this.lost) this.schedule();
          },
          () => {
            // A failed request is tried again at the next beat; a lost lease stops the beat.
            if (!this.stopped && !this.lost) this.schedule();
          },
        );
      },
      Math.max(1, Math.floor(ttl / 3)),
    );
    // The heartbeat alone must not keep a process alive.
    this.timer.unref();
  }

  /** @internal The backend saw the lease lost (a write's fencing check): fire the signal. */
  lose(e: ObjstateError): void {
    this.stop();
    if (!this.lost) this.controller.abort(e);
  }
}
