/** The lease clock rule (lease.ts): pure arithmetic. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkTtl, isExpired, leaseExpiry, takeoverBound } from "../../../src/backend/locks/lease.js";
import { describeHolder, parseLockInfo } from "../../../src/backend/locks/lock-info.js";
import { isObjstateError } from "../../../src/index.js";

describe("lease arithmetic", () => {
  it("Expires is the whole second at or after now + ttl", () => {
    assert.equal(leaseExpiry(1_000_000, 1_000), 1_001);
    assert.equal(leaseExpiry(1_000_001, 1_000), 1_002);
  });
  it("an acquirer takes over only when Expires is below its now minus the margin, in whole seconds", () => {
    const expires = leaseExpiry(1_000_000, 1_000); // 1001
    assert.equal(isExpired(expires, 1_001_999, 1_000), false, "the lease's own second plus the margin");
    assert.equal(isExpired(expires, 1_002_999, 1_000), false);
    assert.equal(isExpired(expires, 1_003_000, 1_000), true);
    assert.equal(takeoverBound(1_003_000, 1_000), 1_002);
  });
  it("a lock without Expires (the tool's own) never expires", () => {
    assert.equal(isExpired(undefined, Number.MAX_SAFE_INTEGER, 0), false);
  });
  it("refuses a ttl below one second", () => {
    assert.throws(
      () => checkTtl(999, "ttl"),
      (e) => isObjstateError(e, "INVALID_LOCK_TTL"),
    );
    assert.equal(checkTtl(1_000, "ttl"), 1_000);
    assert.equal(checkTtl(undefined, "ttl"), undefined);
  });
  it("lock info carries Expires only when it has one, and the holder line says when it ends", () => {
    assert.equal("Expires" in parseLockInfo('{"ID":"x"}', "p"), false);
    const info = parseLockInfo('{"ID":"x","Expires":2000000000}', "p");
    assert.equal(info.Expires, 2_000_000_000);
    assert.match(describeHolder(info, 0), /its lease expires at 2033-05-18T03:33:20.000Z/);
    assert.match(describeHolder(info, 3e12), /its lease expired at/);
    assert.doesNotMatch(describeHolder(parseLockInfo('{"ID":"x"}', "p")), /lease/);
  });
});
