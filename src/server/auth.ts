/** Who is asking: a token (identity/identity.ts), HTTP Basic under failed-login limits, or a verified client certificate's CN. */
import { createHmac, randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { ANONYMOUS_PRINCIPAL } from "../backend/principal.js";
import type { Authenticated, Identity } from "./identity/identity.js";
import { DEFAULT_LOGIN_LIMIT, LoginLimiter, type LoginLimit } from "./login-limiter.js";
import { ROLES, unauthorized, verifyPassword, type Role, type User } from "./users.js";

export { DEFAULT_LOGIN_LIMIT, type LoginLimit } from "./login-limiter.js";
export type { Authenticated } from "./identity/identity.js";

/** The user every request is, when the server runs without a users file (loopback or --insecure-no-auth). */
export const ANONYMOUS: User = { name: "-", password: undefined, grants: [{ glob: "*", roles: new Set<Role>(ROLES) }] };

/** How long a verified password is remembered, so that not every request pays for an scrypt hash. */
const CACHE_MS = 5 * 60_000;
const CACHE_MAX = 1024;

export class Authenticator {
  private readonly limiter: LoginLimiter;
  /** HMAC(user:password) under a key made at start: the cache holds nothing a password can be recovered from offline. */
  private readonly cacheKey = randomBytes(32);
  private readonly verified = new Map<string, number>();

  constructor(
    private readonly users: ReadonlyMap<string, User> | undefined,
    limit: LoginLimit = DEFAULT_LOGIN_LIMIT,
    private readonly now: () => number = Date.now,
    private readonly identity?: Identity,
  ) {
    this.limiter = new LoginLimiter(limit, now);
  }

  /** The user of a request and how it proved who it is, or UNAUTHORIZED / TOO_MANY_FAILED_LOGINS. */
  async authenticate(req: IncomingMessage): Promise<Authenticated> {
    const users = this.users;
    // A server without users names no one: its records say `anonymous`, never the placeholder user.
    if (users === undefined) return { user: ANONYMOUS, principal: ANONYMOUS_PRINCIPAL };
    const cert = certUser(req, users);
    if (cert !== undefined) return { user: cert, principal: { name: cert.name, via: "certificate" } };
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];
    if (bearer !== undefined) {
      if (this.identity === undefined) throw unauthorized("this server takes no bearer tokens: use HTTP Basic (username and password in the http backend)");
      return this.identity.resolve({ kind: "bearer", secret: bearer });
    }
    const basic = parseBasic(req.headers.authorization);
    if (basic === undefined) throw unauthorized("this server needs a user name and password (HTTP Basic): set username and password in the http backend");
    const credential = { kind: "basic", user: basic.user, secret: basic.password } as const;
    if (this.identity?.handles(credential) === true) return this.identity.resolve(credential);
    const user = await this.password(req.socket.remoteAddress ?? "unknown", basic, users);
    return { user, principal: { name: user.name, via: "password" } };
  }

  private async password(address: string, basic: { user: string; password: string }, users: ReadonlyMap<string, User>): Promise<User> {
    // Before the cache too: a remembered password let through while limited (200 against 429) would tell a guesser it was right.
    const attempt = this.limiter.begin(address, basic.user);
    const user = users.get(basic.user);
    const mac = createHmac("sha256", this.cacheKey).update(`${basic.user}:${basic.password}`).digest("base64");
    const until = this.verified.get(mac);
    try {
      if (user !== undefined && until !== undefined && until > this.now()) return user;
      // Unknown users cost the same scrypt (a dummy hash) as known ones.
      if (!(await verifyPassword(basic.password, user?.password)) || user === undefined) {
        attempt.fail();
        throw unauthorized("wrong user name or password");
      }
    } finally {
      // An attempt settles once: after a failure, this is no release.
      attempt.release();
    }
    if (this.verified.size >= CACHE_MAX) this.verified.clear();
    this.verified.set(mac, this.now() + CACHE_MS);
    return user;
  }
}

export function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? "");
  if (m === null) return undefined;
  const text = Buffer.from(m[1] as string, "base64").toString("utf8");
  const colon = text.indexOf(":");
  return colon < 0 ? undefined : { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

function certUser(req: IncomingMessage, users: ReadonlyMap<string, User>): User | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (socket.authorized !== true || typeof socket.getPeerCertificate !== "function") return undefined;
  const cn = socket.getPeerCertificate().subject?.CN;
  const name = Array.isArray(cn) ? cn[0] : cn;
  return typeof name === "string" ? users.get(name) : undefined;
}
