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
import { formatDuration } from "./duration.js";
import { CliError, EXIT } from "./io.js";
import { paint } from "./term.js";

const warned = new Set<string>();

/** Print a warning on stderr (`objstate: warning: …`), once per code. */
export function warn(message: string, code = message): void {
  if (warned.has(code)) return;
  warned.add(code);
  process.stderr.write(`${paint(process.stderr).yellow("objstate: warning:")} ${message}\n`);
}

/** Connect the backend with the CLI's warning channel. Close it when done. */
export function connect(config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig, options: Omit<ConnectOptions, "env" | "onWarning"> = {}): Promise<ObjectStoreBackend> {
  return ObjectStoreBackend.connect(config, { ...options, env: process.env, onWarning: warn });
}

/** The identity for HTTP endpoints (the credentials chain). */
export async function identityFor(settings: ResolvedBackendSettings): Promise<Identity> {
  return await resolveIdentity(settings, { env: process.env });
}

/** Is this endpoint an HTTP API (needs credentials) rather than a `file:` directory? */
export function isHttp(endpoint: string): boolean {
  return parseEndpoint(endpoint).kind === "http";
}

/** The object-store driver for resolved settings (credentials only for HTTP endpoints). */
export async function storeFor(settings: ResolvedBackendSettings, identity: Identity | undefined): Promise<ObjectStoreDriver> {
  const endpoint = settings.endpoint.value as string;
  return openStore({ bucket: settings.bucket.value as string, endpoint, region: settings.region.value ?? "us-east-1", credentials: isHttp(endpoint) ? identity?.provider : undefined });
}

/** The lock-table driver for resolved settings (table and endpoint must be set). */
export async function lockTableFor(settings: ResolvedBackendSettings, identity: Identity | undefined): Promise<LockTableDriver> {
  const endpoint = settings.kvstoreEndpoint.value as string;
  return openLockTable({
    table: settings.kvstoreTable.value as string,
    endpoint,
    region: settings.region.value ?? "us-east-1",
    credentials: isHttp(endpoint) ? identity?.provider : undefined,
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
 * since when). `onWait` is called once, with the holder, when waiting starts.
 */
export async function whileLocked<T>(attempt: () => Promise<T>, timeoutMs: number, onWait?: (holder: LockInfo | undefined) => void): Promise<T> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let ceiling = BACKOFF_FIRST_MS;
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (e) {
      if (!isObjstateError(e, "STATE_LOCKED")) throw e;
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        if (timeoutMs === 0) throw e;
        throw new ObjstateError("STATE_LOCKED", `${e.message} Gave up after waiting ${formatDuration(Date.now() - started)} (--lock-timeout ${formatDuration(timeoutMs)}).`, {
          details: e.details,
          cause: e,
        });
      }
      if (n === 0) onWait?.(e.details?.["lockInfo"] as LockInfo | undefined);
      // "Equal jitter": half the ceiling for sure, the other half at random.
      const wait = Math.min(remaining, ceiling / 2 + Math.random() * (ceiling / 2));
      await sleep(wait);
      ceiling = Math.min(ceiling * 2, BACKOFF_CAP_MS);
    }
  }
}

/** Take a workspace's lock, waiting up to `timeoutMs` while another holder has it. */
export function lockWaiting(backend: ObjectStoreBackend, workspace: string, options: LockOptions, timeoutMs: number): Promise<LockInfo> {
  return whileLocked(
    () => backend.lock(workspace, options),
    timeoutMs,
    (holder) => {
      const who = holder === undefined ? "another holder" : `${holder.Who || "another holder"} (since ${holder.Created || "unknown"})`;
      process.stderr.write(`objstate: ${backend.describe(workspace)} is locked by ${who}; waiting up to ${formatDuration(timeoutMs)}\n`);
    },
  );
}
