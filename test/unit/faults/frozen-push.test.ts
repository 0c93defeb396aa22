/**
 * Issue 37, items 15 and 16, on the embedded store and lock table: an `objstate state push`
 * process frozen (SIGSTOP) at a step of its write while its lock is force-unlocked.
 * - Frozen at the digest item's compare (it holds the item's claim, its write stored but not
 *   committed): `state pull` and a server's GET serve the committed state; before, every read
 *   tried to commit the stored write, waited for the claim and failed with
 *   DIGEST_WRITE_FAILED (503 through `serve`).
 * - Frozen after its checks, before its PUT: resumed, its write commits, and it exits 0
 *   with a warning that its lock was force-unlocked; before, it exited 1 ("could not release
 *   lock … not locked; it is still held") although the write had happened.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { PauseStep } from "../../../src/util/test-pause.js";
import { runCli, startCli, startServeProcess, type RunningCli } from "../../support/cli.js";
import { HttpBackendClient } from "../../support/http-backend-client.js";
import { stopped } from "../../support/paused-process.js";

/** The claim's wait limit for every process here: a reader that waits for the frozen writer's claim gives up after 1 s, not 45 s. */
const ENV = { OBJSTATE_TEST_CLAIM_WAIT_MS: "1000" };

const state = (serial: number): string =>
  JSON.stringify({ version: 4, serial, lineage: "frozen-push", outputs: { at: { value: `serial ${serial}`, type: "string" } } });
const serialOf = (text: string | undefined): number => (JSON.parse(text ?? "{}") as { serial: number }).serial;

interface Setup {
  readonly settings: string[];
  /** Pushes serial 1, then starts pushing serial 2 frozen at `step`; resolves once it stopped there. */
  frozenPush(step: PauseStep): Promise<RunningCli>;
  /** Force-unlocks the one lock there is (the frozen push's). */
  forceUnlock(): void;
  pulled(): number;
}

function setup(): Setup {
  const dir = mkdtempSync(join(tmpdir(), "objstate-frozen-push-"));
  const settings = ["--bucket", "frozen", "--endpoint", `file://${dir}`, "--kvstore-endpoint", `file://${dir}`, "--kvstore-table", "locks"];
  const ok = (args: string[], input?: string): string => {
    const r = runCli([...args, ...settings], { env: ENV, input });
    assert.equal(r.code, 0, `objstate ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  return {
    settings,
    frozenPush: async (step) => {
      ok(["state", "push", "-"], state(1));
      const file = join(dir, "serial-2.json");
      writeFileSync(file, state(2));
      const push = startCli(["state", "push", file, ...settings], { env: { ...ENV, OBJSTATE_TEST_PAUSE_AT: step } });
      await stopped(push);
      return push;
    },
    forceUnlock: () => {
      const locks = JSON.parse(ok(["locks", "--json"])) as { id: string }[];
      assert.equal(locks.length, 1, JSON.stringify(locks));
      ok(["force-unlock", (locks[0] as { id: string }).id, "--force"]);
    },
    pulled: () => serialOf(ok(["state", "pull"])),
  };
}

describe("a state push frozen while its lock is force-unlocked (embedded store)", { timeout: 120_000 }, () => {
  it("frozen at the digest item's compare: state pull and a server's GET serve the committed state; resumed, its write commits", async () => {
    const s = setup();
    const push = await s.frozenPush("table-checked");
    try {
      s.forceUnlock();
      assert.equal(s.pulled(), 1, "state pull serves the committed state while the frozen write's commit is in doubt");
      const server = await startServeProcess([...s.settings, "--log-level", "warn"], ENV);
      try {
        const got = await new HttpBackendClient({ bases: [server.url] }).get();
        assert.equal(serialOf(got?.toString()), 1, `the server's GET: ${server.stderr()}`);
      } finally {
        server.child.kill("SIGTERM");
        await server.exited;
      }
      push.resume();
      const done = await push.done;
      assert.equal(done.code, 0, done.stderr);
    } finally {
      if (!push.ended()) {
        push.kill();
        push.resume(); // a stopped process takes its SIGTERM only once it runs again
      }
    }
    assert.equal(s.pulled(), 2);
  });

  it("frozen before its PUT: resumed, its write commits and it exits 0, warning that its lock was force-unlocked", async () => {
    const s = setup();
    const push = await s.frozenPush("store-put");
    try {
      s.forceUnlock();
      push.resume();
      const done = await push.done;
      assert.equal(done.code, 0, done.stderr);
      assert.match(
        done.stderr,
        /warning: lock [0-9a-f-]{36} on frozen\/env:\/tool\.tfstate was released by someone else \(force-unlock, or a lease taken over\) while this operation held it; the operation completed/,
      );
      assert.match(done.stdout, /pushed \d+ B to frozen\/env:\/tool\.tfstate/);
      assert.doesNotMatch(done.stderr, /still held/);
    } finally {
      if (!push.ended()) {
        push.kill();
        push.resume(); // a stopped process takes its SIGTERM only once it runs again
      }
    }
    assert.equal(s.pulled(), 2, "the write happened");
  });
});
