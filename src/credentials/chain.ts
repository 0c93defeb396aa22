/**
 * The credentials chain (docs/design.md §4), assembled here from small sources:
 *   1. static keys (explicit > env > profile, as resolved);
 *   2. the compute-instance role from the metadata service, only when no access key was
 *      found and a compute role is set (computeRoleName, or an EcsRamRole profile);
 *   3. the standard AWS chain (aws-chain.ts), only when the seed names no identity at all:
 *      no access key, no compute role, no profile, no lone secret key or token;
 *   4. STS AssumeRole on top of that base identity when a role ARN is set (flattened
 *      field, PROVIDER_ASSUME_ROLE_ARN, the deprecated block, or a RamRoleArn profile).
 * Each source yields an identity or says, without values, why it did not.
 */
import { ObjstateError } from "../errors.js";
import type { Env, ResolvedBackendSettings } from "../resolve/settings.js";
import { parseEndpoint } from "../io/endpoint.js";
import type { Credentials, CredentialsProvider } from "./types.js";
import { fetchComputeRoleCredentials, metadataBase } from "./metadata.js";
import { refreshing, type Clock } from "./refresh.js";
import { serverNow } from "../io/server-clock.js";
import type { Timeouts } from "../io/sdk-client.js";
import { assumeRole, type AssumedRole } from "./sts.js";
import { planAwsChain, runAwsChain } from "./aws-chain.js";

/** An identity and where it came from (for the resolution report). */
export interface Identity {
  readonly provider: CredentialsProvider;
  /** `static keys (explicit)`, `compute role "r" (metadata service)`, `role arn:… assumed as …` */
  readonly source: string;
  /** For assumed roles: the session's ARN as the server reported it (`…/assumed-role/ROLE/SESSION`). */
  readonly assumedRoleArn?: string | undefined;
  /** When the first temporary credentials expire (assumed and compute roles). */
  readonly expiration?: Date | undefined;
  /** The sources tried before the one that gave this identity, each with why it gave nothing. */
  readonly tried?: readonly string[] | undefined;
}

/** Settings the chain reads (backend and remote-state settings both have them). */
export type CredentialSettings = Pick<
  ResolvedBackendSettings,
  | "accessKey"
  | "secretKey"
  | "securityToken"
  | "computeRoleName"
  | "profile"
  | "assumeRoleRoleArn"
  | "assumeRoleSessionName"
  | "assumeRoleSessionExpiration"
  | "assumeRolePolicy"
  | "stsEndpoint"
  | "endpoint"
  | "region"
>;

export interface ChainOptions {
  readonly env: Env;
  /** Time source for refresh decisions (default `Date.now`). */
  readonly clock?: Clock | undefined;
  /** Base directory for relative file: endpoints (to tell them apart from HTTP ones). */
  readonly cwd?: string | undefined;
  /** Timeouts of the STS requests (defaults: `DEFAULT_TIMEOUTS`). */
  readonly timeouts?: Partial<Timeouts> | undefined;
}

/**
 * Why the AWS chain is not consulted, or undefined when it is: the seed named an identity
 * (a profile, a lone secret key or token) that gave nothing, so another identity must not
 * stand in for it; or `env` is not the process environment, which the SDK's providers read.
 */
function awsChainBarred(s: CredentialSettings, env: Env): string | undefined {
  if (set(s.profile.value)) return `a profile of the seed's credentials file is selected (profile, ${s.profile.source}) and gave no identity`;
  if (set(s.secretKey.value)) return `a secret key is set (${s.secretKey.source}) without an access key`;
  if (set(s.securityToken.value)) return `a security token is set (${s.securityToken.source}) without an access key`;
  if (env !== process.env) return "objstate was given an environment of its own (env), and the AWS SDK's providers read only the process environment";
  return undefined;
}

type Base = { readonly identity: Identity } | { readonly skipped: string };

const set = (v: string | undefined): v is string => v !== undefined && v !== "";

/** Source 1: static keys. */
export function staticKeys(s: CredentialSettings): Base {
  const ak = s.accessKey.value;
  const sk = s.secretKey.value;
  if (!set(ak)) return { skipped: "static keys: no access key (accessKey, PROVIDER_ACCESS_KEY, PROVIDER_ACCESS_KEY_ID, or a profile)" };
  if (!set(sk)) {
    throw new ObjstateError(
      "CREDENTIALS_INCOMPLETE",
      `an access key was given (${s.accessKey.source}) but no secret key: set secretKey, PROVIDER_SECRET_KEY or PROVIDER_ACCESS_KEY_SECRET`,
    );
  }
  const creds: Credentials = { accessKeyId: ak, secretAccessKey: sk, sessionToken: set(s.securityToken.value) ? s.securityToken.value : undefined };
  const token = creds.sessionToken === undefined ? "" : " with a security token";
  return { identity: { provider: () => Promise.resolve(creds), source: `static keys (${s.accessKey.source})${token}` } };
}

/** Source 2: the compute-instance role, fetched now and refreshed before expiry. */
export async function computeRole(s: CredentialSettings, options: ChainOptions): Promise<Base> {
  const role = s.computeRoleName.value;
  if (!set(role)) return { skipped: "compute-instance role: no computeRoleName (nor an EcsRamRole profile)" };
  const fetch = (): Promise<Credentials> => fetchComputeRoleCredentials(role, options.env);
  const first = await fetch();
  let used = false;
  // The first answer is used once; later calls go back to the service as expiry nears.
  const provider = refreshing(() => (used ? fetch() : ((used = true), Promise.resolve(first))), options.clock);
  return {
    identity: {
      provider,
      source: `compute role "${role}" (${s.computeRoleName.source}) from the metadata service at ${metadataBase(options.env)}`,
      expiration: first.expiration,
    },
  };
}

/** An endpoint setting as its http(s) URL; undefined when unset or `file:` (stsEndpoint is http(s) by its rule). */
function httpUrlOf(text: string | undefined, cwd: string | undefined): string | undefined {
  if (!set(text)) return undefined;
  const p = parseEndpoint(text, cwd);
  return p.kind === "http" ? p.url : undefined;
}

/** `stsEndpoint`, else the object-store endpoint when that is http(s). */
function stsEndpointOf(s: CredentialSettings, cwd: string | undefined): string {
  const endpoint = httpUrlOf(s.stsEndpoint.value, cwd) ?? httpUrlOf(s.endpoint.value, cwd);
  if (endpoint !== undefined) return endpoint;
  throw new ObjstateError(
    "NO_STS_ENDPOINT",
    "a role is to be assumed but there is no STS endpoint: set stsEndpoint (or PROVIDER_STS_ENDPOINT); the object-store endpoint is used only when it is an http(s) one",
  );
}

/** Step 3: assume the role on top of the base identity, refreshing before expiry. */
export async function assumedRole(s: CredentialSettings, base: Identity, options: ChainOptions): Promise<Identity> {
  const roleArn = s.assumeRoleRoleArn.value as string;
  const params = {
    endpoint: stsEndpointOf(s, options.cwd),
    region: s.region.value,
    base: base.provider,
    roleArn,
    sessionName: s.assumeRoleSessionName.value ?? "tool",
    durationSeconds: s.assumeRoleSessionExpiration.value ?? 3600,
    policy: s.assumeRolePolicy.value,
    timeouts: options.timeouts,
  };
  const first: AssumedRole = await assumeRole(params);
  let used = false;
  // Expiry is in STS's clock, measured from its answers (io/server-clock.ts).
  const provider = refreshing(
    () => (used ? assumeRole(params) : ((used = true), Promise.resolve(first))),
    options.clock,
    () => serverNow(params.endpoint),
  );
  return {
    provider,
    source: `role ${roleArn} (${s.assumeRoleRoleArn.source}) assumed as session "${params.sessionName}" for ${params.durationSeconds} s${set(params.policy) ? " with a session policy" : ""}, on top of ${base.source}`,
    assumedRoleArn: first.assumedRoleArn,
    expiration: first.expiration,
  };
}

/** Source 3: the standard AWS chain, when the seed's sources gave nothing and named nothing. */
export async function awsChain(s: CredentialSettings, options: ChainOptions): Promise<{ readonly identity: Identity } | { readonly tried: readonly string[] }> {
  const barred = awsChainBarred(s, options.env);
  if (barred !== undefined) return { tried: [`AWS chain (AWS_* variables, ~/.aws, metadata services): not consulted: ${barred}`] };
  // The AWS chain's own roles (a profile's role_arn, web identity) are AWS's: their STS is
  // `stsEndpoint` when set, else the SDK's (AWS_ENDPOINT_URL_STS, ~/.aws, sts.amazonaws.com),
  // never the object-store endpoint (with AWS, that is S3).
  const r = await runAwsChain({
    env: options.env,
    stsEndpoint: httpUrlOf(s.stsEndpoint.value, options.cwd),
    region: s.region.value,
    timeouts: options.timeouts,
  });
  if (r.winner === undefined) return { tried: r.tried };
  const { first, fetch } = r.winner;
  let used = false;
  const provider = refreshing(() => (used ? fetch() : ((used = true), Promise.resolve(first))), options.clock);
  return { identity: { provider, source: r.winner.source, expiration: first.expiration, tried: r.tried } };
}

/**
 * Run the chain. Throws `NO_CREDENTIALS` listing, in order, what was tried and why each
 * gave nothing (never a value).
 */
export async function resolveIdentity(s: CredentialSettings, options: ChainOptions): Promise<Identity> {
  const tried: string[] = [];
  let base: Identity | undefined;
  for (const source of [() => Promise.resolve(staticKeys(s)), () => computeRole(s, options)]) {
    const r = await source();
    if ("identity" in r) {
      base = r.identity;
      break;
    }
    tried.push(r.skipped);
  }
  if (base === undefined) {
    const r = await awsChain(s, options);
    if ("identity" in r) base = { ...r.identity, tried: [...tried, ...(r.identity.tried ?? [])] };
    else tried.push(...r.tried);
  }
  if (base === undefined) {
    const role = set(s.assumeRoleRoleArn.value) ? ` A role (${s.assumeRoleRoleArn.source}) can only be assumed from a base identity.` : "";
    throw new ObjstateError("NO_CREDENTIALS", `no credentials found. Tried, in order:\n${tried.map((t) => `  - ${t}`).join("\n")}\n${role.trim()}`.trimEnd(), {
      details: { tried },
    });
  }
  if (!set(s.assumeRoleRoleArn.value)) return base;
  return { ...(await assumedRole(s, base, options)), tried: base.tried };
}

/**
 * Where the identity will come from, without contacting anything and without values,
 * e.g. `static keys (env:PROVIDER_ACCESS_KEY), then role arn:… (explicit)`. The AWS
 * chain's step is read off the environment and the AWS files (a profile's kind from its
 * keys); the metadata services are named, not asked.
 */
export function describeIdentityPlan(s: CredentialSettings, env: Env = process.env): string {
  let base: string;
  if (set(s.accessKey.value)) base = `static keys (${s.accessKey.source})`;
  else if (set(s.computeRoleName.value)) base = `compute role "${s.computeRoleName.value}" (${s.computeRoleName.source}) from the metadata service`;
  else {
    const barred = awsChainBarred(s, env);
    const plan = barred === undefined ? planAwsChain(env) : undefined;
    if (plan?.source === undefined)
      return `none: no access key and no compute role; ${barred === undefined ? "nothing for the AWS chain either" : `the AWS chain is not consulted: ${barred}`}`;
    base = plan.source;
  }
  return set(s.assumeRoleRoleArn.value) ? `${base}, then role ${s.assumeRoleRoleArn.value} (${s.assumeRoleRoleArn.source}) through STS` : base;
}
