/**
 * The store conformance probe (docs/design.md §10): before lockfiles trust a store's conditional
 * writes, try them once on a probe key (purged after), cached per store location for the process.
 */
import { isObjstateError, ObjstateError } from "../errors.js";
import type { ObjectStoreDriver } from "../store/types.js";
import { nodeCrypto } from "../util/builtins.js";

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

/** Does the store refuse this call? True when it threw `PRECONDITION_FAILED`. */
async function refuses(call: () => Promise<unknown>): Promise<boolean> {
  try {
    await call();
    return false;
  } catch (e) {
    if (isObjstateError(e, "PRECONDITION_FAILED")) return true;
    throw e;
  }
}

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
  try {
    await store.put(key, body(1), { contentType: "application/json", ifNoneMatch: true, strictConditions: true });
    const ifNoneMatch = await refuses(() => store.put(key, body(2), { contentType: "application/json", ifNoneMatch: true, strictConditions: true }));
    const wrong = `"${"0".repeat(32)}"`;
    const ifMatch = await refuses(() => store.put(key, body(3), { contentType: "application/json", ifMatch: wrong, strictConditions: true }));
    const deleteIfMatch = (await store.head(key)) !== null && !(await store.deleteIfMatch(key, wrong)) && (await store.head(key)) !== null;
    return { ifNoneMatch, ifMatch, deleteIfMatch };
  } finally {
    await store.purge(key).catch(() => undefined);
  }
}

/** Refuse lockfile mode on a store whose verdict says its locks would silently not hold. */
export function requireLockfileSupport(verdict: ProbeVerdict, location: string): void {
  const missing = [
    verdict.ifNoneMatch ? undefined : "If-None-Match: * (create only if absent)",
    verdict.ifMatch ? undefined : "If-Match (replace only that version)",
  ].filter((x) => x !== undefined);
  if (missing.length === 0) return;
  throw new ObjstateError(
    "LOCKFILE_UNSUPPORTED",
    `${location} ignores ${missing.join(" and ")}: lockfiles there would not lock anything. Use a lock table (kvstoreTable) instead of --lockfile, or a store that honours conditional writes`,
    { details: { verdict } },
  );
}
