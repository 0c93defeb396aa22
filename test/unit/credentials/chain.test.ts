/** The chain without STS: static keys, the compute role from a loopback metadata service, no credentials. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackendConfig, isObjstateError } from "../../../src/index.js";
import { describeCredentialSource, resolveEffectiveSettings, resolveIdentity } from "../../../src/credentials/index.js";
import { startMetadataServer, success, type MetadataServer } from "../../support/metadata-server.js";

const B = (p: Record<string, unknown> = {}): ObjectStoreBackendConfig =>
  ObjectStoreBackendConfig.from({ bucket: "state-bucket", endpoint: "http://127.0.0.1:1", ...p } as never);
const identityOf = async (p: Record<string, unknown>, env: Record<string, string> = {}) => resolveIdentity(resolveEffectiveSettings(B(p), env), { env });

describe("credentials chain", () => {
  let md: MetadataServer;
  before(async () => {
    md = await startMetadataServer({
      good: success("AK-META", "SK-META", 1800),
      failing: { body: { Code: "Failure", Message: "role detached" } },
      slow: { ...success("AK-SLOW", "SK-SLOW"), delayMs: 4000 },
      broken: { status: 500, body: {} },
    });
  });
  after(() => md.close());

  it("static keys from the environment, token included", async () => {
    const id = await identityOf({}, { PROVIDER_ACCESS_KEY_ID: "AK-E", PROVIDER_ACCESS_KEY_SECRET: "SK-E", PROVIDER_SECURITY_TOKEN: "T-E" });
    assert.deepEqual(await id.provider(), { accessKeyId: "AK-E", secretAccessKey: "SK-E", sessionToken: "T-E" });
    assert.equal(id.source, "static keys (env:PROVIDER_ACCESS_KEY_ID) with a security token");
  });

  it("an access key without a secret is an error naming where the key came from", async () => {
    await assert.rejects(
      identityOf({ accessKey: "AK" }),
      (e) => isObjstateError(e, "CREDENTIALS_INCOMPLETE") && /\(explicit\)/.test(e.message) && !e.message.includes("AK "),
    );
  });

  it("compute role: credentials from the metadata service, with expiry", async () => {
    const id = await identityOf({ computeRoleName: "good" }, { PROVIDER_METADATA_ENDPOINT: md.url });
    const c = await id.provider();
    assert.equal(c.accessKeyId, "AK-META");
    assert.equal(c.sessionToken, "metadata-token");
    assert.ok(c.expiration !== undefined && Math.abs(c.expiration.getTime() - Date.now() - 1800_000) < 10_000);
    assert.match(id.source, /compute role "good" \(explicit\) from the metadata service at http:\/\/127\.0\.0\.1/);
  });

  it("compute role only without an access key: with keys the metadata service is not contacted", async () => {
    const before = md.requests.length;
    const id = await identityOf({ computeRoleName: "good", accessKey: "AK", secretKey: "SK" }, { PROVIDER_METADATA_ENDPOINT: md.url });
    assert.equal((await id.provider()).accessKeyId, "AK");
    assert.equal(md.requests.length, before);
  });

  for (const [role, code, pattern] of [
    ["unknown", "COMPUTE_ROLE_UNKNOWN", /knows no role "unknown" \(404\)/],
    ["failing", "COMPUTE_ROLE_FAILED", /answered Code "Failure" \(not "Success"\)/],
    ["broken", "COMPUTE_ROLE_FAILED", /answered 500/],
    ["slow", "METADATA_UNREACHABLE", /did not answer within 1500 ms/],
  ] as const) {
    it(`compute role error: ${role}`, async () => {
      const started = Date.now();
      await assert.rejects(
        identityOf({ computeRoleName: role }, { PROVIDER_METADATA_ENDPOINT: md.url }),
        (e) => isObjstateError(e, code) && pattern.test(e.message),
      );
      assert.ok(Date.now() - started < 3000, "gave up within the timeout");
    });
  }

  it("the plan says where the identity will come from without contacting anything", () => {
    const plan = (p: Record<string, unknown>, env: Record<string, string> = {}): string => describeCredentialSource(resolveEffectiveSettings(B(p), env), env);
    assert.equal(plan({}, { PROVIDER_ACCESS_KEY: "AK-SECRETLESS" }), "static keys (env:PROVIDER_ACCESS_KEY)");
    assert.equal(plan({ computeRoleName: "r" }), 'compute role "r" (explicit) from the metadata service');
    assert.equal(
      plan({ accessKey: "AK", assumeRoleRoleArn: "arn:aws:iam:::role/x" }),
      "static keys (explicit), then role arn:aws:iam:::role/x (explicit) through STS",
    );
    assert.equal(
      plan({}),
      "none: no access key and no compute role; the AWS chain is not consulted: objstate was given an environment of its own (env), and the AWS SDK's providers read only the process environment",
    );
    assert.ok(!plan({}, { PROVIDER_ACCESS_KEY: "AK-SECRETLESS" }).includes("AK-SECRETLESS"));
  });

  it("no credentials at all: one error listing what was tried, in order, no values", async () => {
    await assert.rejects(identityOf({ assumeRoleRoleArn: "arn:aws:iam:::role/x", secretKey: "SECRET-ONLY" }), (e) => {
      assert.ok(isObjstateError(e, "NO_CREDENTIALS"));
      const lines = e.message.split("\n");
      assert.match(lines[1] as string, /static keys: no access key/);
      assert.match(lines[2] as string, /compute-instance role: no computeRoleName/);
      assert.match(e.message, /A role \(explicit\) can only be assumed from a base identity/);
      assert.ok(!e.message.includes("SECRET-ONLY"));
      return true;
    });
  });
});
