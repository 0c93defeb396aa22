/**
 * Worker processes a test can freeze at one step of a write and resume: started with
 * `OBJSTATE_TEST_PAUSE_AT=<step>` (src/util/test-pause.ts), the worker stops itself with
 * SIGSTOP there; the test sees it stopped in `/proc/<pid>/stat`, lets other writers act,
 * and sends SIGCONT. Each worker prints one JSON line, its {@link Outcome}.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { PauseStep } from "../../src/util/test-pause.js";

/** What a worker reports: success with a value, or the error code and message it failed with. */
export type Outcome = { readonly ok: true; readonly value?: unknown } | { readonly ok: false; readonly code: string; readonly message: string };

export interface Worker {
  readonly pid: number;
  /** Resolves when the process has ended, with its outcome (a crash rejects). */
  readonly outcome: Promise<Outcome>;
  /** Has the process ended? */
  ended(): boolean;
  /** SIGCONT. */
  resume(): void;
  /** SIGKILL, for cleanup after a failed test. */
  kill(): void;
}

/** Start `script` (a built .js file) with `args`; `pauseAt` freezes it at that step. */
export function startWorker(script: string, args: readonly string[], env: Readonly<Record<string, string>> = {}, pauseAt?: PauseStep): Worker {
  const child = spawn(process.execPath, [script, ...args], {
    env: { ...process.env, ...env, OBJSTATE_TEST_PAUSE_AT: pauseAt ?? "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let ended = false;
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const outcome = new Promise<Outcome>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      ended = true;
      const line = stdout.trim().split("\n").pop() ?? "";
      try {
        resolve(JSON.parse(line) as Outcome);
      } catch {
        reject(new Error(`worker ${args.join(" ")} ended (${code ?? signal}) without an outcome\nstdout: ${stdout}\nstderr: ${stderr}`));
      }
    });
  });
  outcome.catch(() => undefined); // awaited by the test; a crash while it waits elsewhere must not go unhandled
  return {
    pid: child.pid ?? -1,
    outcome,
    ended: () => ended,
    resume: () => void child.kill("SIGCONT"),
    kill: () => void child.kill("SIGKILL"),
  };
}

/** Wait until `w` (a worker, or any process of the test's) has stopped itself (state `T` in /proc); rejects when it ended instead. */
export async function stopped(w: { readonly pid: number; ended(): boolean; readonly outcome?: Promise<unknown> }, limitMs = 60_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    if (w.ended()) throw new Error(`process ${w.pid} ended before it reached its pause step: ${JSON.stringify(await w.outcome?.catch(String))}`);
    let state = "";
    try {
      const stat = readFileSync(`/proc/${w.pid}/stat`, "utf8");
      state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] ?? "";
    } catch {
      // ended meanwhile: reported on the next round
    }
    if (state === "T") return;
    if (Date.now() > deadline) throw new Error(`worker ${w.pid} did not stop within ${limitMs} ms`);
    await sleep(20);
  }
}

/** Print `outcome` as the worker's last line (used by the worker scripts). */
export function report(outcome: Outcome): void {
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
}

/** The outcome of `run`: its value, or the error's code and message. */
export async function outcomeOf(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await run() };
  } catch (e) {
    const err = e as { code?: unknown; message?: unknown };
    return { ok: false, code: typeof err.code === "string" ? err.code : "INTERNAL", message: String(err.message ?? e) };
  }
}
