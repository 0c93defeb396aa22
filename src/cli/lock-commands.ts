/**
 * `objstate locks` (every lock, for dashboards and automation) and `objstate lock -- CMD`
 * (hold a lock, renewing its lease, while a command runs): the lock commands that leases
 * brought. A `lock` without a command exits at once and cannot renew anything, so its
 * lease simply runs out after `--lock-ttl` (docs/decisions/041).
 */
import type { ObjectStoreBackend } from "../backend/backend.js";
import type { LockListing } from "../backend/locks/locking.js";
import type { LockOptions } from "../backend/backend.js";
import { ObjstateError } from "../errors.js";
import { nodeChildProcess } from "../util/builtins.js";
import { CliError } from "./io.js";
import { printJson, table } from "./term.js";
import { printable } from "../util/printable.js";
import { formatAgo } from "../console/format.js";
import { lockJson } from "../wire/shapes.js";

/** Print the lock list: JSON, or one aligned line per lock (what the holders wrote, escaped). */
export function printLocks(list: readonly LockListing[], json: boolean): void {
  if (json) return printJson(list.map(lockJson));
  if (list.length === 0) {
    process.stdout.write("no locks\n");
    return;
  }
  const now = Date.now();
  // Times as the console shows them: how long ago first (what an operator judges a stale lock by), then UTC.
  const when = (iso: string, verb = ""): string => {
    const ago = formatAgo(iso, now);
    return ago === "" ? `${verb}${iso}` : `${verb}${iso} (${ago})`;
  };
  const rows = [
    ["WORKSPACE", "SOURCE", "ID", "WHO", "OPERATION", "INFO", "SINCE", "LEASE"],
    ...list.map((l) =>
      [
        l.workspace ?? `(${l.path})`,
        l.source,
        l.id || "(none)",
        l.who || "-",
        l.operation || "-",
        l.info || "-",
        l.since ? when(l.since) : "-",
        l.expires === null ? "never expires" : when(l.expires, l.expired ? "expired " : "expires "),
      ].map(printable),
    ),
  ];
  process.stdout.write(`${table(rows)}\n`);
}

/**
 * Take the lock (waiting up to `timeoutMs`), run `command` with `OBJSTATE_LOCK_ID` and
 * `OBJSTATE_WORKSPACE` in its environment while the heartbeat renews the lease, then
 * release. When the lease is lost the command gets SIGTERM and objstate ends with
 * `LOCK_LOST` (exit 7); otherwise with the command's own exit code.
 */
export async function runUnderLock(
  backend: ObjectStoreBackend,
  workspace: string,
  options: LockOptions,
  timeoutMs: number,
  command: readonly string[],
): Promise<void> {
  const ended = await backend.withLock(workspace, { ...options, wait: { timeoutMs, setting: "--lock-timeout" } }, async (lock) => {
    const [file, ...args] = command as [string, ...string[]];
    const child = nodeChildProcess().spawn(file, args, {
      stdio: "inherit",
      env: { ...process.env, OBJSTATE_LOCK_ID: lock.id ?? "", OBJSTATE_WORKSPACE: workspace },
    });
    const onLost = (): void => {
      child.kill("SIGTERM");
    };
    lock.signal?.addEventListener("abort", onLost, { once: true });
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let failure: unknown;
    try {
      exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
        child.on("error", (e) => reject(new CliError("COMMAND_FAILED", `could not run ${file}: ${e.message}`, { cause: e })));
        child.on("exit", (c, s) => resolve({ code: c, signal: s }));
      });
    } catch (e) {
      failure = e;
    }
    lock.signal?.removeEventListener("abort", onLost);
    // A lease lost while the command ran is what to report, whatever the command did.
    const lost: unknown = lock.signal?.aborted === true ? lock.signal.reason : undefined;
    if (lost instanceof ObjstateError && lost.code === "LOCK_LOST")
      throw new CliError("LOCK_LOST", `${lost.message}; the command was stopped`, { cause: lost });
    if (failure !== undefined || exit === undefined) throw failure;
    return exit;
  });
  // The command's own code is named, not passed on: its 3-7 would read as objstate's (locked, conflict…).
  if (ended.signal !== null) throw new CliError("COMMAND_FAILED", `${command[0]} was ended by ${ended.signal}; the lock was released`);
  if (ended.code !== 0) throw new CliError("COMMAND_FAILED", `${command[0]} exited with code ${ended.code ?? "?"}; the lock was released`);
}
