/** Configuration edges: endpoints with a path/query/fragment, `.`/`..` workspaces and prefix segments, URL credentials in messages. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConfigError, DataRemoteStateObjectStoreConfig, ObjectStoreBackendConfig, resolveSettings } from "../../../src/index.js";
import { checkWorkspace, statePath, layout } from "../../../src/config/layout.js";
import { isObjstateError } from "../../../src/errors.js";

const build = (p: Record<string, unknown>): ObjectStoreBackendConfig => ObjectStoreBackendConfig.from({ bucket: "state-bucket", ...p } as never);

function refused(fn: () => unknown, field: string, variable?: string): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  assert.equal(caught.code, "INVALID_VALUE", caught.message);
  assert.equal(caught.field, field);
  assert.equal(caught.variable, variable);
  return caught;
}

describe("endpoints name a host, never a path", () => {
  const fields = ["endpoint", "kvstoreEndpoint", "stsEndpoint"] as const;
  const bad = [
    "http://127.0.0.1:9000/some-path",
    "https://s3.example.com/bucket/",
    "http://h//",
    "http://h/?",
    "http://h?x=1",
    "http://h/#frag",
    "https://h:443/a?b#c",
    "http://h/%2F",
  ];
  const good = ["http://127.0.0.1:9000", "http://127.0.0.1:9000/", "https://s3.example.com", "s3.example.com:9000", "HTTP://H/"];

  for (const field of fields) {
    it(`${field}: a path, query or fragment is refused at build time; / alone is fine`, () => {
      for (const v of good) assert.doesNotThrow(() => build({ [field]: v }), v);
      for (const v of bad) {
        const e = refused(() => build({ [field]: v }), field);
        assert.match(e.message, /no path, query or fragment/);
        refused(() => ObjectStoreBackendConfig.builder().bucket("state-bucket")[field](v).build(), field);
      }
    });
  }

  it("the remote-state config refuses them too", () => {
    refused(() => DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", endpoint: "http://h:1/other-bucket" }), "endpoint");
  });

  it("values from environment variables are refused at resolution, naming the variable", () => {
    const c = build({});
    for (const [variable, field] of [
      ["PROVIDER_OBJECT_STORE_ENDPOINT", "endpoint"],
      ["OBJECT_STORE_ENDPOINT", "endpoint"],
      ["PROVIDER_STS_ENDPOINT", "stsEndpoint"],
    ] as const) {
      const e = refused(() => resolveSettings(c, { [variable]: "http://127.0.0.1:9000/some-path" }), field, variable);
      assert.match(e.message, new RegExp(`^${variable} \\(for ${field}\\) must be`));
      assert.doesNotThrow(() => resolveSettings(c, { [variable]: "http://127.0.0.1:9000/" }));
    }
  });

  it("file: endpoints keep their paths (the path is the directory)", () => {
    assert.doesNotThrow(() => build({ endpoint: "file:./.objstate", kvstoreEndpoint: "file:///var/lib/objstate" }));
  });
});

describe("credentials in an endpoint URL never reach a message", () => {
  it("a refused endpoint is shown without its user info", () => {
    const password = "pw-in-url-7f3a";
    for (const v of [`http://user:${password}@127.0.0.1:9000/path`, `http://user:${password}${"x".repeat(80)}@h/p`, `ftp://u:${password}@h`]) {
      const e = refused(() => build({ endpoint: v }), "endpoint");
      assert.ok(!e.message.includes(password), e.message);
      assert.ok(!String(e.stack).includes(password));
      assert.match(e.message, /<redacted>@/);
    }
    const env = refused(
      () => resolveSettings(build({}), { PROVIDER_OBJECT_STORE_ENDPOINT: `https://ak:${password}@h/p` }),
      "endpoint",
      "PROVIDER_OBJECT_STORE_ENDPOINT",
    );
    assert.ok(!env.message.includes(password));
  });

  it("a valid endpoint with user info prints redacted from the config object", () => {
    const c = build({ endpoint: "http://user:pw-in-url@127.0.0.1:9000" });
    assert.equal(c.endpoint, "http://user:pw-in-url@127.0.0.1:9000", "the getter keeps the value");
    for (const text of [String(c), JSON.stringify(c)]) {
      assert.ok(!text.includes("pw-in-url"), text);
      assert.ok(text.includes("127.0.0.1:9000"));
    }
  });
});

describe("workspace names . and .. are refused everywhere", () => {
  it("remote-state config workspace", () => {
    for (const w of [".", ".."]) refused(() => DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", workspace: w }), "workspace");
    for (const w of ["...", ".a", "a.", "a..b", "default"])
      assert.doesNotThrow(() => DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", workspace: w }), w);
  });

  it("the backend's own checkWorkspace (every state path goes through it)", () => {
    for (const w of [".", ".."]) {
      assert.throws(
        () => checkWorkspace(w),
        (e) => isObjstateError(e, "INVALID_WORKSPACE") && /not '\.' or '\.\.'/.test(e.message),
      );
      assert.throws(
        () => statePath(layout("env:", "tool.tfstate"), w),
        (e) => isObjstateError(e, "INVALID_WORKSPACE"),
      );
    }
    assert.equal(statePath(layout("env:", "tool.tfstate"), "..."), "env:/.../tool.tfstate");
  });

  it("prefix: no . or .. segment", () => {
    for (const p of [".", "..", "a/..", "../x", "a/./b", "env:/..", "./env"]) refused(() => build({ prefix: p }), "prefix");
    for (const p of ["env:", "a/b", ".hidden", "a./", "a..b/c", "env:/", "..."]) assert.doesNotThrow(() => build({ prefix: p }), p);
  });
});
