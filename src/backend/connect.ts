/**
 * Connecting (docs/design.md §4–§5): the settings resolved once, both endpoints parsed once, the
 * identity resolved only for an HTTP endpoint, the store opened and probed (lockfiles), the lock
 * table opened and inspected.
 */
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { resolveIdentity, type Identity } from "../credentials/chain.js";
import { resolveEffectiveSettings } from "../credentials/index.js";
import { ObjstateError } from "../errors.js";
import { openLockTable } from "../lock/index.js";
import type { LockTableDriver } from "../lock/types.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import { parseEndpoint } from "../io/endpoint.js";
import { openStore } from "../store/index.js";
import type { ObjectStoreDriver } from "../store/types.js";
import { DEFAULT_WORKSPACE, layout, layoutNameOf, statePath, type Layout } from "../config/layout.js";
import { checkTtl } from "./locks/lease.js";
import type { ConnectOptions } from "./options.js";
import { probeConditions, requireLockfileSupport, type ProbeVerdict } from "./probe.js";
import { requireLockTable } from "./table-check.js";

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
