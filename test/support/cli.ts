import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Path of the built CLI. */
export const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run the built `objstate` CLI as a subprocess. */
export function runCli(args: string[], options: { input?: string | Buffer; env?: Record<string, string | undefined>; cwd?: string } = {}): CliResult {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    input: options.input,
    env: { PATH: process.env["PATH"], HOME: process.env["HOME"], NO_COLOR: "1", ...options.env },
    cwd: options.cwd,
    encoding: "utf8",
    maxBuffer: 512 * 1024 * 1024,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
