/**
 * `--timeout`, the per-request deadline of the running command: set by the command tree
 * before a command runs, read where connections are made (runtime.ts, output.ts).
 */
import type { Timeouts } from "../io/sdk-client.js";
import { usageError } from "./io.js";

let requestTimeouts: Partial<Timeouts> | undefined;

/** Set from `--timeout` before each command runs; undefined means the defaults. */
export function setRequestTimeout(ms: number | undefined): void {
  if (ms !== undefined && ms <= 0) throw usageError("--timeout must be more than 0s", "INVALID_DURATION");
  requestTimeouts = ms === undefined ? undefined : { requestMs: ms };
}

/** The timeouts `--timeout` asked for (undefined: the defaults). */
export function cliTimeouts(): Partial<Timeouts> | undefined {
  return requestTimeouts;
}
