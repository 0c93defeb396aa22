/**
 * The standard AWS credential chain (docs/decisions/019-aws-credential-chain.md): the SDK's own
 * providers, one step each in the order of its Node default chain, so that objstate can say which
 * one won and why each before it gave nothing. The AWS files are read here only to name a
 * profile's kind and explain why it gave nothing; credentials always come from the SDK.
 */
import * as path from "node:path";
import { isObjstateError, ObjstateError } from "../errors.js";
import type { Env } from "../resolve/settings.js";
import type { Credentials } from "./types.js";
import { redactText, redactUrl } from "../util/redact.js";
import { DEFAULT_REGION, MAX_ATTEMPTS, resolveTimeouts, withoutNodeVersionWarning, type Timeouts } from "../io/sdk-client.js";
import { field, sdkErrorName, sdkHttpStatus } from "../io/sdk-errors.js";
import { FILE_LIMITS, ReadFileError, readBoundedFile } from "../io/read-file.js";
import { expandHome } from "./shared-file.js";
import { METADATA_TIMEOUT_MS } from "./metadata.js";

export interface AwsChainContext {
  readonly env: Env;
  /** Where the STS calls of a profile's role or of web identity go; undefined: where the SDK sends them. */
  readonly stsEndpoint: string | undefined;
  readonly region: string | undefined;
  readonly timeouts?: Partial<Timeouts> | undefined;
}

type SdkProviders = typeof import("@aws-sdk/credential-providers");
type Provider = () => Promise<Credentials>;

/** Set and not empty. */
export const set = (v: string | undefined): v is string => v !== undefined && v !== "";

/** The kind of credentials a profile holds, in `fromIni`'s order. */
type ProfileKind = "role" | "keys" | "web-identity" | "process" | "sso";

type ProfileView = ReturnType<typeof readAwsProfile>;

type Sections = Map<string, Map<string, string>>;

/** An INI text's sections as the SDK reads them: `#`/`;` comments, and `key =` opening a sub-section of indented `key.sub` lines. */
export function parseIni(text: string): Sections {
  const out: Sections = new Map();
  let current: Map<string, string> | undefined;
  let sub: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = (raw.split(/(^|\s)[;#]/)[0] as string).trim();
    if (line.startsWith("[") && line.endsWith("]")) {
      const name = line.slice(1, -1).trim();
      sub = undefined;
      current = out.get(name) ?? new Map<string, string>();
      out.set(name, current);
      continue;
    }
    const eq = line.indexOf("=");
    if (current === undefined || eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    if (value === "") {
      sub = key;
      continue;
    }
    if (sub !== undefined && raw.trimStart() === raw) sub = undefined;
    current.set(sub === undefined ? key : `${sub}.${key}`, value);
  }
  return out;
}

function readIni(file: string, problems: string[]): Sections {
  try {
    return parseIni(readBoundedFile(file, FILE_LIMITS.credentials).bytes.toString("utf8"));
  } catch (e) {
    // The SDK reads a file it cannot read as empty; say why, so the reason is not a mystery.
    if (e instanceof ReadFileError && e.kind !== "missing") problems.push(`${file} ${e.reason}`);
    else if (!(e instanceof ReadFileError)) problems.push(`${file} could not be read`);
    return new Map();
  }
}

function kindOf(keys: ReadonlyMap<string, string>): ProfileKind | undefined {
  const has = (k: string): boolean => keys.has(k);
  if (has("role_arn") && has("source_profile") !== has("credential_source")) return "role";
  if (has("aws_access_key_id") && has("aws_secret_access_key")) return "keys";
  if (has("web_identity_token_file") && has("role_arn")) return "web-identity";
  if (has("credential_process")) return "process";
  if (["sso_start_url", "sso_account_id", "sso_session", "sso_region", "sso_role_name"].some(has)) return "sso";
  return undefined;
}

/** Read the selected profile from both files (the credentials file's keys win, as in the SDK); `file`: the one whose keys decide the kind, undefined when neither has the profile. */
export function readAwsProfile(env: Env) {
  const fileOf = (variable: string, name: string): string => expandHome(set(env[variable]) ? env[variable] : path.join("~", ".aws", name), env);
  const files = { config: fileOf("AWS_CONFIG_FILE", "config"), credentials: fileOf("AWS_SHARED_CREDENTIALS_FILE", "credentials") };
  const name = set(env["AWS_PROFILE"]) ? env["AWS_PROFILE"] : "default";
  const problems: string[] = [];
  // The config file's section of a profile: `[profile NAME]`, or `[default]` for default.
  const isSection = (h: string): boolean => /^profile\s+(["']?)(.+)\1$/.exec(h)?.[2] === name || (h === "default" && name === "default");
  const fromConfig = [...readIni(files.config, problems)].find(([h]) => isSection(h))?.[1];
  const fromCredentials = readIni(files.credentials, problems).get(name);
  if (fromConfig === undefined && fromCredentials === undefined) return { name, files, problems, file: undefined, kind: undefined, keys: undefined };
  const keys = new Map([...(fromConfig ?? []), ...(fromCredentials ?? [])]);
  // Name the file whose keys decide the kind (the credentials file's, when they do).
  const file = fromCredentials !== undefined && (fromConfig === undefined || kindOf(fromCredentials) !== undefined) ? files.credentials : files.config;
  return { name, files, problems, kind: kindOf(keys), file, keys };
}

const PROFILE_KIND_TEXT: Record<ProfileKind, string> = {
  role: "role_arn through STS",
  keys: "static keys",
  "web-identity": "web_identity_token_file with role_arn through STS",
  process: "credential_process",
  sso: "SSO",
};

function profileLabel(name: string, kind: ProfileKind | undefined): string {
  return kind === "process" ? `aws:process:${name}` : kind === "sso" ? `aws:sso:${name}` : `aws:profile:${name}`;
}

/** The source line of a profile the files have (`file` set). */
function profileSource(view: ProfileView, kind: ProfileKind | undefined, sts: string | undefined): string {
  const what = kind === undefined ? "profile" : PROFILE_KIND_TEXT[kind];
  const via = (kind === "role" || kind === "web-identity") && sts !== undefined ? ` at ${redactUrl(sts)}` : "";
  const source = view.keys?.get("source_profile");
  const from = kind === "role" && set(source) ? ` from source_profile ${source}` : "";
  return `${profileLabel(view.name, kind)} (${what}${via}${from} in ${view.file})`;
}

/** The kind the SDK says it used (its credential-feature marks), when it says. */
function kindFromSdk(c: object): ProfileKind | undefined {
  const marks = (c as { $source?: Record<string, unknown> }).$source;
  if (marks === undefined || marks === null || typeof marks !== "object") return undefined;
  if ("CREDENTIALS_PROFILE_SOURCE_PROFILE" in marks) return "role";
  if ("CREDENTIALS_PROFILE_SSO" in marks || "CREDENTIALS_PROFILE_SSO_LEGACY" in marks) return "sso";
  if ("CREDENTIALS_PROFILE_PROCESS" in marks) return "process";
  if ("CREDENTIALS_PROFILE_STS_WEB_ID_TOKEN" in marks) return "web-identity";
  if ("CREDENTIALS_PROFILE" in marks) return "keys";
  return undefined;
}

/** What a failed provider said, up to anything quoted (an answer with keys, a `credential_process` command line), with its name, code and HTTP status. */
export function describeProviderFailure(e: unknown): string {
  if (isObjstateError(e)) return e.message.split("\n")[0] as string;
  const n = sdkErrorName(e);
  const name = n !== undefined && n !== "Error" ? `${n}: ` : "";
  const message = field(e, "message");
  let text = typeof message === "string" ? (message.split("\n")[0] as string) : "";
  if (/^command failed/i.test(text)) text = "the command failed";
  text = redactText(text.split(/["'{`]/)[0] as string)
    .trim()
    .replace(/[:,]$/, "")
    .slice(0, 160);
  const code = field(e, "code");
  const given = field(e, "statusCode");
  const status = typeof given === "number" ? given : sdkHttpStatus(e);
  return `${name}${text === "" ? "failed" : text}${typeof code === "string" ? ` (${code})` : ""}${typeof status === "number" ? ` (HTTP ${status})` : ""}`;
}

interface Step {
  /** e.g. `aws:env`. */
  readonly label: string;
  /** Why the step gives nothing (told without asking anything, or when it then gives nothing); undefined: it is the plan's pick. */
  readonly skip?: string | undefined;
  /** The source line (`aws:env (AWS_ACCESS_KEY_ID, …)`). */
  readonly source: string;
  /** The SDK's provider, when the step is to be run; the profile step always runs, as the files are the SDK's to read. */
  readonly provider?: ((sdk: SdkProviders, ctx: AwsChainContext) => Provider) | undefined;
  /** The winner's source line, when it depends on what was answered and where STS is (default `source`). */
  readonly sourceOf?: (creds: object, ctx: AwsChainContext) => string;
}

const SILENT = Object.freeze({ trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined });

/** Settings of the STS clients the SDK's providers make (a profile's role, web identity). */
function stsClientConfig(ctx: AwsChainContext): Record<string, unknown> {
  const t = resolveTimeouts(ctx.timeouts);
  return {
    // Always given: left to the SDK, a missing region is a console warning on stderr.
    region: ctx.region ?? DEFAULT_REGION,
    ...(ctx.stsEndpoint === undefined ? {} : { endpoint: ctx.stsEndpoint }),
    maxAttempts: MAX_ATTEMPTS,
    defaultsMode: "standard",
    logger: SILENT,
    requestHandler: { connectionTimeout: t.connectMs, socketTimeout: t.idleMs, logger: SILENT },
  };
}

function profileStep(env: Env): Step {
  const view = readAwsProfile(env);
  // fromIni resolves every kind (credential_process through fromProcess, SSO through fromSSO).
  const ini = { profile: view.name, filepath: view.files.credentials, configFilepath: view.files.config, logger: SILENT };
  const provider =
    (sdk: SdkProviders, ctx: AwsChainContext): Provider =>
    () =>
      sdk.fromIni({ ...ini, clientConfig: stsClientConfig(ctx) })();
  // The kind the SDK says it used, else the files'.
  const sourceOf = (creds: object, ctx: AwsChainContext): string => {
    const kind = kindFromSdk(creds) ?? view.kind;
    return view.file === undefined ? profileLabel(view.name, kind) : profileSource(view, kind, ctx.stsEndpoint);
  };
  const label = `aws:profile:${view.name}`;
  const problems = view.problems.length === 0 ? "" : ` (${view.problems.join("; ")})`;
  if (view.file === undefined)
    return { label, source: label, sourceOf, provider, skip: `no profile ${view.name} in ${view.files.config} or ${view.files.credentials}${problems}` };
  if (view.kind === undefined) {
    const skip = `profile ${view.name} (${view.file}) has no credentials: no aws_access_key_id, role_arn, credential_process, sso_* or web_identity_token_file`;
    return { label, source: label, sourceOf, provider, skip };
  }
  return { label: profileLabel(view.name, view.kind), source: profileSource(view, view.kind, undefined), sourceOf, provider };
}

/** The steps as the environment and files describe them, without contacting anything. */
function planAwsSteps(env: Env): Step[] {
  const keys = set(env["AWS_ACCESS_KEY_ID"]) && set(env["AWS_SECRET_ACCESS_KEY"]);
  const envUsed = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", ...(set(env["AWS_SESSION_TOKEN"]) ? ["AWS_SESSION_TOKEN"] : [])].join(", ");
  const envSkip = set(env["AWS_PROFILE"])
    ? `AWS_PROFILE is set, so the profile is used${keys ? " instead of AWS_ACCESS_KEY_ID (as the AWS SDK does)" : ""}`
    : keys
      ? undefined
      : "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set";
  const tokenFile = set(env["AWS_WEB_IDENTITY_TOKEN_FILE"]) && set(env["AWS_ROLE_ARN"]);
  const role = `role ${env["AWS_ROLE_ARN"] ?? ""} through STS`;
  const steps: Step[] = [
    { label: "aws:env", source: `aws:env (${envUsed})`, skip: envSkip, provider: envSkip === undefined ? (sdk) => sdk.fromEnv({ logger: SILENT }) : undefined },
    profileStep(env),
    {
      label: "aws:web-identity",
      source: `aws:web-identity (AWS_WEB_IDENTITY_TOKEN_FILE, ${role})`,
      sourceOf: (_, ctx) =>
        `aws:web-identity (AWS_WEB_IDENTITY_TOKEN_FILE, ${role}${ctx.stsEndpoint === undefined ? "" : ` at ${redactUrl(ctx.stsEndpoint)}`})`,
      skip: tokenFile ? undefined : "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set",
      provider: tokenFile ? (sdk, ctx) => () => sdk.fromTokenFile({ logger: SILENT, clientConfig: stsClientConfig(ctx) })() : undefined,
    },
  ];
  const metadata = { logger: SILENT, timeout: METADATA_TIMEOUT_MS, maxRetries: 0 };
  const relative = env["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"];
  const full = env["AWS_CONTAINER_CREDENTIALS_FULL_URI"];
  if (set(relative) || set(full)) {
    const [which, url] = set(relative)
      ? ["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", `http://169.254.170.2${relative}`]
      : ["AWS_CONTAINER_CREDENTIALS_FULL_URI", redactUrl(full as string)];
    const source = `aws:container-metadata (${which}: the container credentials service at ${url})`;
    // The last step: the SDK never asks IMDS after the container step.
    return [...steps, { label: "aws:container-metadata", source, provider: (sdk) => sdk.fromHttp(metadata) }];
  }
  const explicit = env["AWS_EC2_METADATA_SERVICE_ENDPOINT"];
  const imds = set(explicit)
    ? redactUrl(explicit)
    : env["AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE"] === "IPv6"
      ? "http://[fd00:ec2::254]"
      : "http://169.254.169.254";
  // As the SDK reads AWS_EC2_METADATA_DISABLED: any value but `false` disables.
  const disabled = set(env["AWS_EC2_METADATA_DISABLED"]) && env["AWS_EC2_METADATA_DISABLED"] !== "false";
  return [
    ...steps,
    {
      label: "aws:container-metadata",
      source: "aws:container-metadata",
      skip: "neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor AWS_CONTAINER_CREDENTIALS_FULL_URI is set",
    },
    {
      label: "aws:instance-metadata",
      source: `aws:instance-metadata (the EC2 metadata service at ${imds})`,
      skip: disabled ? "AWS_EC2_METADATA_DISABLED is set" : undefined,
      provider: disabled ? undefined : (sdk) => sdk.fromInstanceMetadata(metadata),
    },
  ];
}

/** Where the AWS chain would find credentials, without contacting anything: the first step without a reason to skip it. */
export function planAwsChain(env: Env): string | undefined {
  return planAwsSteps(env).find((step) => step.skip === undefined)?.source;
}

let silenced = false;

/** The SDK's providers, after a first client settled its once-per-process Node-version warning (they build STS clients objstate cannot wrap). */
async function loadProviders(): Promise<SdkProviders> {
  const sdk = await import("@aws-sdk/credential-providers");
  if (!silenced) {
    const { STSClient } = await import("@aws-sdk/client-sts");
    withoutNodeVersionWarning(() => new STSClient({ region: DEFAULT_REGION, logger: SILENT }).destroy());
    silenced = true;
  }
  return sdk;
}

/** Only the four fields objstate uses: the SDK's objects carry more (feature marks, account IDs). */
function shape(c: Credentials): Credentials {
  return {
    accessKeyId: c.accessKeyId,
    secretAccessKey: c.secretAccessKey,
    sessionToken: c.sessionToken === "" ? undefined : c.sessionToken,
    expiration: c.expiration,
  };
}

function failure(label: string, e: unknown, tried: readonly string[] = []): ObjstateError {
  if (isObjstateError(e)) return e;
  const before = tried.length === 0 ? "" : ` (after: ${tried.join("; ")})`;
  return new ObjstateError(
    "AWS_CREDENTIALS_FAILED",
    `the AWS credential source ${label} failed: ${describeProviderFailure(e)}${before}. Fix that source, or give objstate credentials of its own (PROVIDER_ACCESS_KEY and PROVIDER_SECRET_KEY, a profile)`,
    { details: { source: label } },
  );
}

/**
 * Run the steps until one gives credentials: the `winner`'s first answer, the provider to call again on refresh, and its
 * source line. One that finds nothing (the SDK's chain would move on) is listed in `tried` with why; any other failure
 * ends the chain with `AWS_CREDENTIALS_FAILED` naming the step.
 */
export async function runAwsChain(ctx: AwsChainContext) {
  const tried: string[] = [];
  let sdk: SdkProviders | undefined;
  for (const step of planAwsSteps(ctx.env)) {
    if (step.provider === undefined) {
      tried.push(`${step.label}: ${step.skip ?? ""}`);
      continue;
    }
    sdk ??= await loadProviders();
    const provider = step.provider(sdk, ctx);
    // Refreshes have no next step to move on to: every failure is an error.
    const fetch = async (): Promise<Credentials> => {
      try {
        return shape(await provider());
      } catch (e) {
        throw failure(step.label, e);
      }
    };
    try {
      const first = await provider();
      return { winner: { first: shape(first), fetch, source: step.sourceOf?.(first, ctx) ?? step.source }, tried };
    } catch (e) {
      // The SDK's chain moves on only after a provider error that allows it.
      const name = sdkErrorName(e);
      if ((name !== "CredentialsProviderError" && name !== "ProviderError") || field(e, "tryNextLink") === false) throw failure(step.label, e, tried);
      tried.push(`${step.label}: ${step.skip ?? describeProviderFailure(e)}`);
    }
  }
  return { winner: undefined, tried };
}
