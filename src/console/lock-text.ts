/** The one wording of a lock, used by the pages and by the live script's JSON. Pure. */
import { formatAgo, formatTime } from "./format.js";
import { operationName } from "./operation.js";
import type { LockView } from "./types.js";

/** `locked by who (operation) since 2026-… UTC, lease until …`. */
export function lockText(lock: LockView, now: number): string {
  const since = lock.created === "" ? "" : ` since ${formatTime(lock.created)} (${formatAgo(lock.created, now)})`;
  const lease = lock.expires === undefined ? "" : `, lease until ${formatTime(lock.expires)}`;
  return `locked by ${lock.who || "unknown"} (${lock.operation === "" ? "unknown operation" : operationName(lock.operation)})${since}${lease}`;
}

/** How long ago the lock was taken: `3 min ago (2026-… UTC)`, or `unknown` when the holder did not say. */
export function lockAge(lock: LockView, now: number): string {
  const ago = formatAgo(lock.created, now);
  return ago === "" ? "unknown (the holder did not say when)" : `${ago} (${formatTime(lock.created)})`;
}

/** The lock's lease: `expires in 4 min (…)`, `expired 2 min ago (…)`, or `never` for a lock without one. */
export function leaseText(lock: LockView, now: number): string {
  if (lock.expires === undefined) return "never: no lease, held until released";
  const at = Date.parse(lock.expires);
  if (Number.isNaN(at)) return `unknown (${lock.expires})`;
  const when = `${formatAgo(lock.expires, now)} (${formatTime(lock.expires)})`;
  return at > now ? `expires ${when}` : `expired ${when}: another client may take the lock over`;
}
