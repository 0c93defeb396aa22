/** Waiting for a lock someone else holds (docs/decisions/056): backoff with jitter, ended by a deadline or an abort signal. */
import { setTimeout as sleep } from "node:timers/promises";
import { isObjstateError, ObjstateError } from "../../errors.js";
import type { LockInfo } from "./lock-info.js";

/** Waiting while someone else holds the lock: attempts with backoff and jitter (a quarter second at first, at most 4 s apart). */
export interface LockWait {
  /** How long to keep trying (ms); 0: one attempt. Past it, the last `STATE_LOCKED` (holder in `details.lockInfo`) again. */
  readonly timeoutMs: number;
  /** Ends the wait with the signal's reason; a lock taken meanwhile is given back by calls that take it themselves. */
  readonly signal?: AbortSignal | undefined;
  /** Called once, with the holder, when the first attempt found the lock held and waiting starts. */
  readonly onWait?: ((holder: LockInfo | undefined) => void) | undefined;
  /** How messages name the timeout (default `wait.timeoutMs`; the CLI passes `--lock-timeout`). */
  readonly setting?: string | undefined;
}

/** Backoff between attempts: the first ceiling and the cap (ms). */
const BACKOFF_FIRST_MS = 250;
const BACKOFF_CAP_MS = 4000;

/** Run `attempt` until it does not fail with `STATE_LOCKED`, for at most `wait.timeoutMs`, with equal jitter up to {@link BACKOFF_CAP_MS}. */
export async function waitWhileLocked<T>(attempt: () => Promise<T>, wait: LockWait | undefined): Promise<T> {
  const timeoutMs = wait?.timeoutMs ?? 0;
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
    throw new ObjstateError(
      "INVALID_LOCK_WAIT",
      `${wait?.setting ?? "the lock wait (wait.timeoutMs)"} must be 0 or more milliseconds, got ${String(timeoutMs)}`,
    );
  }
  const signal = wait?.signal;
  // A function, not a narrowed property: the signal may abort while an attempt is awaited.
  const aborted = (): boolean => signal?.aborted === true;
  const started = Date.now();
  const deadline = started + timeoutMs;
  let ceiling = BACKOFF_FIRST_MS;
  for (let n = 0; ; n++) {
    if (aborted()) throw abortReason(signal as AbortSignal);
    try {
      return await attempt();
    } catch (e) {
      if (!isObjstateError(e, "STATE_LOCKED")) throw e;
      if (aborted()) throw abortReason(signal as AbortSignal);
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        if (timeoutMs === 0) throw e;
        const setting = wait?.setting ?? "wait.timeoutMs";
        throw new ObjstateError(
          "STATE_LOCKED",
          `${e.message} Gave up after waiting ${formatWait(Date.now() - started)} (${setting} ${formatWait(timeoutMs)}).`,
          { details: e.details, cause: e },
        );
      }
      if (n === 0) wait?.onWait?.(e.details?.["lockInfo"] as LockInfo | undefined);
      await sleep(Math.min(remaining, ceiling / 2 + Math.random() * (ceiling / 2)), undefined, { signal }).catch(() => {
        throw abortReason(signal as AbortSignal);
      });
      ceiling = Math.min(ceiling * 2, BACKOFF_CAP_MS);
    }
  }
}

/** What an aborted wait rejects with: the signal's reason (an `AbortError` when it gave none). */
function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("the lock wait was aborted", "AbortError");
}

/** `1h30m`, `45s`, `1.5s`, `0s`, as durations are written on the command line. */
export function formatWait(ms: number): string {
  if (ms < 1000) return ms === 0 ? "0s" : `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${Math.round(ms / 100) / 10}s`;
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return `${h > 0 ? `${h}h` : ""}${m > 0 ? `${m}m` : ""}${r > 0 ? `${r}s` : ""}`;
}
