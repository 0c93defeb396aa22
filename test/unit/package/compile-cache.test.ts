import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CLI } from "../../support/cli.js";

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
const hasCache = major > 22 || (major === 22 && minor >= 1);

test(`the command keeps V8's compiled code in the temp directory ${hasCache ? "(Node 22.1+)" : "only on Node 22.1+, not on this Node"}`, () => {
  const tmp = mkdtempSync(join(tmpdir(), "objstate-compile-cache-"));
  try {
    const env = { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", TMPDIR: tmp };
    const r = spawnSync(process.execPath, [CLI, "--version"], { env, encoding: "utf8", timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    const dir = join(tmp, "node-compile-cache");
    if (hasCache) assert.ok(existsSync(dir) && readdirSync(dir).length > 0, "no compile cache was written");
    else assert.equal(existsSync(dir), false);
    const off = mkdtempSync(join(tmp, "off-"));
    const r2 = spawnSync(process.execPath, [CLI, "--version"], {
      env: { ...env, TMPDIR: off, NODE_DISABLE_COMPILE_CACHE: "1" },
      encoding: "utf8",
      timeout: 30_000,
    });
    assert.equal(r2.status, 0, r2.stderr);
    assert.equal(existsSync(join(off, "node-compile-cache")), false, "NODE_DISABLE_COMPILE_CACHE=1 is not respected");
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
