/** Small formatters shared by the pages (and the CLI's lock listing): sizes, times, locks. Pure. */
import type { LockView } from "./types.js";

/** Bytes as `1.2 MiB`. */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return "?";
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  for (; v >= 1024 && i < units.length - 1; i++) v /= 1024;
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** A UTC ISO time as `2026-11-24 00:52 UTC`; the text itself when it is not a time. */
export function formatTime(iso: string | undefined): string {
  if (iso === undefined || iso === "") return "unknown";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return `${new Date(t).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** Below which age (ms) each unit (ms) is used. */
const AGO_UNITS = [
  [60_000, 1000, "s"],
  [3_600_000, 60_000, "min"],
  [172_800_000, 3_600_000, "h"],
  [Infinity, 86_400_000, "d"],
] as const;

/** How long ago (or from now) `iso` is, relative to `now`: `5 min ago`, `in 2 h`. */
export function formatAgo(iso: string | undefined, now: number): string {
  if (iso === undefined || iso === "") return "";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const a = Math.abs(now - t);
  const [, unit, name] = AGO_UNITS.find(([below]) => a < below) as (typeof AGO_UNITS)[number];
  return now - t >= 0 ? `${Math.round(a / unit)} ${name} ago` : `in ${Math.round(a / unit)} ${name}`;
}

/** The Go names of the tool's run types (backendrun/operation_type.go) as people say them; import and console name none. */
const RUN_TYPES: Readonly<Record<string, string>> = {
  OperationTypeApply: "apply",
  OperationTypePlan: "plan",
  OperationTypeRefresh: "refresh",
  OperationTypeInvalid: "import or console",
};

/** `apply` for `OperationTypeApply`, `state mv` for `state-mv`; any other text as it is. */
export function operationName(operation: string): string {
  if (Object.hasOwn(RUN_TYPES, operation)) return RUN_TYPES[operation] as string;
  const command = /^(state|workspace)-([a-z-]+)$/.exec(operation);
  return command === null ? operation : `${command[1] as string} ${command[2] as string}`;
}

/** The one wording of a lock (pages and the live script's JSON): `locked by who (operation) since …, lease until …`. */
export function lockText(lock: LockView, now: number): string {
  const since = lock.created === "" ? "" : ` since ${formatTime(lock.created)} (${formatAgo(lock.created, now)})`;
  const lease = lock.expires === undefined ? "" : `, lease until ${formatTime(lock.expires)}`;
  return `locked by ${lock.who || "unknown"} (${lock.operation === "" ? "unknown operation" : operationName(lock.operation)})${since}${lease}`;
}

/** `3 min ago (2026-… UTC)`, or `unknown` when the holder did not say. */
export function lockAge(lock: LockView, now: number): string {
  const ago = formatAgo(lock.created, now);
  return ago === "" ? "unknown (the holder did not say when)" : `${ago} (${formatTime(lock.created)})`;
}

/** `expires in 4 min (…)`, `expired 2 min ago (…)`, or `never` for a lock without a lease. */
export function leaseText(lock: LockView, now: number): string {
  if (lock.expires === undefined) return "never: no lease, held until released";
  const at = Date.parse(lock.expires);
  if (Number.isNaN(at)) return `unknown (${lock.expires})`;
  const when = `${formatAgo(lock.expires, now)} (${formatTime(lock.expires)})`;
  return at > now ? `expires ${when}` : `expired ${when}: another client may take the lock over`;
}
