/** Turns a bearer credential (an API token, tokens.ts, or an OIDC ID token, oidc.ts), as Bearer or Basic password, into a user. */
import type { Principal } from "../../backend/principal.js";
import { grantsOf, unauthorized, type User } from "../users.js";
import { OidcVerifier, looksLikeJwt, type IdentityRule, type OidcOptions } from "./oidc.js";
import { TokenStore, looksLikeToken } from "./tokens.js";

/** The user whose grants a request is checked against, and the principal the library records. */
export type Authenticated = { readonly user: User; readonly principal: Principal };

interface IdentityOptions {
  readonly tokensFile?: string | undefined;
  readonly identities?: readonly IdentityRule[] | undefined;
  readonly oidc?: OidcOptions | undefined;
  readonly now?: () => number;
}

export type Credential = { readonly kind: "bearer"; readonly secret: string } | { readonly kind: "basic"; readonly user: string; readonly secret: string };

export class Identity {
  private readonly tokens: TokenStore | undefined;
  private readonly oidc: OidcVerifier;

  constructor(
    private readonly users: ReadonlyMap<string, User>,
    options: IdentityOptions = {},
  ) {
    this.tokens = options.tokensFile === undefined ? undefined : new TokenStore(options.tokensFile, options.now);
    this.oidc = new OidcVerifier(options.identities ?? [], options.oidc);
  }

  /** Is this credential one of ours to check (a token or a JWT), rather than a password? */
  handles(c: Credential): boolean {
    return c.kind === "bearer" || looksLikeToken(c.secret) || (this.oidc.enabled && looksLikeJwt(c.secret) && this.oidc.acceptsUserName(c.user));
  }

  /** The identity of a credential it {@link handles}, or UNAUTHORIZED / FORBIDDEN / IDENTITY_PROVIDER_UNAVAILABLE. */
  async resolve(c: Credential): Promise<Authenticated> {
    if (looksLikeToken(c.secret)) return this.apiToken(c.secret);
    if (!looksLikeJwt(c.secret) || !this.oidc.enabled)
      throw unauthorized("the bearer token is neither an API token (objst_…) nor an ID token of a configured identity issuer");
    const { user, oidc } = await this.oidc.verify(c.secret);
    return { user, principal: { name: user.name, via: "oidc", oidc } };
  }

  /** Any Basic user name goes with a token: the token alone names its user (CI tools insist on some user name). */
  private apiToken(secret: string): Authenticated {
    if (this.tokens === undefined) throw unauthorized("this server has no API tokens (it runs without a users file)");
    const record = this.tokens.check(secret);
    const owner = this.users.get(record.user);
    if (owner === undefined) throw unauthorized(`API token ${record.id} belongs to user ${record.user}, who is no longer in the users file`);
    // A token's own roles are capped by its user's: it never gives more than the users file does.
    const own = record.roles === undefined ? { grants: owner.grants } : { grants: grantsOf(record.roles), cappedBy: owner };
    return { user: { name: owner.name, password: undefined, ...own }, principal: { name: owner.name, via: "token", tokenId: record.id } };
  }

  async close(): Promise<void> {
    await this.tokens?.flush();
  }
}
