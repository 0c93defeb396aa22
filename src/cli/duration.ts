/** Durations on the command line: `0s`, `500ms`, `30s`, `5m`, `1h30m` (Go style). */
import { usageError } from "./io.js";

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/** Milliseconds in `text`, or undefined when it is not a duration. A bare `0` is zero. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (t === "0") return 0;
  if (!WHOLE.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(PART)) ms += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

/** Parse the value of a duration flag; a bad one is a usage error naming the flag. */
export function durationFlag(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw usageError(`${flag} must be a duration such as 0s, 30s, 5m or 1h30m, got ${JSON.stringify(text)}`, "INVALID_DURATION");
  return ms;
}

/** `1h30m`, `45s`, `1.5s`, `0s` (the library words its lock waits the same way). */
export { formatWait as formatDuration } from "../backend/waiting.js";
