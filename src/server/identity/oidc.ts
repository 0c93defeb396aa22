/** The users file's `identities` rules (README "CI identities"), and the check of an ID token against them with jose (docs/decisions/074). */
import { createRemoteJWKSet, customFetch, decodeJwt, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import { readFileSync } from "node:fs";
import type { OidcIdentity as PrincipalOidc } from "../../backend/principal.js";
import { ObjstateError } from "../../errors.js";
import { globMatches, parseJsonFile, parseRoles, unauthorized, type Role, type User } from "../users.js";

export interface IdentityRule {
  /** The principal's name, and a Basic user name the token is accepted with (besides `oidc`). */
  readonly name: string;
  readonly issuer: string;
  readonly audience: string;
  /** Claim conditions: exact, or a glob when the value holds `*` or `?`. */
  readonly claims: Readonly<Record<string, string>>;
  /** Roles by workspace glob; a glob may hold `${claims.NAME}`. */
  readonly roles: Readonly<Record<string, readonly Role[]>>;
}

/** Signature algorithms accepted; never `none` and never HS* (a public key is not a shared secret). */
const OIDC_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
const CLOCK_TOLERANCE_S = 30;
const FETCH_TIMEOUT_MS = 5_000;
/** A discovery document or JWKS larger than this is refused, never taken whole. */
export const MAX_ISSUER_DOCUMENT_BYTES = 1024 * 1024;
/** A failed discovery or JWKS fetch is not tried again for this long: requests meanwhile get its 503 at once. */
const RETRY_AFTER_FAILURE_MS = 30_000;
/** A claim value that may be put into a workspace glob: no glob characters, nothing to escape. */
const SAFE_CLAIM = /^[A-Za-z0-9._/-]{1,200}$/;
const PLACEHOLDER = /\$\{claims\.([A-Za-z0-9_]+)\}/g;
/** A claim longer than this never meets a condition: no real CI claim is, and a signed token may hold anything. */
export const MAX_CLAIM_LENGTH = 1024;

function ruleError(file: string, i: number, problem: string): ObjstateError {
  return new ObjstateError("USERS_FILE_INVALID", `users file ${file}: identities[${i}]: ${problem}; see the README's "CI identities" section`);
}

/** Is `url` an https URL, or http on a loopback host (the tests' issuer)? */
function allowedIssuerUrl(url: string): boolean {
  const u = URL.canParse(url) ? new URL(url) : undefined;
  return u?.protocol === "https:" || (u?.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(u.hostname));
}

export function parseIdentities(doc: unknown, file: string): IdentityRule[] {
  const { identities: list, users } = (doc ?? {}) as { identities?: unknown; users?: Record<string, unknown> };
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw ruleError(file, 0, "identities must be a list of rules");
  return list.map((raw: unknown, i) => {
    const r = raw as Partial<Record<keyof IdentityRule, unknown>> | null;
    if (r === null || typeof r !== "object") throw ruleError(file, i, "must be an object");
    for (const k of ["name", "issuer", "audience"] as const)
      if (typeof r[k] !== "string" || r[k] === "") throw ruleError(file, i, `${k} must be a non-empty string`);
    if ((r.name as string).includes(":")) throw ruleError(file, i, 'name must not hold ":"');
    if (users !== undefined && Object.hasOwn(users, r.name as string))
      throw ruleError(file, i, `name ${JSON.stringify(r.name)} is also a user in users: rename the rule (a principal is one or the other)`);
    if (!allowedIssuerUrl(r.issuer as string))
      throw ruleError(file, i, `issuer ${JSON.stringify(r.issuer)} must be an https URL (http only on 127.0.0.1, [::1] or localhost)`);
    const claims = (r.claims ?? {}) as Record<string, unknown>;
    if (typeof claims !== "object" || Array.isArray(claims) || Object.values(claims).some((v) => typeof v !== "string"))
      throw ruleError(file, i, 'claims must be {"CLAIM": "value or glob"}');
    const roles = parseRoles(r.roles, "roles", (problem) => ruleError(file, i, problem));
    for (const glob of Object.keys(roles))
      if (glob.replace(PLACEHOLDER, "").includes("${"))
        throw ruleError(file, i, `roles glob ${JSON.stringify(glob)}: the only placeholder is \${claims.NAME} (NAME of letters, digits, _)`);
    return { name: r.name as string, issuer: r.issuer as string, audience: r.audience as string, claims: claims as Record<string, string>, roles };
  });
}

/** The `identities` rules of a users file (read again: parseUsers keeps only `users`). */
export function loadIdentityRules(file: string): IdentityRule[] {
  const bad = (problem: string): ObjstateError => new ObjstateError("USERS_FILE_INVALID", `users file ${file}: ${problem}`);
  return parseIdentities(parseJsonFile(readFileSync(file, "utf8"), bad), file);
}

/** The user a matching rule makes of a verified token, and the claims it looked at; undefined if the rule does not match. */
export function applyRule(rule: IdentityRule, payload: JWTPayload): { user: User; claims: Record<string, string> } | undefined {
  const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (payload.iss !== rule.issuer || !aud.includes(rule.audience)) return undefined;
  const used: Record<string, string> = {};
  for (const [name, want] of Object.entries(rule.claims)) {
    const v = payload[name];
    // Booleans and numbers as JSON writes them (`ref_protected: "true"`).
    const got = typeof v === "string" ? v : typeof v === "boolean" || typeof v === "number" ? String(v) : undefined;
    if (got === undefined || got.length > MAX_CLAIM_LENGTH) return undefined;
    if (!(/[*?]/.test(want) ? globMatches(want, got) : got === want)) return undefined;
    used[name] = got;
  }
  const grants: { glob: string; roles: ReadonlySet<Role> }[] = [];
  for (const [glob, roles] of Object.entries(rule.roles)) {
    let ok = true;
    const filled = glob.replace(PLACEHOLDER, (_, name: string) => {
      const v = payload[name];
      // Only string claims of a safe charset: a claim can never widen a glob (`*`) or escape it.
      if (typeof v !== "string" || !SAFE_CLAIM.test(v)) {
        ok = false;
        return "";
      }
      used[name] = v;
      return v;
    });
    if (ok) grants.push({ glob: filled, roles: new Set(roles) });
  }
  if (grants.length === 0) return undefined;
  return { user: { name: rule.name, password: undefined, grants }, claims: used };
}

export function looksLikeJwt(text: string): boolean {
  return /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/.test(text);
}

export interface OidcOptions {
  /** How soon after a JWKS fetch an unknown `kid` may fetch it again (jose's cooldown). Default 30 s. */
  readonly refreshCooldownMs?: number;
  readonly fetchTimeoutMs?: number;
  /** How long a failed discovery or JWKS fetch is not tried again. Default 30 s. */
  readonly retryAfterFailureMs?: number;
}

/** `fetch` that answers only a 200 of at most {@link MAX_ISSUER_DOCUMENT_BYTES} (read whole, so nothing larger is buffered). */
async function cappedFetch(url: string, init: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += (chunk as Uint8Array).length;
    if (size > MAX_ISSUER_DOCUMENT_BYTES) throw new Error(`its answer is larger than ${MAX_ISSUER_DOCUMENT_BYTES} bytes`);
    chunks.push(chunk as Uint8Array);
  }
  return new Response(Buffer.concat(chunks), { status: 200, headers: { "content-type": res.headers.get("content-type") ?? "application/json" } });
}

type KeySet = ReturnType<typeof createRemoteJWKSet>;

/** Per issuer: discovery fetched once (again a while after it failed), then jose's remote JWKS, refetched on an unknown `kid` once per cooldown. */
export class OidcVerifier {
  private readonly keySets = new Map<string, Promise<KeySet>>();
  private readonly failedJwks = new Map<string, { until: number; why: string }>();

  constructor(
    private readonly rules: readonly IdentityRule[],
    private readonly options: OidcOptions = {},
  ) {}

  get enabled(): boolean {
    return this.rules.length > 0;
  }

  acceptsUserName(basicUser: string): boolean {
    return basicUser === "oidc" || this.rules.some((r) => r.name === basicUser);
  }

  private async discover(issuer: string): Promise<KeySet> {
    const url = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
    const timeout = this.options.fetchTimeoutMs ?? FETCH_TIMEOUT_MS;
    let doc: { issuer?: unknown; jwks_uri?: unknown };
    try {
      doc = (await (await cappedFetch(url, { signal: AbortSignal.timeout(timeout), redirect: "error" })).json()) as typeof doc;
    } catch (e) {
      throw unavailable(issuer, `its discovery document ${url} could not be fetched (${(e as Error).message})`);
    }
    if (doc.issuer !== issuer) throw unavailable(issuer, `its discovery document names issuer ${JSON.stringify(doc.issuer)}, not ${issuer}`);
    if (typeof doc.jwks_uri !== "string" || !allowedIssuerUrl(doc.jwks_uri)) throw unavailable(issuer, "its discovery document has no https jwks_uri");
    return createRemoteJWKSet(new URL(doc.jwks_uri), {
      timeoutDuration: timeout,
      cooldownDuration: this.options.refreshCooldownMs ?? 30_000,
      cacheMaxAge: 10 * 60_000,
      [customFetch]: (url, init) => this.fetchJwks(url, init),
    });
  }

  /** jose's JWKS fetch, capped, and refused without a fetch while its last failure is recent. */
  private async fetchJwks(url: string, init: RequestInit): Promise<Response> {
    const failed = this.failedJwks.get(url);
    if (failed !== undefined && failed.until > Date.now()) throw new Error(`${failed.why}; not tried again before ${new Date(failed.until).toISOString()}`);
    try {
      return await cappedFetch(url, init);
    } catch (e) {
      this.failedJwks.set(url, { until: Date.now() + (this.options.retryAfterFailureMs ?? RETRY_AFTER_FAILURE_MS), why: (e as Error).message });
      throw e;
    }
  }

  /** UNAUTHORIZED (not a valid token of a configured issuer), FORBIDDEN (no rule matches), IDENTITY_PROVIDER_UNAVAILABLE; never quoting the token. */
  async verify(jwt: string): Promise<{ user: User; oidc: PrincipalOidc }> {
    let iss: string | undefined;
    try {
      iss = decodeJwt(jwt).iss;
    } catch {
      throw unauthorized("the bearer token is not a well-formed JWT");
    }
    const rules = this.rules.filter((r) => r.issuer === iss);
    if (rules.length === 0)
      throw unauthorized(`no identity rule trusts the token's issuer ${JSON.stringify(iss ?? null)}: add one to identities in the users file`);
    const issuer = iss as string;
    let keySet = this.keySets.get(issuer);
    if (keySet === undefined) {
      this.keySets.set(issuer, (keySet = this.discover(issuer)));
      // A failed discovery is answered from memory for a while, then tried again.
      keySet.catch(() => setTimeout(() => this.keySets.delete(issuer), this.options.retryAfterFailureMs ?? RETRY_AFTER_FAILURE_MS).unref());
    }
    const keys = await keySet;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, keys, {
        issuer,
        audience: [...new Set(rules.map((r) => r.audience))],
        algorithms: OIDC_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ["sub", "exp", "iat"],
      }));
    } catch (e) {
      throw refusal(issuer, e);
    }
    for (const rule of rules) {
      const made = applyRule(rule, payload);
      if (made !== undefined) return { user: made.user, oidc: { issuer, subject: payload.sub as string, claims: made.claims } };
    }
    throw new ObjstateError(
      "FORBIDDEN",
      `no identity rule of issuer ${issuer} matches the token's claims (sub ${JSON.stringify(payload.sub)}): check the rules' claims in the users file`,
    );
  }
}

function unavailable(issuer: string, why: string): ObjstateError {
  return new ObjstateError("IDENTITY_PROVIDER_UNAVAILABLE", `cannot check tokens of OIDC issuer ${issuer}: ${why}; try again when the issuer is reachable`);
}

/** jose's failure as our error: the issuer unreachable is 503, anything about the token 401. */
function refusal(issuer: string, e: unknown): ObjstateError {
  if (e instanceof joseErrors.JWKSTimeout) return unavailable(issuer, "its JWKS did not answer in time");
  if (e instanceof joseErrors.JWTExpired) return unauthorized("the ID token has expired: the CI job must request a fresh one");
  if (e instanceof joseErrors.JWTClaimValidationFailed)
    return unauthorized(
      `the ID token was refused: its ${e.claim} claim ${e.reason === "check_failed" ? "does not match" : "is missing or invalid"} (${e.message})`,
    );
  if (e instanceof joseErrors.JWKSNoMatchingKey) return unauthorized(`the ID token's key is not among issuer ${issuer}'s published keys`);
  if (e instanceof joseErrors.JOSEAlgNotAllowed)
    return unauthorized(`the ID token's signature algorithm is not allowed (allowed: ${OIDC_ALGORITHMS.join(", ")})`);
  if (e instanceof joseErrors.JWKSInvalid || (e instanceof joseErrors.JOSEError && e.code === "ERR_JOSE_GENERIC"))
    return unavailable(issuer, `its JWKS could not be fetched (${e.message})`);
  if (e instanceof joseErrors.JOSEError) return unauthorized(`the ID token was refused (${e.code})`);
  // Anything else came from fetching the JWKS (a refused connection, a bad body).
  return unavailable(issuer, `its JWKS could not be fetched (${(e as Error).message})`);
}
