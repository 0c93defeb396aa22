/** The server's pure pieces: users file, password hashes, globs, statuses, flags, metrics. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ObjstateError, statusOf, type ErrorCode } from "../../../src/errors.js";
import { listenOf, sizeOf } from "../../../src/config/setting-parsers.js";
import { isLoopbackHost as isLoopback } from "../../../src/server/gate.js";
import { parseBasic } from "../../../src/server/auth.js";
import { checkContentMd5 } from "../../../src/io/http-body.js";
import { Metrics } from "../../../src/server/metrics.js";
import { objstateVersion } from "../../../src/version.js";
import { applyRule, MAX_CLAIM_LENGTH } from "../../../src/server/identity/oidc.js";
import { allowed, allowedEverywhere, globMatches, hashPassword, parseUsers, verifyPassword, withUser } from "../../../src/server/users.js";

const CHEAP = { N: 1024, r: 8, p: 1 };

describe("users file", () => {
  it("scrypt hashes verify the right password only, and differ each time (salted)", async () => {
    const a = await hashPassword("correct horse", CHEAP);
    const b = await hashPassword("correct horse", CHEAP);
    assert.match(a, /^scrypt\$1024\$8\$1\$/);
    assert.notEqual(a, b);
    assert.equal(await verifyPassword("correct horse", a), true);
    assert.equal(await verifyPassword("correct horsE", a), false);
    assert.equal(await verifyPassword("anything", undefined), false);
  });

  it("globs: * any run, ? one character, nothing else special", () => {
    assert.ok(globMatches("*", "default"));
    assert.ok(globMatches("staging-*", "staging-eu"));
    assert.ok(!globMatches("staging-*", "prod"));
    assert.ok(globMatches("ws?", "ws1"));
    assert.ok(!globMatches("a.b", "axb"));
  });

  it("globs: the backtrack-free matcher agrees with the old regex on a table of cases", () => {
    // The matcher as it was (a regex), kept as the reference for the semantics.
    const old = (glob: string, text: string): boolean =>
      new RegExp(
        `^${glob
          .replace(/[.+^${}()|[\]\\]/g, "\\$&")
          .replace(/\*/g, ".*")
          .replace(/\?/g, ".")}$`,
        "s",
      ).test(text);
    const globs = [
      "",
      "*",
      "**",
      "?",
      "??",
      "a",
      "a*",
      "*a",
      "*a*",
      "a*b",
      "a?b",
      "a*b*c",
      "*-*",
      "prod-*",
      "ws?",
      "a.b",
      "(x)+",
      "[ab]",
      "$^",
      "*\\*",
      "*?*",
      "?*?",
    ];
    const texts = [
      "",
      "a",
      "b",
      "ab",
      "aab",
      "abb",
      "acb",
      "abc",
      "aXbYc",
      "axb",
      "a.b",
      "-",
      "a-b",
      "prod-eu",
      "prod",
      "ws1",
      "ws12",
      "(x)+",
      "a",
      "$^",
      "\\x\\",
      "line\nbreak",
      "ü*?",
    ];
    for (const g of globs) for (const t of texts) assert.equal(globMatches(g, t), old(g, t), `glob ${JSON.stringify(g)} on ${JSON.stringify(t)}`);
  });

  it("globs: four * on a 400-character claim (seconds as a regex) is answered at once; a claim over 1,024 characters never meets a condition", () => {
    const claim = "a".repeat(400);
    const rule = { name: "r", issuer: "https://i", audience: "x", claims: { sub: "*a*a*a*b" }, roles: { "*": ["read" as const] } };
    const started = performance.now();
    assert.equal(applyRule(rule, { iss: "https://i", aud: "x", sub: claim }), undefined);
    assert.equal(globMatches("*a*a*a*b", `${claim}b`), true);
    assert.ok(performance.now() - started < 1000, "linear, not backtracking");
    const matching = { ...rule, claims: { sub: "a*" } };
    assert.ok(applyRule(matching, { iss: "https://i", aud: "x", sub: "a".repeat(MAX_CLAIM_LENGTH) }) !== undefined);
    assert.equal(applyRule(matching, { iss: "https://i", aud: "x", sub: "a".repeat(MAX_CLAIM_LENGTH + 1) }), undefined);
  });

  it("roles: a grant on a matching glob; admin grants all", () => {
    const users = parseUsers(
      JSON.stringify({ users: { u: { roles: { "dev-*": ["read", "write"], prod: ["read"] } }, boss: { roles: { "*": ["admin"] } } } }),
      "f",
    );
    const u = users.get("u")!;
    assert.ok(allowed(u, "write", "dev-1"));
    assert.ok(!allowed(u, "write", "prod"));
    assert.ok(!allowed(u, "force", "dev-1"));
    assert.ok(allowed(users.get("boss")!, "force", "anything"));
  });

  it("force grants lock (the tool's force-unlock is an UNLOCK), and nothing else", () => {
    const users = parseUsers(JSON.stringify({ users: { ops: { roles: { "*": ["force"] } } } }), "f");
    const ops = users.get("ops")!;
    assert.ok(allowed(ops, "force", "prod"));
    assert.ok(allowed(ops, "lock", "prod"));
    for (const role of ["outputs", "read", "write", "admin"] as const) assert.ok(!allowed(ops, role, "prod"), role);
  });

  it("outputs: granted by outputs, read and admin; grants nothing else", () => {
    const users = parseUsers(
      JSON.stringify({ users: { tf: { roles: { "*": ["outputs"] } }, r: { roles: { "*": ["read"] } }, boss: { roles: { "*": ["admin"] } } } }),
      "f",
    );
    assert.ok(allowed(users.get("tf")!, "outputs", "prod"));
    assert.ok(!allowed(users.get("tf")!, "read", "prod"));
    assert.ok(allowed(users.get("r")!, "outputs", "prod"));
    assert.ok(allowed(users.get("boss")!, "outputs", "prod"));
  });

  it("a role on every workspace is a grant on * itself, not a glob that matches the name *", () => {
    const users = parseUsers(
      JSON.stringify({ users: { q: { roles: { "?": ["admin"], "**": ["admin"] } }, boss: { roles: { "*": ["admin"] } }, r: { roles: { "*": ["read"] } } } }),
      "f",
    );
    const q = users.get("q")!;
    assert.ok(allowed(q, "admin", "*"), "the glob matches the string *, which is why allowed() is the wrong question");
    assert.ok(!allowedEverywhere(q, "admin"));
    assert.ok(allowedEverywhere(users.get("boss")!, "admin"));
    assert.ok(allowedEverywhere(users.get("boss")!, "force"), "admin implies every role");
    assert.ok(allowedEverywhere(users.get("r")!, "outputs"), "read implies outputs");
    assert.ok(!allowedEverywhere(users.get("r")!, "admin"));
  });

  it("a bad users file is an error naming the file and the entry", () => {
    assert.throws(
      () => parseUsers("{", "users.json"),
      (e: ObjstateError) => e.code === "USERS_FILE_INVALID" && e.message.includes("users.json"),
    );
    assert.throws(() => parseUsers(JSON.stringify({ users: { u: { password: "plain", roles: {} } } }), "f"), /users\.u\.password/);
    assert.throws(() => parseUsers(JSON.stringify({ users: { u: { roles: { "*": ["root"] } } } }), "f"), /users\.u\.roles\.\*/);
    assert.throws(() => parseUsers(JSON.stringify({ users: { u: { password: "scrypt$3$8$1$AA==$AA==", roles: {} } } }), "f"), /password/);
  });

  it("withUser adds or replaces one user and keeps the others", async () => {
    const h = await hashPassword("x", CHEAP);
    const one = withUser(undefined, "a", h, { "*": ["read"] }, "f");
    const two = withUser(one, "b", h, { "*": ["write"] }, "f");
    const three = withUser(two, "a", h, { "*": ["admin"] }, "f");
    const users = parseUsers(three, "f");
    assert.deepEqual([...users.keys()], ["a", "b"]);
    assert.ok(allowed(users.get("a")!, "force", "w"));
  });
});

describe("requests", () => {
  it("Basic credentials: user and password split at the first colon", () => {
    assert.deepEqual(parseBasic(`Basic ${Buffer.from("ci:pa:ss").toString("base64")}`), { user: "ci", password: "pa:ss" });
    assert.equal(parseBasic("Bearer abc"), undefined);
    assert.equal(parseBasic(undefined), undefined);
  });

  it("Content-MD5: absent is fine, a mismatch is MD5_MISMATCH (400)", () => {
    const hex = "900150983cd24fb0d6963f7d28e17f72";
    checkContentMd5(undefined, hex);
    checkContentMd5(Buffer.from(hex, "hex").toString("base64"), hex);
    assert.throws(
      () => checkContentMd5("AAAAAAAAAAAAAAAAAAAAAA==", hex),
      (e: ObjstateError) => e.code === "MD5_MISMATCH" && statusOf(e) === 400,
    );
  });

  it("one table of statuses: locked 423, conflicts 409, store trouble 5xx, anything else 500", () => {
    const s = (code: ErrorCode): number => statusOf(new ObjstateError(code, "m"));
    assert.deepEqual(
      [
        s("STATE_LOCKED"),
        s("STATE_CONFLICT"),
        s("LOCK_ID_MISMATCH"),
        s("BODY_TOO_LARGE"),
        s("UNAUTHORIZED"),
        s("FORBIDDEN"),
        s("DIGEST_MISMATCH"),
        s("STORE_ERROR"),
      ],
      [423, 409, 409, 413, 401, 403, 409, 500],
    );
    assert.equal(statusOf(new Error("x")), 500);
    // A lost lease is the writer's conflict, not the server's failure: no 5xx the client would retry.
    assert.equal(s("LOCK_LOST"), 409);
  });

  it("a state that needs the operator is a 409 the tool's client reports at once, never a 500 it retries; a stored write not yet committed is a 503 whose retry commits it", () => {
    const s = (code: ErrorCode): number => statusOf(new ObjstateError(code, "m"));
    assert.deepEqual((["TORN_WRITE", "DIGEST_MISMATCH", "COMMITTED_VERSION_MISSING", "REPAIR_REFUSED", "NO_LEASE"] as const).map(s), [409, 409, 409, 409, 409]);
    assert.equal(s("DIGEST_WRITE_FAILED"), 503);
    // The store or table refused the server's own identity: not the client's credentials (401/403).
    assert.equal(s("ACCESS_DENIED"), 502);
    assert.equal(s("LOCKFILE_UNSUPPORTED"), 501);
  });
});

describe("serve flags", () => {
  const parseSize = (flag: string, text: string): number => sizeOf(text, { kind: "flag", flag });
  const parseListen = (text: string): { host: string; port: number } => listenOf(text, { kind: "flag", flag: "--listen" });
  it("--max-state-size takes bytes and binary or decimal units", () => {
    assert.equal(parseSize("--max-state-size", "512MiB"), 512 * 1024 * 1024);
    assert.equal(parseSize("--max-state-size", "1024"), 1024);
    assert.equal(parseSize("--max-state-size", "2kb"), 2000);
    assert.throws(() => parseSize("--max-state-size", "lots"), /--max-state-size must be a size/);
    assert.throws(() => parseSize("--max-state-size", "0"), /--max-state-size/);
  });

  it("--listen HOST:PORT, [v6]:PORT or :PORT; loopback is 127/8, ::1 and localhost", () => {
    assert.deepEqual(parseListen("0.0.0.0:8080"), { host: "0.0.0.0", port: 8080 });
    assert.deepEqual(parseListen("[::1]:9"), { host: "::1", port: 9 });
    assert.deepEqual(parseListen(":7"), { host: "127.0.0.1", port: 7 });
    assert.throws(() => parseListen("8080"), /--listen must be HOST:PORT/);
    assert.ok(isLoopback("127.0.0.2") && isLoopback("::1") && isLoopback("localhost"));
    assert.ok(!isLoopback("0.0.0.0") && !isLoopback("10.0.0.1") && !isLoopback("::"));
  });
});

describe("metrics", () => {
  it("Prometheus text: counters by route and status, a histogram per route, lock waits, body bytes per route, active locks, build info", async () => {
    const m = new Metrics();
    m.request("/state/:workspace", "GET", 200, 0.02, 0, 100);
    m.request("/state/:workspace", "LOCK", 423, 0.003, 50, 150);
    m.lockWaits.inc();
    m.lockHeld(1);
    const t = await m.text();
    assert.match(t, /^objstate_http_requests_total\{route="\/state\/:workspace",method="GET",status="200"\} 1$/m);
    assert.match(t, /^objstate_http_request_duration_seconds_bucket\{le="0.005",route="\/state\/:workspace"\} 1$/m);
    assert.match(t, /^objstate_http_request_duration_seconds_bucket\{le="\+Inf",route="\/state\/:workspace"\} 2$/m);
    assert.match(t, /^objstate_lock_waits_total 1$/m);
    // The unit last (Prometheus's naming rules), per route.
    assert.match(t, /^# TYPE objstate_http_request_bytes_total counter$/m);
    assert.match(t, /^objstate_http_request_bytes_total\{route="\/state\/:workspace"\} 50$/m);
    assert.match(t, /^objstate_http_response_bytes_total\{route="\/state\/:workspace"\} 250$/m);
    assert.doesNotMatch(t, /bytes_in|bytes_out/);
    assert.match(t, /^objstate_locks_active 1$/m);
    assert.match(t, /^# TYPE objstate_build_info gauge$/m);
    assert.match(
      t,
      new RegExp(`^objstate_build_info\\{version="${objstateVersion().replace(/\./g, "\\.")}",node="${process.version.replace(/\./g, "\\.")}"\\} 1$`, "m"),
    );
  });
});
