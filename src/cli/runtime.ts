/** What every command that talks to the store needs: a connected backend, and interrupts while a lock is wanted or held. */
import {
  ObjectStoreBackend,
  type ConnectOptions,
  type LockInfo,
  type LockOptions,
  type LockScope,
  type LockWait,
  type UnderLockOptions,
} from "../backend/backend.js";
import { forceUnlockCommand } from "../backend/locks/locking.js";
import { resolveEffectiveSettings } from "../credentials/index.js";
import { formatWait } from "../backend/locks/waiting.js";
import type { Settings } from "../config/settings-table.js";
import { connectOptionsOf, type Selected } from "./settings.js";
import { EXIT } from "../error-codes.js";
import { closing } from "../admin/targets.js";
import { CliError, usageError } from "./io.js";
import { warn } from "./term.js";
import { printable } from "../util/printable.js";

/** A connection's options from the command's settings, the environment and the CLI's warnings (also for `diagnose` and `provision`). */
export function adminOptionsOf(own: Settings): ConnectOptions {
  return { ...connectOptionsOf(own), env: process.env, onWarning: warn };
}

/** Connect with the command's settings, run `work` with the backend, and close it whatever happens. */
export async function withBackend<T>(s: Omit<Selected, "workspace">, work: (backend: ObjectStoreBackend) => Promise<T>): Promise<T> {
  return closing(await ObjectStoreBackend.connect(s.config, adminOptionsOf(s.input.settings)), work);
}

/** Refuse a command that needs locks when none is configured: checked before connecting, so connect's "not locked" warning does not appear. */
export function requireLocking(s: Selected, what: string): void {
  const table = resolveEffectiveSettings(s.config, process.env, { onWarning: warn }).kvstoreTable.value;
  if ((table === undefined || table === "") && !s.input.settings.values.lockfile) {
    throw new CliError(
      "NO_LOCK_TABLE",
      `no lock table is configured, so there is no lock to ${what}: set kvstoreTable and kvstoreEndpoint (--kvstore-table, --kvstore-endpoint), or lock with a lockfile (--lockfile)`,
    );
  }
}

/** `--lock-id` needs a lock table to check it against. */
export function refuseLockIdWithoutLocking(backend: ObjectStoreBackend, lockId: string | undefined): void {
  if (lockId !== undefined && !backend.lockingEnabled)
    throw usageError("--lock-id was given, but no lock table is configured (kvstoreTable), so there is no lock to write under", "NO_LOCK_TABLE");
}

/**
 * What the process is doing with a lock, for SIGINT, SIGTERM and SIGHUP: idle, quit at once; a lock
 * request in flight, stop once it settled; holding, finish and release. A second signal quits at once.
 */
type Phase =
  | { readonly phase: "idle" }
  | { readonly phase: "acquiring"; readonly where: string }
  | { readonly phase: "holding"; readonly where: string; readonly id: string; readonly workspace: string };
let phase: Phase = { phase: "idle" };
let interrupted = false;
/** Set by {@link stateStored}. */
let stored = false;
const interruption = new AbortController();
let handlerInstalled = false;

const SIGNAL_EXIT: Readonly<Record<string, number>> = { SIGHUP: EXIT.hangup, SIGINT: EXIT.interrupted, SIGTERM: EXIT.terminated };

/** Pass as `WriteOptions.onStored`: from then on an interrupt does not claim that nothing was written. */
export function stateStored(): void {
  stored = true;
}

function onSignal(signal: NodeJS.Signals): void {
  const code = SIGNAL_EXIT[signal] ?? EXIT.interrupted;
  if (phase.phase === "idle") process.exit(code);
  if (interrupted) {
    const written = stored
      ? "the state was stored, but maybe not committed (the next read commits it once its lock is released; so does objstate state repair)"
      : "nothing was written";
    const left =
      phase.phase === "holding"
        ? `the lock on ${phase.where} is still held (release it with ${forceUnlockCommand(phase.id, phase.workspace)} and the same settings)`
        : `a lock on ${phase.where} may have been taken; check with objstate lock`;
    process.stderr.write(`objstate: interrupted again: quitting now; ${written}; ${left}\n`);
    process.exit(code);
  }
  interrupted = true;
  interruption.abort(new CliError("INTERRUPTED", "interrupted before anything was written", { exitCode: code }));
  process.stderr.write(
    phase.phase === "holding"
      ? `objstate: interrupted: finishing the current step, then releasing the lock on ${phase.where} (interrupt again to quit at once and leave the lock held)\n`
      : `objstate: interrupted: stopping once the lock request in flight has settled\n`,
  );
}

function interruptedError(): CliError {
  const reason: unknown = interruption.signal.reason;
  return reason instanceof CliError ? reason : new CliError("INTERRUPTED", "interrupted before anything was written");
}

/** Run `body` as a lock request in flight at `where`: an interrupt meanwhile ends it with the interrupt's error. */
async function guarded<T>(where: string, body: () => Promise<T>): Promise<T> {
  if (!handlerInstalled) for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(s, onSignal);
  handlerInstalled = true;
  phase = { phase: "acquiring", where };
  try {
    return await body();
  } catch (e) {
    throw interrupted ? interruptedError() : e;
  } finally {
    phase = { phase: "idle" };
  }
}

/** The library's `wait` for a lock request of this command: `--lock-timeout`, its notice, and interrupts. */
function lockWait(where: string, timeoutMs: number): LockWait {
  const onWait = (holder: LockInfo | undefined): void => {
    const who = holder === undefined ? "another holder" : `${holder.Who || "another holder"} (since ${holder.Created || "unknown"})`;
    process.stderr.write(`objstate: ${where} is locked by ${printable(who)}; waiting up to ${formatWait(timeoutMs)}\n`);
  };
  return { timeoutMs, signal: interruption.signal, onWait, setting: "--lock-timeout" };
}

/**
 * Run `work` under the workspace's lock: the caller's (`lockId`, left held) or one taken for the
 * command. An interrupt stops the wait (a lock that lands anyway is given back), or lets held work finish.
 */
export async function underLock<T>(
  backend: ObjectStoreBackend,
  workspace: string,
  options: LockOptions & UnderLockOptions,
  timeoutMs: number,
  work: (lock: LockScope) => Promise<T>,
): Promise<T> {
  // Nothing to wait for or to leave held: an interrupt ends the command at once, as when idle.
  if (options.lockId !== undefined || !backend.lockingEnabled) return backend.withLock(workspace, options, work);
  const where = backend.describe(workspace);
  return guarded(where, () =>
    backend.withLock(workspace, { ...options, wait: lockWait(where, timeoutMs) }, (lock) => {
      if (lock.id !== undefined) phase = { phase: "holding", where, id: lock.id, workspace };
      return work(lock);
    }),
  );
}

/** Take a workspace's lock and keep it (`lock`): after an interrupt, the lock comes back with the error to end with, so its ID is printed first. */
export function lockWaiting(
  backend: ObjectStoreBackend,
  workspace: string,
  options: LockOptions,
  timeoutMs: number,
): Promise<{ info: LockInfo; interrupted: CliError | undefined }> {
  const where = backend.describe(workspace);
  return guarded(where, async () => {
    const info = await backend.lock(workspace, { ...options, wait: lockWait(where, timeoutMs) });
    return { info, interrupted: interrupted ? interruptedError() : undefined };
  });
}

/** Run a call that takes and releases its own lock (a workspace delete): an interrupt stops only a wait for another holder, else lets it settle. */
export function guardedCall<T>(where: string, timeoutMs: number, call: (wait: LockWait) => Promise<T>): Promise<{ result: T; interrupted: boolean }> {
  return guarded(where, async () => {
    const stop = new AbortController();
    let waiting = false;
    const onInterrupt = (): void => {
      if (waiting) stop.abort(interruption.signal.reason);
    };
    interruption.signal.addEventListener("abort", onInterrupt, { once: true });
    const base = lockWait(where, timeoutMs);
    const onWait = (holder: LockInfo | undefined): void => {
      waiting = true;
      base.onWait?.(holder);
      if (interruption.signal.aborted) stop.abort(interruption.signal.reason);
    };
    try {
      return { result: await call({ ...base, signal: stop.signal, onWait }), interrupted };
    } finally {
      interruption.signal.removeEventListener("abort", onInterrupt);
    }
  });
}

/** {@link underLock} with the `--lock-id` given (checked by the backend before each write, left held) or one taken for the command. */
export async function underGivenLock<T>(
  backend: ObjectStoreBackend,
  workspace: string,
  lockId: string | undefined,
  timeoutMs: number,
  operation: { operation: string; info?: string },
  work: (lockId: string | undefined) => Promise<T>,
): Promise<{ result: T; locked: boolean }> {
  refuseLockIdWithoutLocking(backend, lockId);
  const result = await underLock(backend, workspace, { ...operation, lockId }, timeoutMs, (lock) => work(lock.id));
  return { result, locked: backend.lockingEnabled };
}
