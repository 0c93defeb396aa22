/**
 * CLI behaviour that needs a real S3 / DynamoDB / STS server: credentials from flags, from
 * an assumed role, missing or wrong; doctor on an unreachable endpoint and a missing bucket.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { runCli, runCliBytes } from "../../support/cli.js";
import { testServers, type TestServers } from "../../support/servers.js";
import { cephTarget, uniqueName, type Target } from "../../support/targets.js";

describe("objstate CLI on Ceph RGW + dynalite: credentials and doctor", () => {
  let s: TestServers;
  let target: Target;
  const dir = mkdtempSync(join(tmpdir(), "objstate-cli-ceph-"));
  const state = join(dir, "state.json");
  writeFileSync(state, '{"version": 4, "serial": 1, "outputs": {"x": {"value": "y", "type": "string"}}}\n');

  before(() => {
    s = testServers();
    target = cephTarget();
  });

  async function where(): Promise<string[]> {
    const props = await target.setup({ locks: true });
    return ["--bucket", props.bucket, "--endpoint", s.s3Endpoint, "--kvstore-table", props.kvstoreTable as string, "--kvstore-endpoint", s.dynamoEndpoint];
  }

  it("takes credentials from flags", async () => {
    const w = await where();
    const creds = ["--access-key", s.accessKey, "--secret-key", s.secretKey];
    const push = runCli(["state", "push", state, ...w, ...creds]);
    assert.equal(push.code, 0, push.stderr);
    const pull = runCliBytes(["state", "pull", ...w, ...creds]);
    assert.equal(pull.code, 0, pull.stderr);
    assert.equal(pull.stdout.toString(), '{"version": 4, "serial": 1, "outputs": {"x": {"value": "y", "type": "string"}}}\n');
    const config = JSON.parse(runCli(["config", "--json", ...w, ...creds]).stdout) as {
      settings: Record<string, { value: unknown; from?: string }>;
      credentials: string;
    };
    assert.deepEqual(config.settings["secretKey"], { value: "<redacted>", source: "explicit", from: "--secret-key" });
    assert.match(config.credentials, /static keys \(explicit\)/);
  });

  it("assumes a role through STS (doctor shows the assumed identity), and works with it", async () => {
    const w = await where();
    const env = { PROVIDER_ACCESS_KEY: s.accessKey, PROVIDER_SECRET_KEY: s.secretKey };
    const role = ["--assume-role-role-arn", s.roleArn, "--assume-role-session-name", "cli-test"];
    const doctor = runCli(["doctor", ...w, ...role], { env });
    assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
    assert.match(doctor.stdout, /^ok {4}credentials: .*role/m);
    const push = runCli(["state", "push", state, ...w, ...role], { env });
    assert.equal(push.code, 0, push.stderr);
    assert.equal(runCli(["output", "x", "--raw", ...w, ...role], { env }).stdout, "y");
  });

  it("without credentials: doctor fails the credentials check and skips the rest; commands exit 1", async () => {
    const w = await where();
    const doctor = runCli(["doctor", ...w]);
    assert.equal(doctor.code, 1);
    const lines = doctor.stdout.trim().split("\n");
    assert.match(lines[1] as string, /^FAIL {2}credentials: .* — fix: set PROVIDER_ACCESS_KEY and PROVIDER_SECRET_KEY/);
    assert.ok(
      lines.slice(2).every((l) => l.startsWith("skip  ")),
      doctor.stdout,
    );
    const pull = runCli(["state", "pull", ...w]);
    assert.equal(pull.code, 1);
    assert.match(pull.stderr, /^objstate: error: no credentials found/);
  });

  it("with a wrong secret: doctor fails at the bucket with a fix, no secret in the output", async () => {
    const w = await where();
    const r = runCli(["doctor", ...w], { env: { PROVIDER_ACCESS_KEY: s.accessKey, PROVIDER_SECRET_KEY: "not-the-secret-at-all" } });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^FAIL {2}bucket: .* — fix: /m);
    assert.ok(!(r.stdout + r.stderr).includes("not-the-secret-at-all"));
  });

  it("doctor: a missing bucket fails with the init fix; an unreachable endpoint fails the endpoint check", async () => {
    const env = { PROVIDER_ACCESS_KEY: s.accessKey, PROVIDER_SECRET_KEY: s.secretKey };
    const missing = runCli(["doctor", "--bucket", uniqueName("nobucket"), "--endpoint", s.s3Endpoint], { env });
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /^FAIL {2}bucket: bucket \S+ does not exist at .* — fix: create it with objstate init --create-bucket/m);
    assert.match(missing.stdout, /^warn {2}lock table: no lock table is configured/m);
    const down = runCli(["doctor", "--bucket", "some-bucket", "--endpoint", "http://127.0.0.1:9"], { env });
    assert.equal(down.code, 1);
    assert.match(down.stdout, /^FAIL {2}object-store endpoint: cannot reach http:\/\/127\.0\.0\.1:9 \(ECONNREFUSED\) — fix: /m);
    assert.match(down.stdout, /^skip {2}bucket: the object-store endpoint is not reachable/m);
    const push = runCli(["state", "push", state, "--bucket", "some-bucket", "--endpoint", "http://127.0.0.1:9"], { env });
    assert.equal(push.code, 1);
    assert.match(push.stderr, /^objstate: warning: no lock table is configured/);
    assert.match(
      push.stderr.trim().split("\n").at(-1) as string,
      /^objstate: error: cannot reach the object store at http:\/\/127\.0\.0\.1:9 \(ECONNREFUSED\)/,
    );
  });
});
