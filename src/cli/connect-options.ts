/**
 * What a command's settings (the settings table's frozen value) ask of the connections it
 * makes: kept apart from runtime.ts so that `output` does not load the lock machinery.
 */
import type { ConnectOptions } from "../backend/options.js";
import type { Settings } from "../config/settings-table.js";
import type { Timeouts } from "../io/sdk-client.js";

/** `--timeout` as the drivers take it (undefined: their defaults). */
export function timeoutsOf(own: Settings): Partial<Timeouts> | undefined {
  const ms = own.values.timeout;
  return ms === undefined ? undefined : { requestMs: ms };
}

/** What the command's settings ask of a connection: timeouts, lease, lockfile, layout, digest retry, state encryption. */
export function connectOptionsOf(own: Settings): Pick<ConnectOptions, "timeouts" | "ttl" | "lockfile" | "layout" | "digestRetry" | "encryption"> {
  const v = own.values;
  const retry = { timeoutMs: v.digestRetry, intervalMs: Math.min(2_000, Math.max(1, v.digestRetry)) };
  return { timeouts: timeoutsOf(own), ttl: v.lockTtl, lockfile: v.lockfile || undefined, layout: v.layout, digestRetry: retry, encryption: v.encryption };
}
