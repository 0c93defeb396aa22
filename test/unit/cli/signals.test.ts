/**
 * Interrupts (SIGINT, SIGTERM, SIGHUP) against the CLI's lock handling (runtime.ts), with
 * a fake backend in a child process (the handlers call process.exit), and SIGTERM /
 * SIGHUP against a real push on the embedded store.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { openLockTable } from "../../../src/lock/index.js";
import { CLI, cliEnv, runCli, type CliResult } from "../../support/cli.js";

const RUNTIME = fileURLToPath(new URL("../../../src/cli/runtime.js", import.meta.url));
// The library's withLock (what the CLI's runtime runs every locked command through) over the fake's acquire.
const LOCKING = fileURLToPath(new URL("../../../src/backend/locks/locking.js", import.meta.url));
const WARN = fileURLToPath(new URL("../../../src/cli/term.js", import.meta.url));

/**
 * Run `body` (an async function body) in a child process with `runtime` (the module),
 * `backend` (a fake: lock takes `lockMs`, unlock fails when `failUnlock`; `withLock` is the
 * library's, warning through the CLI's channel), `sleep`, and
 * `signal(name)` (sends the signal to itself and lets the handler run).
 */
function child(body: string, options: { lockMs?: number; failUnlock?: boolean } = {}): CliResult {
  const script = `
    const runtime = await import(${JSON.stringify(RUNTIME)});
    const { Locking } = await import(${JSON.stringify(LOCKING)});
    const { warn } = await import(${JSON.stringify(WARN)});
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const signal = async (name) => { process.kill(process.pid, name); await sleep(50); };
    const calls = [];
    const backend = {
      describe: (w) => "bkt/" + w,
      lock: async (w) => { calls.push("lock " + w); await sleep(${options.lockMs ?? 0}); return { ID: "ID-1", Operation: "op", Info: "", Who: "me@here", Version: "1", Created: "now", Path: "bkt/" + w }; },
      unlock: async (w, id) => { calls.push("unlock " + w + " " + id); ${options.failUnlock === true ? 'throw new Error("the table did not answer");' : ""} },
      // The CLI holds a handle (leases): the same lock, released through the handle.
      acquire: async (w, o) => { const info = await backend.lock(w, o); return { info, id: info.ID, release: () => backend.unlock(w, info.ID) }; },
      lockingEnabled: true,
      withLock: (w, o, work) => locking.withLock(w, o, work),
    };
    const locking = Object.assign(new Locking({ places: [{}], describe: backend.describe, warn }), { acquire: backend.acquire });
    ${body}
  `;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000, env: cliEnv() });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("interrupts while a lock is held", () => {
  it("a second SIGTERM after the state was stored says it was written, names the lock and the force-unlock command, exits 143", () => {
    const r = child(`
      await runtime.underLock(backend, "ws", {}, 0, async () => {
        runtime.stateStored();
        await signal("SIGTERM");
        await signal("SIGTERM");
        console.log("still running");
      });
    `);
    assert.equal(r.code, 143, r.stderr);
    assert.equal(r.stdout, "");
    assert.equal(
      r.stderr,
      "objstate: interrupted: finishing the current step, then releasing the lock on bkt/ws (interrupt again to quit at once and leave the lock held)\n" +
        "objstate: interrupted again: quitting now; the state was stored, but maybe not committed (the next read commits it once its lock is released; so does objstate state repair); the lock on bkt/ws is still held (release it with objstate force-unlock ID-1 -w ws and the same settings)\n",
    );
  });

  it("a second SIGHUP before anything was stored says nothing was written, exits 129", () => {
    const r = child(`
      await runtime.underLock(backend, "ws", {}, 0, async () => {
        await signal("SIGHUP");
        await signal("SIGHUP");
      });
    `);
    assert.equal(r.code, 129, r.stderr);
    assert.match(r.stderr, /interrupted again: quitting now; nothing was written; the lock on bkt\/ws is still held/);
  });

  it("one SIGTERM lets the operation finish and release; idle, a signal exits at once with its code", () => {
    const r = child(`
      await runtime.underLock(backend, "ws", {}, 0, async () => {
        await signal("SIGTERM");
      });
      console.log(calls.join(","));
      await signal("SIGHUP");
      console.log("not reached");
    `);
    assert.equal(r.code, 129, r.stderr);
    assert.equal(r.stdout, "lock ws,unlock ws ID-1\n");
  });
});

describe("interrupts while a lock request is in flight", () => {
  it("underLock: waits for the answer, releases the lock it got without running the work, then exits 130", () => {
    const r = child(
      `
      const p = runtime.underLock(backend, "ws", {}, 0, async () => { calls.push("work"); });
      await sleep(100);
      await signal("SIGINT");
      try { await p; } catch (e) { console.log(e.code, e.exitCode, calls.join(",")); }
    `,
      { lockMs: 400 },
    );
    assert.equal(r.stdout, "INTERRUPTED 130 lock ws,unlock ws ID-1\n", r.stderr);
    assert.match(r.stderr, /stopping once the lock request in flight has settled/);
  });

  it("lockWaiting (the lock command): waits for the answer and returns the lock it got, marked interrupted", () => {
    const r = child(
      `
      const p = runtime.lockWaiting(backend, "ws", {}, 0);
      await sleep(100);
      await signal("SIGTERM");
      const { info, interrupted } = await p;
      console.log(info.ID, interrupted.code, interrupted.exitCode, calls.join(","));
    `,
      { lockMs: 400 },
    );
    assert.equal(r.stdout, "ID-1 INTERRUPTED 143 lock ws\n", r.stderr);
  });

  it("guardedCall (workspace delete): lets the request settle and reports the interrupt", () => {
    const r = child(`
      const p = runtime.guardedCall("bkt/ws", 0, async () => { await sleep(400); return "deleted"; });
      await sleep(100);
      await signal("SIGINT");
      console.log(JSON.stringify(await p));
    `);
    assert.equal(r.stdout, '{"result":"deleted","interrupted":true}\n', r.stderr);
  });
});

describe("a lock that cannot be released", () => {
  it("after a failed operation: a warning naming the lock ID and the exact force-unlock command", () => {
    const r = child(
      `
      try { await runtime.underLock(backend, "ws", {}, 0, async () => { throw new Error("the operation failed"); }); }
      catch (e) { console.log(e.message); }
    `,
      { failUnlock: true },
    );
    assert.equal(r.stdout, "the operation failed\n", "the operation's error is the one reported");
    assert.equal(
      r.stderr,
      "objstate: warning: could not release lock ID-1 on bkt/ws (the table did not answer); it is still held: release it with objstate force-unlock ID-1 -w ws and the same settings\n",
    );
  });

  it("after a successful operation: LOCK_RELEASE_FAILED with the same advice", () => {
    const r = child(
      `
      try { await runtime.underLock(backend, "ws", {}, 0, async () => undefined); } catch (e) { console.log(e.code + ": " + e.message); }
    `,
      { failUnlock: true },
    );
    assert.equal(
      r.stdout,
      "LOCK_RELEASE_FAILED: could not release lock ID-1 on bkt/ws (the table did not answer); it is still held: release it with objstate force-unlock ID-1 -w ws and the same settings\n",
    );
  });
});

describe("SIGTERM and SIGHUP during a push behave like Ctrl-C", () => {
  for (const [sig, code] of [
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ] as const) {
    it(`${sig}: the push finishes (or stops before writing) and the lock is released`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "objstate-cli-sig-"));
      const settings = ["--bucket", "sig-bucket", "--endpoint", `file://${dir}`, "--kvstore-endpoint", `file://${dir}`, "--kvstore-table", "sig-locks"];
      const big = join(dir, "big.json");
      const state = Buffer.from(JSON.stringify({ version: 4, serial: 1, pad: "x".repeat(64 * 1024 * 1024) }));
      writeFileSync(big, state);
      const table = await openLockTable({ table: "sig-locks", endpoint: `file://${dir}` });
      await table.createTable();
      const push = spawn(process.execPath, [CLI, "state", "push", big, ...settings], { env: cliEnv(), stdio: ["ignore", "pipe", "pipe"] });
      let stderr = "";
      push.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      const done = new Promise<number | null>((resolve) => push.on("close", resolve));
      const deadline = Date.now() + 20_000;
      while ((await table.get("sig-bucket/env:/tool.tfstate", "Info")) === null) {
        assert.ok(Date.now() < deadline, "the push never took the lock");
        await sleep(2);
      }
      push.kill(sig);
      const exit = await done;
      assert.equal(await table.get("sig-bucket/env:/tool.tfstate", "Info"), null, "the lock was left held");
      table.close();
      const pulled = runCli(["state", "pull", ...settings]);
      if (exit === code) {
        assert.match(stderr, /stopping once the lock request in flight has settled\nobjstate: error: interrupted before anything was written\n$/);
        assert.equal(pulled.code, 1);
      } else {
        assert.match(stderr, /^objstate: interrupted: finishing the current step, then releasing the lock on sig-bucket\/env:\/tool\.tfstate/);
        assert.equal(exit, 0, stderr);
        assert.equal(pulled.stdout.length, state.length);
      }
    });
  }
});
