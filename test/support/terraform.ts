/**
 * The real `terraform` binary for tests that compare objstate with it: where it is, and a
 * sandbox to run it in — a temp HOME and working directories, an empty CLI configuration,
 * no checkpoint calls, and every proxy at a closed loopback port, so nothing leaves
 * 127.0.0.1 (only `terraform_data` resources and outputs: no provider is downloaded). The
 * environment is built from nothing: no AWS_*, TF_* or proxy setting of the caller's
 * reaches the tool. The same environment as test/integration/terraform/real-tool.test.ts.
 */
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

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

/** The terraform on PATH, if any. */
export const TERRAFORM = onPath("terraform");

/** Its version (`1.11.0`), "" without one. */
export const TERRAFORM_VERSION =
  TERRAFORM === undefined ? "" : (/Terraform v(\S+)/.exec(spawnSync(TERRAFORM, ["version"], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "", CHECKPOINT_DISABLE: "1" } }).stdout)?.[1] ?? "unknown");

/** Say on stderr, in one line, whether `suite` runs the real terraform (CI's log shows either). */
export function announce(suite: string): void {
  process.stderr.write(
    TERRAFORM === undefined
      ? `objstate: ${suite} did NOT run: no terraform on PATH (put Terraform >= 1.10 on PATH to run it)\n`
      : `objstate: ${suite} runs ${TERRAFORM} (Terraform ${TERRAFORM_VERSION})\n`,
  );
}

/** A loopback port nothing listens on (bound, then closed): the proxies point there. */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

export interface TerraformRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A temp directory to run terraform in, and the environment it runs with. */
export class TerraformSandbox {
  private constructor(
    /** The sandbox's directory (HOME, TMPDIR and the working directories are in it). */
    readonly work: string,
    readonly env: Readonly<Record<string, string>>,
  ) {}

  static async create(): Promise<TerraformSandbox> {
    const work = mkdtempSync(join(tmpdir(), "objstate-terraform-"));
    const home = join(work, "home");
    mkdirSync(home);
    const cliConfig = join(work, "empty.tfrc");
    writeFileSync(cliConfig, "");
    const closed = await closedPort();
    return new TerraformSandbox(work, {
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
    });
  }

  /** A fresh working directory holding `files` (name → text, or a document written as JSON). */
  workdir(name: string, files: Record<string, unknown>): string {
    const dir = join(this.work, name);
    mkdirSync(dir);
    for (const [file, doc] of Object.entries(files)) writeFileSync(join(dir, file), typeof doc === "string" ? doc : JSON.stringify(doc, null, 2));
    return dir;
  }

  /** Run terraform in `dir` (asynchronously: an in-process server must keep answering). */
  run(dir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<TerraformRun> {
    return new Promise((resolve, reject) => {
      const child = spawn(TERRAFORM as string, args, { cwd: dir, env: { ...this.env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  }

  /** {@link run}, which must succeed (an Error with terraform's output otherwise). */
  async ok(dir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<TerraformRun> {
    const r = await this.run(dir, args, extraEnv);
    if (r.code !== 0) throw new Error(`terraform ${args.join(" ")} in ${dir} failed (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
    return r;
  }

  remove(): void {
    rmSync(this.work, { recursive: true, force: true });
  }
}
