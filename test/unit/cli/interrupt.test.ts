/** Ctrl-C while `state push` holds the lock: the push finishes and the lock is released, not left held. */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { openLockTable } from "../../../src/lock/index.js";
import { runCli, startCli } from "../../support/cli.js";

describe("interrupting a command that holds a lock", () => {
  const dir = mkdtempSync(join(tmpdir(), "objstate-cli-int-"));
  const settings = ["--bucket", "int-bucket", "--endpoint", `file://${dir}`, "--kvstore-endpoint", `file://${dir}`, "--kvstore-table", "int-locks"];

  it("SIGINT during a push: finishes the write (or stops before it), releases the lock, says so", async () => {
    const big = join(dir, "big.json");
    const state = Buffer.from(JSON.stringify({ version: 4, serial: 1, pad: "x".repeat(96 * 1024 * 1024) }));
    writeFileSync(big, state);
    const table = await openLockTable({ table: "int-locks", endpoint: `file://${dir}` });
    await table.createTable();
    const push = startCli(["state", "push", big, ...settings]);
    // Wait until the push holds the lock, then interrupt it.
    const deadline = Date.now() + 20_000;
    while ((await table.get("int-bucket/env:/tool.tfstate", "Info")) === null) {
      assert.ok(Date.now() < deadline, "the push never took the lock");
      await sleep(2);
    }
    push.interrupt();
    const r = await push.done;
    assert.equal(await table.get("int-bucket/env:/tool.tfstate", "Info"), null, "the lock was left held");
    table.close();
    const pulled = runCli(["state", "pull", ...settings]);
    if (r.code === 130) {
      // The signal came while the lock request was still settling: released, nothing written.
      assert.match(
        r.stderr,
        /objstate: interrupted: stopping once the lock request in flight has settled\nobjstate: error: interrupted before anything was written\n$/,
      );
      assert.equal(pulled.code, 1);
    } else {
      assert.match(
        r.stderr,
        /^objstate: interrupted: finishing the current step, then releasing the lock on int-bucket\/env:\/tool\.tfstate \(interrupt again to quit at once and leave the lock held\)\n/,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.equal(pulled.code, 0);
      assert.equal(pulled.stdout.length, state.length);
    }
  });
});

describe("interrupting a wait for the lock", () => {
  it("SIGINT while waiting for another holder: stops at once with exit 130, nothing written, the holder's lock untouched", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-cli-int2-"));
    const settings = ["--bucket", "int-bucket", "--endpoint", `file://${dir}`, "--kvstore-endpoint", `file://${dir}`, "--kvstore-table", "int-locks"];
    const id = runCli(["lock", ...settings]).stdout.trim();
    const push = startCli(["state", "push", "-", "--lock-timeout", "1m", ...settings], { input: '{"version":4,"serial": 1}' });
    await push.stderrMatches(/waiting up to 1m/);
    const started = Date.now();
    push.interrupt();
    const r = await push.done;
    assert.ok(Date.now() - started < 3000, "did not stop promptly");
    assert.equal(r.code, 130, r.stderr);
    assert.match(r.stderr, /objstate: error: interrupted before anything was written\n$/);
    assert.equal(runCli(["state", "pull", ...settings]).code, 1);
    const unlock = runCli(["unlock", id, ...settings]);
    assert.equal(unlock.code, 0, unlock.stderr);
  });
});
