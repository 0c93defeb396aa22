/**
 * No request goes to an address nobody configured for objstate: an operator's AWS
 * config file (`defaults_mode = auto`, endpoint URLs, FIPS, dual-stack, …) and `AWS_*`
 * variables all point at a loopback recorder, and real operations against Ceph RGW (S3
 * and STS) and dynalite must succeed without the recorder seeing a single request —
 * neither an endpoint override nor the instance metadata service. The seed's settings
 * give the endpoints and the keys here, so the AWS variables objstate does read
 * (credentials, `AWS_ENDPOINT_URL*`: docs/decisions/019, 020) come after them and change
 * nothing; `AWS_REGION` fills the unset region, which only signs.
 */
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startCli, type CliOptions, type CliResult } from "../../support/cli.js";
import { testServers } from "../../support/servers.js";
import { cephTarget } from "../../support/targets.js";
import { listenLow } from "../../support/port.js";

describe("SDK clients ignore the operator's AWS configuration", () => {
  const s = testServers();
  let recorder: Server;
  let url: string;
  const seen: string[] = [];
  before(async () => {
    recorder = createServer((req, res) => {
      seen.push(`${req.method ?? "?"} ${req.url ?? ""}`);
      res.writeHead(500).end();
    });
    await listenLow(recorder);
    url = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  });
  after(() => {
    recorder.closeAllConnections();
    recorder.close();
  });

  /** HOME with ~/.aws/config and ~/.aws/credentials; `body` is the config's profile settings. */
  function awsHome(body: string): { home: string; config: string } {
    const home = mkdtempSync(join(tmpdir(), "objstate-awshome-"));
    mkdirSync(join(home, ".aws"));
    const config = join(home, ".aws", "config");
    writeFileSync(config, `[default]\n${body}\n[profile operator]\n${body}\n`);
    writeFileSync(join(home, ".aws", "credentials"), "[default]\naws_access_key_id = AKIDOPERATOR\naws_secret_access_key = operator-secret\n");
    return { home, config };
  }

  /** The CLI in a child process, not spawnSync: the recorder must keep serving meanwhile. */
  function runCli(args: string[], options: CliOptions): Promise<CliResult> {
    return startCli(args, options).done;
  }

  /** Push, pull, lock, unlock and list with an assumed role; every command must succeed. */
  async function operate(env: Record<string, string>): Promise<void> {
    const props = await cephTarget().setup({ locks: true });
    const flags = [
      "--bucket",
      props.bucket,
      "--endpoint",
      s.s3Endpoint,
      "--kvstore-endpoint",
      s.dynamoEndpoint,
      "--kvstore-table",
      props.kvstoreTable as string,
      "--assume-role-role-arn",
      s.roleArn,
    ];
    const all = { ...env, PROVIDER_ACCESS_KEY: s.accessKey, PROVIDER_SECRET_KEY: s.secretKey };
    const state = '{"version":4,"serial":1,"lineage":"iso","outputs":{},"resources":[]}';
    const push = await runCli(["state", "push", "-", ...flags], { input: state, env: all });
    assert.equal(push.code, 0, push.stderr);
    const pull = await runCli(["state", "pull", ...flags], { env: all });
    assert.equal(pull.code, 0, pull.stderr);
    assert.equal(pull.stdout, state);
    const lock = await runCli(["lock", ...flags], { env: all });
    assert.equal(lock.code, 0, lock.stderr);
    const unlock = await runCli(["unlock", lock.stdout.trim(), ...flags], { env: all });
    assert.equal(unlock.code, 0, unlock.stderr);
    const list = await runCli(["workspace", "list", ...flags], { env: all });
    assert.equal(list.code, 0, list.stderr);
    for (const r of [push, pull, lock, unlock, list]) assert.doesNotMatch(r.stderr, /@smithy|@aws-sdk|WARN/, "no raw SDK warnings");
  }

  it("every AWS_* variable and config-file setting pointed at a recorder: zero requests reach it", async () => {
    const { home, config } = awsHome(
      [
        "defaults_mode = auto",
        "region = eu-west-1",
        `endpoint_url = ${url}`,
        `ec2_metadata_service_endpoint = ${url}`,
        "max_attempts = 9",
        "retry_mode = adaptive",
        "use_fips_endpoint = true",
        "use_dualstack_endpoint = true",
        "endpoint_discovery_enabled = true",
        "account_id_endpoint_mode = required",
        "auth_scheme_preference = sigv4a",
        "request_checksum_calculation = when_supported",
      ].join("\n"),
    );
    await operate({
      HOME: home,
      AWS_CONFIG_FILE: config,
      AWS_SHARED_CREDENTIALS_FILE: join(home, ".aws", "credentials"),
      AWS_PROFILE: "operator",
      AWS_REGION: "eu-west-1",
      AWS_DEFAULT_REGION: "eu-west-1",
      AWS_DEFAULTS_MODE: "auto",
      AWS_ENDPOINT_URL: url,
      AWS_ENDPOINT_URL_S3: url,
      AWS_ENDPOINT_URL_DYNAMODB: url,
      AWS_ENDPOINT_URL_STS: url,
      AWS_MAX_ATTEMPTS: "9",
      AWS_RETRY_MODE: "adaptive",
      AWS_USE_FIPS_ENDPOINT: "true",
      AWS_USE_DUALSTACK_ENDPOINT: "true",
      AWS_EC2_METADATA_SERVICE_ENDPOINT: url,
      AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE: "IPv4",
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${url}/creds`,
      AWS_ENABLE_ENDPOINT_DISCOVERY: "true",
      AWS_ACCOUNT_ID_ENDPOINT_MODE: "required",
      AWS_AUTH_SCHEME_PREFERENCE: "sigv4a",
      AWS_STS_REGIONAL_ENDPOINTS: "regional",
      AWS_ACCESS_KEY_ID: "AKIDOPERATOR",
      AWS_SECRET_ACCESS_KEY: "operator-secret",
    });
    assert.deepEqual(seen, []);
  });

  it("only defaults_mode = auto and a region in ~/.aws/config (the metadata-service region probe): zero requests", async () => {
    const { home } = awsHome("defaults_mode = auto\nregion = eu-west-1");
    await operate({ HOME: home, AWS_EC2_METADATA_SERVICE_ENDPOINT: url });
    assert.deepEqual(seen, []);
  });
});
