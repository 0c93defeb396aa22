/** `objstate serve --public-url`: what a non-loopback server needs before it starts, and what it warns. */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { hashPassword } from "../../../src/server/users.js";
import { runCli, startCli } from "../../support/cli.js";

const STORE = ["--bucket", "serve-gate", "--endpoint", "file:./s", "--kvstore-endpoint", "file:./s", "--kvstore-table", "locks"];

describe("objstate serve --public-url (CLI)", () => {
  it("a non-loopback --listen without --public-url is refused, naming the flag (with --users and with --insecure-no-auth)", () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-gate-"));
    writeFileSync(join(cwd, "users.json"), '{"users": {}}\n', { mode: 0o600 });
    for (const auth of [["--users", "users.json"], ["--insecure-no-auth"]]) {
      const r = runCli(["serve", ...STORE, "--listen", "0.0.0.0:0", ...auth], { cwd });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /not a loopback address: give --public-url with the URL clients use/);
    }
  });

  it("a bad --public-url is a usage error that names the flag and what it takes", () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-gate-"));
    for (const bad of ["state.example.com", "https://state.example.com/state", "ftp://x"]) {
      const r = runCli(["serve", ...STORE, "--public-url", bad], { cwd });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /--public-url (must|is an origin)/);
    }
  });

  it("--users over plain HTTP on a non-loopback address starts with a loud warning", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-gate-"));
    const hash = await hashPassword("pw", { N: 1024, r: 8, p: 1 });
    writeFileSync(join(cwd, "users.json"), JSON.stringify({ users: { ops: { password: hash, roles: { "*": ["admin"] } } } }), { mode: 0o600 });
    // Every interface, but with users: nobody without the password gets in, and it stops at once.
    const s = startCli(
      ["serve", ...STORE, "--listen", "0.0.0.0:0", "--users", "users.json", "--public-url", "https://state.example.com", "--log-level", "off"],
      { cwd },
    );
    try {
      await s.stderrMatches(/serving serve-gate/);
      assert.match(s.stderrSoFar(), /SERVING PASSWORDS OVER PLAIN HTTP .*--tls-cert and --tls-key/);
    } finally {
      s.kill();
      await s.done;
    }
  });
});
