/**
 * The credentials chain (DESIGN §4). Each source is a small function that either gives an
 * identity or says why it gave none; `resolveIdentity` tries them in order.
 */
import { ObjstateError } from "../errors.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import type { Credentials, CredentialsProvider } from "../store/types.js";

/** An identity and where it came from (for the resolution report). */
export interface Identity {
  readonly provider: CredentialsProvider;
  /** `static keys (explicit)`, `static keys (env:PROVIDER_ACCESS_KEY)`, … */
  readonly source: string;
}

/** A source either yields an identity or explains, without values, why it did not. */
type SourceResult = { readonly identity: Identity } | { readonly skipped: string };

/** Settings a credentials source reads (backend and remote-state settings both have them). */
export type CredentialSettings = Pick<ResolvedBackendSettings, "accessKey" | "secretKey" | "securityToken">;

/** Static keys: access key + secret key (+ token), from explicit, env or profile. */
export function staticKeys(s: CredentialSettings): SourceResult {
  const ak = s.accessKey.value;
  const sk = s.secretKey.value;
  if (ak === undefined || ak === "") return { skipped: "static keys: no accessKey (explicit, PROVIDER_ACCESS_KEY, PROVIDER_ACCESS_KEY_ID)" };
  if (sk === undefined || sk === "") {
    throw new ObjstateError("CREDENTIALS_INCOMPLETE", `an access key was given (${s.accessKey.source}) but no secret key: set secretKey, PROVIDER_SECRET_KEY or PROVIDER_ACCESS_KEY_SECRET`);
  }
  const creds: Credentials = { accessKeyId: ak, secretAccessKey: sk, sessionToken: s.securityToken.value || undefined };
  return { identity: { provider: () => Promise.resolve(creds), source: `static keys (${s.accessKey.source})` } };
}

/**
 * The first identity the chain yields. Throws `NO_CREDENTIALS` listing, in order, what
 * was tried and why each gave nothing (never a value).
 */
export function resolveIdentity(s: CredentialSettings): Identity {
  const tried: string[] = [];
  for (const source of [staticKeys]) {
    const r = source(s);
    if ("identity" in r) return r.identity;
    tried.push(r.skipped);
  }
  throw new ObjstateError("NO_CREDENTIALS", `no credentials found for the object store. Tried, in order:\n${tried.map((t) => `  - ${t}`).join("\n")}`, { details: { tried } });
}
