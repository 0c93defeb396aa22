/**
 * Builders keep their values in a private field (src/config/base.ts, defineKind) and
 * synthesis writes the set fields in table order (src/config/tool-json.ts, block): the same
 * errors, reusable builders, nothing printable.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { inspect } from "node:util";
import {
  backendToolJson,
  DataRemoteStateObjectStore,
  DataRemoteStateObjectStoreConfig,
  ObjectStoreBackendConfig,
  remoteStateToolJson,
  REMOTE_STATE_FIELDS,
} from "../../../src/index.js";

process.removeAllListeners("warning");

describe("builders", () => {
  it("a later setter call fixes an invalid value, and an invalid value after a valid one is refused", () => {
    const b = ObjectStoreBackendConfig.builder().bucket("state-bucket").acl("bad");
    assert.throws(() => b.build(), { code: "INVALID_VALUE", field: "acl" });
    assert.equal(b.acl("private").build().acl, "private");
    assert.equal(b.acl(null).build().acl, undefined);
    // The same field valid first (its last valid value is remembered), then invalid.
    const r = DataRemoteStateObjectStoreConfig.builder().bucket("state-bucket").region("eu-west-1");
    assert.equal(r.build().region, "eu-west-1");
    assert.throws(() => r.region("not a region!").build(), { code: "INVALID_VALUE", field: "region" });
    assert.throws(() => r.region(42 as never).build(), { code: "INVALID_TYPE", field: "region" });
    assert.equal(r.region("eu-west-1").build().region, "eu-west-1");
  });

  it("reports the first bad field in table order whatever order the setters ran in", () => {
    const b = ObjectStoreBackendConfig.builder().region("not a region!").acl("bad");
    assert.throws(() => b.build(), { code: "REQUIRED", field: "bucket" });
    assert.throws(() => b.bucket("state-bucket").build(), { code: "INVALID_VALUE", field: "acl" });
  });

  it("build() twice gives equal, distinct objects, and later setters change neither", () => {
    const b = DataRemoteStateObjectStoreConfig.builder()
      .bucket("state-bucket")
      .defaults({ a: [1] });
    const one = b.build();
    const two = b.build();
    assert.notEqual(one, two);
    assert.deepEqual(one.toProps(), two.toProps());
    b.key("later.tfstate");
    assert.equal(one.key, undefined);
    assert.equal(two.key, undefined);
    assert.equal(b.build().key, "later.tfstate");
  });

  it("print the fields set, in table order, secrets redacted; the values are in no property", () => {
    const b = ObjectStoreBackendConfig.builder().secretKey("sk-TOP-SECRET").region("eu-west-1").bucket("state-bucket").acl(null);
    assert.equal(JSON.stringify(b), '{"bucket":"state-bucket","acl":null,"region":"eu-west-1","secretKey":"<redacted>"}');
    assert.equal(String(b), `ObjectStoreBackendConfigBuilder ${JSON.stringify(b)}`);
    const raw = inspect(b, { showHidden: true, customInspect: false, depth: Infinity, getters: true });
    assert.ok(!raw.includes("TOP-SECRET"), raw);
    assert.deepEqual(Object.getOwnPropertyNames(b), []);
    assert.deepEqual(Object.getOwnPropertySymbols(b), []);
  });

  it("toBuilder() starts from every set field", () => {
    const c = DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", workspace: "prod", defaults: { a: 1 }, encrypt: false });
    assert.deepEqual(c.toBuilder().build().toProps(), c.toProps());
    assert.deepEqual(c.toBuilder().workspace(null).build().toProps(), { bucket: "state-bucket", defaults: { a: 1 }, encrypt: false });
  });
});

describe("synthesis of the set fields", () => {
  // Every combination of a few optional fields, built both ways, against the JSON written
  // out by hand from the props.
  const OPTIONAL = {
    acl: "private",
    encrypt: false,
    key: "k.tfstate",
    region: "eu-west-1",
    kvstoreTable: "locks",
    workspace: "prod",
    defaults: { a: 1 },
  } as const;
  const JSON_KEY = Object.fromEntries(REMOTE_STATE_FIELDS.map((f) => [f.name, f.jsonKey]));
  const names = Object.keys(OPTIONAL) as (keyof typeof OPTIONAL)[];

  it("writes exactly the set fields, in table order, for each of 128 combinations", () => {
    for (let mask = 0; mask < 2 ** names.length; mask++) {
      const props: Record<string, unknown> = { bucket: "state-bucket" };
      names.forEach((n, i) => {
        if ((mask & (1 << i)) !== 0) props[n] = OPTIONAL[n];
      });
      let b = DataRemoteStateObjectStoreConfig.builder();
      for (const [k, v] of Object.entries(props).reverse()) b = (b as unknown as Record<string, (v: unknown) => typeof b>)[k]!(v);
      for (const config of [DataRemoteStateObjectStoreConfig.from(props as never), b.build()]) {
        const expected: Record<string, unknown> = {};
        for (const f of REMOTE_STATE_FIELDS)
          if (props[f.name] !== undefined && f.name !== "defaults" && f.name !== "workspace") expected[JSON_KEY[f.name] as string] = props[f.name];
        const entry = new DataRemoteStateObjectStore("s", config).toToolJson().data.tool_remote_state["s"];
        assert.deepEqual(Object.keys(entry?.config ?? {}), Object.keys(expected));
        assert.deepEqual(entry?.config, expected);
        assert.deepEqual(entry?.defaults, props["defaults"]);
        assert.equal(entry?.workspace, props["workspace"]);
      }
    }
  });

  it("still reads plain props passed where a config is typed (JavaScript callers)", () => {
    const props = { bucket: "state-bucket", kvstoreTable: "locks", encrypt: true, assumeRole: { roleArn: "arn:r" } };
    assert.deepEqual(backendToolJson(props as never), {
      tool: { backend: { objectstore: { bucket: "state-bucket", assume_role: { role_arn: "arn:r" }, encrypt: true, kvstore_table: "locks" } } },
    });
    assert.deepEqual(remoteStateToolJson("net", { bucket: "state-bucket", workspace: "w" } as never), {
      data: { tool_remote_state: { net: { backend: "objectstore", config: { bucket: "state-bucket" }, workspace: "w" } } },
    });
  });

  it("writes the nested block's set fields only", () => {
    const c = ObjectStoreBackendConfig.builder().bucket("state-bucket").assumeRole({ roleArn: "arn:r", sessionExpiration: 900 }).build();
    assert.deepEqual(c.toToolJson().tool.backend.objectstore, { bucket: "state-bucket", assume_role: { role_arn: "arn:r", session_expiration: 900 } });
  });
});
