/** Failed logins limited per (address, name) and per address over many names; a check in flight holds a slot, so no burst passes first (docs/decisions/002-login-limits.md). */
import { addressGroup } from "./address.js";
import { ObjstateError } from "../errors.js";

export interface LoginLimit {
  readonly failures: number;
  readonly windowMs: number;
  /** Different user names that may fail from one address within the window before the whole address gets 429 (default 20). */
  readonly stuffingUsers?: number | undefined;
}

export const DEFAULT_LOGIN_LIMIT: LoginLimit = { failures: 10, windowMs: 60_000, stuffingUsers: 20 };

/** Addresses remembered; past it the least recently seen are forgotten. */
export const MAX_ADDRESSES = 10_000;
/** Characters of a user name kept as its key: bounds what a name of kilobytes costs; a collision only shares a count at one address. */
const NAME_KEY_CHARS = 64;

/** One password check that holds a slot until it is settled, once: `fail` counts it, `release` gives it back. */
export interface LoginAttempt {
  fail(): void;
  release(): void;
}

/** Times of failures (older than the window until pruned), and checks in flight. */
type NameRecord = { failures: number[]; pending: number };

/** Bounded memory: addresses live in two generations of half {@link MAX_ADDRESSES} each; a full recent one drops the older (roughly LRU). */
export class LoginLimiter {
  private recent = new Map<string, Map<string, NameRecord>>();
  private older = new Map<string, Map<string, NameRecord>>();
  private readonly stuffingUsers: number;

  constructor(
    private readonly limit: LoginLimit = DEFAULT_LOGIN_LIMIT,
    private readonly now: () => number = Date.now,
  ) {
    this.stuffingUsers = limit.stuffingUsers ?? 20;
  }

  /** Address groups remembered (for tests of the bound). */
  get size(): number {
    return this.recent.size + this.older.size;
  }

  /** Start a password check of `user` from `address`, or TOO_MANY_FAILED_LOGINS (details.retryAfter in seconds). */
  begin(address: string, user: string): LoginAttempt {
    const group = addressGroup(address);
    const key = user.slice(0, NAME_KEY_CHARS);
    const now = this.now();
    const since = now - this.limit.windowMs;
    let names = this.recent.get(group);
    if (names === undefined) {
      names = this.older.get(group) ?? new Map<string, NameRecord>();
      this.older.delete(group);
      this.remember(group, names);
    }
    // One pass prunes what the window forgot and finds what the address and this name hold.
    let record: NameRecord | undefined;
    const untils: number[] = [];
    for (const [name, r] of names) {
      if (r.failures.some((t) => t <= since)) r.failures = r.failures.filter((t) => t > since);
      if (r.failures.length === 0 && r.pending === 0) {
        // The name being checked keeps its record: deleting and setting a key on every request makes a Map slow.
        if (name !== key) names.delete(name);
        continue;
      }
      if (name === key) record = r;
      // A check in flight counts as a failure due to end soon (a second from now).
      untils.push(r.pending > 0 ? now + 1000 : Math.max(...r.failures) + this.limit.windowMs);
    }
    if (record !== undefined && record.failures.length + record.pending >= this.limit.failures) {
      const oldest = record.failures.length === 0 ? now + 1000 - this.limit.windowMs : Math.min(...record.failures);
      throw limited(`too many failed logins for user ${key} from ${group}`, oldest + this.limit.windowMs - now);
    }
    if (untils.length >= this.stuffingUsers) {
      // Limited until enough names age out to leave fewer than the threshold.
      untils.sort((a, b) => a - b);
      throw limited(`too many failed logins for different user names from ${group}`, (untils[untils.length - this.stuffingUsers] as number) - now);
    }
    if (record === undefined) {
      record = names.get(key) ?? { failures: [], pending: 0 };
      names.set(key, record);
    }
    record.pending += 1;
    const held = record;
    let settled = false;
    const settle = (failed: boolean): void => {
      if (settled) return;
      settled = true;
      held.pending -= 1;
      if (failed) held.failures.push(this.now());
    };
    return { fail: () => settle(true), release: () => settle(false) };
  }

  private remember(group: string, names: Map<string, NameRecord>): void {
    this.recent.set(group, names);
    if (this.recent.size >= MAX_ADDRESSES / 2) {
      this.older = this.recent;
      this.recent = new Map();
    }
  }
}

function limited(what: string, ms: number): ObjstateError {
  const retry = Math.max(1, Math.ceil(ms / 1000));
  return new ObjstateError("TOO_MANY_FAILED_LOGINS", `${what}: try again in ${retry}s`, { details: { retryAfter: retry } });
}
