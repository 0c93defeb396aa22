/**
 * The standard AWS chain after the seed's sources, in-process: each step of the SDK's
 * providers against loopback stand-ins (metadata services, STS) and temporary AWS files,
 * the order of the steps, which one won, why each before it gave nothing, and that no
 * metadata service is asked before the chain reaches it. The SDK's providers read the
 * process environment, so each test sets process.env (this file runs in its own process)
 * and resolves with `env: process.env`.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { after, before, beforeEach, describe, it } from "node:test";
import { ObjectStoreBackendConfig, isObjstateError } from "../../../src/index.js";
import { describeCredentialSource, resolveEffectiveSettings, resolveIdentity, type Identity } from "../../../src/credentials/index.js";
import { describeProviderFailure, parseIni, readAwsProfile } from "../../../src/credentials/aws-chain.js";
import { startContainerService, startImds, startWebIdentitySts, type LoopbackServer, type TempCredentials } from "../../support/aws-servers.js";
import { startMetadataServer, success } from "../../support/metadata-server.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-aws-chain-"));
let n = 0;
function file(text: string, mode = 0o600): string {
  const p = join(dir, `f${++n}`);
  writeFileSync(p, text);
  chmodSync(p, mode);
  return p;
}

const TEMP: TempCredentials = {
  accessKeyId: "ASIATEMPKEY",
  secretAccessKey: "temp-secret-value",
  sessionToken: "temp-session-token",
  expiration: new Date(Date.now() + 3600_000),
};
const SECRETS = ["env-secret-value", "file-secret-value", "proc-secret-value", TEMP.secretAccessKey, TEMP.sessionToken, "leaked-on-stderr", "SECRET-IN-ARGS"];

/** The process environment of one test: no AWS variable but those given, no AWS files, no IMDS unless asked. */
function setAwsEnv(vars: Record<string, string | undefined>): void {
  for (const k of Object.keys(process.env))
    if ((k.startsWith("AWS_") || k.startsWith("PROVIDER_")) && k !== "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED") delete process.env[k];
  const none = join(dir, "no-such-file");
  const all: Record<string, string | undefined> = { AWS_CONFIG_FILE: none, AWS_SHARED_CREDENTIALS_FILE: none, AWS_EC2_METADATA_DISABLED: "true", ...vars };
  for (const [k, v] of Object.entries(all)) if (v !== undefined) process.env[k] = v;
}

const B = (p: Record<string, unknown> = {}): ObjectStoreBackendConfig =>
  ObjectStoreBackendConfig.from({ bucket: "state-bucket", endpoint: "http://127.0.0.1:1", ...p } as never);
const identityOf = (p: Record<string, unknown> = {}): Promise<Identity> => resolveIdentity(resolveEffectiveSettings(B(p), process.env), { env: process.env });
const planOf = (p: Record<string, unknown> = {}): string => describeCredentialSource(resolveEffectiveSettings(B(p), process.env), process.env);

function noSecrets(...texts: string[]): void {
  for (const t of texts) for (const s of SECRETS) assert.ok(!t.includes(s), `a secret appears in: ${t}`);
}

async function noCredentials(p: Record<string, unknown> = {}): Promise<string[]> {
  let tried: string[] = [];
  await assert.rejects(identityOf(p), (e) => {
    assert.ok(isObjstateError(e, "NO_CREDENTIALS"), String(e));
    tried = (e.details?.["tried"] as string[]) ?? [];
    noSecrets(e.message, inspect(e, { showHidden: true, depth: 5 }));
    return true;
  });
  return tried;
}

describe("the AWS files, read as the SDK reads them", () => {
  it("sections, [profile NAME] only in the config file, comments, sub-sections; the credentials file wins", () => {
    const ini = parseIni(
      "# top\n[default]\nregion = eu-west-1 ; trailing\n[profile dev]\nrole_arn = arn:x\ns3 =\n  role_arn = nested\nsource_profile = base\n; comment\n[sso-session s]\nsso_region = r\n",
    );
    assert.deepEqual([...ini.keys()], ["default", "profile dev", "sso-session s"]);
    assert.equal(ini.get("default")?.get("region"), "eu-west-1");
    assert.equal(ini.get("profile dev")?.get("s3.role_arn"), "nested");
    assert.equal(ini.get("profile dev")?.get("source_profile"), "base", "an unindented line ends the sub-section");
    const config = file("[profile dev]\ncredential_process = x\n[other]\naws_access_key_id = A\naws_secret_access_key = S\n");
    const creds = file("[dev]\naws_access_key_id = A\naws_secret_access_key = S\n");
    const view = readAwsProfile({ AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: creds, AWS_PROFILE: "dev" });
    assert.notEqual(view.file, undefined);
    assert.equal(view.kind, "keys", "static keys come before credential_process, as in fromIni");
    assert.equal(view.file, creds);
    assert.equal(
      readAwsProfile({ AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: creds, AWS_PROFILE: "other" }).file,
      undefined,
      "[other] in the config file is not a profile",
    );
  });

  it("a provider's failure is printed without anything it quotes", () => {
    assert.equal(
      describeProviderFailure(
        Object.assign(new Error(`Command failed: get-creds --token SECRET-IN-ARGS\nleaked-on-stderr`), { name: "CredentialsProviderError" }),
      ),
      "CredentialsProviderError: the command failed",
    );
    assert.equal(
      describeProviderFailure(new SyntaxError(`Unexpected token 'x', "{"Secret":"temp-secret-value"" is not valid JSON`)),
      "SyntaxError: Unexpected token",
    );
  });
});

describe("the AWS chain after the seed's sources", () => {
  const servers: Pick<LoopbackServer, "close">[] = [];
  before(() => setAwsEnv({}));
  beforeEach(() => setAwsEnv({}));
  after(async () => {
    for (const s of servers) await s.close();
    setAwsEnv({});
  });
  const track = <T extends Pick<LoopbackServer, "close">>(s: T): T => (servers.push(s), s);

  it("aws:env: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN; nothing secret prints", async () => {
    setAwsEnv({ AWS_ACCESS_KEY_ID: "AKIAENV", AWS_SECRET_ACCESS_KEY: "env-secret-value", AWS_SESSION_TOKEN: "env-token" });
    const id = await identityOf();
    assert.equal(id.source, "aws:env (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)");
    assert.deepEqual(await id.provider(), { accessKeyId: "AKIAENV", secretAccessKey: "env-secret-value", sessionToken: "env-token", expiration: undefined });
    assert.match((id.tried ?? []).join("\n"), /^static keys: no access key.*\ncompute-instance role: no computeRoleName/);
    assert.equal(planOf(), id.source);
    noSecrets(inspect(id, { showHidden: true, depth: 5 }), JSON.stringify(id), String(id.source));
  });

  it("the chain runs only against the process environment: an env map of its own never reaches it", async () => {
    setAwsEnv({ AWS_ACCESS_KEY_ID: "AKIAENV", AWS_SECRET_ACCESS_KEY: "env-secret-value" });
    const env = { ...process.env };
    await assert.rejects(
      resolveIdentity(resolveEffectiveSettings(B(), env), { env }),
      (e) => isObjstateError(e, "NO_CREDENTIALS") && /AWS chain .*not consulted: objstate was given an environment of its own/.test(e.message),
    );
  });

  it("a seed source beats every AWS source: static keys, a compute role; a seed profile or lone secret bars the chain", async () => {
    const imds = track(await startImds({ role: "r", credentials: TEMP }));
    const seedMd = track(await startMetadataServer({ seed: success("AK-SEED-ROLE", "seed-role-secret") }));
    const base = {
      AWS_ACCESS_KEY_ID: "AKIAENV",
      AWS_SECRET_ACCESS_KEY: "env-secret-value",
      AWS_EC2_METADATA_DISABLED: undefined,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url,
    };
    setAwsEnv({ ...base, PROVIDER_ACCESS_KEY: "AK-SEED", PROVIDER_SECRET_KEY: "seed-secret" });
    assert.equal((await identityOf()).source, "static keys (env:PROVIDER_ACCESS_KEY)");
    assert.equal((await identityOf({ accessKey: "AK-EXPLICIT", secretKey: "s" })).source, "static keys (explicit)");
    setAwsEnv({ ...base, PROVIDER_METADATA_ENDPOINT: seedMd.url });
    assert.match((await identityOf({ computeRoleName: "seed" })).source, /^compute role "seed" \(explicit\)/);
    setAwsEnv({
      ...base,
      PROVIDER_PROFILE: "p",
      PROVIDER_SHARED_CREDENTIALS_FILE: file(
        JSON.stringify({ profiles: [{ name: "p", mode: "AK", access_key_id: "AK-SEED-FILE", access_key_secret: "seed-file-secret" }] }),
      ),
    });
    assert.equal((await identityOf()).source, "static keys (profile:p)");
    setAwsEnv({ ...base, PROVIDER_SECRET_KEY: "lone-secret" });
    const tried = await noCredentials();
    assert.match(tried.at(-1) as string, /AWS chain .*not consulted: a secret key is set \(env:PROVIDER_SECRET_KEY\) without an access key/);
    assert.deepEqual(imds.requests, [], "the instance metadata service was never asked");
  });

  it("aws:profile, aws:process, aws:sso from ~/.aws, and AWS_PROFILE wins over AWS_ACCESS_KEY_ID as in the SDK", async () => {
    const script = file(
      `process.stdout.write(JSON.stringify({ Version: 1, AccessKeyId: "AKPROC", SecretAccessKey: "proc-secret-value", SessionToken: "proc-token", Expiration: new Date(Date.now() + 3600e3).toISOString() }));`,
    );
    const config = file(
      `[profile proc]\ncredential_process = "${process.execPath}" "${script}"\n[profile sso]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = ci\n[sso-session corp]\nsso_region = us-east-1\nsso_start_url = http://127.0.0.1:1/start\n`,
    );
    const creds = file(
      "[default]\naws_access_key_id = AKFILE\naws_secret_access_key = file-secret-value\n[dev]\naws_access_key_id = AKDEV\naws_secret_access_key = file-secret-value\n",
    );
    const files = { AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: creds };

    setAwsEnv(files);
    const d = await identityOf();
    assert.equal(d.source, `aws:profile:default (static keys in ${creds})`);
    assert.equal((await d.provider()).accessKeyId, "AKFILE");

    setAwsEnv({ ...files, AWS_PROFILE: "dev", AWS_ACCESS_KEY_ID: "AKIAENV", AWS_SECRET_ACCESS_KEY: "env-secret-value" });
    const dev = await identityOf();
    assert.equal(dev.source, `aws:profile:dev (static keys in ${creds})`);
    assert.match((dev.tried ?? []).join("\n"), /aws:env: AWS_PROFILE is set, so the profile is used instead of AWS_ACCESS_KEY_ID/);

    setAwsEnv({ ...files, AWS_PROFILE: "proc" });
    assert.equal(planOf(), `aws:process:proc (credential_process in ${config})`);
    const proc = await identityOf();
    assert.equal(proc.source, `aws:process:proc (credential_process in ${config})`);
    const c = await proc.provider();
    assert.deepEqual([c.accessKeyId, c.sessionToken, c.expiration instanceof Date], ["AKPROC", "proc-token", true]);

    // An SSO profile is named as such before anything is asked; without a cached SSO login
    // the SDK's provider stops its chain, and so does objstate's, naming the source.
    setAwsEnv({ ...files, AWS_PROFILE: "sso", HOME: dir });
    assert.equal(planOf(), `aws:sso:sso (SSO in ${config})`);
    await assert.rejects(
      identityOf(),
      (e) =>
        isObjstateError(e, "AWS_CREDENTIALS_FAILED") &&
        /^the AWS credential source aws:sso:sso failed: CredentialsProviderError: The SSO session token associated with profile=sso was not found or is invalid/.test(
          e.message,
        ),
    );
  });

  it("a failing credential_process: its command line and output are never shown", async () => {
    const config = file(
      `[profile bad]\ncredential_process = "${process.execPath}" -e "process.stderr.write('leaked-on-stderr'); process.exit(3)" --token=SECRET-IN-ARGS\n`,
    );
    setAwsEnv({ AWS_CONFIG_FILE: config, AWS_PROFILE: "bad" });
    const tried = await noCredentials();
    assert.match(tried.join("\n"), /^aws:process:bad: CredentialsProviderError: the command failed$/m);
  });

  it("aws:web-identity: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, through STS at the seed's STS endpoint", async () => {
    const sts = track(await startWebIdentitySts({ token: "oidc-token", roleArn: "arn:aws:iam::123:role/ci", credentials: TEMP }));
    setAwsEnv({
      AWS_WEB_IDENTITY_TOKEN_FILE: file("oidc-token"),
      AWS_ROLE_ARN: "arn:aws:iam::123:role/ci",
      AWS_ROLE_SESSION_NAME: "pipeline",
      PROVIDER_STS_ENDPOINT: sts.url,
    });
    const id = await identityOf();
    assert.equal(id.source, `aws:web-identity (AWS_WEB_IDENTITY_TOKEN_FILE, role arn:aws:iam::123:role/ci through STS at ${sts.url})`);
    assert.deepEqual(await id.provider(), {
      accessKeyId: TEMP.accessKeyId,
      secretAccessKey: TEMP.secretAccessKey,
      sessionToken: TEMP.sessionToken,
      expiration: TEMP.expiration,
    });
    const form = new URLSearchParams(sts.requests[0]?.body);
    assert.deepEqual([form.get("Action"), form.get("RoleSessionName")], ["AssumeRoleWithWebIdentity", "pipeline"]);
  });

  it("aws:container-metadata, with its token; the instance metadata service is then never asked", async () => {
    const container = track(await startContainerService({ token: "container-auth", credentials: TEMP }));
    const imds = track(await startImds({ role: "r", credentials: TEMP }));
    setAwsEnv({
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${container.url}/creds`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN: "container-auth",
      AWS_EC2_METADATA_DISABLED: undefined,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url,
    });
    const id = await identityOf();
    assert.equal(id.source, `aws:container-metadata (AWS_CONTAINER_CREDENTIALS_FULL_URI: the container credentials service at ${container.url}/creds)`);
    assert.equal((await id.provider()).sessionToken, TEMP.sessionToken);
    assert.deepEqual(
      container.requests.map((r) => `${r.method} ${r.path}`),
      ["GET /creds"],
    );
    setAwsEnv({
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${container.url}/creds`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN: "wrong",
      AWS_EC2_METADATA_DISABLED: undefined,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url,
    });
    const tried = await noCredentials();
    assert.match(tried.at(-1) as string, /^aws:container-metadata: CredentialsProviderError: Server responded with status: 403$/);
    assert.deepEqual(imds.requests, [], "IMDS is not tried after the container step, as in the SDK");
  });

  it("aws:instance-metadata: IMDSv2 token, role, credentials; only when the chain reaches it", async () => {
    const imds = track(await startImds({ role: "instance-role", credentials: TEMP }));
    setAwsEnv({
      AWS_EC2_METADATA_DISABLED: undefined,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url,
      AWS_ACCESS_KEY_ID: "AKIAENV",
      AWS_SECRET_ACCESS_KEY: "env-secret-value",
    });
    assert.match((await identityOf()).source, /^aws:env /);
    assert.equal(imds.requests.length, 0, "not asked while an earlier step gives credentials");
    setAwsEnv({ AWS_EC2_METADATA_DISABLED: undefined, AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url });
    assert.equal(planOf(), `aws:instance-metadata (the EC2 metadata service at ${imds.url})`);
    assert.equal(imds.requests.length, 0, "the plan asks nothing");
    const id = await identityOf();
    assert.equal(id.source, `aws:instance-metadata (the EC2 metadata service at ${imds.url})`);
    assert.equal((await id.provider()).accessKeyId, TEMP.accessKeyId);
    assert.deepEqual(
      imds.requests.map((r) => `${r.method} ${r.path}`),
      ["PUT /latest/api/token", "GET /latest/meta-data/iam/security-credentials/", "GET /latest/meta-data/iam/security-credentials/instance-role"],
    );
  });

  it("temporary AWS credentials are fetched again from the same source before they expire", async () => {
    const soon = { ...TEMP, expiration: new Date(Date.now() + 60_000) };
    const imds = track(await startImds({ role: "instance-role", credentials: soon }));
    setAwsEnv({ AWS_EC2_METADATA_DISABLED: undefined, AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url });
    const id = await identityOf();
    const fetches = (): number => imds.requests.filter((r) => r.path.endsWith("/instance-role")).length;
    await id.provider();
    assert.equal(fetches(), 1, "the first answer is used once");
    await id.provider();
    assert.equal(fetches(), 2, "within five minutes of expiry: asked again");
    const long = track(await startImds({ role: "instance-role", credentials: TEMP }));
    setAwsEnv({ AWS_EC2_METADATA_DISABLED: undefined, AWS_EC2_METADATA_SERVICE_ENDPOINT: long.url });
    const kept = await identityOf();
    for (let i = 0; i < 3; i++) await kept.provider();
    assert.equal(long.requests.filter((r) => r.path.endsWith("/instance-role")).length, 1, "an hour left: not asked again");
  });

  it("a metadata service that never answers is given up on (a timeout on every call), and listed", { timeout: 20_000 }, async () => {
    const silent = track(await startImds({ role: "r", silent: true }));
    setAwsEnv({ AWS_EC2_METADATA_DISABLED: undefined, AWS_EC2_METADATA_SERVICE_ENDPOINT: silent.url });
    const tried = await noCredentials();
    assert.match(tried.at(-1) as string, /^aws:instance-metadata: ProviderError: TimeoutError from instance metadata service$/);
  });

  it("nothing anywhere: every step is listed, in order, with why it gave nothing", async () => {
    setAwsEnv({});
    const tried = await noCredentials();
    assert.deepEqual(
      tried.map((t) => (t.split(":")[0] === "aws" ? t.split(": ")[0] : t.split(":")[0])),
      ["static keys", "compute-instance role", "aws:env", "aws:profile:default", "aws:web-identity", "aws:container-metadata", "aws:instance-metadata"],
    );
    assert.equal(tried.at(-1), "aws:instance-metadata: AWS_EC2_METADATA_DISABLED is set");
    assert.equal(planOf(), "none: no access key and no compute role; nothing for the AWS chain either");
  });
});
