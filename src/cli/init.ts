/**
 * `objstate init [--create-bucket] [--create-table]`: report whether the bucket and the
 * lock table exist, and create what is missing when asked. Exit 1 when something is
 * still missing or unusable afterwards.
 */
import { resolveEffectiveSettings, type Identity } from "../credentials/index.js";
import { ObjstateError } from "../errors.js";
import type { KeyAttribute } from "../lock/types.js";
import { CliError, EXIT } from "./io.js";
import { identityFor, isHttp, lockTableFor, storeFor, warn } from "./runtime.js";
import { backendConfigOf, gatherSettings } from "./settings.js";
import { paint, printJson } from "./term.js";

export type ProvisionStatus = "exists" | "created" | "missing" | "unusable" | "not configured";

export interface ProvisionResult {
  readonly what: "bucket" | "lock table";
  readonly name: string | null;
  readonly location: string | null;
  readonly status: ProvisionStatus;
  readonly detail: string;
}

function schemaOk(schema: readonly KeyAttribute[]): boolean {
  const only = schema.length === 1 ? schema[0] : undefined;
  return only !== undefined && only.name === "LockID" && only.type === "S" && only.keyType === "HASH";
}

/** `objstate init`. */
export async function initAction(opts: Record<string, unknown>): Promise<void> {
  const input = gatherSettings(opts);
  const config = backendConfigOf(input);
  const s = resolveEffectiveSettings(config, process.env, { onWarning: warn });
  const endpoint = s.endpoint.value;
  if (endpoint === undefined) {
    throw new ObjstateError("NO_ENDPOINT", "no object-store endpoint: pass --endpoint (http(s)://host for an S3 API, file:./dir for the embedded store) or set PROVIDER_OBJECT_STORE_ENDPOINT");
  }
  const table = s.kvstoreTable.value !== undefined && s.kvstoreTable.value !== "" ? s.kvstoreTable.value : undefined;
  const kvEndpoint = s.kvstoreEndpoint.value !== undefined && s.kvstoreEndpoint.value !== "" ? s.kvstoreEndpoint.value : undefined;
  if (table !== undefined && kvEndpoint === undefined) {
    throw new ObjstateError("NO_LOCK_ENDPOINT", `kvstoreTable "${table}" is set but kvstoreEndpoint is not: pass --kvstore-endpoint (http(s)://host for the DynamoDB API, file:./dir for the embedded table)`);
  }
  const needIdentity = isHttp(endpoint) || (table !== undefined && kvEndpoint !== undefined && isHttp(kvEndpoint));
  const identity: Identity | undefined = needIdentity ? await identityFor(s) : undefined;
  const results: ProvisionResult[] = [];

  const bucket = s.bucket.value as string;
  const store = await storeFor(s, identity);
  try {
    if (await store.bucketExists()) {
      results.push({ what: "bucket", name: bucket, location: store.location, status: "exists", detail: `bucket ${bucket} exists (${store.location})` });
    } else if (opts["createBucket"] === true) {
      await store.createBucket();
      results.push({ what: "bucket", name: bucket, location: store.location, status: "created", detail: `bucket ${bucket} created (${store.location})` });
    } else {
      results.push({ what: "bucket", name: bucket, location: store.location, status: "missing", detail: `bucket ${bucket} does not exist (${store.location}); pass --create-bucket to create it` });
    }
  } finally {
    store.close();
  }

  if (table === undefined) {
    results.push({ what: "lock table", name: null, location: null, status: "not configured", detail: "no lock table configured (kvstoreTable): state will not be locked; set --kvstore-table and --kvstore-endpoint to use one" });
  } else {
    const locks = await lockTableFor(s, identity);
    try {
      const schema = await locks.describeKeySchema();
      if (schema !== null) {
        if (schemaOk(schema)) {
          results.push({ what: "lock table", name: table, location: locks.location, status: "exists", detail: `lock table ${table} exists with key LockID (String) (${locks.location})` });
        } else {
          const keys = schema.map((k) => `${k.name} (${k.type}, ${k.keyType})`).join(", ") || "no key";
          results.push({
            what: "lock table",
            name: table,
            location: locks.location,
            status: "unusable",
            detail: `lock table ${table} exists but has ${keys}; it must have exactly one key, LockID of type String: use another table name`,
          });
        }
      } else if (opts["createTable"] === true) {
        await locks.createTable();
        results.push({ what: "lock table", name: table, location: locks.location, status: "created", detail: `lock table ${table} created with key LockID (String) (${locks.location})` });
      } else {
        results.push({ what: "lock table", name: table, location: locks.location, status: "missing", detail: `lock table ${table} does not exist (${locks.location}); pass --create-table to create it` });
      }
    } finally {
      locks.close();
    }
  }

  const bad = results.filter((r) => r.status === "missing" || r.status === "unusable");
  if (opts["json"] === true) {
    printJson({ ok: bad.length === 0, bucket: results[0], lockTable: results[1] });
  } else {
    const p = paint(process.stdout);
    const mark: Record<ProvisionStatus, string> = { exists: p.green("exists "), created: p.green("created"), missing: p.red("missing"), unusable: p.red("FAIL   "), "not configured": p.yellow("warn   ") };
    for (const r of results) process.stdout.write(`${mark[r.status]}  ${r.detail}\n`);
  }
  if (bad.length > 0) throw new CliError("INIT_INCOMPLETE", bad.map((r) => (r.status === "missing" ? `${r.what} ${r.name} is missing` : `${r.what} ${r.name} is unusable`)).join("; "), EXIT.error);
}
