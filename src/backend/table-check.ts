/** The lock table's schema (docs/design.md §5): exactly one key, `LockID` of type String; for `connect`, `doctor` and `init`. */
import { ObjstateError } from "../errors.js";
import type { KeyAttribute, LockTableDriver } from "../lock/types.js";

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
