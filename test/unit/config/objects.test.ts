/** Immutability, redaction, toBuilder, the deprecation warning and tool-version checks. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { inspect } from "node:util";
import { describe, it } from "node:test";
import { checkToolVersion, ConfigError, DataRemoteStateObjectStoreConfig, ObjectStoreBackendConfig } from "../../../src/index.js";

const SECRETS = { accessKey: "AKIA-TOP-SECRET", secretKey: "sk-TOP-SECRET", securityToken: "tok-TOP-SECRET" };

describe("value objects", () => {
  it("are immutable", () => {
    const c = ObjectStoreBackendConfig.from({ bucket: "state-bucket", key: "a.tfstate" });
    assert.throws(() => ((c as unknown as Record<string, unknown>)["key"] = "b"), TypeError);
    assert.equal(c.getKey(), "a.tfstate");
  });

  it("toBuilder gives a modified copy and leaves the original alone", () => {
    const c = ObjectStoreBackendConfig.from({ bucket: "state-bucket", key: "a.tfstate" });
    const d = c.toBuilder().key("b.tfstate").region("eu-west-1").build();
    assert.equal(c.getKey(), "a.tfstate");
    assert.equal(c.getRegion(), undefined);
    assert.deepEqual(d.toProps(), { bucket: "state-bucket", key: "b.tfstate", region: "eu-west-1" });
    assert.throws(() => c.toBuilder().bucket(null).build(), { code: "REQUIRED" });
  });

  it("redacts secrets in toString, toJSON, JSON.stringify and util.inspect, but toProps keeps them", () => {
    for (const c of [
      ObjectStoreBackendConfig.from({ bucket: "state-bucket", ...SECRETS }),
      DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", ...SECRETS }),
    ]) {
      for (const text of [String(c), `${c}`, JSON.stringify(c), JSON.stringify({ nested: c }), inspect(c), inspect({ deep: { c } }, { depth: 5 })]) {
        assert.ok(!text.includes("TOP-SECRET"), text);
        assert.match(text, /<redacted>/);
        assert.match(text, /state-bucket/);
      }
      assert.deepEqual({ ...c.toProps() }, { bucket: "state-bucket", ...SECRETS });
    }
  });

  it("emits exactly one DeprecationWarning with a code per process for the assumeRole block", () => {
    const script = `
      const { ObjectStoreBackendConfig, DataRemoteStateObjectStoreConfig } = await import(${JSON.stringify(new URL("../../../src/index.js", import.meta.url).href)});
      const seen = [];
      process.on("warning", (w) => seen.push({ name: w.name, code: w.code }));
      ObjectStoreBackendConfig.from({ bucket: "state-bucket" });
      if (seen.length !== 0) throw new Error("warned without the block");
      ObjectStoreBackendConfig.from({ bucket: "state-bucket", assumeRole: { roleArn: "arn:r" } });
      ObjectStoreBackendConfig.builder().bucket("state-bucket").assumeRole({ roleArn: "arn:s" }).build();
      DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", assumeRole: { roleArn: "arn:t" } });
      await new Promise((r) => setTimeout(r, 20));
      console.log(JSON.stringify(seen));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    assert.deepEqual(JSON.parse(out), [{ name: "DeprecationWarning", code: "OBJSTATE_DEP_ASSUME_ROLE" }]);
  });

  describe("checkToolVersion", () => {
    const all = ObjectStoreBackendConfig.from({
      bucket: "state-bucket",
      profile: "p",
      sharedCredentialsFile: "/x",
      computeRoleName: "r",
      stsEndpoint: "sts.example.com",
      assumeRoleRoleArn: "arn:r",
      assumeRolePolicy: "{}",
      assumeRoleSessionName: "ss",
      assumeRoleSessionExpiration: 900,
    });
    it("reports fields newer than the target, by the seed's versions", () => {
      assert.deepEqual(checkToolVersion(all, "0.12.7").sort(), [
        "assumeRolePolicy",
        "assumeRoleRoleArn",
        "assumeRoleSessionExpiration",
        "assumeRoleSessionName",
        "computeRoleName",
        "profile",
        "sharedCredentialsFile",
        "stsEndpoint",
      ]);
      assert.deepEqual(checkToolVersion(all, "0.12.8").sort(), [
        "assumeRolePolicy",
        "assumeRoleRoleArn",
        "assumeRoleSessionExpiration",
        "assumeRoleSessionName",
        "computeRoleName",
        "stsEndpoint",
      ]);
      assert.deepEqual(checkToolVersion(all, "0.12.14").sort(), [
        "assumeRolePolicy",
        "assumeRoleRoleArn",
        "assumeRoleSessionExpiration",
        "assumeRoleSessionName",
        "stsEndpoint",
      ]);
      assert.deepEqual(checkToolVersion(all, "1.0.11").sort(), [
        "assumeRolePolicy",
        "assumeRoleRoleArn",
        "assumeRoleSessionExpiration",
        "assumeRoleSessionName",
      ]);
      assert.deepEqual(checkToolVersion(all, "1.1.0"), []);
      assert.deepEqual(checkToolVersion(all, "v2.0.0"), []);
    });
    it("only counts fields that are set", () => {
      assert.deepEqual(checkToolVersion(ObjectStoreBackendConfig.from({ bucket: "state-bucket", kvstoreTable: "locks" }), "0.1.0"), []);
    });
    it("rejects a malformed version", () => {
      assert.throws(
        () => checkToolVersion(all, "one"),
        (e: unknown) => e instanceof ConfigError && e.code === "INVALID_VERSION",
      );
    });
  });
});
