/** Who a request to `objstate serve` was authenticated as, so a lock records its owner and a write who made it; the caller vouches. */

/** How a principal proved who it is: `password`, `certificate` (mutual TLS), `token` (API), `oidc` (a CI's ID token), `none` (no users); accept others. */
export type PrincipalVia = "password" | "certificate" | "token" | "oidc" | "none" | (string & {});

/** An authenticated caller. */
export interface Principal {
  /** The user's name (`anonymous` on a server without users). */
  readonly name: string;
  readonly via: PrincipalVia;
  /** For `via: "token"`: the token's public ID, never the token or its hash. */
  readonly tokenId?: string;
  /** For `via: "oidc"`: the issuer, the subject, and only the claims the matching rule looked at. */
  readonly oidc?: OidcIdentity;
}

/** The `Owner` a lock taken by `p` records: a user by name, an OIDC identity as `oidc:NAME` (names hold no `:`, so they never meet). */
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
