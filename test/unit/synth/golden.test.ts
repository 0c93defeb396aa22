/** Golden files of the synthesized tool JSON. Regenerate with UPDATE_GOLDEN=1 after a deliberate change. */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  DataRemoteStateObjectStore,
  DataRemoteStateObjectStoreConfig,
  formatToolJson,
  mergeToolJson,
  ObjectStoreBackendConfig,
  secretWarnings,
  type ToolJson,
} from "../../../src/index.js";

process.removeAllListeners("warning");
const GOLDEN = new URL("../../../../test/golden/", import.meta.url);

function golden(name: string, doc: ToolJson): void {
  const file = new URL(name, GOLDEN);
  const text = formatToolJson(doc);
  if (process.env["UPDATE_GOLDEN"] === "1") writeFileSync(file, text);
  assert.equal(text, readFileSync(file, "utf8"));
}

const EVERY_FIELD = {
  bucket: "state-bucket",
  accessKey: "<ACCESS_KEY>",
  acl: "private",
  assumeRole: { roleArn: "arn:aws:iam:::role/old", policy: '{"Statement":[]}', sessionName: "old-session", sessionExpiration: 1800 },
  assumeRolePolicy: '{"Version":"2012-10-17","Statement":[]}',
  assumeRoleRoleArn: "arn:aws:iam:::role/deployer",
  assumeRoleSessionExpiration: 900,
  assumeRoleSessionName: "deploy",
  computeRoleName: "ecs-state-role",
  encrypt: true,
  endpoint: "https://s3.example.com",
  key: "network.tfstate",
  prefix: "states",
  profile: "prod",
  region: "eu-west-1",
  secretKey: "<SECRET_KEY>",
  securityToken: "<SECURITY_TOKEN>",
  sharedCredentialsFile: "/etc/provider/config.json",
  stsEndpoint: "https://sts.example.com",
  kvstoreEndpoint: "https://dynamodb.example.com",
  kvstoreTable: "state-locks",
} as const;

describe("synthesis golden files", () => {
  it("backend with every field set (deprecated block included, secrets as set)", () => {
    golden("backend-all-fields.json", ObjectStoreBackendConfig.from(EVERY_FIELD).toToolJson());
  });
  it("backend with only bucket", () => {
    golden("backend-bucket-only.json", ObjectStoreBackendConfig.builder().bucket("state-bucket").build().toToolJson());
  });
  it("remote state with defaults and workspace, merged with a backend", () => {
    const net = new DataRemoteStateObjectStore(
      "net",
      DataRemoteStateObjectStoreConfig.from({
        bucket: "state-bucket",
        key: "network.tfstate",
        kvstoreTable: "state-locks",
        defaults: { vpc_id: "vpc-none", SubnetIDs: ["a", "b"], nested: { Keep_Case: 1 } },
        workspace: "staging",
      }),
    );
    const dns = new DataRemoteStateObjectStore("dns", { bucket: "state-bucket", key: "dns.tfstate" });
    golden("remote-state.json", mergeToolJson(ObjectStoreBackendConfig.from({ bucket: "state-bucket" }).toToolJson(), net.toToolJson(), dns.toToolJson()));
  });
  it("output references", () => {
    const net = new DataRemoteStateObjectStore("net", { bucket: "state-bucket" });
    assert.equal(net.getString("vpc_id"), "${data.tool_remote_state.net.outputs.vpc_id}");
    assert.equal(net.getNumber("count"), "${data.tool_remote_state.net.outputs.count}");
    assert.equal(net.getList("subnets"), "${data.tool_remote_state.net.outputs.subnets}");
    assert.equal(net.getBoolean("ok"), "${data.tool_remote_state.net.outputs.ok}");
    assert.equal(net.get("any"), "${data.tool_remote_state.net.outputs.any}");
    assert.throws(() => net.get("bad name"), { code: "INVALID_NAME" });
    assert.throws(() => new DataRemoteStateObjectStore("1net", { bucket: "state-bucket" }), { code: "INVALID_NAME" });
  });
  it("merge refuses two backends and duplicate remote-state names", () => {
    const b = ObjectStoreBackendConfig.from({ bucket: "state-bucket" }).toToolJson();
    assert.throws(() => mergeToolJson(b, b), { code: "INVALID_PROPS" });
    const n = new DataRemoteStateObjectStore("net", { bucket: "state-bucket" }).toToolJson();
    assert.throws(() => mergeToolJson(n, n), { code: "INVALID_NAME", message: /"net" is defined twice/ });
  });
  it("warns about secrets written into the file, naming the env var, never the value", () => {
    const w = secretWarnings(ObjectStoreBackendConfig.from({ bucket: "state-bucket", accessKey: "AK-VALUE", securityToken: "TOK-VALUE" }));
    assert.equal(w.length, 2);
    assert.match(w[0] as string, /accessKey .* set PROVIDER_ACCESS_KEY instead/);
    assert.match(w[1] as string, /securityToken .* set PROVIDER_SECURITY_TOKEN instead/);
    assert.ok(!w.join().includes("VALUE"));
    assert.deepEqual(secretWarnings(ObjectStoreBackendConfig.from({ bucket: "state-bucket" })), []);
  });
});
