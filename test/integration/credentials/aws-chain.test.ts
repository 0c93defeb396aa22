/**
 * The credentials and settings AWS users already have, against the real Ceph RGW (S3 +
 * STS) and dynalite, through the built CLI: each source of the standard AWS chain shows
 * its source in `config` and `doctor` and works for a real write and read; a seed source
 * beats every AWS source (which is then never asked); region and endpoints may come from
 * AWS_* variables alone. Loopback stand-ins play the metadata services, and the STS of web
 * identity: Ceph can verify web identity tokens only with an OIDC provider registered by a
 * user with `oidc-provider` caps, which the test user does not have (scripts/servers/
 * ceph-start.sh), and an identity provider serving its signing certificates. Each stand-in
 * hands out real temporary credentials from Ceph's STS, so the writes are real.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { AssumeRoleCommand, STSClient } from "@aws-sdk/client-sts";
import { startCli, type CliResult } from "../../support/cli.js";
import { startContainerService, startImds, startWebIdentitySts, type LoopbackServer, type TempCredentials } from "../../support/aws-servers.js";
import { testServers, type TestServers } from "../../support/servers.js";
import { cephTarget, type Target } from "../../support/targets.js";

const STATE = '{"version":4,"serial":1,"lineage":"aws-chain","outputs":{"x":{"value":"y","type":"string"}},"resources":[]}';

describe("the AWS chain against Ceph RGW + dynalite, through the CLI", () => {
  let s: TestServers;
  let target: Target;
  let temp: TempCredentials;
  const dir = mkdtempSync(join(tmpdir(), "objstate-aws-it-"));
  let n = 0;
  const file = (text: string): string => {
    const p = join(dir, `f${++n}`);
    writeFileSync(p, text, { mode: 0o600 });
    return p;
  };
  const servers: LoopbackServer[] = [];
  const outputs: string[] = [];

  before(async () => {
    s = testServers();
    target = cephTarget();
    const sts = new STSClient({ endpoint: s.s3Endpoint, region: "us-east-1", credentials: { accessKeyId: s.accessKey, secretAccessKey: s.secretKey } });
    const c = (await sts.send(new AssumeRoleCommand({ RoleArn: s.roleArn, RoleSessionName: "aws-chain-it", DurationSeconds: 3600 }))).Credentials;
    sts.destroy();
    temp = {
      accessKeyId: c?.AccessKeyId as string,
      secretAccessKey: c?.SecretAccessKey as string,
      sessionToken: c?.SessionToken as string,
      expiration: c?.Expiration as Date,
    };
  });
  after(async () => {
    for (const srv of servers) await srv.close();
    // No secret in anything any command printed.
    const all = outputs.join("\n");
    for (const secret of [s.secretKey, temp.secretAccessKey, temp.sessionToken]) assert.ok(!all.includes(secret), "a secret was printed");
  });

  /** The CLI in a child process (the loopback stand-ins answer meanwhile); every output is kept for the secrets check. */
  async function cli(args: string[], env: Record<string, string | undefined>, input?: string): Promise<CliResult> {
    const r = await startCli(args, { env, input }).done;
    outputs.push(r.stdout, r.stderr);
    // The SDK's providers build clients of their own: none of its warnings may reach stderr.
    assert.doesNotMatch(r.stderr, /@aws-sdk|@smithy|WARN|NodeVersionSupportWarning/);
    return r;
  }

  async function where(): Promise<string[]> {
    const props = await target.setup({ locks: true });
    return ["--bucket", props.bucket, "--endpoint", s.s3Endpoint, "--kvstore-table", props.kvstoreTable as string, "--kvstore-endpoint", s.dynamoEndpoint];
  }

  /**
   * `config` names `source`, `doctor` passes with it, and a push, a pull and a lock round
   * trip work with it.
   */
  async function worksWith(env: Record<string, string | undefined>, source: RegExp, flags: string[] = []): Promise<void> {
    const w = [...(await where()), ...flags];
    const config = await cli(["config", "--json", ...w], env);
    assert.equal(config.code, 0, config.stderr);
    assert.match((JSON.parse(config.stdout) as { credentials: string }).credentials, source);
    const doctor = await cli(["doctor", ...w], env);
    assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
    const line = doctor.stdout.split("\n").find((l) => l.startsWith("ok    credentials: ")) ?? "";
    assert.match(line.slice("ok    credentials: ".length).split("; tried first: ")[0] as string, source);
    const push = await cli(["state", "push", "-", ...w], env, STATE);
    assert.equal(push.code, 0, push.stderr);
    const pull = await cli(["state", "pull", ...w], env);
    assert.equal(pull.code, 0, pull.stderr);
    assert.equal(pull.stdout, STATE);
    const lock = await cli(["lock", ...w], env);
    assert.equal(lock.code, 0, lock.stderr);
    const unlock = await cli(["unlock", lock.stdout.trim(), ...w], env);
    assert.equal(unlock.code, 0, unlock.stderr);
  }

  it("aws:env: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the issue's case, with AWS_PROFILE unset)", async () => {
    await worksWith({ AWS_ACCESS_KEY_ID: s.accessKey, AWS_SECRET_ACCESS_KEY: s.secretKey }, /^aws:env \(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\)/);
  });

  it("aws:env with AWS_SESSION_TOKEN: temporary credentials", async () => {
    await worksWith(
      { AWS_ACCESS_KEY_ID: temp.accessKeyId, AWS_SECRET_ACCESS_KEY: temp.secretAccessKey, AWS_SESSION_TOKEN: temp.sessionToken },
      /^aws:env \(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN\)/,
    );
  });

  it("aws:profile:NAME: AWS_PROFILE with static keys in AWS_SHARED_CREDENTIALS_FILE", async () => {
    const creds = file(`[team]\naws_access_key_id = ${s.accessKey}\naws_secret_access_key = ${s.secretKey}\n`);
    await worksWith({ AWS_PROFILE: "team", AWS_SHARED_CREDENTIALS_FILE: creds }, /^aws:profile:team \(static keys in .+\)$/);
  });

  it("aws:profile:NAME from ~/.aws (HOME), the default profile", async () => {
    const home = mkdtempSync(join(dir, "home-"));
    const { mkdirSync } = await import("node:fs");
    mkdirSync(join(home, ".aws"));
    writeFileSync(join(home, ".aws", "credentials"), `[default]\naws_access_key_id = ${s.accessKey}\naws_secret_access_key = ${s.secretKey}\n`, {
      mode: 0o600,
    });
    await worksWith(
      { HOME: home, AWS_CONFIG_FILE: undefined, AWS_SHARED_CREDENTIALS_FILE: undefined },
      new RegExp(`^aws:profile:default \\(static keys in ${home}/\\.aws/credentials\\)$`),
    );
  });

  it("aws:process:NAME: credential_process in AWS_CONFIG_FILE", async () => {
    const script = file(
      `process.stdout.write(JSON.stringify({ Version: 1, AccessKeyId: ${JSON.stringify(temp.accessKeyId)}, SecretAccessKey: ${JSON.stringify(temp.secretAccessKey)}, SessionToken: ${JSON.stringify(temp.sessionToken)}, Expiration: ${JSON.stringify(temp.expiration.toISOString())} }));`,
    );
    const config = file(`[profile ci]\ncredential_process = "${process.execPath}" "${script}"\n`);
    await worksWith({ AWS_PROFILE: "ci", AWS_CONFIG_FILE: config }, /^aws:process:ci \(credential_process in .+\)$/);
  });

  it("aws:profile:NAME with role_arn + source_profile: the role is assumed at Ceph's STS (AWS_ENDPOINT_URL_STS, or stsEndpoint)", async () => {
    const config = file(`[profile deployer]\nrole_arn = ${s.roleArn}\nsource_profile = base\nrole_session_name = aws-profile-it\n`);
    const creds = file(`[base]\naws_access_key_id = ${s.accessKey}\naws_secret_access_key = ${s.secretKey}\n`);
    const env = { AWS_PROFILE: "deployer", AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: creds, AWS_ENDPOINT_URL_STS: s.s3Endpoint };
    // The SDK's STS client honours AWS_ENDPOINT_URL_STS itself (objstate gives it no endpoint then).
    await worksWith(env, /^aws:profile:deployer \(role_arn through STS from source_profile base in .+\)$/);
    // stsEndpoint, when set, is where they go (AWS_ENDPOINT_URL_STS points nowhere here).
    await worksWith(
      { ...env, AWS_ENDPOINT_URL_STS: "http://127.0.0.1:9" },
      new RegExp(`^aws:profile:deployer \\(role_arn through STS( at ${s.s3Endpoint})? from source_profile base in .+\\)$`),
      ["--sts-endpoint", s.s3Endpoint],
    );
    // A role the base identity may not assume fails at Ceph's STS: the error names the source.
    const bad = file(`[profile deployer]\nrole_arn = arn:aws:iam:::role/no-such-role\nsource_profile = base\n`);
    const doctor = await cli(["doctor", ...(await where())], { ...env, AWS_CONFIG_FILE: bad });
    assert.equal(doctor.code, 1);
    assert.match(doctor.stdout, /^FAIL {2}credentials: .*the AWS credential source aws:profile:deployer failed: /m);
  });

  it("aws:web-identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN through STS (loopback STS, see the file comment)", async () => {
    const sts = await startWebIdentitySts({ token: "oidc-jwt", roleArn: "arn:aws:iam::123456789012:role/ci", credentials: temp });
    servers.push(sts);
    const env = { AWS_WEB_IDENTITY_TOKEN_FILE: file("oidc-jwt"), AWS_ROLE_ARN: "arn:aws:iam::123456789012:role/ci", AWS_ROLE_SESSION_NAME: "pipeline-7" };
    await worksWith(
      env,
      new RegExp(`^aws:web-identity \\(AWS_WEB_IDENTITY_TOKEN_FILE, role arn:aws:iam::123456789012:role/ci through STS( at ${sts.url})?\\)$`),
      ["--sts-endpoint", sts.url],
    );
    assert.ok(sts.requests.length > 0);
    assert.ok(sts.requests.every((r) => new URLSearchParams(r.body).get("RoleSessionName") === "pipeline-7"));
  });

  it("aws:container-metadata: AWS_CONTAINER_CREDENTIALS_FULL_URI with its token", async () => {
    const container = await startContainerService({ token: "container-auth-token", credentials: temp });
    servers.push(container);
    await worksWith(
      { AWS_CONTAINER_CREDENTIALS_FULL_URI: `${container.url}/creds`, AWS_CONTAINER_AUTHORIZATION_TOKEN: "container-auth-token" },
      /^aws:container-metadata \(AWS_CONTAINER_CREDENTIALS_FULL_URI: the container credentials service at http:\/\/127\.0\.0\.1:\d+\/creds\)$/,
    );
    assert.ok(container.requests.length > 0);
  });

  it("aws:instance-metadata: IMDSv2 at AWS_EC2_METADATA_SERVICE_ENDPOINT", async () => {
    const imds = await startImds({ role: "instance-role", credentials: temp });
    servers.push(imds);
    await worksWith(
      { AWS_EC2_METADATA_DISABLED: undefined, AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url },
      /^aws:instance-metadata \(the EC2 metadata service at http:\/\/127\.0\.0\.1:\d+\)$/,
    );
    assert.deepEqual([...new Set(imds.requests.map((r) => `${r.method} ${r.path}`))].sort(), [
      "GET /latest/meta-data/iam/security-credentials/",
      "GET /latest/meta-data/iam/security-credentials/instance-role",
      "PUT /latest/api/token",
    ]);
  });

  it("a seed role ARN is assumed on top of the AWS chain's identity", async () => {
    await worksWith(
      { AWS_ACCESS_KEY_ID: s.accessKey, AWS_SECRET_ACCESS_KEY: s.secretKey, PROVIDER_ASSUME_ROLE_ARN: s.roleArn },
      /^aws:env \(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\), then role .+ \(env:PROVIDER_ASSUME_ROLE_ARN\) through STS$|^role .+ \(env:PROVIDER_ASSUME_ROLE_ARN\) assumed as session "tool" for 3600 s, on top of aws:env \(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\)/,
    );
  });

  it("region and endpoints from AWS_REGION and AWS_ENDPOINT_URL_S3 / _DYNAMODB alone", async () => {
    const props = await target.setup({ locks: true });
    const w = ["--bucket", props.bucket, "--kvstore-table", props.kvstoreTable as string];
    const env = {
      AWS_ACCESS_KEY_ID: s.accessKey,
      AWS_SECRET_ACCESS_KEY: s.secretKey,
      AWS_REGION: "us-east-1",
      AWS_ENDPOINT_URL_S3: s.s3Endpoint,
      AWS_ENDPOINT_URL_DYNAMODB: s.dynamoEndpoint,
      AWS_ENDPOINT_URL: "http://127.0.0.1:9",
    };
    const config = JSON.parse((await cli(["config", "--json", ...w], env)).stdout) as { settings: Record<string, { value: unknown; source: string }> };
    assert.deepEqual(
      ["region", "endpoint", "kvstoreEndpoint"].map((f) => config.settings[f]?.source),
      ["aws:env:AWS_REGION", "aws:env:AWS_ENDPOINT_URL_S3", "aws:env:AWS_ENDPOINT_URL_DYNAMODB"],
    );
    const push = await cli(["state", "push", "-", ...w], env, STATE);
    assert.equal(push.code, 0, push.stderr);
    const pull = await cli(["state", "pull", ...w], env);
    assert.equal(pull.stdout, STATE, pull.stderr);
  });

  it("a seed source beats every AWS source, and none of them is asked", async () => {
    const imds = await startImds({ role: "r", credentials: temp });
    const container = await startContainerService({ token: "t", credentials: temp });
    const sts = await startWebIdentitySts({ token: "jwt", roleArn: "arn:aws:iam::1:role/ci", credentials: temp });
    servers.push(imds, container, sts);
    const marker = join(dir, "process-ran");
    const config = file(`[profile ci]\ncredential_process = "${process.execPath}" -e "require('fs').writeFileSync('${marker}', '')"\n`);
    const aws = {
      AWS_ACCESS_KEY_ID: "AKIAWRONG",
      AWS_SECRET_ACCESS_KEY: "wrong-secret",
      AWS_PROFILE: "ci",
      AWS_CONFIG_FILE: config,
      AWS_WEB_IDENTITY_TOKEN_FILE: file("jwt"),
      AWS_ROLE_ARN: "arn:aws:iam::1:role/ci",
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${container.url}/creds`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN: "t",
      AWS_EC2_METADATA_DISABLED: undefined,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url,
      AWS_ENDPOINT_URL_STS: sts.url,
    };
    const seeds: [Record<string, string>, string[], RegExp][] = [
      [{ PROVIDER_ACCESS_KEY: s.accessKey, PROVIDER_SECRET_KEY: s.secretKey }, [], /^static keys \(env:PROVIDER_ACCESS_KEY\)$/],
      [{}, ["--access-key", s.accessKey, "--secret-key", s.secretKey], /^static keys \(explicit\)$/],
      [
        {
          PROVIDER_PROFILE: "seed",
          PROVIDER_SHARED_CREDENTIALS_FILE: file(
            JSON.stringify({ profiles: [{ name: "seed", mode: "AK", access_key_id: s.accessKey, access_key_secret: s.secretKey }] }),
          ),
        },
        [],
        /^static keys \(profile:seed\)$/,
      ],
    ];
    for (const [seedEnv, flags, source] of seeds) await worksWith({ ...aws, ...seedEnv }, source, flags);
    assert.equal(existsSync(marker), false, "credential_process never ran");
    assert.deepEqual([imds.requests.length, container.requests.length, sts.requests.length], [0, 0, 0], "no AWS service was asked");
  });
});
