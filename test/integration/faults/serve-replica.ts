/**
 * `objstate serve` replicas for the fault tests: a process per replica, its settings as
 * flags and its secrets in the environment, its JSON log lines (stderr) kept for asserts.
 */
import type { ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { startServeProcess } from "../../support/cli.js";
import { cliArgs } from "../../unit/cli/suite.js";

export interface Replica {
  readonly url: string;
  /** Everything the replica wrote on stderr so far (its log lines). */
  log(): string;
  /** The JSON log lines whose `msg` is `msg`. */
  events(msg: string): Record<string, unknown>[];
  stop(): Promise<void>;
  /** SIGKILL, and its end. */
  kill(): Promise<void>;
}

/** Start `objstate serve` on a free loopback port for `props`, logging at `warn`. */
export async function startReplica(props: ObjectStoreBackendConfigProps): Promise<Replica> {
  const { args, env } = cliArgs(props);
  const p = await startServeProcess([...args, "--log-level", "warn"], env);
  const stderr = p.stderr;
  return {
    url: p.url,
    log: stderr,
    events: (msg) =>
      stderr()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => e["msg"] === msg),
    stop: async () => {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGTERM");
      await p.exited;
    },
    kill: async () => {
      p.child.kill("SIGKILL");
      await p.exited;
    },
  };
}
