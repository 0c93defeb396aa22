/**
 * `objstate init [--create-bucket] [--create-table] [--versioning [--keep-days N]
 * [--keep-versions N]]`: report whether the bucket and the lock table exist, and create
 * what is missing when asked; turn on bucket versioning and set objstate's retention rule
 * for noncurrent versions when asked. Exit 1 when something is still missing or unusable
 * afterwards. The embedded store and table are made on first use, so there a missing bucket
 * or table is reported as such (exit 0), as `doctor` reports it.
 */
import { resolveEffectiveSettings, type Identity } from "../credentials/index.js";
import { ObjstateError } from "../errors.js";
import { parseEndpoint } from "../io/endpoint.js";
import { inspectLockTable } from "../backend/table-check.js";
import { commonPrefix, layout } from "../config/layout.js";
import type { Opts } from "./options.js";
import type { ObjectStoreDriver, Retention } from "../store/types.js";
import { CliError, usageError } from "./io.js";
import { identityFor, lockTableFor, storeFor } from "./runtime.js";
import { warn } from "./warn.js";
import { backendConfigOf, gatherSettings } from "./settings.js";
import { paint, printJson } from "./term.js";

export type ProvisionStatus = "exists" | "created" | "on first use" | "missing" | "unusable" | "not configured";

export interface ProvisionResult {
  readonly what: "bucket" | "lock table" | "versions";
  readonly name: string | null;
  readonly location: string | null;
  readonly status: ProvisionStatus;
  readonly detail: string;
}

/** A `--keep-*` count: a whole number from 1. */
function countFlag(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = typeof v === "string" && /^\d+$/.test(v.trim()) ? Number(v.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw usageError(`${flag} needs a whole number from 1, got ${JSON.stringify(v)}`, "INVALID_RETENTION");
  return n;
}

/** What `--versioning` and the retention flags ask for, checked before anything connects. */
function versioningRequest(opts: Opts): { retention: Omit<Retention, "prefix"> | undefined } | undefined {
  const days = countFlag(opts.keepDays, "--keep-days");
  const versions = countFlag(opts.keepVersions, "--keep-versions");
  const asked = opts.versioning === true;
  if (!asked && (days !== undefined || versions !== undefined))
    throw usageError("--keep-days and --keep-versions set how long versions are kept: give them with --versioning", "INVALID_RETENTION");
  if (!asked) return undefined;
  return { retention: days === undefined && versions === undefined ? undefined : { noncurrentDays: days, newerNoncurrentVersions: versions } };
}

async function provisionVersions(
  store: ObjectStoreDriver,
  bucket: string,
  request: { retention: Omit<Retention, "prefix"> | undefined },
  prefix: string,
): Promise<ProvisionResult> {
  const base = { what: "versions" as const, name: bucket, location: store.location };
  const before = await store.versioning();
  await store.enableVersioning();
  const on = before === "enabled" ? `versioning of bucket ${bucket} is on` : `versioning of bucket ${bucket} turned on (it was ${before})`;
  if (request.retention === undefined) {
    const r = await store.getRetention();
    return {
      ...base,
      status: before === "enabled" ? "exists" : "created",
      detail: `${on}; ${r === null ? "every noncurrent version is kept (no retention rule)" : "objstate's retention rule is unchanged"}`,
    };
  }
  const rule: Retention = { prefix, ...request.retention };
  await store.setRetention(rule);
  const parts = [
    rule.noncurrentDays === undefined ? undefined : `after ${rule.noncurrentDays} days`,
    rule.newerNoncurrentVersions === undefined ? undefined : `beyond the ${rule.newerNoncurrentVersions} newest`,
  ].filter((x) => x !== undefined);
  return {
    ...base,
    status: "created",
    detail: `${on}; noncurrent versions under ${prefix === "" ? "the whole bucket" : `"${prefix}"`} expire ${parts.join(" and ")}${store.kind === "file" ? " (applied on each write)" : " (lifecycle rule objstate-noncurrent-versions)"}`,
  };
}

/** `objstate init`. */
export async function initAction(opts: Opts): Promise<void> {
  const versioning = versioningRequest(opts);
  const input = gatherSettings(opts);
  const config = backendConfigOf(input);
  const s = resolveEffectiveSettings(config, process.env, { onWarning: warn });
  const endpoint = s.endpoint.value;
  if (endpoint === undefined) {
    throw new ObjstateError(
      "NO_ENDPOINT",
      "no object-store endpoint: pass --endpoint (http(s)://host for an S3 API, file:./dir for the embedded store) or set PROVIDER_OBJECT_STORE_ENDPOINT",
    );
  }
  const table = s.kvstoreTable.value !== undefined && s.kvstoreTable.value !== "" ? s.kvstoreTable.value : undefined;
  const kvEndpoint = s.kvstoreEndpoint.value !== undefined && s.kvstoreEndpoint.value !== "" ? s.kvstoreEndpoint.value : undefined;
  if (table !== undefined && kvEndpoint === undefined) {
    throw new ObjstateError(
      "NO_LOCK_ENDPOINT",
      `kvstoreTable "${table}" is set but kvstoreEndpoint is not: pass --kvstore-endpoint (http(s)://host for the DynamoDB API, file:./dir for the embedded table)`,
    );
  }
  const storeAt = parseEndpoint(endpoint);
  const tableAt = table === undefined || kvEndpoint === undefined ? undefined : parseEndpoint(kvEndpoint);
  const needIdentity = storeAt.kind === "http" || tableAt?.kind === "http";
  const identity: Identity | undefined = needIdentity ? await identityFor(s, input.settings) : undefined;
  const results: ProvisionResult[] = [];

  const bucket = s.bucket.value as string;
  const store = await storeFor(s, storeAt, identity, input.settings);
  try {
    if (await store.bucketExists()) {
      results.push({ what: "bucket", name: bucket, location: store.location, status: "exists", detail: `bucket ${bucket} exists (${store.location})` });
    } else if (opts.createBucket === true) {
      await store.createBucket();
      results.push({ what: "bucket", name: bucket, location: store.location, status: "created", detail: `bucket ${bucket} created (${store.location})` });
    } else if (store.kind === "file") {
      results.push({
        what: "bucket",
        name: bucket,
        location: store.location,
        status: "on first use",
        detail: `bucket ${bucket} does not exist yet; the embedded store creates it on first write (${store.location}; or now: --create-bucket)`,
      });
    } else {
      results.push({
        what: "bucket",
        name: bucket,
        location: store.location,
        status: "missing",
        detail: `bucket ${bucket} does not exist (${store.location}); pass --create-bucket to create it`,
      });
    }
    if (versioning !== undefined) {
      if (results[0]?.status === "on first use" && versioning.retention === undefined)
        results.push({
          what: "versions",
          name: bucket,
          location: store.location,
          status: "on first use",
          detail: `the embedded store keeps every version of bucket ${bucket} once it is created`,
        });
      else if (results[0]?.status === "missing" || results[0]?.status === "on first use")
        results.push({
          what: "versions",
          name: bucket,
          location: store.location,
          status: "missing",
          detail: `versioning cannot be turned on: bucket ${bucket} does not exist (--create-bucket creates it)`,
        });
      else
        results.push(
          await provisionVersions(
            store,
            bucket,
            versioning,
            commonPrefix(layout(s.prefix.value ?? "", s.key.value ?? "", undefined, input.settings.values.layout)),
          ),
        );
    }
  } finally {
    store.close();
  }

  if (table === undefined || tableAt === undefined) {
    results.push({
      what: "lock table",
      name: null,
      location: null,
      status: "not configured",
      detail: "no lock table configured (kvstoreTable): state will not be locked; set --kvstore-table and --kvstore-endpoint to use one",
    });
  } else {
    const locks = await lockTableFor(s, tableAt, identity, input.settings);
    try {
      const found = await inspectLockTable(locks);
      if (found.status === "ok") {
        results.push({
          what: "lock table",
          name: table,
          location: locks.location,
          status: "exists",
          detail: `lock table ${table} exists with key LockID (String) (${locks.location})`,
        });
      } else if (found.status === "invalid") {
        results.push({
          what: "lock table",
          name: table,
          location: locks.location,
          status: "unusable",
          detail: `lock table ${table} exists but has ${found.keys}; it must have exactly one key, LockID of type String: use another table name`,
        });
      } else if (opts.createTable === true) {
        await locks.createTable();
        results.push({
          what: "lock table",
          name: table,
          location: locks.location,
          status: "created",
          detail: `lock table ${table} created with key LockID (String) (${locks.location})`,
        });
      } else if (locks.kind === "file") {
        results.push({
          what: "lock table",
          name: table,
          location: locks.location,
          status: "on first use",
          detail: `lock table ${table} does not exist yet; the embedded table is created on first use (${locks.location}; or now: --create-table)`,
        });
      } else {
        results.push({
          what: "lock table",
          name: table,
          location: locks.location,
          status: "missing",
          detail: `lock table ${table} does not exist (${locks.location}); pass --create-table to create it`,
        });
      }
    } finally {
      locks.close();
    }
  }

  const bad = results.filter((r) => r.status === "missing" || r.status === "unusable");
  if (opts.json === true) {
    printJson({
      ok: bad.length === 0,
      bucket: results[0],
      lockTable: results.find((r) => r.what === "lock table"),
      ...(versioning === undefined ? {} : { versions: results.find((r) => r.what === "versions") }),
    });
  } else {
    const p = paint(process.stdout);
    const mark: Record<ProvisionStatus, string> = {
      exists: p.green("exists "),
      created: p.green("created"),
      "on first use": p.green("later  "),
      missing: p.red("missing"),
      unusable: p.red("FAIL   "),
      "not configured": p.yellow("warn   "),
    };
    for (const r of results) process.stdout.write(`${mark[r.status]}  ${r.detail}\n`);
  }
  if (bad.length > 0)
    throw new CliError(
      "INIT_INCOMPLETE",
      bad.map((r) => (r.status === "missing" ? `${r.what} ${r.name} is missing` : `${r.what} ${r.name} is unusable`)).join("; "),
    );
}
