/** Connecting (docs/design.md §4–§5, §10): settings and endpoints read once, the identity only for HTTP, lockfile conditions probed once per store. */
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { resolveIdentity, type Identity } from "../credentials/chain.js";
import { resolveEffectiveSettings } from "../credentials/index.js";
import { isObjstateError, ObjstateError } from "../errors.js";
import { openLockTable } from "../lock/index.js";
import type { KeyAttribute, LockTableDriver } from "../lock/types.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import { parseEndpoint } from "../io/endpoint.js";
import { openStore } from "../store/index.js";
import type { ObjectStoreDriver } from "../store/types.js";
import { DEFAULT_WORKSPACE, layout, layoutNameOf, statePath, type Layout } from "../config/layout.js";
import { checkTtl } from "./locks/lease.js";
import type { ConnectOptions } from "./types.js";
import { nodeCrypto } from "../util/builtins.js";

/** What a connect opened and decided, once. */
export interface Connection {
  readonly settings: ResolvedBackendSettings;
  readonly bucket: string;
  readonly layout: Layout;
  readonly store: ObjectStoreDriver;
  /** The lock table, when one is configured (and, read-only, exists). */
  readonly table: LockTableDriver | undefined;
  readonly identity: Identity | undefined;
  /** The lockfile probe's verdict, when lockfiles are on (and the connection may write). */
  readonly probe: ProbeVerdict | undefined;
}

/** Resolve, parse, open and check; closes whatever it opened when a later step fails. */
export async function openConnection(
  config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig,
  options: ConnectOptions,
  warn: (message: string, code: string) => void,
): Promise<Connection> {
  const env = options.env ?? process.env;
  // Refused before anything is resolved or opened.
  const layoutName = layoutNameOf(options.layout, "the layout option (ConnectOptions.layout)");
  checkTtl(options.ttl, "the lock ttl (ttl)");
  const settings = resolveEffectiveSettings(config, env, { onWarning: warn });
  const endpointText = settings.endpoint.value;
  if (endpointText === undefined) {
    throw new ObjstateError(
      "NO_ENDPOINT",
      "no object-store endpoint: set `endpoint` in the config, or PROVIDER_OBJECT_STORE_ENDPOINT (or OBJECT_STORE_ENDPOINT) in the environment — http(s)://host for an S3 API, file:./dir for the embedded store",
    );
  }
  const endpoint = parseEndpoint(endpointText, options.cwd);
  const tableName = settings.kvstoreTable.value;
  const tableText = settings.kvstoreEndpoint.value;
  // Set means non-empty, for both.
  const tableEndpoint = tableName && tableText ? parseEndpoint(tableText, options.cwd) : undefined;
  if (tableName && tableEndpoint === undefined) {
    throw new ObjstateError(
      "NO_LOCK_ENDPOINT",
      `kvstoreTable "${tableName}" is set but kvstoreEndpoint is not: set kvstoreEndpoint to the lock table's endpoint (http(s)://host for the DynamoDB API, file:./dir for the embedded table)`,
    );
  }
  const bucket = settings.bucket.value as string;
  let identity: Identity | undefined;
  // The chain runs only when an HTTP endpoint needs it (embedded stores need no identity).
  const needIdentity = async (): Promise<Identity> =>
    (identity ??= await resolveIdentity(settings, { env, clock: options.clock, cwd: options.cwd, timeouts: options.timeouts }));
  if (endpoint.kind === "http") await needIdentity();

  const store = await openStore({
    bucket,
    endpoint,
    region: settings.region.value,
    credentials: identity?.provider,
    multipartThreshold: options.multipartThreshold,
    cwd: options.cwd,
    timeouts: options.timeouts,
    ...options.s3,
  });
  let l: Layout;
  let driver: LockTableDriver | undefined;
  let probe: ProbeVerdict | undefined;
  try {
    l = layout(settings.prefix.value ?? "", settings.key.value ?? "", store.kind, layoutName);
    // A read-only connection takes no lock, and writes nothing, not even a probe key.
    if (options.lockfile === true && options.readOnly !== true) {
      probe = await probeConditions(store, statePath(l, DEFAULT_WORKSPACE));
      requireLockfileSupport(probe, store.location);
    }
    // Without a table, lockfiles still lock (without digests); without either, the first write says so.
    if (tableName !== undefined && tableEndpoint !== undefined) {
      driver = await openLockTable({
        table: tableName,
        endpoint: tableEndpoint,
        region: settings.region.value,
        credentials: tableEndpoint.kind === "http" ? (await needIdentity()).provider : undefined,
        cwd: options.cwd,
        timeouts: options.timeouts,
      });
      if (!(await requireLockTable(driver, tableName, options.readOnly === true))) {
        // Read-only, and the embedded table was never created: it holds no digests to check.
        driver.close();
        driver = undefined;
      }
    }
  } catch (e) {
    store.close();
    driver?.close();
    throw e;
  }
  return { settings, bucket, layout: l, store, table: driver, identity, probe };
}

/** Which conditions the store honours. */
export interface ProbeVerdict {
  /** A second `If-None-Match: *` create of an existing key is refused. */
  readonly ifNoneMatch: boolean;
  /** A write with `If-Match` of another ETag is refused. */
  readonly ifMatch: boolean;
  /** A delete with `If-Match` of another ETag is refused (else lockfile releases delete after a read and ID check, as the tool does). */
  readonly deleteIfMatch: boolean;
}

const verdicts = new Map<string, Promise<ProbeVerdict>>();

/** Run the probe on `store` under `near` (a key prefix objstate may write), once per store location. */
export function probeConditions(store: ObjectStoreDriver, near: string): Promise<ProbeVerdict> {
  let v = verdicts.get(store.location);
  if (v === undefined) {
    v = runProbe(store, near);
    verdicts.set(store.location, v);
    // A failed probe (network) is not a verdict: the next connection tries again.
    v.catch(() => verdicts.delete(store.location));
  }
  return v;
}

async function runProbe(store: ObjectStoreDriver, near: string): Promise<ProbeVerdict> {
  const key = `${near}.objstate-probe-${nodeCrypto().randomUUID()}`;
  const body = (n: number): Buffer => Buffer.from(`{"objstate-probe":${n}}`);
  // Refused: the call threw `PRECONDITION_FAILED`.
  const refuses = (call: Promise<unknown>): Promise<boolean> =>
    call.then(
      () => false,
      (e: unknown) => {
        if (isObjstateError(e, "PRECONDITION_FAILED")) return true;
        throw e;
      },
    );
  try {
    await store.put(key, body(1), { contentType: "application/json", ifNoneMatch: true, strictConditions: true });
    const ifNoneMatch = await refuses(store.put(key, body(2), { contentType: "application/json", ifNoneMatch: true, strictConditions: true }));
    const wrong = `"${"0".repeat(32)}"`;
    const ifMatch = await refuses(store.put(key, body(3), { contentType: "application/json", ifMatch: wrong, strictConditions: true }));
    const deleteIfMatch = (await store.head(key)) !== null && !(await store.deleteIfMatch(key, wrong)) && (await store.head(key)) !== null;
    return { ifNoneMatch, ifMatch, deleteIfMatch };
  } finally {
    await store.purge(key).catch(() => undefined);
  }
}

/** Refuse lockfile mode on a store whose verdict says its locks would silently not hold. */
function requireLockfileSupport(verdict: ProbeVerdict, location: string): void {
  const gaps = [!verdict.ifNoneMatch && "If-None-Match: * (create only if absent)", !verdict.ifMatch && "If-Match (replace only that version)"].filter(Boolean);
  if (gaps.length === 0) return;
  throw new ObjstateError(
    "LOCKFILE_UNSUPPORTED",
    `${location} ignores ${gaps.join(" and ")}: lockfiles there would not lock anything. Use a lock table (kvstoreTable) instead of --lockfile, or a store that honours conditional writes`,
    { details: { verdict } },
  );
}

/** What {@link inspectLockTable} found. */
export type LockTableInspection =
  | { readonly status: "missing" }
  | { readonly status: "ok" }
  /** `keys`: the keys it has, for messages (`Id (N, HASH)`, or `no key`). */
  | { readonly status: "invalid"; readonly schema: readonly KeyAttribute[]; readonly keys: string };

/** The table's key schema against the one objstate needs (one request; creates nothing). */
export async function inspectLockTable(locks: LockTableDriver): Promise<LockTableInspection> {
  const schema = await locks.describeKeySchema();
  if (schema === null) return { status: "missing" };
  const only = schema.length === 1 ? schema[0] : undefined;
  if (only !== undefined && only.name === "LockID" && only.type === "S" && only.keyType === "HASH") return { status: "ok" };
  return { status: "invalid", schema, keys: schema.length === 0 ? "no key" : schema.map((k) => `${k.name} (${k.type}, ${k.keyType})`).join(", ") };
}

/** The check `connect` makes; an absent embedded table is created, except read-only (false: go without it). */
export async function requireLockTable(locks: LockTableDriver, table: string, readOnly: boolean): Promise<boolean> {
  let found = await inspectLockTable(locks);
  if (found.status === "missing" && locks.kind === "file") {
    if (readOnly) return false;
    await locks.createTable();
    found = await inspectLockTable(locks);
  }
  if (found.status === "missing") {
    throw new ObjstateError(
      "TABLE_NOT_FOUND",
      `lock table "${table}" does not exist (${locks.location}): create it with one key, LockID of type String (objstate init --create-table)`,
    );
  }
  if (found.status === "invalid") {
    throw new ObjstateError(
      "TABLE_SCHEMA_INVALID",
      `lock table "${table}" must have exactly one key, LockID of type String (S); it has ${found.keys}. Use a table keyed by LockID (String), or create one with objstate init --create-table`,
      { details: { schema: found.schema } },
    );
  }
  return true;
}
