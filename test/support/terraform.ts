/**
 * Running the real `terraform` (whichever is on PATH) in tests, kept on 127.0.0.1: every
 * run gets an environment built from nothing (no AWS_*, TF_* or proxy setting of the
 * caller's), a temp HOME, an empty CLI config, no checkpoint calls, the EC2 metadata client
 * off, and HTTP(S)_PROXY at a loopback port nothing listens on. Only `terraform_data`
 * resources and the built-in `local-exec` provisioner are used: no provider is downloaded.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { runCli, type CliOptions } from "./cli.js";
import { listenLow } from "./port.js";

function onPath(name: string): string | undefined {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    if (dir === "") continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** The terraform binary on PATH, if any. */
export const TERRAFORM = onPath("terraform");

/** Its version (`1.11.4`), "" without one. */
export const TERRAFORM_VERSION =
  TERRAFORM === undefined
    ? ""
    : (/Terraform v(\S+)/.exec(
        spawnSync(TERRAFORM, ["version"], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "", CHECKPOINT_DISABLE: "1" } }).stdout,
      )?.[1] ?? "unknown");

/** One line on stderr saying whether `suite` runs, and with which terraform (CI's log shows either). */
export function announce(suite: string): void {
  process.stderr.write(
    TERRAFORM === undefined
      ? `objstate: the ${suite} suite did NOT run: no terraform on PATH (put Terraform >= 1.10 on PATH to run it)\n`
      : `objstate: the ${suite} suite runs ${TERRAFORM} (Terraform ${TERRAFORM_VERSION})\n`,
  );
}

/** A loopback port nothing listens on (bound, then closed): the proxies point there. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await listenLow(s);
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

export interface TerraformRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A terraform process running in the background. */
export interface RunningTerraform {
  readonly done: Promise<TerraformRun>;
  /** Resolves once `stream` matches `pattern` (rejects if the process ends first, or after `timeoutMs`). */
  matches(stream: "stdout" | "stderr", pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** What `stream` has said so far. */
  soFar(stream: "stdout" | "stderr"): string;
  /** Ends the process (SIGTERM). */
  kill(): void;
}

/** The documents a directory holds: file name → JSON value (or text). */
export type Files = Record<string, unknown>;

/** A temp directory with the isolated environment, and working directories in it. */
export class TerraformSandbox {
  private constructor(
    /** The sandbox's directory (removed by {@link close}). */
    readonly work: string,
    /** The loopback port nothing listens on. */
    readonly closedPort: number,
    private readonly env: Record<string, string>,
  ) {}

  static async create(): Promise<TerraformSandbox> {
    const work = mkdtempSync(join(tmpdir(), "objstate-terraform-"));
    const home = join(work, "home");
    mkdirSync(home);
    const cliConfig = join(work, "empty.tfrc");
    writeFileSync(cliConfig, "");
    const closed = await closedPort();
    // Built from nothing: no AWS_*, TF_* or proxy setting of the caller's reaches the tool.
    const env = {
      PATH: process.env["PATH"] ?? "",
      HOME: home,
      TMPDIR: work,
      TF_IN_AUTOMATION: "1",
      CHECKPOINT_DISABLE: "1",
      TF_CLI_CONFIG_FILE: cliConfig,
      HTTP_PROXY: `http://127.0.0.1:${closed}`,
      HTTPS_PROXY: `http://127.0.0.1:${closed}`,
      NO_PROXY: "127.0.0.1",
      AWS_EC2_METADATA_DISABLED: "true",
    };
    return new TerraformSandbox(work, closed, env);
  }

  /** A fresh working directory holding `files`. */
  workdir(name: string, files: Files): string {
    const dir = join(this.work, name);
    mkdirSync(dir);
    this.write(dir, files);
    return dir;
  }

  /** Write (or replace) `files` in `dir`. */
  write(dir: string, files: Files): void {
    for (const [file, doc] of Object.entries(files)) writeFileSync(join(dir, file), typeof doc === "string" ? doc : JSON.stringify(doc, null, 2));
  }

  /** Start terraform in `dir` (asynchronously: an in-process server must keep answering). */
  start(dir: string, args: string[], extraEnv: Record<string, string> = {}): RunningTerraform {
    const child = spawn(TERRAFORM as string, args, { cwd: dir, env: { ...this.env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
    const out = { stdout: "", stderr: "" };
    const listeners = new Set<() => void>();
    let ended = false;
    for (const stream of ["stdout", "stderr"] as const) {
      child[stream].setEncoding("utf8").on("data", (d: string) => {
        out[stream] += d;
        for (const l of listeners) l();
      });
    }
    const done = new Promise<TerraformRun>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (code) => {
        ended = true;
        for (const l of listeners) l();
        resolve({ code, ...out });
      });
    });
    return {
      done,
      soFar: (stream) => out[stream],
      kill: () => child.kill("SIGTERM"),
      matches: (stream, pattern, timeoutMs = 120_000) =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => finish(new Error(`terraform ${args.join(" ")}: ${stream} did not match ${pattern} within ${timeoutMs} ms:\n${out.stdout}\n${out.stderr}`)),
            timeoutMs,
          );
          const finish = (err?: Error): void => {
            clearTimeout(timer);
            listeners.delete(check);
            if (err === undefined) resolve();
            else reject(err);
          };
          const check = (): void => {
            if (pattern.test(out[stream])) finish();
            else if (ended) finish(new Error(`terraform ${args.join(" ")} ended before its ${stream} matched ${pattern}:\n${out.stdout}\n${out.stderr}`));
          };
          listeners.add(check);
          check();
        }),
    };
  }

  /** Run terraform in `dir` to its end. */
  run(dir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<TerraformRun> {
    return this.start(dir, args, extraEnv).done;
  }

  /** Run terraform (`-no-color`), asserting it succeeds. */
  async ok(dir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<TerraformRun> {
    const r = await this.run(dir, [...args, "-no-color"], extraEnv);
    assert.equal(r.code, 0, `terraform ${args.join(" ")} in ${dir} failed:\n${r.stdout}\n${r.stderr}`);
    return r;
  }

  /** The values `terraform plan` plans for the outputs of the configuration in `dir` (after an init). */
  async planned(dir: string, extraEnv: Record<string, string> = {}): Promise<Record<string, unknown>> {
    await this.ok(dir, ["init", "-input=false"], extraEnv);
    await this.ok(dir, ["plan", "-input=false", "-out=plan.bin"], extraEnv);
    const show = await this.ok(dir, ["show", "-json", "plan.bin"], extraEnv);
    const outputs = (JSON.parse(show.stdout) as { planned_values: { outputs: Record<string, { value: unknown }> } }).planned_values.outputs;
    return Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, o.value]));
  }

  close(): void {
    rmSync(this.work, { recursive: true, force: true });
  }
}

/** `objstate synth ARGS` (the built CLI), its document parsed; no warning but the ones expected. */
export function synth(args: string[], warnings: RegExp[] = [], options: CliOptions = {}): unknown {
  const r = runCli(["synth", ...args], options);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stderr.split("\n").filter((l) => l !== "");
  assert.equal(lines.length, warnings.length, r.stderr);
  warnings.forEach((w, i) => assert.match(lines[i] as string, w));
  return JSON.parse(r.stdout) as unknown;
}

/** A configuration with one `terraform_data` whose output is `value`, as output `y`. */
export const PRODUCER = (value: string) => ({
  resource: { terraform_data: { producer: { input: value } } },
  output: { y: { value: "${terraform_data.producer.output}" } },
});

/** A configuration whose output `z` is output `y` of the remote state `name`. */
export const CONSUMER = (name: string) => ({ output: { z: { value: `\${data.terraform_remote_state.${name}.outputs.y}` } } });
