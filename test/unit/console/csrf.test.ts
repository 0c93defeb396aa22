/** CSRF tokens (HMAC of user + time window) and the Origin check of the console's POSTs. */
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { describe, it } from "node:test";
import { CsrfTokens, crossSiteReason } from "../../../src/console/csrf.js";

describe("console CSRF tokens", () => {
  const key = Buffer.alloc(32, 7);
  it("a token verifies for its user in its window and the next, not after", () => {
    let now = 10 * 3_600_000 + 5;
    const t = new CsrfTokens({ key, now: () => now });
    const token = t.issue("alice");
    assert.ok(t.verify("alice", token));
    now += 3_600_000;
    assert.ok(t.verify("alice", token), "previous window still good");
    now += 3_600_000;
    assert.ok(!t.verify("alice", token), "two windows later it has expired");
  });

  it("another user's, another process's, a tampered or a missing token is refused", () => {
    const t = new CsrfTokens({ key });
    const token = t.issue("alice");
    assert.ok(!t.verify("bob", token));
    assert.ok(!new CsrfTokens().verify("alice", token), "another process has another key");
    const [w, mac] = token.split(".") as [string, string];
    assert.ok(!t.verify("alice", `${w}.${mac.slice(0, -1)}${mac.endsWith("A") ? "B" : "A"}`));
    assert.ok(!t.verify("alice", `${Number(w) + 1}.${mac}`), "a future window is not accepted");
    assert.ok(!t.verify("alice", undefined));
    assert.ok(!t.verify("alice", ""));
    assert.ok(!t.verify("alice", "garbage"));
  });

  it("user names cannot be shifted into the window ('ab' vs 'a' + 'b')", () => {
    const t = new CsrfTokens({ key });
    assert.ok(!t.verify("ab", t.issue("a")));
  });

  it("the key never shows in inspect or JSON", () => {
    const t = new CsrfTokens({ key: Buffer.from("super-secret-key-material-123456") });
    for (const s of [inspect(t, { showHidden: true, depth: 5 }), JSON.stringify(t)]) {
      assert.ok(!s.includes("super-secret"), s);
      assert.ok(!s.includes(Buffer.from("super-secret-key-material-123456").toString("hex").slice(0, 16)), s);
    }
  });
});

describe("console Origin check", () => {
  const me = "http://127.0.0.1:8080";
  it("accepts the console's own Origin (case-insensitive) or, without one, its Referer", () => {
    assert.equal(crossSiteReason({ origin: me }, me), undefined);
    assert.equal(crossSiteReason({ origin: "HTTP://127.0.0.1:8080" }, me), undefined);
    assert.equal(crossSiteReason({ referer: `${me}/workspaces/x` }, me), undefined);
  });
  it("refuses another Origin, a foreign Referer, none at all, a cross-site fetch, no Host", () => {
    // Refused, and the reason (which is logged) quotes no header value.
    const evil = crossSiteReason({ origin: "http://evil.example" }, me);
    assert.match(evil ?? "", /Origin/);
    assert.doesNotMatch(evil ?? "", /evil\.example/);
    assert.ok(crossSiteReason({ origin: "null" }, me) !== undefined);
    assert.ok(crossSiteReason({ referer: "http://evil.example/x" }, me) !== undefined);
    assert.ok(crossSiteReason({}, me) !== undefined);
    assert.ok(crossSiteReason({ origin: me, "sec-fetch-site": "cross-site" }, me) !== undefined);
    assert.ok(crossSiteReason({ origin: me }, undefined) !== undefined);
  });
});
