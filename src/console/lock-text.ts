/** The one wording of a lock, used by the pages and by the live script's JSON. Pure. */
import { formatAgo, formatTime } from "./format.js";
import type { LockView } from "./types.js";

/** `locked by who (operation) since 2026-… UTC, lease until …`. */
export function lockText(lock: LockView, now: number): string {
  const since = lock.created === "" ? "" : ` since ${formatTime(lock.created)} (${formatAgo(lock.created, now)})`;
  const lease = lock.expires === undefined ? "" : `, lease until ${formatTime(lock.expires)}`;
  return `locked by ${lock.who || "unknown"} (${lock.operation || "unknown operation"})${since}${lease}`;
}
