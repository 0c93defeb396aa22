/** Every validation rule at its boundary, for flattened fields, the deprecated block and env values. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConfigError, DataRemoteStateObjectStoreConfig, ObjectStoreAssumeRole, ObjectStoreBackendConfig, resolveSettings } from "../../../src/index.js";

type Props = Record<string, unknown>;
const build = (p: Props): ObjectStoreBackendConfig => ObjectStoreBackendConfig.from({ bucket: "state-bucket", ...p } as never);

function rejects(fn: () => unknown, code: string, field: string, message: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.field, field);
    assert.match(e.message, message);
    return true;
  });
}

describe("validation", () => {
  it("bucket is required (builder, from, null, undefined)", () => {
    rejects(() => ObjectStoreBackendConfig.builder().build(), "REQUIRED", "bucket", /^bucket is required$/);
    rejects(() => ObjectStoreBackendConfig.from({} as never), "REQUIRED", "bucket", /^bucket is required$/);
    rejects(() => ObjectStoreBackendConfig.from({ bucket: null } as never), "REQUIRED", "bucket", /^bucket is required$/);
    rejects(() => DataRemoteStateObjectStoreConfig.builder().bucket(undefined).build(), "REQUIRED", "bucket", /^bucket is required$/);
  });

  describe("session expiration 900..3600, integer, number", () => {
    for (const [field, wrap] of [
      ["assumeRoleSessionExpiration", (v: unknown) => ({ assumeRoleSessionExpiration: v })],
      ["assumeRole.sessionExpiration", (v: unknown) => ({ assumeRole: { roleArn: "arn:r", sessionExpiration: v } })],
    ] as const) {
      it(field, () => {
        for (const ok of [900, 3600, 1800]) assert.doesNotThrow(() => build(wrap(ok)));
        for (const bad of [899, 3601, 0, -900, 1000.5, Number.NaN, Number.POSITIVE_INFINITY]) {
          rejects(() => build(wrap(bad)), "OUT_OF_RANGE", field, /must be an integer from 900 to 3600 \(seconds\), got /);
        }
        for (const bad of ["900", true, {}, [900]]) rejects(() => build(wrap(bad)), "INVALID_TYPE", field, /must be an integer from 900 to 3600/);
        assert.match(
          String(
            (() => {
              try {
                build(wrap(3601));
              } catch (e) {
                return (e as Error).message;
              }
            })(),
          ),
          /got 3601$/,
        );
        assert.doesNotThrow(() => build(wrap(null)));
      });
    }
    it("ObjectStoreAssumeRole directly", () => {
      rejects(() => ObjectStoreAssumeRole.from({ roleArn: "arn:r", sessionExpiration: 899 }), "OUT_OF_RANGE", "sessionExpiration", /got 899/);
    });
  });

  it("acl is one of three canned ACLs", () => {
    for (const ok of ["private", "public-read", "public-read-write"]) assert.equal(build({ acl: ok }).acl, ok);
    for (const bad of ["Private", "authenticated-read", ""])
      rejects(() => build({ acl: bad }), "INVALID_VALUE", "acl", /one of private, public-read, public-read-write/);
    rejects(() => build({ acl: 1 }), "INVALID_TYPE", "acl", /got 1$/);
  });

  it("prefix must not start with / or ./", () => {
    for (const ok of ["env:", "", "a/b", ".hidden", "a./"]) assert.doesNotThrow(() => build({ prefix: ok }));
    for (const bad of ["/env", "./env"]) rejects(() => build({ prefix: bad }), "INVALID_VALUE", "prefix", /does not start with '\/' or '.\/'/);
  });

  it("key must not start or end with /", () => {
    for (const ok of ["a", "dir/a.tfstate"]) assert.doesNotThrow(() => build({ key: ok }));
    for (const bad of ["/a", "a/", ""]) rejects(() => build({ key: bad }), "INVALID_VALUE", "key", /does not start or end with/);
  });

  it("bucket: 3-63 chars of a-z 0-9 . -, letter or digit at both ends", () => {
    for (const ok of ["abc", "a".repeat(63), "my.bucket-1", "0ab"]) assert.doesNotThrow(() => ObjectStoreBackendConfig.from({ bucket: ok }));
    for (const bad of ["ab", "a".repeat(64), "-abc", "abc-", "Abc", "ab_c", "a b"]) {
      rejects(() => ObjectStoreBackendConfig.from({ bucket: bad }), "INVALID_VALUE", "bucket", /3 to 63 characters/);
    }
    rejects(() => ObjectStoreBackendConfig.from({ bucket: 42 } as never), "INVALID_TYPE", "bucket", /got 42/);
  });

  it("endpoints: http(s) URL, file:, or bare host; sts endpoint never file:", () => {
    for (const ok of ["http://127.0.0.1:17480", "https://s3.example.com", "s3.example.com", "localhost:9000", "file:./.objstate", "file:///var/lib/objstate"]) {
      assert.doesNotThrow(() => build({ endpoint: ok, kvstoreEndpoint: ok }));
    }
    for (const bad of ["ftp://x", "http://", "not a host", "file:", ""]) {
      rejects(() => build({ endpoint: bad }), "INVALID_VALUE", "endpoint", /a URL/);
      rejects(() => build({ kvstoreEndpoint: bad }), "INVALID_VALUE", "kvstoreEndpoint", /a URL/);
    }
    rejects(() => build({ stsEndpoint: "file:./x" }), "INVALID_VALUE", "stsEndpoint", /http:\/\/ or https:\/\//);
  });

  it("workspace URL-safe without /", () => {
    for (const ok of ["default", "prod-eu_1.x~"]) assert.doesNotThrow(() => DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", workspace: ok }));
    for (const bad of ["a/b", "", "a b", "ü"])
      rejects(() => DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", workspace: bad }), "INVALID_VALUE", "workspace", /no '\/'/);
  });

  it("defaults must be a plain object of JSON values", () => {
    const ok = DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", defaults: { a: [1, "x", null, { b: true }] } });
    assert.deepEqual(ok.defaults, { a: [1, "x", null, { b: true }] });
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    for (const bad of [{ f: () => 1 }, { n: Number.NaN }, { d: new Date(0) }, cyclic, { u: undefined }]) {
      rejects(
        () => DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", defaults: bad }),
        "INVALID_VALUE",
        "defaults",
        /plain object of JSON values/,
      );
    }
    for (const bad of [[1], "x", 1])
      rejects(() => DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", defaults: bad as never }), "INVALID_TYPE", "defaults", /plain object/);
  });

  it("defaults nested deeper than the tool's JSON decoder reads give a typed error, not a RangeError", () => {
    const nest = (levels: number): Record<string, unknown> => {
      const top: Record<string, unknown> = {};
      let at = top;
      for (let i = 1; i < levels; i++) {
        const next: Record<string, unknown> = {};
        at["a"] = next;
        at = next;
      }
      return top;
    };
    // 10,000 levels, the top counting as one: accepted, as Go's encoding/json reads it.
    assert.doesNotThrow(() => DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", defaults: nest(10_000) }));
    for (const levels of [10_001, 50_000]) {
      rejects(
        () => DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", defaults: nest(levels) }),
        "INVALID_VALUE",
        "defaults",
        /nested at most 10000 levels/,
      );
    }
  });

  it("defaults are copied and frozen: later changes to the input do not leak in", () => {
    const input = { tags: { a: "1" } };
    const c = DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", defaults: input });
    input.tags.a = "2";
    assert.deepEqual(c.defaults, { tags: { a: "1" } });
    assert.throws(() => ((c.defaults as { tags: { a: string } }).tags.a = "3"), TypeError);
  });

  it("wrong types from JavaScript callers", () => {
    rejects(() => build({ encrypt: "true" }), "INVALID_TYPE", "encrypt", /a boolean/);
    rejects(() => build({ region: 5 }), "INVALID_TYPE", "region", /a region name/);
    rejects(() => build({ assumeRole: "arn:r" }), "INVALID_TYPE", "assumeRole", /ObjectStoreAssumeRole/);
    rejects(() => build({ assumeRole: {} }), "REQUIRED", "assumeRole.roleArn", /roleArn is required/);
    rejects(
      () => build({ assumeRole: { roleArn: "arn:r", sesionName: "x" } }),
      "UNKNOWN_FIELD",
      "assumeRole.sesionName",
      /did you mean assumeRole.sessionName/,
    );
    rejects(() => ObjectStoreBackendConfig.from(null as never), "INVALID_PROPS", undefined as never, /plain object/);
    rejects(() => ObjectStoreBackendConfig.from([] as never), "INVALID_PROPS", undefined as never, /plain object/);
    rejects(() => build({ assumeRolePolicy: "not json" }), "INVALID_VALUE", "assumeRolePolicy", /JSON policy document/);
    rejects(() => build({ assumeRoleSessionName: "x" }), "INVALID_VALUE", "assumeRoleSessionName", /2 to 64 characters/);
    rejects(() => build({ kvstoreTable: "ab" }), "INVALID_VALUE", "kvstoreTable", /3 to 255 characters/);
  });

  it("unknown keys suggest the nearest field", () => {
    rejects(() => build({ kvstoreTabel: "locks" }), "UNKNOWN_FIELD", "kvstoreTabel", /did you mean kvstoreTable\?/);
    rejects(() => build({ accesKey: "x" }), "UNKNOWN_FIELD", "accesKey", /did you mean accessKey\?/);
    rejects(() => build({ zzzzzzzzzz: 1 }), "UNKNOWN_FIELD", "zzzzzzzzzz", /the fields are: bucket, accessKey/);
    rejects(
      () => ObjectStoreBackendConfig.from({ bucket: "state-bucket", workspace: "w" } as never),
      "UNKNOWN_FIELD",
      "workspace",
      /not a field of ObjectStoreBackendConfig/,
    );
  });

  it("secrets never appear in messages", () => {
    const secret = "SUPER-SECRET-VALUE-123";
    for (const field of ["accessKey", "secretKey", "securityToken"]) {
      assert.throws(
        () => build({ [field]: [secret] }),
        (e: Error) => !e.message.includes(secret) && /got an array/.test(e.message),
      );
    }
  });

  describe("environment values are validated like explicit ones", () => {
    const base = ObjectStoreBackendConfig.from({ bucket: "state-bucket" });
    it("session expiration from env: integer text only, range checked, kept a number", () => {
      assert.deepEqual(resolveSettings(base, { PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION: "900" }).assumeRoleSessionExpiration, {
        value: 900,
        source: "env:PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION",
      });
      for (const bad of ["abc", "1000.5", "9e2", "0x384", "NaN"]) {
        assert.throws(
          () => resolveSettings(base, { PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION: bad }),
          (e: unknown) => {
            assert.ok(e instanceof ConfigError);
            assert.equal(e.code, "INVALID_VALUE");
            assert.equal(e.field, "assumeRoleSessionExpiration");
            assert.equal(e.variable, "PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION");
            assert.match(
              e.message,
              new RegExp(
                `^PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION \\(for assumeRoleSessionExpiration\\) must be an integer from 900 to 3600 \\(seconds\\), got "${bad}"$`,
              ),
            );
            return true;
          },
        );
      }
      for (const bad of ["899", "3601"]) {
        assert.throws(() => resolveSettings(base, { PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION: bad }), {
          code: "OUT_OF_RANGE",
          variable: "PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION",
        });
      }
    });
    it("endpoint and session name from env", () => {
      assert.throws(() => resolveSettings(base, { PROVIDER_OBJECT_STORE_ENDPOINT: "ftp://x" }), {
        code: "INVALID_VALUE",
        field: "endpoint",
        variable: "PROVIDER_OBJECT_STORE_ENDPOINT",
      });
      assert.throws(() => resolveSettings(base, { OBJECT_STORE_ENDPOINT: "ftp://x" }), { code: "INVALID_VALUE", variable: "OBJECT_STORE_ENDPOINT" });
      assert.throws(() => resolveSettings(base, { PROVIDER_ASSUME_ROLE_SESSION_NAME: "x" }), {
        code: "INVALID_VALUE",
        variable: "PROVIDER_ASSUME_ROLE_SESSION_NAME",
      });
    });
    it("a bad env value is ignored when an explicit value wins", () => {
      const c = build({ assumeRoleSessionExpiration: 1200 });
      assert.equal(resolveSettings(c, { PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION: "abc" }).assumeRoleSessionExpiration.value, 1200);
    });
  });
});
