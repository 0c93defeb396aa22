/**
 * The AWS settings a team already has, at the command line (subprocesses of the built CLI,
 * no servers): `AWS_REGION`, `AWS_ENDPOINT_URL*` after the seed's own settings, with their
 * provenance in `config`; the AWS credential source `config` names without contacting
 * anything; and `doctor`'s list of what was tried when nothing is found.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../../support/cli.js";
import { assertOneLineError } from "./suite.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-cli-aws-"));
let n = 0;
function file(text: string): string {
  const p = join(dir, `f${++n}`);
  writeFileSync(p, text);
  chmodSync(p, 0o600);
  return p;
}

type Shown = { value: unknown; source: string };
function configJson(args: string[], env: Record<string, string | undefined> = {}): { settings: Record<string, Shown>; credentials: string } {
  const r = runCli(["config", "--json", "--bucket", "b-1", ...args], { env });
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as { settings: Record<string, Shown>; credentials: string };
}

describe("AWS_REGION and AWS_ENDPOINT_URL* after the seed's settings", () => {
  it("region: PROVIDER_REGION > AWS_REGION > AWS_DEFAULT_REGION, each with its source", () => {
    assert.deepEqual(configJson([], { AWS_REGION: "eu-west-1", AWS_DEFAULT_REGION: "eu-west-2" }).settings["region"], {
      value: "eu-west-1",
      source: "aws:env:AWS_REGION",
    });
    assert.deepEqual(configJson([], { AWS_DEFAULT_REGION: "eu-west-2" }).settings["region"], { value: "eu-west-2", source: "aws:env:AWS_DEFAULT_REGION" });
    assert.deepEqual(configJson([], { PROVIDER_REGION: "us-west-2", AWS_REGION: "eu-west-1" }).settings["region"], {
      value: "us-west-2",
      source: "env:PROVIDER_REGION",
    });
    assert.deepEqual(configJson(["--region", "ap-south-1"], { AWS_REGION: "eu-west-1" }).settings["region"], {
      value: "ap-south-1",
      source: "explicit",
      from: "--region",
    } as Shown);
  });

  it("--help names the AWS variables after the seed's", () => {
    const help = runCli(["state", "pull", "--help"]).stdout;
    assert.match(help, /--region <region> .*\[env: PROVIDER_REGION, PROVIDER_DEFAULT_REGION; then AWS_REGION, AWS_DEFAULT_REGION\]/);
    assert.match(help, /--kvstore-endpoint <endpoint> .*\[env: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL\]/);
  });

  it("endpoints: the service's variable before AWS_ENDPOINT_URL, both after the seed's", () => {
    const aws = {
      AWS_ENDPOINT_URL: "http://127.0.0.1:7000",
      AWS_ENDPOINT_URL_S3: "http://127.0.0.1:7001",
      AWS_ENDPOINT_URL_DYNAMODB: "http://127.0.0.1:7002",
      AWS_ENDPOINT_URL_STS: "http://127.0.0.1:7003",
    };
    const all = configJson([], aws).settings;
    assert.deepEqual(all["endpoint"], { value: "http://127.0.0.1:7001", source: "aws:env:AWS_ENDPOINT_URL_S3" });
    assert.deepEqual(all["kvstoreEndpoint"], { value: "http://127.0.0.1:7002", source: "aws:env:AWS_ENDPOINT_URL_DYNAMODB" });
    assert.deepEqual(all["stsEndpoint"], { value: "http://127.0.0.1:7003", source: "aws:env:AWS_ENDPOINT_URL_STS" });
    const general = configJson([], { AWS_ENDPOINT_URL: "http://127.0.0.1:7000" }).settings;
    for (const f of ["endpoint", "kvstoreEndpoint", "stsEndpoint"])
      assert.deepEqual(general[f], { value: "http://127.0.0.1:7000", source: "aws:env:AWS_ENDPOINT_URL" }, f);
    const seed = configJson(["--kvstore-endpoint", "http://127.0.0.1:8002"], {
      ...aws,
      PROVIDER_OBJECT_STORE_ENDPOINT: "http://127.0.0.1:8001",
      PROVIDER_STS_ENDPOINT: "http://127.0.0.1:8003",
    }).settings;
    assert.deepEqual(
      [seed["endpoint"]?.source, seed["kvstoreEndpoint"]?.source, seed["stsEndpoint"]?.source],
      ["env:PROVIDER_OBJECT_STORE_ENDPOINT", "explicit", "env:PROVIDER_STS_ENDPOINT"],
    );
  });

  it("STS: the seed's own http object-store endpoint keeps STS (as before); an AWS variable takes it only otherwise", () => {
    const sts = { AWS_ENDPOINT_URL_STS: "http://127.0.0.1:7003" };
    assert.deepEqual(configJson(["--endpoint", "http://127.0.0.1:8001"], sts).settings["stsEndpoint"], { value: null, source: "unset" });
    assert.deepEqual(configJson(["--endpoint", "file:./store"], sts).settings["stsEndpoint"], {
      value: "http://127.0.0.1:7003",
      source: "aws:env:AWS_ENDPOINT_URL_STS",
    });
    assert.deepEqual(configJson([], { ...sts, AWS_ENDPOINT_URL_S3: "http://127.0.0.1:7001" }).settings["stsEndpoint"], {
      value: "http://127.0.0.1:7003",
      source: "aws:env:AWS_ENDPOINT_URL_STS",
    });
  });

  it("an AWS endpoint with a path is refused, naming the variable (exit 2); one the seed overrides is not even read", () => {
    const r = runCli(["config", "--bucket", "b-1"], { env: { AWS_ENDPOINT_URL_S3: "http://127.0.0.1:7001/bucket" } });
    assert.equal(r.code, 2, r.stderr);
    assertOneLineError(r, /AWS_ENDPOINT_URL_S3 \(for endpoint\) must be a URL/);
    const d = runCli(["config", "--bucket", "b-1"], { env: { AWS_ENDPOINT_URL: "https://s3.example.com/x" } });
    assert.equal(d.code, 2, d.stderr);
    assertOneLineError(d, /AWS_ENDPOINT_URL \(for endpoint\)/);
    assert.equal(
      runCli(["config", "--bucket", "b-1", "--endpoint", "http://127.0.0.1:1"], { env: { AWS_ENDPOINT_URL_S3: "http://127.0.0.1:7001/bucket" } }).code,
      0,
    );
    const region = runCli(["config", "--bucket", "b-1"], { env: { AWS_REGION: "eu west" } });
    assert.equal(region.code, 2, region.stderr);
    assertOneLineError(region, /AWS_REGION \(for region\) must be a region name/);
  });
});

describe("config names the AWS credential source without contacting anything", () => {
  const http = ["--endpoint", "http://127.0.0.1:1"];
  const creds = (): string =>
    file(
      "[default]\naws_access_key_id = AKFILE\naws_secret_access_key = file-secret-value\n[dev]\naws_access_key_id = AKDEV\naws_secret_access_key = file-secret-value\n",
    );
  const config = (): string =>
    file(
      "[profile proc]\ncredential_process = /nonexistent/get-creds --token SECRET-IN-ARGS\n[profile sso]\nsso_session = corp\nsso_role_name = ci\n[profile role]\nrole_arn = arn:aws:iam:::role/deployer\nsource_profile = dev\n",
    );

  it("each source, in the chain's order, and a seed source before all of them", () => {
    const c = creds();
    const cfg = config();
    const files = { AWS_CONFIG_FILE: cfg, AWS_SHARED_CREDENTIALS_FILE: c };
    const plan = (env: Record<string, string | undefined>): string => configJson(http, { ...files, ...env }).credentials;
    assert.equal(plan({ AWS_ACCESS_KEY_ID: "AKENV", AWS_SECRET_ACCESS_KEY: "env-secret-value" }), "aws:env (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)");
    assert.equal(plan({}), `aws:profile:default (static keys in ${c})`);
    assert.equal(plan({ AWS_PROFILE: "dev", AWS_ACCESS_KEY_ID: "AKENV", AWS_SECRET_ACCESS_KEY: "env-secret-value" }), `aws:profile:dev (static keys in ${c})`);
    assert.equal(plan({ AWS_PROFILE: "proc" }), `aws:process:proc (credential_process in ${cfg})`);
    assert.equal(plan({ AWS_PROFILE: "sso" }), `aws:sso:sso (SSO in ${cfg})`);
    assert.equal(plan({ AWS_PROFILE: "role" }), `aws:profile:role (role_arn through STS from source_profile dev in ${cfg})`);
    const none = { AWS_CONFIG_FILE: undefined, AWS_SHARED_CREDENTIALS_FILE: undefined, HOME: dir };
    assert.equal(
      plan({ ...none, AWS_WEB_IDENTITY_TOKEN_FILE: "/var/run/token", AWS_ROLE_ARN: "arn:aws:iam::1:role/ci" }),
      "aws:web-identity (AWS_WEB_IDENTITY_TOKEN_FILE, role arn:aws:iam::1:role/ci through STS)",
    );
    assert.equal(
      plan({ ...none, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: "/v2/credentials/x" }),
      "aws:container-metadata (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: the container credentials service at http://169.254.170.2/v2/credentials/x)",
    );
    assert.equal(plan({ ...none, AWS_EC2_METADATA_DISABLED: undefined }), "aws:instance-metadata (the EC2 metadata service at http://169.254.169.254)");
    assert.equal(plan({ ...none }), "none: no access key and no compute role; nothing for the AWS chain either");
    assert.equal(
      plan({ PROVIDER_ACCESS_KEY: "AK-SEED", PROVIDER_SECRET_KEY: "seed-secret", AWS_ACCESS_KEY_ID: "AKENV", AWS_SECRET_ACCESS_KEY: "env-secret-value" }),
      "static keys (env:PROVIDER_ACCESS_KEY)",
    );
    assert.equal(
      plan({ PROVIDER_ASSUME_ROLE_ARN: "arn:aws:iam:::role/seed", AWS_PROFILE: "dev" }),
      `aws:profile:dev (static keys in ${c}), then role arn:aws:iam:::role/seed (env:PROVIDER_ASSUME_ROLE_ARN) through STS`,
    );
  });

  it("the text form says the same on its credentials line, and no secret is printed", () => {
    const r = runCli(["config", "--bucket", "b-1", ...http], {
      env: { AWS_CONFIG_FILE: config(), AWS_PROFILE: "proc", AWS_REGION: "eu-west-1", AWS_ACCESS_KEY_ID: "AKENV", AWS_SECRET_ACCESS_KEY: "env-secret-value" },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^region +eu-west-1 +aws:env:AWS_REGION$/m);
    assert.match(r.stdout, /^credentials: aws:process:proc \(credential_process in .+\)$/m);
    for (const s of ["env-secret-value", "SECRET-IN-ARGS", "file-secret-value"]) assert.ok(!r.stdout.includes(s) && !r.stderr.includes(s), s);
  });
});

describe("doctor lists every source tried when none gives credentials", () => {
  it("the seed's sources and each AWS step, in order, with why, on the credentials line; nothing secret", () => {
    const r = runCli(["doctor", "--bucket", "b-1", "--endpoint", "http://127.0.0.1:1"], {
      env: { AWS_PROFILE: "absent", AWS_ACCESS_KEY_ID: "AKENV", AWS_SECRET_ACCESS_KEY: "env-secret-value" },
    });
    assert.equal(r.code, 1);
    const line = r.stdout.split("\n").find((l) => l.startsWith("FAIL  credentials:")) ?? "";
    const tried = /tried, in order: (.*) — fix:/.exec(line)?.[1] ?? "";
    assert.deepEqual(
      tried.split(/; \(\d+\) /).map((t) => /^(?:\(1\) )?([^:]+(?::[a-z-]+(?::absent)?)?):/.exec(t)?.[1]),
      ["static keys", "compute-instance role", "aws:env", "aws:profile:absent", "aws:web-identity", "aws:container-metadata", "aws:instance-metadata"],
    );
    assert.match(line, /aws:env: AWS_PROFILE is set, so the profile is used instead of AWS_ACCESS_KEY_ID/);
    assert.match(line, /aws:instance-metadata: AWS_EC2_METADATA_DISABLED is set/);
    assert.match(line, /— fix: .*AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE/);
    assert.ok(!r.stdout.includes("env-secret-value") && !r.stderr.includes("env-secret-value"));
  });
});
