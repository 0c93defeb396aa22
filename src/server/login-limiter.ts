/**
 * Failed-login limits of `objstate serve`: pure logic over an injectable clock.
 *
 * Failures are counted per (address, user name): a guesser slows down the name it guesses,
 * from its own address, and nobody else — not the other users behind the same load
 * balancer, not the same user elsewhere. An address that fails for many different names
 * (credential stuffing) is limited as a whole. A password check in flight holds a slot until
 * it answers, so a burst of concurrent guesses cannot all reach the check before the first
 * failure is counted. See docs/decisions/010-login-limits.md.
 */
import { isIP } from "node:net";
import { ObjstateError } from "../errors.js";

/** Failed logins allowed before answering 429 (see {@link LoginLimiter}). */
export interface LoginLimit {
  /** Failures per (address, user name) and window; further attempts get 429. */
  readonly failures: number;
  readonly windowMs: number;
  /**
   * Different user names that may fail from one address within the window; past it the
   * whole address gets 429 (credential stuffing). Default {@link DEFAULT_STUFFING_USERS}.
   */
  readonly stuffingUsers?: number | undefined;
}

export const DEFAULT_STUFFING_USERS = 20;
export const DEFAULT_LOGIN_LIMIT: LoginLimit = { failures: 10, windowMs: 60_000, stuffingUsers: DEFAULT_STUFFING_USERS };

/** Addresses remembered; past it the least recently seen is forgotten (not every one). */
export const MAX_ADDRESSES = 10_000;
/**
 * Characters of a user name kept as its key. Two names that share them share a count, but
 * only at the address that sent them, so a collision gains a guesser nothing; it bounds
 * what a name of kilobytes costs to remember.
 */
const NAME_KEY_CHARS = 64;

/** One password check that holds a slot until it is settled, once. */
export interface LoginAttempt {
  /** The check failed: the slot becomes a failure at this time. */
  fail(): void;
  /** The password was right, or the check could not run: the slot is given back. */
  release(): void;
}

interface NameRecord {
  /** Times of failures, possibly older than the window until pruned. */
  failures: number[];
  /** Checks in flight. */
  pending: number;
}

/**
 * The group an address is counted under: an IPv4 address itself (`::ffff:a.b.c.d` too),
 * an IPv6 address by its /64 (one host usually holds a whole /64).
 */
export function addressGroup(address: string): string {
  const bare = address.split("%")[0] as string;
  const kind = isIP(bare);
  if (kind === 4) return bare;
  if (kind !== 6) return address;
  const groups = ipv6Groups(bare.toLowerCase());
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [hi, lo] = [groups[6] as number, groups[7] as number];
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(":")}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` and a trailing dotted IPv4 expanded). */
function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] =>
    part === ""
      ? []
      : part.split(":").flatMap((g) => {
          if (!g.includes(".")) return [parseInt(g, 16)];
          const [a, b, c, d] = g.split(".").map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const gap = address.indexOf("::");
  if (gap < 0) return parse(address);
  const head = parse(address.slice(0, gap));
  const tail = parse(address.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/**
 * Counts failed logins and refuses attempts past the limits. Memory is bounded: at most
 * {@link MAX_ADDRESSES} address groups (least recently seen forgotten first), each with at
 * most `stuffingUsers` names.
 */
export class LoginLimiter {
  /** By address group, least recently seen first; within it, by user name key. */
  private readonly addresses = new Map<string, Map<string, NameRecord>>();
  private readonly stuffingUsers: number;

  constructor(
    private readonly limit: LoginLimit = DEFAULT_LOGIN_LIMIT,
    private readonly now: () => number = Date.now,
    private readonly maxAddresses: number = MAX_ADDRESSES,
  ) {
    this.stuffingUsers = limit.stuffingUsers ?? DEFAULT_STUFFING_USERS;
  }

  /** Address groups remembered (for tests of the bound). */
  get size(): number {
    return this.addresses.size;
  }

  /**
   * Start a password check of `user` from `address`: a slot held until the attempt is
   * settled, or TOO_MANY_FAILED_LOGINS (details.retryAfter in seconds) when the
   * (address, user) pair or the address is limited.
   */
  begin(address: string, user: string): LoginAttempt {
    const group = addressGroup(address);
    const key = user.slice(0, NAME_KEY_CHARS);
    const now = this.now();
    const since = now - this.limit.windowMs;
    let names = this.addresses.get(group);
    if (names !== undefined) {
      this.addresses.delete(group);
      this.addresses.set(group, names);
    }
    // One pass prunes what the window forgot and finds what the address and this name hold.
    let record: NameRecord | undefined;
    const untils: number[] = [];
    for (const [name, r] of names ?? []) {
      if (r.failures.some((t) => t <= since)) r.failures = r.failures.filter((t) => t > since);
      if (r.failures.length === 0 && r.pending === 0) {
        names?.delete(name);
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
    if (names === undefined) {
      names = new Map();
      this.addresses.set(group, names);
      for (const oldest of this.addresses.keys()) {
        if (this.addresses.size <= this.maxAddresses) break;
        this.addresses.delete(oldest);
      }
    }
    if (record === undefined) {
      record = { failures: [], pending: 0 };
      names.set(key, record);
    }
    record.pending += 1;
    return this.attempt(group, key, record);
  }

  private attempt(group: string, key: string, record: NameRecord): LoginAttempt {
    let settled = false;
    const settle = (failed: boolean): void => {
      if (settled) return;
      settled = true;
      record.pending -= 1;
      if (failed) record.failures.push(this.now());
      else if (record.failures.length === 0 && record.pending === 0) this.forget(group, key, record);
    };
    return { fail: () => settle(true), release: () => settle(false) };
  }

  private forget(group: string, key: string, record: NameRecord): void {
    const names = this.addresses.get(group);
    if (names?.get(key) !== record) return;
    names.delete(key);
    if (names.size === 0) this.addresses.delete(group);
  }
}

function limited(what: string, ms: number): ObjstateError {
  const retry = Math.max(1, Math.ceil(ms / 1000));
  return new ObjstateError("TOO_MANY_FAILED_LOGINS", `${what}: try again in ${retry}s`, { details: { retryAfter: retry } });
}
