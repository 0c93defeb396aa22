/** The failed-login limiter as pure logic, on a clock the test moves. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ObjstateError } from "../../../src/errors.js";
import { addressGroup } from "../../../src/server/address.js";
import { LoginLimiter, MAX_ADDRESSES, type LoginAttempt } from "../../../src/server/login-limiter.js";

const LIMIT = { failures: 10, windowMs: 60_000, stuffingUsers: 20 };

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

/** The error `begin` throws, or undefined when it let the attempt through (which is then failed). */
function refusal(l: LoginLimiter, address: string, user: string): ObjstateError | undefined {
  try {
    l.begin(address, user).fail();
    return undefined;
  } catch (e) {
    return e as ObjstateError;
  }
}

function failTimes(l: LoginLimiter, n: number, address: string, user: string): void {
  for (let i = 0; i < n; i++) l.begin(address, user).fail();
}

describe("login limiter", () => {
  it("limits failures per (address, user): other users there and the same user elsewhere are unaffected", () => {
    const c = clock();
    const l = new LoginLimiter(LIMIT, c.now);
    failTimes(l, 10, "10.0.0.1", "ci");
    const e = refusal(l, "10.0.0.1", "ci");
    assert.equal(e?.code, "TOO_MANY_FAILED_LOGINS");
    assert.equal(e?.details?.["retryAfter"], 60);
    assert.match(e?.message ?? "", /too many failed logins for user ci from 10\.0\.0\.1: try again in 60s/);
    assert.equal(refusal(l, "10.0.0.1", "ops"), undefined, "another user behind the same address");
    assert.equal(refusal(l, "10.0.0.2", "ci"), undefined, "the same user from another address");
    c.advance(30_000);
    assert.equal(refusal(l, "10.0.0.1", "ci")?.details?.["retryAfter"], 30);
    c.advance(30_000);
    assert.equal(refusal(l, "10.0.0.1", "ci"), undefined, "the window passed");
  });

  it("a check in flight holds a slot: concurrent attempts past the limit are refused before any answers", () => {
    const l = new LoginLimiter(LIMIT, clock().now);
    const held: LoginAttempt[] = [];
    for (let i = 0; i < 10; i++) held.push(l.begin("10.0.0.1", "ci"));
    const e = refusal(l, "10.0.0.1", "ci");
    assert.equal(e?.code, "TOO_MANY_FAILED_LOGINS");
    assert.equal(e?.details?.["retryAfter"], 1);
    // Right passwords give their slots back; a second settle of one attempt changes nothing.
    for (const a of held) {
      a.release();
      a.fail();
    }
    assert.equal(refusal(l, "10.0.0.1", "ci"), undefined);
  });

  it("a right password does not wipe the failures counted before it", () => {
    const l = new LoginLimiter(LIMIT, clock().now);
    failTimes(l, 9, "10.0.0.1", "ci");
    l.begin("10.0.0.1", "ci").release();
    failTimes(l, 1, "10.0.0.1", "ci");
    assert.equal(refusal(l, "10.0.0.1", "ci")?.code, "TOO_MANY_FAILED_LOGINS");
  });

  it("many different user names failing from one address limit that address (credential stuffing), for every name, until they age out", () => {
    const c = clock();
    const l = new LoginLimiter(LIMIT, c.now);
    for (let i = 0; i < 20; i++) {
      failTimes(l, 1, "10.0.0.1", `user${i}`);
      c.advance(1000);
    }
    const e = refusal(l, "10.0.0.1", "someone-else");
    assert.equal(e?.code, "TOO_MANY_FAILED_LOGINS");
    assert.match(e?.message ?? "", /different user names from 10\.0\.0\.1/);
    // The first name's failure ages out 60 s after it: 40 s after the last one.
    assert.equal(e?.details?.["retryAfter"], 40);
    assert.equal(refusal(l, "10.0.0.2", "someone-else"), undefined, "another address");
    c.advance(40_000);
    assert.equal(refusal(l, "10.0.0.1", "someone-else"), undefined, "the oldest name aged out");
  });

  it("concurrent checks of different names count towards the stuffing limit too", () => {
    const l = new LoginLimiter(LIMIT, clock().now);
    const held = Array.from({ length: 20 }, (_, i) => l.begin("10.0.0.1", `user${i}`));
    assert.equal(refusal(l, "10.0.0.1", "user20")?.code, "TOO_MANY_FAILED_LOGINS");
    for (const a of held) a.release();
    assert.equal(refusal(l, "10.0.0.1", "user20"), undefined);
  });

  it("past the bound of addresses the least recently seen is forgotten, not every counter", () => {
    const l = new LoginLimiter(LIMIT, clock().now);
    failTimes(l, 10, "192.0.2.1", "ci");
    for (let i = 0; i < MAX_ADDRESSES + 500; i++) {
      failTimes(l, 1, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, "ci");
      // The limited address keeps trying, so it stays among the recently seen.
      if (i % 1000 === 0) assert.equal(refusal(l, "192.0.2.1", "ci")?.code, "TOO_MANY_FAILED_LOGINS", `after ${i} other addresses`);
    }
    assert.ok(l.size <= MAX_ADDRESSES && l.size > MAX_ADDRESSES / 2, `${l.size} addresses remembered`);
    assert.equal(refusal(l, "192.0.2.1", "ci")?.code, "TOO_MANY_FAILED_LOGINS");
    // The first of the others was seen least recently: forgotten.
    failTimes(l, 9, "10.0.0.0", "ci");
    assert.equal(refusal(l, "10.0.0.0", "ci"), undefined, "its one failure was forgotten");
  });

  it("IPv6 addresses count by /64; IPv4-mapped IPv6 addresses are IPv4", () => {
    assert.equal(addressGroup("::ffff:10.1.2.3"), "10.1.2.3");
    assert.equal(addressGroup("::ffff:a01:203"), "10.1.2.3");
    assert.equal(addressGroup("10.1.2.3"), "10.1.2.3");
    assert.equal(addressGroup("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
    assert.equal(addressGroup("2001:0db8:0001:0002:bbbb:cccc:dddd:eeee"), "2001:db8:1:2::/64");
    assert.equal(addressGroup("2001:db8::2:1"), "2001:db8:0:0::/64");
    assert.equal(addressGroup("fe80::1%eth0"), "fe80:0:0:0::/64");
    assert.equal(addressGroup("::1"), "0:0:0:0::/64");
    assert.equal(addressGroup("::"), "0:0:0:0::/64");
    assert.equal(addressGroup("unknown"), "unknown");

    const l = new LoginLimiter(LIMIT, clock().now);
    for (let i = 0; i < 10; i++) l.begin(`2001:db8:1:2::${i.toString(16)}`, "ci").fail();
    assert.equal(refusal(l, "2001:db8:1:2:ffff::9", "ci")?.code, "TOO_MANY_FAILED_LOGINS", "another address of the same /64");
    assert.equal(refusal(l, "2001:db8:1:3::1", "ci"), undefined, "another /64");
    failTimes(l, 10, "::ffff:10.9.9.9", "ci");
    assert.equal(refusal(l, "10.9.9.9", "ci")?.code, "TOO_MANY_FAILED_LOGINS", "mapped and plain IPv4 are one address");
  });
});
