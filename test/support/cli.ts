import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freeLowPort, withLowPort } from "./port.js";

/**
 * Path of the built CLI: the published one (dist/pkg/cli.cjs, made by scripts/build.mjs)
 * when the last build made it — `npm run build` does —, so that the
 * CLI suites test the shipped code; the modules tsc emitted when only tsc ran since
 * (then the bundle would be stale).
 */
export const CLI = shippedCli() ?? fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

function shippedCli(): string | undefined {
  const bundled = fileURLToPath(new URL("../../pkg/cli.cjs", import.meta.url));
  const emitted = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));
  try {
    return statSync(bundled).mtimeMs >= statSync(emitted).mtimeMs ? bundled : undefined;
  } catch {
    return undefined;
  }
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly input?: string | Buffer | undefined;
  /** Added to the minimal environment (PATH, HOME, NO_COLOR=1); undefined values remove a variable. */
  readonly env?: Record<string, string | undefined> | undefined;
  readonly cwd?: string | undefined;
}

/**
 * Where the CLI's AWS config and credentials files are in tests unless a test names its
 * own: a path that never exists, so that an operator's ~/.aws cannot change a test.
 */
export const NO_AWS_FILE = join(tmpdir(), "objstate-tests-no-aws-files", "none");

/**
 * The minimal environment the CLI runs with in tests, plus `extra`. The standard AWS chain
 * is kept off the machine's own sources: no AWS files (see {@link NO_AWS_FILE}), and no
 * instance metadata service (`AWS_EC2_METADATA_DISABLED`), so nothing goes to
 * 169.254.169.254; a test of those sources sets (or removes, with undefined) them.
 */
export function cliEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = {
    PATH: process.env["PATH"],
    HOME: process.env["HOME"],
    NO_COLOR: "1",
    AWS_EC2_METADATA_DISABLED: "true",
    AWS_CONFIG_FILE: NO_AWS_FILE,
    AWS_SHARED_CREDENTIALS_FILE: NO_AWS_FILE,
    ...extra,
  };
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** Run the built `objstate` CLI as a subprocess. */
export function runCli(args: string[], options: CliOptions = {}): CliResult {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    input: options.input,
    env: cliEnv(options.env),
    cwd: options.cwd,
    encoding: "utf8",
    maxBuffer: 512 * 1024 * 1024,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Like {@link runCli}, but stdout as raw bytes (for byte-exact comparisons). */
export function runCliBytes(args: string[], options: CliOptions = {}): { code: number | null; stdout: Buffer; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { input: options.input, env: cliEnv(options.env), cwd: options.cwd, maxBuffer: 512 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString("utf8") };
}

/** A CLI process running in the background. */
export interface RunningCli {
  /** Resolves when the process has ended. */
  readonly done: Promise<CliResult>;
  /** Resolves once stderr matches `pattern` (rejects if the process ends first or after `timeoutMs`). */
  stderrMatches(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Standard error so far. */
  stderrSoFar(): string;
  /** Ends the process (SIGTERM). */
  kill(): void;
  /** Sends SIGINT (Ctrl-C). */
  interrupt(): void;
  /** Its process ID (a test pauses it with OBJSTATE_TEST_PAUSE_AT, see test/support/paused-process.ts). */
  readonly pid: number;
  /** Has it ended? */
  ended(): boolean;
  /** Sends SIGCONT. */
  resume(): void;
}

/** Start the built CLI in the background (for tests that act while it waits). */
export function startCli(args: string[], options: CliOptions = {}): RunningCli {
  const child = spawn(process.execPath, [CLI, ...args], { env: cliEnv(options.env), cwd: options.cwd, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const listeners = new Set<() => void>();
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
    for (const l of listeners) l();
  });
  if (options.input !== undefined) child.stdin.end(options.input);
  else child.stdin.end();
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      for (const l of listeners) l();
      resolve({ code, stdout, stderr });
    });
  });
  let ended = false;
  void done.then(() => (ended = true));
  return {
    done,
    kill: () => child.kill("SIGTERM"),
    interrupt: () => child.kill("SIGINT"),
    pid: child.pid ?? -1,
    ended: () => ended || child.exitCode !== null || child.signalCode !== null,
    resume: () => void child.kill("SIGCONT"),
    stderrSoFar: () => stderr,
    stderrMatches: (pattern, timeoutMs = 15_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`stderr did not match ${pattern} within ${timeoutMs} ms; stderr so far: ${stderr}`)), timeoutMs);
        const finish = (err?: Error): void => {
          clearTimeout(timer);
          listeners.delete(check);
          if (err === undefined) resolve();
          else reject(err);
        };
        const check = (): void => {
          if (pattern.test(stderr)) finish();
          else if (ended || child.exitCode !== null)
            finish(new Error(`the CLI ended (exit ${child.exitCode}) before stderr matched ${pattern}; stderr: ${stderr}`));
        };
        listeners.add(check);
        check();
      }),
  };
}

/** `objstate serve` running as a child process (see {@link startServeProcess}). */
export interface ServeProcess {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:PORT`, as the server announced it. */
  readonly url: string;
  /** Its exit code once it ended. */
  readonly exited: Promise<number | null>;
  /** Everything it wrote on stderr so far (its log lines). */
  stderr(): string;
}

/** `127.0.0.1:PORT` with a port of the test range that was free a moment ago (see test/support/port.ts). */
export async function loopbackAddress(): Promise<string> {
  return `127.0.0.1:${await freeLowPort()}`;
}

/** `objstate serve ARGS --listen 127.0.0.1:PORT` as a child process; resolves once it says where it listens (another port if that one was taken). */
export function startServeProcess(args: string[], env: Record<string, string> = {}, timeoutMs = 30_000): Promise<ServeProcess> {
  return withLowPort((port) => startServeOn(port, args, env, timeoutMs));
}

async function startServeOn(port: number, args: string[], env: Record<string, string>, timeoutMs: number): Promise<ServeProcess> {
  const child = spawn(process.execPath, [CLI, "serve", ...args, "--listen", `127.0.0.1:${port}`], {
    env: cliEnv({ ...env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" }),
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr}`)), timeoutMs);
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
      const m = /at (http:\/\/127\.0\.0\.1:\d+)\/state/.exec(stderr);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    });
    // LISTEN_FAILED for a port in use says "port N is in use": withLowPort then tries another.
    void exited.then((code) => (clearTimeout(timer), reject(new Error(`serve exited ${code}: ${stderr}`))));
  });
  return { child, url, exited, stderr: () => stderr };
}
