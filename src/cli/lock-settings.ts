/**
 * The lock settings of the running command (`--lock-ttl`, `--lockfile`, or the `--config`
 * file's `objstate` section): not fields of the seed's objects, so they travel beside the
 * config instead of in it. Set once per command by `gatherSettings`, read by `connect`.
 */

/** How this command locks. */
export interface LockSettings {
  /** Lease of every lock this command takes (ms); undefined: locks never expire. */
  readonly ttlMs?: number | undefined;
  /** Lock with a lockfile `{statePath}.tflock` (with the table too when one is configured). */
  readonly lockfile?: boolean | undefined;
}

let current: LockSettings = {};

export function setLockSettings(s: LockSettings): void {
  current = s;
}

export function lockSettings(): LockSettings {
  return current;
}
