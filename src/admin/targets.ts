/** What `diagnose` and `provision` work on: the settings resolved, the endpoints parsed, and drivers opened at them (no working backend needed). */
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { ConnectOptions } from "../backend/types.js";
import { resolveEffectiveSettings, resolveIdentity, type Identity } from "../credentials/index.js";
import { ObjstateError } from "../errors.js";
import { parseEndpoint, type ParsedEndpoint } from "../io/endpoint.js";
import { openLockTable, type LockTableDriver } from "../lock/index.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import { openStore } from "../store/index.js";
import type { ObjectStoreDriver } from "../store/types.js";

/** The options of {@link diagnose} and {@link provision}: those of a connection. */
export type AdminOptions = Pick<ConnectOptions, "env" | "cwd" | "timeouts" | "onWarning" | "clock">;

export interface Targets {
  readonly settings: ResolvedBackendSettings;
  readonly endpoint: string;
  readonly storeAt: ParsedEndpoint;
  /** The lock table's name and endpoint, when one is configured. */
  readonly table: { readonly name: string; readonly endpoint: string; readonly at: ParsedEndpoint } | undefined;
}

const set = (v: string | undefined): string | undefined => (v === undefined || v === "" ? undefined : v);

/** Resolve the settings and parse the endpoints: `NO_ENDPOINT`, `NO_LOCK_ENDPOINT` or the endpoint's own error when they do not add up. */
export function resolveTargets(config: ObjectStoreBackendConfig, options: AdminOptions): Targets {
  const settings = resolveEffectiveSettings(config, options.env ?? process.env, { onWarning: options.onWarning });
  const endpoint = settings.endpoint.value;
  if (endpoint === undefined) {
    throw new ObjstateError(
      "NO_ENDPOINT",
      "no object-store endpoint: pass --endpoint (http(s)://host for an S3 API, file:./dir for the embedded store) or set PROVIDER_OBJECT_STORE_ENDPOINT",
    );
  }
  const name = set(settings.kvstoreTable.value);
  const kv = set(settings.kvstoreEndpoint.value);
  if (name !== undefined && kv === undefined) {
    throw new ObjstateError(
      "NO_LOCK_ENDPOINT",
      `kvstoreTable "${name}" is set but kvstoreEndpoint is not: pass --kvstore-endpoint (http(s)://host for the DynamoDB API, file:./dir for the embedded table)`,
      { details: { table: name } },
    );
  }
  const storeAt = parseEndpoint(endpoint, options.cwd);
  const table = name === undefined || kv === undefined ? undefined : { name, endpoint: kv, at: parseEndpoint(kv, options.cwd) };
  return { settings, endpoint, storeAt, table };
}

/** Does either endpoint need credentials (an HTTP one)? */
export function needsIdentity(t: Targets): boolean {
  return t.storeAt.kind === "http" || t.table?.at.kind === "http";
}

/** The credentials chain's identity. */
export function identityOf(t: Targets, options: AdminOptions): Promise<Identity> {
  return resolveIdentity(t.settings, { env: options.env ?? process.env, cwd: options.cwd, clock: options.clock, timeouts: options.timeouts });
}

/** What a driver at `at` opens with: credentials only for an HTTP endpoint. */
function driverOptions(t: Targets, at: ParsedEndpoint, id: Identity | undefined, options: AdminOptions) {
  return {
    endpoint: at,
    region: t.settings.region.value,
    credentials: at.kind === "http" ? id?.provider : undefined,
    cwd: options.cwd,
    timeouts: options.timeouts,
  };
}

export function storeOf(t: Targets, id: Identity | undefined, options: AdminOptions): Promise<ObjectStoreDriver> {
  return openStore({ bucket: t.settings.bucket.value as string, ...driverOptions(t, t.storeAt, id, options) });
}

/** The lock-table driver (the table must be configured). */
export function tableOf(t: Targets, id: Identity | undefined, options: AdminOptions): Promise<LockTableDriver> {
  const table = t.table as NonNullable<Targets["table"]>;
  return openLockTable({ table: table.name, ...driverOptions(t, table.at, id, options) });
}

/** Run `work` with an open driver or backend, and close it whatever happens. */
export async function closing<D extends { close(): void }, T>(open: D, work: (d: D) => Promise<T>): Promise<T> {
  try {
    return await work(open);
  } finally {
    open.close();
  }
}
