/**
 * Every bench under bench/ still runs: each is run once with the smallest workload it takes
 * and must exit 0. A bench is not part of the test command's figures (they are in
 * bench/RESULTS.md), but a bench that no longer runs is found here, not by the next person
 * who needs its figures (bench:server failed on every POST for a session after the default
 * turned to refusing unlocked writes).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { REPO_ROOT } from "../../support/browser.js";

const scratch = mkdtempSync(join(tmpdir(), "objstate-bench-smoke-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

interface Run {
  readonly code: number | null;
  readonly out: string;
}

function runBench(file: string, env: Record<string, string>, nodeArgs: readonly string[] = [], args: readonly string[] = []): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, join(REPO_ROOT, "bench", file), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, TMPDIR: scratch, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

/** The bench ran to its end: exit 0 (a failed request or check throws, and exits 1). */
function ranThrough(run: Run, file: string): void {
  assert.equal(run.code, 0, `bench/${file} exited ${String(run.code)}:\n${run.out.slice(-3000)}`);
}

/** 16 KiB, in the MiB the benches take (a whole number of bytes). */
const SMALL_MIB = String(1 / 64);

// Two benches at a time: each waits mostly on its child processes, and none asserts a bound here.
describe("the benches run (smallest workloads)", { concurrency: 2 }, () => {
  it("bench/server.mjs: every section, and its bound tables printed", async () => {
    const run = await runBench("server.mjs", {
      BENCH_ROUNDS: "1",
      BENCH_SIZES: SMALL_MIB,
      BENCH_SMALL: "5",
      BENCH_SECONDS: "0.2",
      BENCH_CYCLES: "2",
      BENCH_BATCH: "4",
      BENCH_ENC_GETS: "5",
    });
    ranThrough(run, "server.mjs");
    assert.match(run.out, /\(server - library\) \/ transport/);
    assert.match(run.out, /POST 0\.015625 MiB/);
  });

  it("bench/server.mjs with a users file and phases", async () => {
    const run = await runBench("server.mjs", {
      BENCH_ROUNDS: "1",
      BENCH_SIZES: SMALL_MIB,
      BENCH_SMALL: "5",
      BENCH_PARTS: "transfer,lock",
      BENCH_CYCLES: "2",
      BENCH_BATCH: "4",
      BENCH_USERS: "1",
      BENCH_PHASES: "1",
    });
    ranThrough(run, "server.mjs");
  });

  it("bench/console.mjs", async () => {
    ranThrough(await runBench("console.mjs", { BENCH_ROUNDS: "1", BENCH_WORKSPACES: "16", BENCH_VERSIONS: "3" }), "console.mjs");
  });

  it("bench/startup.mjs", async () => {
    ranThrough(await runBench("startup.mjs", { BENCH_ROUNDS: "1", BENCH_STATES: "10" }), "startup.mjs");
  });

  it("bench/config.mjs", async () => {
    ranThrough(await runBench("config.mjs", { BENCH_ROUNDS: "1" }), "config.mjs");
  });

  it("bench/encryption.mjs", async () => {
    ranThrough(await runBench("encryption.mjs", {}, [], ["--mib", "1", "--rounds", "1"]), "encryption.mjs");
  });

  // The benches against Ceph RGW + dynalite, when the test run has them (scripts/test.sh does).
  const ceph = process.env["OBJSTATE_TEST_S3_ENDPOINT"] !== undefined && process.env["OBJSTATE_TEST_DYNAMODB_ENDPOINT"] !== undefined;
  const onCeph = { skip: ceph ? false : "needs Ceph RGW + dynalite (scripts/with-servers.sh)" };
  it("bench/backend.mjs", onCeph, async () => {
    ranThrough(await runBench("backend.mjs", { BENCH_ROUNDS: "1", BENCH_CYCLES: "2", BENCH_STATE_MIB: "1" }), "backend.mjs");
  });
  it("bench/locks.mjs", onCeph, async () => {
    ranThrough(await runBench("locks.mjs", { BENCH_CYCLES: "2" }), "locks.mjs");
  });
  it("bench/outputs.mjs", onCeph, async () => {
    ranThrough(await runBench("outputs.mjs", { BENCH_ROUNDS: "1", BENCH_STATE_MIB: "1" }, ["--expose-gc"]), "outputs.mjs");
  });
  it("bench/history.mjs", onCeph, async () => {
    ranThrough(await runBench("history.mjs", { BENCH_ROUNDS: "1", BENCH_VERSIONS: "60", BENCH_STATE_MIB: "1" }), "history.mjs");
  });
  it("bench/apply-throughput.mjs", onCeph, async () => {
    const run = await runBench("apply-throughput.mjs", { BENCH_ROUNDS: "1", BENCH_SECONDS: "1", BENCH_WORKSPACES: "20", BENCH_CLIENTS: "4" });
    ranThrough(run, "apply-throughput.mjs");
    assert.match(run.out, /store requests per apply: bare \{"s3":2,"dynamodb":5\}/);
  });
});
