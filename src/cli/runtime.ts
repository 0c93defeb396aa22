/**
 * What every command that talks to the store needs: a connected backend, the options of the
 * admin calls (`doctor`, `init`), and interrupts while a lock is wanted or held. (The
 * waiting itself is the library's: `wait` of its lock calls. Warnings are warn.ts's.) The
 * command's settings (the settings table's frozen value) are passed in, never kept here.
 */
import {
  ObjectStoreBackend,
  type ConnectOptions,
  type LockInfo,
  type LockOptions,
  type LockScope,
  type LockWait,
  type UnderLockOptions,
} from "../backend/backend.js";
import { forceUnlockCommand } from "../backend/locks/lock-scope.js";
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { resolveEffectiveSettings } from "../credentials/index.js";
import { formatDuration } from "./duration.js";
import type { Settings } from "../config/settings-table.js";
import { connectOptionsOf } from "./connect-options.js";
import { EXIT } from "../error-codes.js";
import { CliError, lockIdFlag, usageError } from "./io.js";
import { warn } from "./warn.js";
import { printable } from "../util/printable.js";

/** Connect the backend with the CLI's warning channel and the command's settings. Close it when done. */
export function connect(
  config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig,
  own: Settings,
  options: Omit<ConnectOptions, "env" | "onWarning"> = {},
): Promise<ObjectStoreBackend> {
  return ObjectStoreBackend.connect(config, { ...connectOptionsOf(own), ...options, env: process.env, onWarning: warn });
}

/** Connect, run `work` with the backend, and close it whatever happens. */
export async function withBackend<T>(
  config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig,
  own: Settings,
  work: (backend: ObjectStoreBackend) => Promise<T>,
): Promise<T> {
  const backend = await connect(config, own);
  try {
    return await work(backend);
  } finally {
    backend.close();
  }
}

/** A connection's options for the library's admin calls (`diagnose`, `provision`): the command's settings, the environment, the CLI's warnings. */
export function adminOptionsOf(own: Settings): ConnectOptions {
  return { ...connectOptionsOf(own), env: process.env, onWarning: warn };
}

/**
 * Refuse a command that needs locks when no lock table is configured. Checked on the
 * settings before connecting, so the "not locked" warning of connect does not appear.
 */
export function requireLocking(config: ObjectStoreBackendConfig, own: Settings, what: string): void {
  const table = resolveEffectiveSettings(config, process.env, { onWarning: warn }).kvstoreTable.value;
  if ((table === undefined || table === "") && !own.values.lockfile) {
    throw new CliError(
      "NO_LOCK_TABLE",
      `no lock table is configured, so there is no lock to ${what}: set kvstoreTable and kvstoreEndpoint (--kvstore-table, --kvstore-endpoint), or lock with a lockfile (--lockfile)`,
    );
  }
}

// ---------------------------------------------------------------- interrupts

/**
 * What the process is doing with a lock, for Ctrl-C (SIGINT), SIGTERM and SIGHUP alike:
 * when idle, quit at once; while a lock request is in flight (acquiring, or a whole
 * request that takes and releases its own lock, such as a workspace delete), stop once it
 * has settled and say what it left; while holding, let the operation finish and release
 * the lock. A second signal quits at once and says which lock is left and whether the
 * state was written.
 */
type Phase =
  | { readonly phase: "idle" }
  | { readonly phase: "acquiring"; readonly where: string }
  | { readonly phase: "holding"; readonly where: string; readonly id: string; readonly workspace: string };
let phase: Phase = { phase: "idle" };
let interrupted = false;
/** Set by {@link stateStored}: the state object of this command is stored. */
let stored = false;
const interruption = new AbortController();
let handlerInstalled = false;

/** Exit codes for the signals handled: 128 + the signal number. */
const SIGNAL_EXIT: Readonly<Record<string, number>> = { SIGHUP: EXIT.hangup, SIGINT: EXIT.interrupted, SIGTERM: EXIT.terminated };

/**
 * Pass as `WriteOptions.onStored`: called by the backend the moment the state object is
 * stored, so an interrupt after that point does not claim nothing was written.
 */
export function stateStored(): void {
  stored = true;
}

function whatWasWritten(): string {
  return stored
    ? "the state was stored, but maybe not committed (the next read commits it once its lock is released; so does objstate state repair)"
    : "nothing was written";
}

function onSignal(signal: NodeJS.Signals): void {
  const code = SIGNAL_EXIT[signal] ?? EXIT.interrupted;
  if (phase.phase === "idle") process.exit(code);
  if (interrupted) {
    const left =
      phase.phase === "holding"
        ? `the lock on ${phase.where} is still held (release it with ${forceUnlockCommand(phase.id, phase.workspace)} and the same settings)`
        : `a lock on ${phase.where} may have been taken; check with objstate lock`;
    process.stderr.write(`objstate: interrupted again: quitting now; ${whatWasWritten()}; ${left}\n`);
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

function installHandler(): void {
  if (handlerInstalled) return;
  handlerInstalled = true;
  for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(s, onSignal);
}

function interruptedError(): CliError {
  const reason: unknown = interruption.signal.reason;
  return reason instanceof CliError ? reason : new CliError("INTERRUPTED", "interrupted before anything was written");
}

/** The library's `wait` for a lock request of this command: `--lock-timeout`, its notice, and interrupts. */
function lockWait(where: string, timeoutMs: number): LockWait {
  return { timeoutMs, signal: interruption.signal, onWait: waitNotice(where, timeoutMs), setting: "--lock-timeout" };
}

function waitNotice(where: string, timeoutMs: number): (holder: LockInfo | undefined) => void {
  return (holder) => {
    const who = holder === undefined ? "another holder" : `${holder.Who || "another holder"} (since ${holder.Created || "unknown"})`;
    process.stderr.write(`objstate: ${where} is locked by ${printable(who)}; waiting up to ${formatDuration(timeoutMs)}\n`);
  };
}

/**
 * Run `work` under the workspace's lock through the library's `withLock`: the caller's
 * (`lockId`, left held) or one taken for the command (waiting up to `timeoutMs` while
 * another holder has it) and released after it, guarded against interrupts (see
 * {@link Phase}): while the lock is wanted, an interrupt stops the wait (a lock that lands
 * anyway is given back); once it is held, the work finishes and the lock is released.
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
  installHandler();
  const where = backend.describe(workspace);
  phase = { phase: "acquiring", where };
  try {
    return await backend.withLock(workspace, { ...options, wait: lockWait(where, timeoutMs) }, async (lock) => {
      if (lock.id !== undefined) phase = { phase: "holding", where, id: lock.id, workspace };
      return work(lock);
    });
  } catch (e) {
    throw interrupted ? interruptedError() : e;
  } finally {
    phase = { phase: "idle" };
  }
}

/**
 * Take a workspace's lock and keep it (the `lock` command), waiting up to `timeoutMs`.
 * An interrupt while the request is in flight waits for its answer: a lock that was
 * taken is kept and returned with `interrupted` set to the error to end with (the caller
 * prints the lock first, so it can be released), instead of the process leaving silently
 * while the lock lands.
 */
export async function lockWaiting(
  backend: ObjectStoreBackend,
  workspace: string,
  options: LockOptions,
  timeoutMs: number,
): Promise<{ info: LockInfo; interrupted: CliError | undefined }> {
  installHandler();
  const where = backend.describe(workspace);
  phase = { phase: "acquiring", where };
  try {
    const info = await backend.lock(workspace, { ...options, wait: lockWait(where, timeoutMs) });
    return { info, interrupted: interrupted ? interruptedError() : undefined };
  } catch (e) {
    throw interrupted ? interruptedError() : e;
  } finally {
    phase = { phase: "idle" };
  }
}

/**
 * Run a library call that takes and releases its own lock (a workspace delete), given the
 * `wait` to pass it: an interrupt stops the wait and lets a request in flight settle (so
 * its lock is released). Returns whether an interrupt came; the call's own result stands
 * either way.
 */
export async function guardedCall<T>(where: string, timeoutMs: number, call: (wait: LockWait) => Promise<T>): Promise<{ result: T; interrupted: boolean }> {
  installHandler();
  phase = { phase: "acquiring", where };
  // The wait is stopped only while it waits (another holder was found): a first request in
  // flight is the whole call's (lock, work, release), and is let settle rather than undone.
  const stop = new AbortController();
  let waiting = false;
  const onInterrupt = (): void => {
    if (waiting) stop.abort(interruption.signal.reason);
  };
  interruption.signal.addEventListener("abort", onInterrupt, { once: true });
  const base = lockWait(where, timeoutMs);
  const wait: LockWait = {
    ...base,
    signal: stop.signal,
    onWait: (holder) => {
      waiting = true;
      base.onWait?.(holder);
      if (interruption.signal.aborted) stop.abort(interruption.signal.reason);
    },
  };
  try {
    const result = await call(wait);
    return { result, interrupted };
  } catch (e) {
    throw interrupted ? interruptedError() : e;
  } finally {
    interruption.signal.removeEventListener("abort", onInterrupt);
    phase = { phase: "idle" };
  }
}

/**
 * {@link underLock} with `--lock-id` (the caller's lock, checked by the backend right before
 * each write and left held) or one taken for the command (waiting up to `timeoutMs`).
 */
export async function underGivenLock<T>(
  backend: ObjectStoreBackend,
  workspace: string,
  lockIdText: string | undefined,
  timeoutMs: number,
  operation: { operation: string; info?: string },
  work: (lockId: string | undefined) => Promise<T>,
): Promise<{ result: T; locked: boolean }> {
  const given = lockIdFlag(lockIdText);
  if (given !== undefined && !backend.lockingEnabled)
    throw usageError("--lock-id was given, but no lock table is configured (kvstoreTable), so there is no lock to write under", "NO_LOCK_TABLE");
  const result = await underLock(backend, workspace, { ...operation, lockId: given }, timeoutMs, (lock) => work(lock.id));
  return { result, locked: backend.lockingEnabled };
}
