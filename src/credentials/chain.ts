/**
 * The credentials chain (docs/design.md §4): static keys, else the compute role, else the AWS chain (only when the
 * seed names no identity), then AssumeRole on top when a role ARN is set. Each source says, without values, why it gave nothing.
 */
import { ObjstateError } from "../errors.js";
import type { Env, ResolvedBackendSettings } from "../resolve/settings.js";
import { parseEndpoint } from "../io/endpoint.js";
import type { Credentials, CredentialsProvider } from "./types.js";
import { fetchComputeRoleCredentials, metadataBase } from "./metadata.js";
import { refreshing, type Clock } from "./refresh.js";
import { serverNow } from "../io/server-clock.js";
import type { Timeouts } from "../io/sdk-client.js";
import { assumeRole } from "./sts.js";
import { planAwsChain, runAwsChain, set } from "./aws-chain.js";

/** An identity and where it came from (for the resolution report). */
export interface Identity {
  readonly provider: CredentialsProvider;
  /** `static keys (explicit)`, `compute role "r" (metadata service)`, `role arn:… assumed as …` */
  readonly source: string;
  /** For assumed roles: the session's ARN as STS reported it. */
  readonly assumedRoleArn?: string | undefined;
  /** When the first temporary credentials expire. */
  readonly expiration?: Date | undefined;
  /** The sources tried before this one, each with why it gave nothing. */
  readonly tried?: readonly string[] | undefined;
}

export interface ChainOptions {
  readonly env: Env;
  /** Time source for refresh decisions (default `Date.now`). */
  readonly clock?: Clock | undefined;
  /** Base directory of relative file: endpoints (to tell them from HTTP ones). */
  readonly cwd?: string | undefined;
  readonly timeouts?: Partial<Timeouts> | undefined;
}

/** Why the AWS chain is not consulted: the seed named an identity (another must not stand in for it), or `env` is not the one the SDK reads. */
function awsChainBarred(s: ResolvedBackendSettings, env: Env): string | undefined {
  if (set(s.profile.value)) return `a profile of the seed's credentials file is selected (profile, ${s.profile.source}) and gave no identity`;
  if (set(s.secretKey.value)) return `a secret key is set (${s.secretKey.source}) without an access key`;
  if (set(s.securityToken.value)) return `a security token is set (${s.securityToken.source}) without an access key`;
  if (env !== process.env) return "objstate was given an environment of its own (env), and the AWS SDK's providers read only the process environment";
  return undefined;
}

function staticKeys(s: ResolvedBackendSettings): Identity | string {
  const ak = s.accessKey.value;
  const sk = s.secretKey.value;
  if (!set(ak)) return "static keys: no access key (accessKey, PROVIDER_ACCESS_KEY, PROVIDER_ACCESS_KEY_ID, or a profile)";
  if (!set(sk)) {
    throw new ObjstateError(
      "CREDENTIALS_INCOMPLETE",
      `an access key was given (${s.accessKey.source}) but no secret key: set secretKey, PROVIDER_SECRET_KEY or PROVIDER_ACCESS_KEY_SECRET`,
    );
  }
  const creds: Credentials = { accessKeyId: ak, secretAccessKey: sk, sessionToken: set(s.securityToken.value) ? s.securityToken.value : undefined };
  return {
    provider: () => Promise.resolve(creds),
    source: `static keys (${s.accessKey.source})${creds.sessionToken === undefined ? "" : " with a security token"}`,
  };
}

/** The compute-instance role, fetched now and refreshed before expiry. */
async function computeRole(s: ResolvedBackendSettings, options: ChainOptions): Promise<Identity | string> {
  const role = s.computeRoleName.value;
  if (!set(role)) return "compute-instance role: no computeRoleName (nor an EcsRamRole profile)";
  const fetch = (): Promise<Credentials> => fetchComputeRoleCredentials(role, options.env);
  const first = await fetch();
  return {
    provider: refreshing(fetch, options.clock, undefined, first),
    source: `compute role "${role}" (${s.computeRoleName.source}) from the metadata service at ${metadataBase(options.env)}`,
    expiration: first.expiration,
  };
}

/** An endpoint setting as its http(s) URL; undefined when unset or `file:`. */
function httpUrlOf(text: string | undefined, cwd: string | undefined): string | undefined {
  if (!set(text)) return undefined;
  const p = parseEndpoint(text, cwd);
  return p.kind === "http" ? p.url : undefined;
}

/** Assume the role on top of the base identity, refreshing before expiry (in STS's clock, io/server-clock.ts). */
async function assumedRole(s: ResolvedBackendSettings, base: Identity, options: ChainOptions): Promise<Identity> {
  const endpoint = httpUrlOf(s.stsEndpoint.value, options.cwd) ?? httpUrlOf(s.endpoint.value, options.cwd);
  if (endpoint === undefined)
    throw new ObjstateError(
      "NO_STS_ENDPOINT",
      "a role is to be assumed but there is no STS endpoint: set stsEndpoint (or PROVIDER_STS_ENDPOINT); the object-store endpoint is used only when it is an http(s) one",
    );
  const roleArn = s.assumeRoleRoleArn.value as string;
  const params = {
    endpoint,
    region: s.region.value,
    base: base.provider,
    roleArn,
    sessionName: s.assumeRoleSessionName.value ?? "tool",
    durationSeconds: s.assumeRoleSessionExpiration.value ?? 3600,
    policy: s.assumeRolePolicy.value,
    timeouts: options.timeouts,
  };
  const first = await assumeRole(params);
  const policy = set(params.policy) ? " with a session policy" : "";
  const stsNow = (): number => serverNow(endpoint);
  return {
    provider: refreshing(() => assumeRole(params), options.clock, stsNow, first),
    source: `role ${roleArn} (${s.assumeRoleRoleArn.source}) assumed as session "${params.sessionName}" for ${params.durationSeconds} s${policy}, on top of ${base.source}`,
    assumedRoleArn: first.assumedRoleArn,
    expiration: first.expiration,
    tried: base.tried,
  };
}

/** The standard AWS chain, when the seed's sources gave nothing and named nothing; what it tried is added to `tried`. */
async function awsChain(s: ResolvedBackendSettings, options: ChainOptions, tried: string[]): Promise<Identity | undefined> {
  const barred = awsChainBarred(s, options.env);
  if (barred !== undefined) {
    tried.push(`AWS chain (AWS_* variables, ~/.aws, metadata services): not consulted: ${barred}`);
    return undefined;
  }
  // The AWS chain's own roles are AWS's: their STS is `stsEndpoint` or the SDK's, never the object-store endpoint.
  const r = await runAwsChain({
    env: options.env,
    stsEndpoint: httpUrlOf(s.stsEndpoint.value, options.cwd),
    region: s.region.value,
    timeouts: options.timeouts,
  });
  if (r.winner === undefined) {
    tried.push(...r.tried);
    return undefined;
  }
  const { first, fetch, source } = r.winner;
  return { provider: refreshing(fetch, options.clock, undefined, first), source, expiration: first.expiration, tried: [...tried, ...r.tried] };
}

/** Run the chain. Throws `NO_CREDENTIALS` listing, in order, what was tried and why each gave nothing (never a value). */
export async function resolveIdentity(s: ResolvedBackendSettings, options: ChainOptions): Promise<Identity> {
  const tried: string[] = [];
  let base: Identity | string | undefined = staticKeys(s);
  if (typeof base === "string") {
    tried.push(base);
    base = await computeRole(s, options);
  }
  if (typeof base === "string") {
    tried.push(base);
    base = await awsChain(s, options, tried);
  }
  if (base === undefined) {
    const role = set(s.assumeRoleRoleArn.value) ? `\nA role (${s.assumeRoleRoleArn.source}) can only be assumed from a base identity.` : "";
    throw new ObjstateError("NO_CREDENTIALS", `no credentials found. Tried, in order:\n${tried.map((t) => `  - ${t}`).join("\n")}${role}`, {
      details: { tried },
    });
  }
  return set(s.assumeRoleRoleArn.value) ? assumedRole(s, base, options) : base;
}

/** Where the identity will come from, in one line, without contacting anything or any value (`env`: the one the settings were resolved with). */
export function describeCredentialSource(s: ResolvedBackendSettings, env: Env = process.env): string {
  let base: string;
  if (set(s.accessKey.value)) base = `static keys (${s.accessKey.source})`;
  else if (set(s.computeRoleName.value)) base = `compute role "${s.computeRoleName.value}" (${s.computeRoleName.source}) from the metadata service`;
  else {
    const barred = awsChainBarred(s, env);
    const plan = barred === undefined ? planAwsChain(env) : undefined;
    if (plan === undefined)
      return `none: no access key and no compute role; ${barred === undefined ? "nothing for the AWS chain either" : `the AWS chain is not consulted: ${barred}`}`;
    base = plan;
  }
  return set(s.assumeRoleRoleArn.value) ? `${base}, then role ${s.assumeRoleRoleArn.value} (${s.assumeRoleRoleArn.source}) through STS` : base;
}
