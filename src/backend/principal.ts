/**
 * Who a request to `objstate serve` was authenticated as, handed down to the library so a
 * lock records its owner and a write records who made it. The library itself never
 * authenticates anyone: a principal is what its caller vouches for.
 */

/**
 * How a principal proved who it is. `password`: HTTP Basic checked against the users file;
 * `certificate`: a verified client certificate (mutual TLS) whose subject CN names the
 * user; `none`: a server without users, where every request is `anonymous`. Open for the
 * ways still to come: readers must accept values they do not know. `token`: an API token made by
 * `objstate serve token create` (its ID is in {@link Principal.tokenId}); `oidc`: a CI
 * identity's OIDC ID token matched by an identity rule (see {@link Principal.oidc}).
 */
export type PrincipalVia = "password" | "certificate" | "token" | "oidc" | "none" | (string & {});

/** An authenticated caller. */
export interface Principal {
  /** The user's name (`anonymous` on a server without users). */
  readonly name: string;
  readonly via: PrincipalVia;
  /** For `via: "token"`: the token's public ID, never the token or its hash. */
  readonly tokenId?: string;
  /**
   * For `via: "oidc"`: the issuer, the subject, and only the claims the matching rule
   * looked at, so an audit line says why the caller was let in without copying the token.
   */
  readonly oidc?: OidcIdentity;
}

/**
 * The `Owner` a lock taken by `p` records: a users-file user (password, certificate or one of
 * its API tokens) by name, as before; an OIDC identity as `oidc:NAME`, so a rule named like a
 * user can never act on that user's lock (names hold no `:`).
 */
export function lockOwnerOf(p: Principal | undefined): string | undefined {
  return p?.via === "oidc" ? `oidc:${p.name}` : p?.name;
}

/** The principal of every request to a server that runs without users. */
export const ANONYMOUS_PRINCIPAL: Principal = { name: "anonymous", via: "none" };

/** An OIDC identity as a principal names it: the issuer, the subject, and only the claims its rule used. */
export interface OidcIdentity {
  readonly issuer: string;
  readonly subject: string;
  readonly claims: Readonly<Record<string, string>>;
}
