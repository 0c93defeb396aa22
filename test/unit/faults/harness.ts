/**
 * Shared pieces of the fault suites ("no acknowledged write is ever lost"): how many
 * processes and cycles, a CLI runner that never blocks the event loop (the fault proxy
 * lives in the test process), states whose content names their writer, and the two
 * concurrent-writer proofs, run unchanged on the embedded store and on Ceph + dynalite.
 *
 * Quick counts run in CI's `npm test`; `OBJSTATE_FAULTS_FULL=1` (`npm run test:faults`)
 * runs the full counts.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { CLI, cliEnv, type CliResult } from "../../support/cli.js";
import { cliArgs } from "../cli/suite.js";

/** Whether the long variants run (`OBJSTATE_FAULTS_FULL=1`). */
export const FULL = process.env["OBJSTATE_FAULTS_FULL"] === "1";

/** Concurrent writer processes, cycles each, and abandoned-write trials. */
export const COUNTS = FULL ? { processes: 8, cycles: 20, trials: 10 } : { processes: 3, cycles: 4, trials: 2 };

/** A per-test time bound for node:test, generous for a loaded 2-core machine running other test files beside. */
export const TIMEOUT_MS = FULL ? 30 * 60_000 : 300_000;

/** A CLI process in the background, which a test may kill -9. */
export interface Proc {
  readonly pid: number;
  /** Resolves when the process has ended, with how long it ran. */
  readonly done: Promise<CliResult & { readonly ms: number; readonly signal: NodeJS.Signals | null }>;
  /** SIGKILL: no cleanup, no lock release, no further request. */
  kill9(): void;
}

/** Start the built CLI with `args`, never blocking this process's event loop. */
export function spawnCli(args: string[], env: Record<string, string | undefined> = {}, input?: string): Proc {
  const started = Date.now();
  const child = spawn(process.execPath, [CLI, ...args], { env: cliEnv(env), stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  child.stdin.on("error", () => undefined);
  child.stdin.end(input);
  const done = new Promise<CliResult & { ms: number; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr, ms: Date.now() - started }));
  });
  return { pid: child.pid ?? -1, done, kill9: () => child.kill("SIGKILL") };
}

/** Runs one objstate command against one configured state; resolves with its result. */
export type Cli = (cmd: string[], input?: string) => Promise<CliResult & { readonly ms: number }>;

/** Starts one objstate command against one configured state, in the background. */
export type Start = (cmd: string[]) => Proc;

/**
 * Run `workers` concurrently with a runner that, once any of them fails, kills every
 * command still running (one left waiting for a lock would otherwise wait out its
 * --lock-timeout) and makes the others stop at their next command.
 */
async function concurrently<T>(start: Start, count: number, worker: (cli: Cli, index: number) => Promise<T>): Promise<T[]> {
  const running = new Set<Proc>();
  let failed = false;
  const cli: Cli = async (cmd) => {
    if (failed) throw new Error("stopped: another worker failed");
    const proc = start(cmd);
    running.add(proc);
    try {
      return await proc.done;
    } finally {
      running.delete(proc);
    }
  };
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      worker(cli, i).catch((e: unknown) => {
        failed = true;
        for (const p of running) p.kill9();
        throw e;
      }),
    ),
  );
}

/** A runner for `props` (settings as flags, secrets in the environment), and a starter for background runs. */
export function cliFor(props: ObjectStoreBackendConfigProps): { cli: Cli; start: Start } {
  const { args, env } = cliArgs(props);
  return {
    cli: (cmd, input) => spawnCli([...cmd, ...args], env, input).done,
    start: (cmd) => spawnCli([...cmd, ...args], env),
  };
}

/** A v4 state of lineage `lineage` at `serial` whose output `tokens` lists every write it includes. */
export function stateText(lineage: string, serial: number, tokens: readonly string[]): string {
  const doc = {
    version: 4,
    terraform_version: "1.9.0",
    serial,
    lineage,
    outputs: { tokens: { value: tokens, type: ["list", "string"] } },
    resources: [],
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** `serial`, `lineage` and the `tokens` output of a pulled state. */
export function parseState(text: string): { serial: number; lineage: string; tokens: string[] } {
  const doc = JSON.parse(text) as { serial: number; lineage: string; outputs: { tokens: { value: string[] } } };
  return { serial: doc.serial, lineage: doc.lineage, tokens: doc.outputs.tokens.value };
}

/** A scratch directory for state files. */
export function scratch(): { file: (name: string, text: string) => string } {
  const dir = mkdtempSync(join(tmpdir(), "objstate-faults-"));
  return {
    file: (name, text) => {
      const p = join(dir, name);
      writeFileSync(p, text);
      return p;
    },
  };
}

/** An assertion message: what was checked, with the command's exit code and output. */
export function explain(what: string, r: CliResult): string {
  return `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
}

/** The lock ID named in a "locked" error (exit 3), e.g. for force-unlock. */
export function lockIdIn(stderr: string): string {
  const m = /\bID ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/.exec(stderr);
  assert.ok(m !== null, `no lock ID in: ${stderr}`);
  return m[1] as string;
}

/** No lock is left on the state: a fresh `lock` gets it at once (and gives it back). */
export async function assertNoLock(cli: Cli, workspace = "default"): Promise<void> {
  const lock = await cli(["lock", "-w", workspace]);
  assert.equal(lock.code, 0, explain(`a lock was left behind on workspace ${workspace}`, lock));
  const unlock = await cli(["unlock", lock.stdout.trim(), "-w", workspace]);
  assert.equal(unlock.code, 0, explain("unlock", unlock));
}

/** Push the first state of a test (serial 1, no tokens); returns its lineage. */
export async function seed(cli: Cli, files: ReturnType<typeof scratch>, workspace = "default"): Promise<string> {
  const lineage = randomUUID();
  const r = await cli(["state", "push", files.file(`seed-${workspace}.json`, stateText(lineage, 1, [])), "-w", workspace]);
  assert.equal(r.code, 0, explain("seed push", r));
  return lineage;
}

/**
 * P processes × C cycles of `lock` → `state pull` → +1 → `state push --lock-id ID` →
 * `unlock ID`. Every cycle must succeed and the final state must hold every token once.
 */
export async function lockedCycles({ cli, start }: { cli: Cli; start: Start }): Promise<void> {
  const files = scratch();
  const lineage = await seed(cli, files);
  const worker = async (cli: Cli, p: number): Promise<string[]> => {
    const mine: string[] = [];
    for (let c = 0; c < COUNTS.cycles; c++) {
      const token = `p${p}c${c}`;
      const lock = await cli(["lock", "--lock-timeout", "120s", "--operation", "fault-cycle"]);
      assert.equal(lock.code, 0, explain(`${token} lock`, lock));
      const id = lock.stdout.trim();
      const pull = await cli(["state", "pull"]);
      assert.equal(pull.code, 0, explain(`${token} pull`, pull));
      const s = parseState(pull.stdout);
      assert.equal(s.lineage, lineage);
      const push = await cli(["state", "push", files.file(`${token}.json`, stateText(lineage, s.serial + 1, [...s.tokens, token])), "--lock-id", id]);
      assert.equal(push.code, 0, explain(`${token} push --lock-id`, push));
      const unlock = await cli(["unlock", id]);
      assert.equal(unlock.code, 0, explain(`${token} unlock`, unlock));
      mine.push(token);
    }
    return mine;
  };
  const all = (await concurrently(start, COUNTS.processes, worker)).flat();
  const pull = await cli(["state", "pull"]);
  assert.equal(pull.code, 0, explain("final pull", pull));
  const final = parseState(pull.stdout);
  assert.equal(
    final.tokens.length,
    COUNTS.processes * COUNTS.cycles,
    `expected ${COUNTS.processes * COUNTS.cycles} increments, the state holds ${final.tokens.length}`,
  );
  assert.deepEqual([...final.tokens].sort(), [...all].sort());
  assert.equal(final.serial, 1 + COUNTS.processes * COUNTS.cycles);
  await assertNoLock(cli);
}

/**
 * P processes × C naive cycles of `state pull` → +1 (serial + 1) → `state push
 * --lock-timeout 60s`. Each push exits 0 (acknowledged) or 5 (conflict, nothing written);
 * every acknowledged push's token is in the final state, and no other.
 */
export async function naiveCycles({ cli, start }: { cli: Cli; start: Start }): Promise<{ acknowledged: number; conflicts: number }> {
  const files = scratch();
  const lineage = await seed(cli, files);
  const acknowledged: string[] = [];
  let conflicts = 0;
  const worker = async (cli: Cli, p: number): Promise<void> => {
    for (let c = 0; c < COUNTS.cycles; c++) {
      const token = `p${p}c${c}`;
      const pull = await cli(["state", "pull"]);
      assert.equal(pull.code, 0, explain(`${token} pull`, pull));
      const s = parseState(pull.stdout);
      const push = await cli(["state", "push", files.file(`${token}.json`, stateText(lineage, s.serial + 1, [...s.tokens, token])), "--lock-timeout", "60s"]);
      if (push.code === 0) acknowledged.push(token);
      else {
        assert.equal(push.code, 5, explain(`${token} push: neither acknowledged (0) nor a conflict (5)`, push));
        assert.match(push.stderr, /^objstate: error: .*(serial|lineage|conflict)/m);
        conflicts += 1;
      }
    }
  };
  await concurrently(start, COUNTS.processes, worker);
  const pull = await cli(["state", "pull"]);
  assert.equal(pull.code, 0, explain("final pull", pull));
  const final = parseState(pull.stdout);
  const missing = acknowledged.filter((t) => !final.tokens.includes(t));
  assert.deepEqual(missing, [], `acknowledged pushes lost: ${missing.join(", ")}`);
  assert.deepEqual([...final.tokens].sort(), [...acknowledged].sort(), "the final state holds a write that was not acknowledged");
  assert.equal(final.serial, 1 + acknowledged.length);
  assert.equal(acknowledged.length + conflicts, COUNTS.processes * COUNTS.cycles);
  assert.ok(acknowledged.length > 0);
  await assertNoLock(cli);
  return { acknowledged: acknowledged.length, conflicts };
}
