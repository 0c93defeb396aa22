/**
 * The console's two defences against forms posted from another site (browsers resend Basic credentials): an HMAC token of
 * the user and a time window under a per-process key (a restart invalidates open forms: no state is kept), and an `Origin`
 * (else `Referer`) that must be the console's; with neither, refused: a browser sends one, and scripts use the JSON API.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** One instance per process: HMAC `key` (default 32 random bytes, new each process), windows of `windowMs` (default one hour). */
export class CsrfTokens {
  // A true private field: not reachable by JSON, inspect or a stray Object.keys.
  readonly #key: Buffer;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(options: { readonly key?: Buffer | undefined; readonly windowMs?: number | undefined; readonly now?: (() => number) | undefined } = {}) {
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
    // Both are 43 characters (the pattern, and a SHA-256 in base64url), as timingSafeEqual needs.
    return timingSafeEqual(Buffer.from(m[2] as string), Buffer.from(this.mac(user, window)));
  }
}

/** The console's origin as the request reached it: `https://host` on TLS sockets, else `http://host`. */
export function requestOrigin(req: IncomingMessage): string | undefined {
  const host = req.headers.host;
  if (host === undefined || host === "") return undefined;
  const tls = (req.socket as { encrypted?: boolean }).encrypted === true;
  return `${tls ? "https" : "http"}://${host}`.toLowerCase();
}

/** Why a POST is refused, or undefined when it comes from `expected`. */
export function crossSiteReason(headers: IncomingMessage["headers"], expected: string | undefined): string | undefined {
  if (expected === undefined) return "the request has no Host header";
  const want = expected.toLowerCase();
  if (headers["sec-fetch-site"] === "cross-site") return "the browser says the request is cross-site (Sec-Fetch-Site)";
  const origin = headers.origin;
  if (typeof origin === "string" && origin !== "") {
    // The header's value is not quoted: this reason is logged, and no request header is.
    return origin.toLowerCase() === want ? undefined : "its Origin is not this console's";
  }
  const referer = headers.referer;
  if (typeof referer === "string" && referer !== "") {
    const from = URL.canParse(referer) ? new URL(referer).origin.toLowerCase() : undefined;
    return from === want ? undefined : "the Referer is not this console";
  }
  return "the request has neither Origin nor Referer";
}
