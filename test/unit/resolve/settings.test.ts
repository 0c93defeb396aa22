/** Resolution precedence: explicit > env > deprecated block (role fields) > profile > default. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DataRemoteStateObjectStoreConfig, ObjectStoreBackendConfig, resolveSettings, type ProfileLoader } from "../../../src/index.js";

process.removeAllListeners("warning");
const B = (p: Record<string, unknown> = {}): ObjectStoreBackendConfig => ObjectStoreBackendConfig.from({ bucket: "state-bucket", ...p } as never);

describe("resolveSettings", () => {
  it("flattened role fields win over the deprecated block when the role ARN is given flattened", () => {
    const c = B({ assumeRoleRoleArn: "arn:flat", assumeRole: { roleArn: "arn:block", sessionName: "block-sess", sessionExpiration: 900 } });
    const r = resolveSettings(c, {});
    assert.deepEqual(r.assumeRoleRoleArn, { value: "arn:flat", source: "explicit" });
    assert.deepEqual(r.assumeRoleSessionName, { value: "tool", source: "default" });
    assert.deepEqual(r.assumeRoleSessionExpiration, { value: 3600, source: "default" });
  });

  it("an env role ARN also beats the block", () => {
    const c = B({ assumeRole: { roleArn: "arn:block" } });
    assert.deepEqual(resolveSettings(c, { PROVIDER_ASSUME_ROLE_ARN: "arn:env" }).assumeRoleRoleArn, {
      value: "arn:env",
      source: "env:PROVIDER_ASSUME_ROLE_ARN",
    });
  });

  it("the block supplies the role fields when no flattened ARN is given; unset block fields fall back", () => {
    const c = B({ assumeRoleSessionName: "flat-sess", assumeRole: { roleArn: "arn:block", sessionExpiration: 1200, policy: '{"v":1}' } });
    const r = resolveSettings(c, {});
    assert.deepEqual(r.assumeRoleRoleArn, { value: "arn:block", source: "explicit", via: "assumeRole.roleArn" });
    assert.deepEqual(r.assumeRoleSessionExpiration, { value: 1200, source: "explicit", via: "assumeRole.sessionExpiration" });
    assert.deepEqual(r.assumeRolePolicy, { value: '{"v":1}', source: "explicit", via: "assumeRole.policy" });
    assert.deepEqual(r.assumeRoleSessionName, { value: "flat-sess", source: "explicit" });
  });

  it("profile layer fills what explicit and env leave unset, and names the profile", () => {
    const calls: [string, string][] = [];
    const profileLoader: ProfileLoader = (name, file) => {
      calls.push([name, file]);
      return { name, values: { region: "cn-profile-1", accessKey: "ak-profile", key: "ignored-not-in-layer-semantics" } };
    };
    const c = B({ profile: "prod", key: "explicit.tfstate" });
    const r = resolveSettings(c, { PROVIDER_ACCESS_KEY: "ak-env" }, { profileLoader });
    assert.deepEqual(calls, [["prod", "~/.provider/config.json"]]);
    assert.deepEqual(r.region, { value: "cn-profile-1", source: "profile:prod" });
    assert.deepEqual(r.accessKey, { value: "ak-env", source: "env:PROVIDER_ACCESS_KEY" });
    assert.deepEqual(r.key, { value: "explicit.tfstate", source: "explicit" });
    assert.deepEqual(r.sharedCredentialsFile, { value: "~/.provider/config.json", source: "default" });
  });

  it("the profile loader is not consulted without a profile", () => {
    let called = false;
    resolveSettings(B(), {}, { profileLoader: () => ((called = true), undefined) });
    assert.equal(called, false);
  });

  it("profile from env selects the profile and the credentials file from env is used", () => {
    const seen: string[] = [];
    const r = resolveSettings(
      B(),
      { PROVIDER_PROFILE: "dev", PROVIDER_SHARED_CREDENTIALS_FILE: "/tmp/c.json" },
      { profileLoader: (n, f) => (seen.push(`${n}@${f}`), undefined) },
    );
    assert.deepEqual(seen, ["dev@/tmp/c.json"]);
    assert.deepEqual(r.profile, { value: "dev", source: "env:PROVIDER_PROFILE" });
    assert.deepEqual(r.sharedCredentialsFile, { value: "/tmp/c.json", source: "env:PROVIDER_SHARED_CREDENTIALS_FILE" });
  });

  it("uses process.env when no env is passed", () => {
    const before = process.env["PROVIDER_REGION"];
    process.env["PROVIDER_REGION"] = "ap-test-1";
    try {
      assert.deepEqual(resolveSettings(B()).region, { value: "ap-test-1", source: "env:PROVIDER_REGION" });
    } finally {
      if (before === undefined) delete process.env["PROVIDER_REGION"];
      else process.env["PROVIDER_REGION"] = before;
    }
  });

  it("remote state: workspace defaults to default, explicit wins", () => {
    assert.deepEqual(resolveSettings(DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", workspace: "prod" }), {}).workspace, {
      value: "prod",
      source: "explicit",
    });
  });
});
