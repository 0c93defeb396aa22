/**
 * Who is asking: HTTP Basic (as the tool's client sends it) checked against the users file,
 * or a verified client certificate whose subject CN names a user (mutual TLS). Failed
 * logins are limited by {@link LoginLimiter}: past a limit, refused before any password check.
 */
import { createHmac, randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { ANONYMOUS_PRINCIPAL, type OidcIdentity, type PrincipalVia } from "../backend/principal.js";
import { ObjstateError } from "../errors.js";
import type { Identity } from "./identity/identity.js";
import { DEFAULT_LOGIN_LIMIT, LoginLimiter, type LoginLimit } from "./login-limiter.js";
import { ROLES, verifyPassword, type Role, type User } from "./users.js";

export { DEFAULT_LOGIN_LIMIT, type LoginLimit } from "./login-limiter.js";

/** The user every request is, when the server runs without a users file (loopback or --insecure-no-auth). */
export const ANONYMOUS: User = { name: "-", password: undefined, grants: [{ glob: "*", roles: new Set<Role>(ROLES) }] };

/** How long a verified password is remembered, so that not every request pays for an scrypt hash. */
const CACHE_MS = 5 * 60_000;
const CACHE_MAX = 1024;

/** What {@link Authenticator.authenticate} found: the user, and how it authenticated. */
export interface Authenticated {
  readonly user: User;
  readonly via: PrincipalVia;
  /** For `via: "token"`: the token's public ID. */
  readonly tokenId?: string | undefined;
  /** For `via: "oidc"`: issuer, subject and the claims the rule used. */
  readonly oidc?: OidcIdentity | undefined;
}

export class Authenticator {
  private readonly limiter: LoginLimiter;
  /** HMAC(user:password) under a key made at start: the cache holds nothing a password can be recovered from offline. */
  private readonly cacheKey = randomBytes(32);
  private readonly verified = new Map<string, number>();

  constructor(
    private readonly users: ReadonlyMap<string, User> | undefined,
    limit: LoginLimit = DEFAULT_LOGIN_LIMIT,
    private readonly now: () => number = Date.now,
    /** API tokens and OIDC identities (identity/identity.ts); undefined: passwords and certificates only. */
    private readonly identity?: Identity,
  ) {
    this.limiter = new LoginLimiter(limit, now);
  }

  /** Is anyone checked at all? */
  get enabled(): boolean {
    return this.users !== undefined;
  }

  /** The user of a request and how it proved who it is, or UNAUTHORIZED / TOO_MANY_FAILED_LOGINS. */
  async authenticate(req: IncomingMessage): Promise<Authenticated> {
    const users = this.users;
    if (users === undefined) return { user: ANONYMOUS, via: ANONYMOUS_PRINCIPAL.via };
    const cert = certUser(req, users);
    if (cert !== undefined) return { user: cert, via: "certificate" };
    const bearer = parseBearer(req.headers.authorization);
    if (bearer !== undefined || this.identity !== undefined) {
      const basic = bearer === undefined ? parseBasic(req.headers.authorization) : undefined;
      const credential =
        bearer !== undefined
          ? ({ kind: "bearer", secret: bearer } as const)
          : basic === undefined
            ? undefined
            : ({ kind: "basic", user: basic.user, secret: basic.password } as const);
      if (credential !== undefined && (credential.kind === "bearer" || this.identity?.handles(credential) === true)) {
        if (this.identity === undefined)
          throw new ObjstateError("UNAUTHORIZED", "this server takes no bearer tokens: use HTTP Basic (username and password in the http backend)");
        return this.identity.resolve(credential);
      }
    }
    return { user: await this.password(req, users), via: "password" };
  }

  /** HTTP Basic, under the failed-login limits (login-limiter.ts). */
  private async password(req: IncomingMessage, users: ReadonlyMap<string, User>): Promise<User> {
    const address = req.socket.remoteAddress ?? "unknown";
    const basic = parseBasic(req.headers.authorization);
    if (basic === undefined)
      throw new ObjstateError("UNAUTHORIZED", "this server needs a user name and password (HTTP Basic): set username and password in the http backend");
    // Before the cache too: were a remembered password let through while limited, a 429
    // against a 200 would tell a guesser which guess was right.
    const attempt = this.limiter.begin(address, basic.user);
    const user = users.get(basic.user);
    const mac = createHmac("sha256", this.cacheKey).update(`${basic.user}:${basic.password}`).digest("base64");
    const until = this.verified.get(mac);
    if (user !== undefined && until !== undefined && until > this.now()) {
      attempt.release();
      return user;
    }
    let ok: boolean;
    try {
      // Unknown users cost the same scrypt (a dummy hash) as known ones.
      ok = await verifyPassword(basic.password, user?.password);
    } catch (e) {
      attempt.release();
      throw e;
    }
    if (user !== undefined && ok) {
      attempt.release();
      if (this.verified.size >= CACHE_MAX) this.verified.clear();
      this.verified.set(mac, this.now() + CACHE_MS);
      return user;
    }
    attempt.fail();
    throw new ObjstateError("UNAUTHORIZED", "wrong user name or password");
  }
}

/** `Authorization: Bearer TOKEN`, or undefined. */
export function parseBearer(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return m === null ? undefined : (m[1] as string);
}

/** `Authorization: Basic base64(user:password)`, or undefined. */
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
