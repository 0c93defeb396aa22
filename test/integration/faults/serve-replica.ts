/**
 * `objstate serve` replicas for the fault tests: a process per replica, its settings as
 * flags and its secrets in the environment, its JSON log lines (stderr) kept for asserts.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { CLI, cliEnv } from "../../support/cli.js";
import { cliArgs } from "../../unit/cli/suite.js";

export interface Replica {
  readonly url: string;
  /** Everything the replica wrote on stderr so far (its log lines). */
  log(): string;
  /** The JSON log lines whose `msg` is `msg`. */
  events(msg: string): Record<string, unknown>[];
  stop(): Promise<void>;
}

/** Start `objstate serve` on a free loopback port for `props`, logging at `warn`. */
export async function startReplica(props: ObjectStoreBackendConfigProps): Promise<Replica> {
  const { args, env } = cliArgs(props);
  const child: ChildProcess = spawn(process.execPath, [CLI, "serve", ...args, "--listen", "127.0.0.1:0", "--log-level", "warn"], {
    env: cliEnv({ ...env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" }),
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr}`)), 30_000);
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
      const m = /at (http:\/\/127\.0\.0\.1:\d+)\/state/.exec(stderr);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    });
    void exited.then(() => reject(new Error(`serve exited: ${stderr}`)));
  });
  return {
    url,
    log: () => stderr,
    events: (msg) =>
      stderr
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => e["msg"] === msg),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
