/**
 * Building checks only the props given (src/config/base.ts, checkedValues) and falls back to
 * the field-by-field check in table order to report an error: whatever order the props
 * come in, the error is the one of the first bad field in the table, and a valid object
 * is the same whichever way it was built.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DataRemoteStateObjectStoreConfig, ObjectStoreBackendConfig, REMOTE_STATE_FIELDS } from "../../../src/index.js";

process.removeAllListeners("warning");

describe("building a config object", () => {
  it("reports the first bad field in table order, not in the order the props were given", () => {
    // acl comes before region in the table; bucket (required) before both.
    assert.throws(() => ObjectStoreBackendConfig.from({ region: "not a region!", acl: "bad", bucket: "states" }), { code: "INVALID_VALUE", field: "acl" });
    assert.throws(() => ObjectStoreBackendConfig.from({ region: "not a region!", acl: "bad" } as never), { code: "REQUIRED", field: "bucket" });
    // An unknown field is reported before any bad value, as before.
    assert.throws(() => ObjectStoreBackendConfig.from({ acl: "bad", bucket: "states", buckett: "x" } as never), { code: "UNKNOWN_FIELD", field: "buckett" });
    // A bad nested block after a bad earlier field: the earlier field's error.
    assert.throws(() => ObjectStoreBackendConfig.from({ assumeRole: {} as never, acl: "bad", bucket: "states" }), { code: "INVALID_VALUE", field: "acl" });
    assert.throws(() => ObjectStoreBackendConfig.from({ assumeRole: {} as never, bucket: "states" }), { code: "REQUIRED", field: "assumeRole.roleArn" });
  });

  it("gives every field in table order, unset ones undefined, frozen, with the class's prototype", () => {
    const c = DataRemoteStateObjectStoreConfig.from({
      workspace: "prod",
      defaults: { a: [1] },
      bucket: "states",
      encrypt: false,
      assumeRoleSessionExpiration: 900,
    });
    assert.deepEqual(
      Object.keys(c),
      REMOTE_STATE_FIELDS.map((f) => f.name),
    );
    assert.ok(c instanceof DataRemoteStateObjectStoreConfig);
    assert.equal(Object.getPrototypeOf(c), DataRemoteStateObjectStoreConfig.prototype);
    assert.ok(Object.isFrozen(c));
    assert.ok(Object.isFrozen(c.defaults));
    assert.equal(c.acl, undefined);
    assert.ok("acl" in c);
    assert.equal(c.encrypt, false);
    assert.equal(c.getWorkspace(), "prod");
    assert.deepEqual(c.toProps(), { workspace: "prod", defaults: { a: [1] }, bucket: "states", encrypt: false, assumeRoleSessionExpiration: 900 });
    // null means unset, as undefined does.
    assert.equal(DataRemoteStateObjectStoreConfig.from({ bucket: "states", acl: null }).acl, undefined);
  });
});
