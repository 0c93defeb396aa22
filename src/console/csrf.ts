/**
 * CSRF tokens for the console's forms. Browsers resend Basic credentials on any request,
 * a form posted from another site included, so every action carries an HMAC of the user and
 * a time window under a key made at process start: good in its window and the next (1 to 2
 * hours by default); a restart invalidates open forms, the cost of keeping no state.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export interface CsrfOptions {
  /** HMAC key (default: 32 random bytes, new each process). */
  readonly key?: Buffer | undefined;
  /** Window length (default one hour). */
  readonly windowMs?: number | undefined;
  readonly now?: (() => number) | undefined;
}

/** One instance per process. */
export class CsrfTokens {
  // A true private field: not reachable by JSON, inspect or a stray Object.keys.
  readonly #key: Buffer;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(options: CsrfOptions = {}) {
    this.#key = options.key ?? randomBytes(32);
    this.windowMs = options.windowMs ?? 3_600_000;
    this.now = options.now ?? Date.now;
  }

  private mac(user: string, window: number): string {
    // The length prefix keeps "ab"+"1" and "a"+"b1" apart.
    return createHmac("sha256", this.#key).update(`${user.length}:${user}:${window}`).digest("base64url");
  }

  /** A token for `user`, good for this window and the next. */
  issue(user: string): string {
    const window = Math.floor(this.now() / this.windowMs);
    return `${window}.${this.mac(user, window)}`;
  }

  /** Is `token` one this process issued to `user` in the current or the previous window? */
  verify(user: string, token: string | undefined | null): boolean {
    if (typeof token !== "string") return false;
    const m = /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (m === null) return false;
    const window = Number(m[1]);
    const current = Math.floor(this.now() / this.windowMs);
    if (window !== current && window !== current - 1) return false;
    const expected = Buffer.from(this.mac(user, window));
    const given = Buffer.from(m[2] as string);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
