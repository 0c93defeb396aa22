/** The quick start (examples/quickstart.mjs) runs end to end, twice, in a scratch copy of the examples. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { cliEnv } from "../../support/cli.js";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));

describe("npm run quickstart (examples/quickstart.mjs)", () => {
  it("drives the CLI on the embedded store: synth, init, workspace new, push, lock/unlock, list, output, doctor", () => {
    // A scratch root with the examples and a link to the built CLI, so ./.objstate lands there.
    const root = mkdtempSync(join(tmpdir(), "objstate-quickstart-"));
    cpSync(join(repo, "examples"), join(root, "examples"), { recursive: true });
    mkdirSync(join(root, "dist"));
    symlinkSync(join(repo, "dist", "src"), join(root, "dist", "src"));
    symlinkSync(join(repo, "node_modules"), join(root, "node_modules"));
    const run = () => spawnSync(process.execPath, [join(root, "examples", "quickstart.mjs")], { cwd: root, env: cliEnv(), encoding: "utf8" });

    const first = run();
    assert.equal(first.status, 0, first.stdout + first.stderr);
    assert.match(first.stdout, /"kvstore_table": "state-locks"/);
    assert.match(first.stdout, /created {2}bucket my-state created/);
    assert.match(first.stdout, /created workspace staging \(my-state\/states\/staging\/app\.tfstate\)/);
    assert.match(first.stdout, /is locked: ID [0-9a-f-]{36}, held by .* for apply \(quick start\)/);
    assert.match(first.stdout, /\(exit 3\)/);
    assert.match(first.stdout, /\* default\n {2}staging\n/);
    assert.match(first.stdout, /region = "none"\nsubnet_count = 3\nsubnet_ids = \["subnet-1","subnet-2","subnet-3"\]\nvpc_id = "vpc-0a1b2c"\n/);
    assert.match(first.stdout, /\nvpc-0a1b2c\n/);
    assert.match(first.stdout, /ok {4}digest: the state of workspace staging \(\d+ bytes\) matches its digest/);
    assert.ok(existsSync(join(root, ".objstate", "my-state")));

    const second = run();
    assert.equal(second.status, 0, second.stdout + second.stderr);
    assert.match(second.stdout, /exists {3}bucket my-state exists/);
    assert.match(second.stdout, /deleted workspace staging/);
  });
});
