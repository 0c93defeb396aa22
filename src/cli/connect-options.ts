/**
 * What a command's settings (the settings table's frozen value) ask of the connections it
 * makes: kept apart from runtime.ts so that `output` does not load the lock machinery.
 */
import type { Settings } from "../config/settings-table.js";

/** What the command's settings ask of a connection: timeouts (undefined: the drivers' defaults), lease, lockfile, layout, digest retry, state encryption. */
export function connectOptionsOf(own: Settings) {
  const v = own.values;
  const retry = { timeoutMs: v.digestRetry, intervalMs: Math.min(2_000, Math.max(1, v.digestRetry)) };
  const timeouts = v.timeout === undefined ? undefined : { requestMs: v.timeout };
  return { timeouts, ttl: v.lockTtl, lockfile: v.lockfile || undefined, layout: v.layout, digestRetry: retry, encryption: v.encryption };
}
