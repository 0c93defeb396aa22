/**
 * What every command that talks to the store needs: warnings on stderr, a connected
 * backend, drivers opened directly (for `doctor` and `init`), and waiting for a lock.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ObjectStoreBackend, type ConnectOptions, type LockInfo, type LockOptions } from "../backend/backend.js";
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { resolveEffectiveSettings, resolveIdentity, type Identity } from "../credentials/index.js";
import { isObjstateError, ObjstateError } from "../errors.js";
import { openLockTable, type LockTableDriver } from "../lock/index.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import { parseEndpoint } from "../store/endpoint.js";
import { openStore } from "../store/index.js";
import type { ObjectStoreDriver } from "../store/types.js";
import type { Timeouts } from "../util/sdk-client.js";
import { formatDuration } from "./duration.js";
import { CliError, EXIT, usageError } from "./io.js";
import { paint } from "./term.js";

const warned = new Set<string>();

/** Print a warning on stderr (`objstate: warning: …`), once per code. */
export function warn(message: string, code = message): void {
  if (warned.has(code)) return;
  warned.add(code);
  process.stderr.write(`${paint(process.stderr).yellow("objstate: warning:")} ${message}\n`);
}

/** `--timeout` of the running command (the per-request deadline), when given. */
let requestTimeouts: Partial<Timeouts> | undefined;

/** Set from `--timeout` before each command runs; undefined means the defaults. */
export function setRequestTimeout(ms: number | undefined): void {
  if (ms !== undefined && ms <= 0) throw usageError("--timeout must be more than 0s", "INVALID_DURATION");
  requestTimeouts = ms === undefined ? undefined : { requestMs: ms };
}

/** The timeouts `--timeout` asked for (undefined: the defaults), for connections made elsewhere. */
export function cliTimeouts(): Partial<Timeouts> | undefined {
  return requestTimeouts;
}

/** Connect the backend with the CLI's warning channel. Close it when done. */
export function connect(config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig, options: Omit<ConnectOptions, "env" | "onWarning"> = {}): Promise<ObjectStoreBackend> {
  return ObjectStoreBackend.connect(config, { timeouts: requestTimeouts, ...options, env: process.env, onWarning: warn });
}

/** Connect, run `work` with the backend, and close it whatever happens. */
export async function withBackend<T>(config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig, work: (backend: ObjectStoreBackend) => Promise<T>): Promise<T> {
  const backend = await connect(config);
  try {
    return await work(backend);
  } finally {
    backend.close();
  }
}

/** The identity for HTTP endpoints (the credentials chain). */
export async function identityFor(settings: ResolvedBackendSettings): Promise<Identity> {
  return await resolveIdentity(settings, { env: process.env, timeouts: requestTimeouts });
}

/** Is this endpoint an HTTP API (needs credentials) rather than a `file:` directory? */
export function isHttp(endpoint: string): boolean {
  return parseEndpoint(endpoint).kind === "http";
}

/** The object-store driver for resolved settings (credentials only for HTTP endpoints). */
export async function storeFor(settings: ResolvedBackendSettings, identity: Identity | undefined): Promise<ObjectStoreDriver> {
  const endpoint = settings.endpoint.value as string;
  return openStore({ bucket: settings.bucket.value as string, endpoint, region: settings.region.value ?? "us-east-1", credentials: isHttp(endpoint) ? identity?.provider : undefined, timeouts: requestTimeouts });
}

/** The lock-table driver for resolved settings (table and endpoint must be set). */
export async function lockTableFor(settings: ResolvedBackendSettings, identity: Identity | undefined): Promise<LockTableDriver> {
  const endpoint = settings.kvstoreEndpoint.value as string;
  return openLockTable({
    table: settings.kvstoreTable.value as string,
    endpoint,
    region: settings.region.value ?? "us-east-1",
    credentials: isHttp(endpoint) ? identity?.provider : undefined,
    timeouts: requestTimeouts,
  });
}

/**
 * Refuse a command that needs locks when no lock table is configured. Checked on the
 * settings before connecting, so the "not locked" warning of connect does not appear.
 */
export function requireLocking(config: ObjectStoreBackendConfig, what: string): void {
  const table = resolveEffectiveSettings(config, process.env, { onWarning: warn }).kvstoreTable.value;
  if (table === undefined || table === "") {
    throw new CliError("NO_LOCK_TABLE", `no lock table is configured, so there is no lock to ${what}: set kvstoreTable and kvstoreEndpoint (--kvstore-table, --kvstore-endpoint)`, EXIT.usage);
  }
}

/** Backoff between attempts while someone else holds a lock: first, cap (ms). */
const BACKOFF_FIRST_MS = 250;
const BACKOFF_CAP_MS = 4000;

/**
 * Run `attempt` until it does not fail with `STATE_LOCKED`, for at most `timeoutMs`:
 * exponential backoff with jitter between attempts. Past the deadline, the last
 * `STATE_LOCKED` error is rethrown with how long was waited (it names the holder and
 * since when). `onWait` is called once, with the holder, when waiting starts. An abort
 * of `signal` ends a wait between attempts (the promise rejects with the abort reason).
 */
export async function whileLocked<T>(attempt: () => Promise<T>, timeoutMs: number, onWait?: (holder: LockInfo | undefined) => void, signal?: AbortSignal): Promise<T> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let ceiling = BACKOFF_FIRST_MS;
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (e) {
      if (!isObjstateError(e, "STATE_LOCKED")) throw e;
      const remaining = deadline - Date.now();
      if (remaining <= 0 || signal?.aborted === true) {
        if (timeoutMs === 0 || signal?.aborted === true) throw e;
        throw new ObjstateError("STATE_LOCKED", `${e.message} Gave up after waiting ${formatDuration(Date.now() - started)} (--lock-timeout ${formatDuration(timeoutMs)}).`, {
          details: e.details,
          cause: e,
        });
      }
      if (n === 0) onWait?.(e.details?.["lockInfo"] as LockInfo | undefined);
      // "Equal jitter": half the ceiling for sure, the other half at random.
      const wait = Math.min(remaining, ceiling / 2 + Math.random() * (ceiling / 2));
      await sleep(wait, undefined, { signal });
      ceiling = Math.min(ceiling * 2, BACKOFF_CAP_MS);
    }
  }
}

// ---------------------------------------------------------------- interrupts

/**
 * What the process is doing with a lock, for Ctrl-C (SIGINT) and SIGTERM: when idle, quit
 * at once; while acquiring, stop once the request in flight has settled (releasing a lock
 * it took); while holding, let the operation finish and release the lock. A second signal
 * quits at once.
 */
type Phase = { readonly phase: "idle" } | { readonly phase: "acquiring"; readonly where: string } | { readonly phase: "holding"; readonly where: string; readonly id: string };
let phase: Phase = { phase: "idle" };
let interrupted = false;
const interruption = new AbortController();
let handlerInstalled = false;

function onSignal(signal: NodeJS.Signals): void {
  const code = signal === "SIGINT" ? EXIT.interrupted : 143;
  if (phase.phase === "idle") process.exit(code);
  if (interrupted) {
    const left = phase.phase === "holding" ? `the lock on ${phase.where} is still held (release it with objstate force-unlock ${phase.id})` : `a lock on ${phase.where} may have been taken; check with objstate lock`;
    process.stderr.write(`objstate: interrupted again: quitting now; ${left}\n`);
    process.exit(code);
  }
  interrupted = true;
  interruption.abort(new CliError("INTERRUPTED", "interrupted before anything was written", code));
  process.stderr.write(
    phase.phase === "holding"
      ? `objstate: interrupted: finishing the current step, then releasing the lock on ${phase.where} (interrupt again to quit at once and leave the lock held)\n`
      : `objstate: interrupted: stopping once the lock request in flight has settled\n`,
  );
}

function installHandler(): void {
  if (handlerInstalled) return;
  handlerInstalled = true;
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

function interruptedError(): CliError {
  const reason: unknown = interruption.signal.reason;
  return reason instanceof CliError ? reason : new CliError("INTERRUPTED", "interrupted before anything was written", EXIT.interrupted);
}

/** A lock this command holds for one operation. */
export interface HeldLock {
  readonly info: LockInfo;
  /** Release the lock. When the operation failed, a failure to release is only a warning. */
  release(operationFailed: boolean): Promise<void>;
}

/**
 * Take a workspace's lock for one operation, waiting up to `timeoutMs` while another
 * holder has it, guarded against interrupts (see {@link Phase}).
 */
export async function acquireLock(backend: ObjectStoreBackend, workspace: string, options: LockOptions, timeoutMs: number): Promise<HeldLock> {
  installHandler();
  const where = backend.describe(workspace);
  phase = { phase: "acquiring", where };
  let info: LockInfo;
  try {
    info = await whileLocked(() => backend.lock(workspace, options), timeoutMs, waitNotice(where, timeoutMs), interruption.signal);
  } catch (e) {
    phase = { phase: "idle" };
    throw interrupted ? interruptedError() : e;
  }
  if (interrupted) {
    try {
      await backend.unlock(workspace, info.ID);
    } finally {
      phase = { phase: "idle" };
    }
    throw interruptedError();
  }
  phase = { phase: "holding", where, id: info.ID };
  return {
    info,
    release: async (operationFailed) => {
      try {
        await backend.unlock(workspace, info.ID);
      } catch (e) {
        if (!operationFailed) throw e;
        warn(`could not release lock ${info.ID} on ${where}: ${(e as Error).message}`);
      } finally {
        phase = { phase: "idle" };
      }
    },
  };
}

function waitNotice(where: string, timeoutMs: number): (holder: LockInfo | undefined) => void {
  return (holder) => {
    const who = holder === undefined ? "another holder" : `${holder.Who || "another holder"} (since ${holder.Created || "unknown"})`;
    process.stderr.write(`objstate: ${where} is locked by ${who}; waiting up to ${formatDuration(timeoutMs)}\n`);
  };
}

/** Take a workspace's lock and keep it (the `lock` command), waiting up to `timeoutMs`. */
export function lockWaiting(backend: ObjectStoreBackend, workspace: string, options: LockOptions, timeoutMs: number): Promise<LockInfo> {
  return whileLocked(() => backend.lock(workspace, options), timeoutMs, waitNotice(backend.describe(workspace), timeoutMs));
}
