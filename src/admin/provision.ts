/** `provision`: whether the bucket and the lock table exist, creating what is missing, and bucket versioning with a retention rule, when asked. */
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import { commonPrefix, layout, type LayoutName } from "../config/layout.js";
import { inspectLockTable } from "../backend/connect.js";
import type { LockTableDriver } from "../lock/index.js";
import type { ObjectStoreDriver, Retention } from "../store/types.js";
import { closing, identityOf, needsIdentity, resolveTargets, storeOf, tableOf, type AdminOptions, type Targets } from "./targets.js";

type What = "bucket" | "lock table" | "versions";

export type ProvisionStatus = "exists" | "created" | "on first use" | "missing" | "unusable" | "not configured";

export interface ProvisionResult {
  readonly what: What;
  readonly name: string | null;
  readonly location: string | null;
  readonly status: ProvisionStatus;
  readonly detail: string;
}

export interface ProvisionOptions extends AdminOptions {
  readonly createBucket?: boolean | undefined;
  readonly createTable?: boolean | undefined;
  /** Turn bucket versioning on, and set a retention rule when one is given. */
  readonly versioning?: { readonly retention: Omit<Retention, "prefix"> | undefined } | undefined;
  readonly layout?: LayoutName | undefined;
}

export interface Provisioned {
  /** Nothing is missing or unusable. */
  readonly ok: boolean;
  readonly bucket: ProvisionResult;
  readonly lockTable: ProvisionResult;
  /** With `versioning` only. */
  readonly versions?: ProvisionResult | undefined;
}

/** Check, and on request create, the bucket, the lock table and bucket versioning. */
export async function provision(config: ObjectStoreBackendConfig, options: ProvisionOptions): Promise<Provisioned> {
  const t = resolveTargets(config, options);
  const identity = needsIdentity(t) ? await identityOf(t, options) : undefined;
  const { bucket, versions } = await closing(await storeOf(t, identity, options), async (store) => {
    const bucket = await provisionBucket(store, t, options);
    return { bucket, versions: options.versioning === undefined ? undefined : await provisionVersioning(store, t, bucket, options) };
  });
  const table = t.table;
  const detail = "no lock table configured (kvstoreTable): state will not be locked; set --kvstore-table and --kvstore-endpoint to use one";
  const lockTable =
    table === undefined
      ? result("lock table", null, null)("not configured", detail)
      : await closing(await tableOf(t, identity, options), (locks) => provisionTable(locks, table.name, options.createTable === true));
  const bad = (r: ProvisionResult | undefined): boolean => r?.status === "missing" || r?.status === "unusable";
  return { ok: !bad(bucket) && !bad(lockTable) && !bad(versions), bucket, lockTable, ...(versions === undefined ? {} : { versions }) };
}

/** The results of one thing: `status` and `detail`. */
function result(what: What, name: string | null, location: string | null): (status: ProvisionStatus, detail: string) => ProvisionResult {
  return (status, detail) => ({ what, name, location, status, detail });
}

async function provisionBucket(store: ObjectStoreDriver, t: Targets, options: ProvisionOptions): Promise<ProvisionResult> {
  const name = t.settings.bucket.value as string;
  const r = result("bucket", name, store.location);
  if (await store.bucketExists()) return r("exists", `bucket ${name} exists (${store.location})`);
  if (options.createBucket === true) {
    await store.createBucket();
    return r("created", `bucket ${name} created (${store.location})`);
  }
  if (store.kind === "file")
    return r("on first use", `bucket ${name} does not exist yet; the embedded store creates it on first write (${store.location}; or now: --create-bucket)`);
  return r("missing", `bucket ${name} does not exist (${store.location}); pass --create-bucket to create it`);
}

async function provisionVersioning(store: ObjectStoreDriver, t: Targets, bucket: ProvisionResult, options: ProvisionOptions): Promise<ProvisionResult> {
  const request = options.versioning as NonNullable<ProvisionOptions["versioning"]>;
  const name = bucket.name as string;
  const r = result("versions", name, store.location);
  if (bucket.status === "on first use" && request.retention === undefined)
    return r("on first use", `the embedded store keeps every version of bucket ${name} once it is created`);
  if (bucket.status === "missing" || bucket.status === "on first use")
    return r("missing", `versioning cannot be turned on: bucket ${name} does not exist (--create-bucket creates it)`);
  const before = await store.versioning();
  await store.enableVersioning();
  const on = before === "enabled" ? `versioning of bucket ${name} is on` : `versioning of bucket ${name} turned on (it was ${before})`;
  if (request.retention === undefined) {
    const kept = (await store.getRetention()) === null ? "every noncurrent version is kept (no retention rule)" : "objstate's retention rule is unchanged";
    return r(before === "enabled" ? "exists" : "created", `${on}; ${kept}`);
  }
  const prefix = commonPrefix(layout(t.settings.prefix.value ?? "", t.settings.key.value ?? "", undefined, options.layout));
  const rule: Retention = { prefix, ...request.retention };
  await store.setRetention(rule);
  const how = store.kind === "file" ? " (applied on each write)" : " (lifecycle rule objstate-noncurrent-versions)";
  return r("created", `${on}; noncurrent versions under ${prefix === "" ? "the whole bucket" : `"${prefix}"`} expire ${retentionText(rule)}${how}`);
}

/** `after N days and beyond the M newest`. */
export function retentionText(r: Omit<Retention, "prefix">): string {
  return [
    r.noncurrentDays === undefined ? undefined : `after ${r.noncurrentDays} days`,
    r.newerNoncurrentVersions === undefined ? undefined : `beyond the ${r.newerNoncurrentVersions} newest`,
  ]
    .filter((x) => x !== undefined)
    .join(" and ");
}

async function provisionTable(locks: LockTableDriver, name: string, create: boolean): Promise<ProvisionResult> {
  const r = result("lock table", name, locks.location);
  const found = await inspectLockTable(locks);
  if (found.status === "ok") return r("exists", `lock table ${name} exists with key LockID (String) (${locks.location})`);
  if (found.status === "invalid")
    return r("unusable", `lock table ${name} exists but has ${found.keys}; it must have exactly one key, LockID of type String: use another table name`);
  if (create) {
    await locks.createTable();
    return r("created", `lock table ${name} created with key LockID (String) (${locks.location})`);
  }
  if (locks.kind === "file")
    return r("on first use", `lock table ${name} does not exist yet; the embedded table is created on first use (${locks.location}; or now: --create-table)`);
  return r("missing", `lock table ${name} does not exist (${locks.location}); pass --create-table to create it`);
}
