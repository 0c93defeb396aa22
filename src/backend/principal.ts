/**
 * Who a request to `objstate serve` was authenticated as, handed down to the library so a
 * lock records its owner and a write records who made it. The library itself never
 * authenticates anyone: a principal is what its caller vouches for.
 */

/**
 * How a principal proved who it is. `password`: HTTP Basic checked against the users file;
 * `certificate`: a verified client certificate (mutual TLS) whose subject CN names the
 * user; `none`: a server without users, where every request is `anonymous`. Open for the
 * ways still to come (`token`, an OIDC identity): readers must accept values they do not know.
 */
export type PrincipalVia = "password" | "certificate" | "none" | (string & {});

/** An authenticated caller. */
export interface Principal {
  /** The user's name (`anonymous` on a server without users). */
  readonly name: string;
  readonly via: PrincipalVia;
}

/** The principal of every request to a server that runs without users. */
export const ANONYMOUS_PRINCIPAL: Principal = { name: "anonymous", via: "none" };
