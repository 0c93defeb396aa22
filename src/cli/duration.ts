/** Durations on the command line: `0s`, `500ms`, `30s`, `5m`, `1h30m` (Go style; the settings table's parser). */
import { durationOf, parseDuration } from "../config/setting-parsers.js";

export { parseDuration };

/** Parse the value of a command's own duration flag (`--older-than`); a bad one is an error naming the flag (exit 2). */
export function durationFlag(flag: string, text: string): number {
  return durationOf(text, { kind: "flag", flag });
}

/** `1h30m`, `45s`, `1.5s`, `0s` (the library words its lock waits the same way). */
export { formatWait as formatDuration } from "../backend/locks/waiting.js";
