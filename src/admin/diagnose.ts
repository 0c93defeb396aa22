/** `diagnose`: each link from settings to a digest-checked read, in order, with a fix for each failure (which skips what depends on it). */
import { randomUUID } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { request as httpRequest, type ClientRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import * as path from "node:path";
import { ObjectStoreBackend } from "../backend/backend.js";
import type { ConnectOptions, DigestStatus } from "../backend/types.js";
import { inspectLockTable, probeConditions } from "../backend/connect.js";
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import { describeEncryption } from "../config/encryption-setting.js";
import { DEFAULT_WORKSPACE } from "../config/layout.js";
import { describeCredentialSource, type Identity } from "../credentials/index.js";
import { isObjstateError } from "../errors.js";
import { plainHttpAdvice, type ParsedEndpoint } from "../io/endpoint.js";
import { isTlsToPlainHttp } from "../io/sdk-errors.js";
import type { LockTableDriver } from "../lock/index.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import type { Acl, ObjectStoreDriver } from "../store/types.js";
import { redactUrl } from "../util/redact.js";
import { retentionText } from "./provision.js";
import { closing, identityOf, needsIdentity, resolveTargets, storeOf, tableOf, type Targets } from "./targets.js";

export type CheckStatus = "ok" | "warn" | "fail" | "skip";

export interface CheckResult {
  readonly name: string;
  readonly status: CheckStatus;
  readonly detail: string;
  readonly fix?: string | undefined;
}

export interface Diagnosis {
  /** No check failed. */
  readonly ok: boolean;
  readonly checks: readonly CheckResult[];
}

/** A connection's options, and the workspace whose digest and encryption are checked. */
export interface DiagnoseOptions extends ConnectOptions {
  readonly workspace?: string | undefined;
}

const REACH_TIMEOUT_MS = 5000;
/** The checks read once: a digest mismatch is reported, not waited out. */
const NO_RETRY = { timeoutMs: 0, intervalMs: 0 };

const ok = (name: string, detail: string): CheckResult => ({ name, status: "ok", detail });
const warn = (name: string, detail: string, fix: string): CheckResult => ({ name, status: "warn", detail, fix });
const fail = (name: string, detail: string, fix: string): CheckResult => ({ name, status: "fail", detail, fix });

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Does an HTTP endpoint answer at all (any status)? Not fetch: it refuses some ports outright ("bad port"). */
function reachHttp(name: string, url: string, fix: string): Promise<CheckResult> {
  const no = (reason: string, advice = fix): CheckResult => fail(name, `cannot reach ${redactUrl(url)} (${reason})`, advice);
  return new Promise((resolve) => {
    let req: ClientRequest;
    try {
      req = (url.startsWith("https:") ? httpsRequest : httpRequest)(url, { method: "HEAD", timeout: REACH_TIMEOUT_MS }, (res) => {
        res.resume();
        resolve(ok(name, `${redactUrl(url)} answers (HTTP ${res.statusCode ?? 0})`));
      });
    } catch (e) {
      resolve(no(message(e)));
      return;
    }
    req.on("timeout", () => req.destroy(Object.assign(new Error(`no answer within ${REACH_TIMEOUT_MS / 1000} s`), { code: "ETIMEDOUT" })));
    req.on("error", (e: NodeJS.ErrnoException) => {
      if (isTlsToPlainHttp(e)) resolve(no("TLS handshake answered in plain HTTP", plainHttpAdvice(url)));
      else resolve(no(e.code === "ETIMEDOUT" ? e.message : (e.code ?? e.message)));
    });
    req.end();
  });
}

/** Is a `file:` directory usable: present and writable, or creatable below a writable ancestor? */
async function reachDir(name: string, dir: string, embedded: string, fix: string): Promise<CheckResult> {
  const no = (reason: string): CheckResult => fail(name, `${embedded}: ${reason}`, fix);
  let at = dir;
  for (;;) {
    try {
      const st = await stat(at);
      if (!st.isDirectory()) return no(`${at} is not a directory`);
      await access(at, fsConstants.W_OK | fsConstants.X_OK);
      return ok(name, `${embedded}, ${at === dir ? `directory ${dir}` : `${dir} does not exist yet; it will be created under ${at}`}`);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EACCES" || code === "EPERM") return no(`${at} is not writable`);
      if (code === "EROFS") return no(`${at} is on a read-only file system`);
      if (code !== "ENOENT") return no(message(e));
      const up = path.dirname(at);
      if (up === at) return no(`no part of ${dir} exists`);
      at = up;
    }
  }
}

/** The fixes of local-disk failures of the embedded store or table (not credential problems), given the path. */
const DISK_FIXES: Readonly<Record<string, (at: string) => string>> = {
  STORE_NO_SPACE: (at) => `free space on the device holding ${at}, or move the store to another disk`,
  STORE_READ_ONLY: (at) => `remount ${at} read-write, or point the endpoint at a writable directory`,
  STORE_PERMISSION: (at) => `run objstate as the owner of ${at}, or give this user write access to it`,
  UNSAFE_PATH: (at) => `remove ${at} (objstate never follows links inside the store) and run again`,
};

function diskFix(e: unknown): string | undefined {
  if (!isObjstateError(e)) return undefined;
  return DISK_FIXES[e.code]?.(typeof e.details?.["path"] === "string" ? e.details["path"] : "the store directory");
}

/** 4b. Does the bucket keep versions (what history and rollback need), and for how long? */
async function versionsCheck(store: ObjectStoreDriver, bucket: string): Promise<CheckResult> {
  try {
    const status = await store.versioning();
    if (status !== "enabled") {
      const detail = `bucket ${bucket} does not keep versions (versioning ${status}): a bad write cannot be undone, and objstate state history, state diff of old versions and state rollback need versioning`;
      return warn("versions", detail, "turn it on with objstate init --versioning");
    }
    const r = await store.getRetention().catch(() => null);
    const kept = r === null ? "every noncurrent version is kept (no retention rule)" : `noncurrent versions under "${r.prefix}" expire ${retentionText(r)}`;
    return ok(
      "versions",
      `bucket ${bucket} keeps every version${store.kind === "file" ? " (the embedded store always does)" : " (bucket versioning on)"}; ${kept}`,
    );
  } catch (e) {
    const detail = `cannot tell whether bucket ${bucket} keeps versions: ${message(e)}`;
    return warn("versions", detail, "history and rollback need bucket versioning: objstate init --versioning");
  }
}

/** The conformance probe's verdict on the conditions objstate relies on (docs/design.md §10); only lockfiles need a conditional delete. */
async function conditionChecks(store: ObjectStoreDriver, near: string, lockfile: boolean, add: (r: CheckResult) => CheckResult): Promise<void> {
  try {
    const v = await probeConditions(store, near);
    const fix = "use a store that honours conditional writes; lockfiles (--lockfile) are refused on this one";
    const line = (name: string, honoured: boolean, yes: string, no: string): void => {
      add(honoured ? ok(name, yes) : { ...fail(name, no, fix), status: lockfile ? "fail" : "warn" });
    };
    line(
      "If-None-Match",
      v.ifNoneMatch,
      "a second create-if-absent of the same key is refused",
      `${store.location} ignores If-None-Match: *: a create-if-absent overwrote the object`,
    );
    line(
      "If-Match",
      v.ifMatch,
      "a write conditional on another version is refused",
      `${store.location} ignores If-Match: a write conditional on another version replaced the object`,
    );
    // Only lockfiles would use a conditional delete: without them, a store that ignores it is fine.
    if (v.deleteIfMatch) add(ok("conditional delete", "a delete conditional on another version is refused"));
    else if (!lockfile) add(ok("conditional delete", `${store.location} ignores If-Match on DELETE (only lockfiles would use it)`));
    else {
      const detail = `${store.location} ignores If-Match on DELETE: lockfiles are released after a read and an ID check (as the tool does), not atomically`;
      add(warn("conditional delete", detail, "nothing to do unless lockfiles must be released atomically"));
    }
  } catch (e) {
    add(
      fail("If-None-Match", `the conditional-write probe failed: ${message(e)}`, diskFix(e) ?? "check the credentials' permissions to put and delete objects"),
    );
  }
}

/** The credentials check's failure on one line: the plan, then the error, with what was tried (`NO_CREDENTIALS`'s list) numbered. */
function credentialsFailure(s: ResolvedBackendSettings, e: unknown): string {
  const tried = isObjstateError(e, "NO_CREDENTIALS") && Array.isArray(e.details?.["tried"]) ? (e.details["tried"] as unknown[]).map(String) : [];
  const text =
    tried.length > 0
      ? `no credentials found; tried, in order: ${tried.map((t, i) => `(${i + 1}) ${t}`).join("; ")}${message(e).includes("A role (") ? `; ${message(e).split("\n").at(-1) as string}` : ""}`
      : message(e).split("\n").join(" ");
  return `${describeCredentialSource(s)}: ${text}`;
}

const LATER = ["credentials", "object-store endpoint", "bucket", "lock-table endpoint", "lock table", "digest"] as const;

class Checks {
  readonly list: CheckResult[] = [];
  readonly add = (r: CheckResult): CheckResult => (this.list.push(r), r);
  skip(names: readonly string[], detail: string): void {
    for (const name of names) this.add({ name, status: "skip", detail });
  }
}

/** Run every check, in order, never throwing for a failed one; a `config` function is built inside, so a bad setting is the settings check's failure. */
export async function diagnose(config: ObjectStoreBackendConfig | (() => ObjectStoreBackendConfig), options: DiagnoseOptions = {}): Promise<Diagnosis> {
  const c = new Checks();
  const { workspace = DEFAULT_WORKSPACE, ...connect } = options;
  const found = settingsCheck(c, config, connect, workspace);
  if (found === undefined) c.skip(LATER, "settings are not valid");
  else await linkChecks(c, found.config, found.targets, connect, workspace);
  return { ok: !c.list.some((r) => r.status === "fail"), checks: c.list };
}

/** 1. Settings: resolved, with an endpoint, and a lock table with an endpoint of its own. */
function settingsCheck(
  c: Checks,
  config: ObjectStoreBackendConfig | (() => ObjectStoreBackendConfig),
  options: ConnectOptions,
  workspace: string,
): { config: ObjectStoreBackendConfig; targets: Targets } | undefined {
  let built: ObjectStoreBackendConfig;
  let t: Targets;
  try {
    built = typeof config === "function" ? config() : config;
    t = resolveTargets(built, options);
  } catch (e) {
    const { detail, fix } = settingsFailure(e);
    c.add(fail("settings", detail, fix));
    return undefined;
  }
  const table = t.table === undefined ? ", no lock table" : `, lock table ${t.table.name} at ${redactUrl(t.table.endpoint)}`;
  c.add(ok("settings", `bucket ${t.settings.bucket.value}, endpoint ${redactUrl(t.endpoint)} (${t.settings.endpoint.source})${table}, workspace ${workspace}`));
  return { config: built, targets: t };
}

function settingsFailure(e: unknown): { detail: string; fix: string } {
  if (isObjstateError(e, "NO_ENDPOINT"))
    return {
      detail: "no object-store endpoint",
      fix: "pass --endpoint (http(s)://host for an S3 API, file:./dir for the embedded store) or set PROVIDER_OBJECT_STORE_ENDPOINT (or AWS_ENDPOINT_URL_S3)",
    };
  if (isObjstateError(e, "NO_LOCK_ENDPOINT"))
    return {
      detail: `kvstoreTable "${String(e.details?.["table"])}" is set but kvstoreEndpoint is not`,
      fix: "pass --kvstore-endpoint (http(s)://host for the DynamoDB API, file:./dir for the embedded table)",
    };
  if (isObjstateError(e, "INVALID_ENDPOINT")) return { detail: message(e), fix: "give endpoints as http(s)://host, a bare host, or file:dir" };
  return {
    detail: message(e),
    fix: "correct the flag, --config file or environment variable named above (objstate config shows every setting and its source)",
  };
}

/** 2 to 8, once the settings add up. */
async function linkChecks(c: Checks, config: ObjectStoreBackendConfig, t: Targets, options: ConnectOptions, workspace: string): Promise<void> {
  const identity = await credentialsCheck(c, t, options);
  if (identity === null) return c.skip(LATER.slice(1), "no credentials");
  const bucketOk = await storeChecks(c, t, identity, options);
  const table = await tableChecks(c, t, identity, options);
  if (t.table === undefined) c.skip(["digest"], "no lock table, so no digests");
  else if (!bucketOk || !table.ok) c.skip(["digest"], "needs a working bucket and lock table");
  else if (!table.exists) c.add(ok("digest", "no digests yet (the lock table does not exist yet)"));
  else await digestChecks(c, config, options, workspace);
  if (options.encryption !== undefined) await encryptionCheck(c, config, options, workspace, bucketOk);
}

/** 2. Credentials, when an endpoint is HTTP; null when they cannot be had. */
async function credentialsCheck(c: Checks, t: Targets, options: ConnectOptions): Promise<Identity | undefined | null> {
  if (!needsIdentity(t)) {
    c.add(ok("credentials", "not needed: embedded store and table (file: endpoints)"));
    return undefined;
  }
  try {
    const identity = await identityOf(t, options);
    const before = identity.tried ?? [];
    c.add(ok("credentials", before.length === 0 ? identity.source : `${identity.source}; tried first: ${before.join("; ")}`));
    return identity;
  } catch (e) {
    const fix =
      "set PROVIDER_ACCESS_KEY and PROVIDER_SECRET_KEY (or --access-key / --secret-key), a profile (--profile), a compute role (--compute-role-name) or a role to assume (--assume-role-role-arn); or AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE (~/.aws), web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), or the container or instance metadata service";
    c.add(fail("credentials", credentialsFailure(t.settings, e), fix));
    return null;
  }
}

/**
 * 3 or 5: an endpoint answers (HTTP), or its directory is usable (`file:`); then 4 or 6: `check` of what
 * `open` opens there, whose failure is `name`'s, with a fix for the disk, the permissions or the `flags`.
 */
async function behindEndpoint<D extends { close(): void }, T>(
  c: Checks,
  name: "bucket" | "lock table",
  at: ParsedEndpoint,
  fixes: { embedded: string; http: string; dir: string; flags: string },
  open: () => Promise<D>,
  check: (d: D) => Promise<T>,
  failed: T,
): Promise<T> {
  const endpoint = name === "bucket" ? "object-store endpoint" : "lock-table endpoint";
  const reached = c.add(at.kind === "http" ? await reachHttp(endpoint, at.url, fixes.http) : await reachDir(endpoint, at.dir, fixes.embedded, fixes.dir));
  if (reached.status !== "ok") {
    c.skip([name], `the ${endpoint} is not reachable`);
    return failed;
  }
  const opened = await open();
  try {
    return await closing(opened, check);
  } catch (e) {
    const denied = `check the credentials and their permissions on the ${name === "bucket" ? "bucket" : "table"}`;
    c.add(fail(name, message(e), diskFix(e) ?? (isObjstateError(e, "ACCESS_DENIED") ? denied : `check ${fixes.flags}`)));
    return failed;
  }
}

/** 3. The object-store endpoint, and 4. the bucket: exists, writable, its conditions and versions. True when the bucket works. */
function storeChecks(c: Checks, t: Targets, identity: Identity | undefined, options: ConnectOptions): Promise<boolean> {
  const fixes = {
    embedded: "embedded store",
    http: "check --endpoint / PROVIDER_OBJECT_STORE_ENDPOINT and that the server is running and reachable from here",
    dir: `point --endpoint at a directory you can write (file:./.objstate, file:///abs/dir)`,
    flags: "--bucket and --endpoint",
  };
  const open = () => storeOf(t, identity, options);
  return behindEndpoint(c, "bucket", t.storeAt, fixes, open, (store) => bucketChecks(c, store, t, options.lockfile === true), false);
}

async function bucketChecks(c: Checks, store: ObjectStoreDriver, t: Targets, lockfile: boolean): Promise<boolean> {
  const s = t.settings;
  const bucket = s.bucket.value as string;
  if (!(await store.bucketExists())) {
    if (t.storeAt.kind === "http") {
      const fix = "create it with objstate init --create-bucket, or check --bucket and --endpoint";
      c.add(fail("bucket", `bucket ${bucket} does not exist at ${store.location}`, fix));
      return false;
    }
    c.add(ok("bucket", `bucket ${bucket} does not exist yet; the embedded store creates it on first write (or: objstate init --create-bucket)`));
    return true;
  }
  const prefix = (s.prefix.value ?? "").replace(/^\/+|\/+$/g, "");
  const under = prefix === "" ? "" : `${prefix}/`;
  const probe = `${under}.objstate-doctor-${randomUUID()}`;
  let written = false;
  try {
    await store.put(probe, Buffer.from("objstate doctor probe\n"), {
      contentType: "text/plain",
      acl: s.acl.value as Acl | undefined,
      encrypt: s.encrypt.value === true,
    });
    // purge, not delete: on a versioned bucket a delete would leave a version and a marker.
    await store.purge(probe);
    written = true;
    c.add(ok("bucket", `bucket ${bucket} exists and is writable (wrote and deleted ${probe})`));
    await conditionChecks(store, `${under}.objstate-doctor`, lockfile, c.add);
  } catch (e) {
    const fix = diskFix(e) ?? `let these credentials put and delete objects in ${bucket}${prefix === "" ? "" : ` under ${prefix}/`}`;
    c.add(fail("bucket", `bucket ${bucket} exists but writing ${probe} failed: ${message(e)}`, fix));
  }
  c.add(await versionsCheck(store, bucket));
  return written;
}

/** 5. The lock-table endpoint and 6. the lock table. */
async function tableChecks(c: Checks, t: Targets, identity: Identity | undefined, options: ConnectOptions): Promise<{ ok: boolean; exists: boolean }> {
  const no = { ok: false, exists: false };
  if (t.table === undefined) {
    c.skip(["lock-table endpoint"], "no lock table configured");
    if (options.lockfile === true)
      c.add(ok("lock table", "no lock table: state is locked with lockfiles ({state path}.tflock; see the If-None-Match and If-Match checks)"));
    else {
      const detail = "no lock table is configured (kvstoreTable): state is NOT locked, and concurrent writers can overwrite each other";
      c.add(warn("lock table", detail, "set --kvstore-table and --kvstore-endpoint, then run objstate init --create-table"));
    }
    return no;
  }
  const { name, at } = t.table;
  const fixes = {
    embedded: "embedded table",
    http: "check --kvstore-endpoint and that the server is running and reachable from here",
    dir: "point --kvstore-endpoint at a directory you can write",
    flags: "--kvstore-table and --kvstore-endpoint",
  };
  const open = () => tableOf(t, identity, options);
  return behindEndpoint(c, "lock table", at, fixes, open, (locks) => tableCheck(c, locks, name, at.kind === "http"), no);
}

async function tableCheck(c: Checks, locks: LockTableDriver, table: string, http: boolean): Promise<{ ok: boolean; exists: boolean }> {
  const found = await inspectLockTable(locks);
  if (found.status === "missing" && http) {
    const fix = "create it with objstate init --create-table (one key, LockID of type String)";
    c.add(fail("lock table", `lock table ${table} does not exist (${locks.location})`, fix));
    return { ok: false, exists: false };
  }
  if (found.status === "missing") {
    c.add(ok("lock table", `lock table ${table} does not exist yet; the embedded table is created on first use (or: objstate init --create-table)`));
    return { ok: true, exists: false };
  }
  if (found.status === "invalid") {
    const detail = `lock table ${table} has ${found.keys}; it must have exactly one key, LockID of type String (S)`;
    c.add(fail("lock table", detail, "use a table keyed by LockID (String): point --kvstore-table at a new table name and run objstate init --create-table"));
    return { ok: false, exists: true };
  }
  c.add(ok("lock table", `lock table ${table} has key LockID (String)`));
  return { ok: true, exists: true };
}

/** 7. The digest of the selected workspace, and leftovers of unfinished writes. */
async function digestChecks(c: Checks, config: ObjectStoreBackendConfig, options: ConnectOptions, workspace: string): Promise<void> {
  try {
    await closing(await ObjectStoreBackend.connect(config, { ...options, digestRetry: NO_RETRY }), async (backend) => {
      const repair = `objstate state repair${workspace === "default" ? "" : ` -w ${workspace}`}`;
      c.add(digestResult(await backend.digestStatus(workspace), workspace, backend.describe(workspace), repair));
      const left = await backend.leftovers();
      if (left.length === 0) c.add(ok("leftovers", "no leftovers of unfinished writes"));
      else {
        const some = left.map((l) => `${l.kind} ${l.key ?? l.id}`).slice(0, 3);
        const detail = `${left.length} leftover${left.length === 1 ? "" : "s"} of unfinished writes under the prefix (${some.join(", ")}${left.length > 3 ? ", …" : ""}; oldest from ${left[0]?.since?.toISOString() ?? "unknown"})`;
        c.add(warn("leftovers", detail, `run ${repair} to remove those older than an hour (younger ones may belong to a writer still at work)`));
      }
    });
  } catch (e) {
    c.add(fail("digest", message(e), "see the message; objstate state pull shows the same error"));
  }
}

function digestResult(d: DigestStatus, workspace: string, where: string, repair: string): CheckResult {
  const state = `the state of workspace ${workspace}`;
  switch (d.status) {
    case "no-state":
      return ok("digest", `workspace ${workspace} has no state yet (${where})`);
    case "no-digest":
      return ok("digest", `${state} (${d.size} bytes) has no digest recorded, so there is nothing to check it against (the next write records one)`);
    case "match":
      return ok("digest", `${state} (${d.size} bytes) matches its digest`);
    case "torn":
      return fail(
        "digest",
        `the last write to workspace ${workspace} was stored but never committed: the stored state is a complete write by objstate (MD5 ${d.actual ?? "?"}), the lock table still has ${d.recorded}`,
        `run ${repair} to commit it (the next read does it too, once no writer of it holds the lock)`,
      );
    case "superseded":
      return warn(
        "digest",
        `the newest version of workspace ${workspace}'s state (MD5 ${d.actual ?? "?"}) is a write that never committed (another write was committed after it started); reads serve the committed state (${d.recorded})`,
        `run ${repair} to write the committed state again as the newest version (so other clients of the bucket see it too)`,
      );
    case "mismatch":
      return fail(
        "digest",
        `${state} does not match its digest (lock table ${d.recorded}, object ${d.actual ?? "missing"})`,
        d.actual === undefined
          ? `run ${repair} to remove the digest of the missing state`
          : `if the stored state is right, run ${repair} --force to record its digest; else push the right state again (objstate state push)`,
      );
  }
}

/** 8. State encryption, when configured: does the selected workspace's state decrypt, and with which method. */
async function encryptionCheck(c: Checks, config: ObjectStoreBackendConfig, options: ConnectOptions, workspace: string, bucketOk: boolean): Promise<void> {
  const name = "encryption";
  const what = describeEncryption(options.encryption);
  if (!bucketOk) return c.skip([name], `${what}; reading the state needs a working bucket`);
  try {
    await closing(await ObjectStoreBackend.connect(config, { ...options, readOnly: true, digestRetry: NO_RETRY }), async (backend) => {
      const read = await backend.readStateVersion(workspace);
      if (read === null) c.add(ok(name, `${what}; workspace ${workspace} has no state yet`));
      else if (read.encryption?.migration === true) {
        const detail = `the state of workspace ${workspace} was read with ${read.encryption.method}, not the primary method (${what})`;
        c.add(warn(name, detail, `run objstate state rekey${workspace === "default" ? "" : ` -w ${workspace}`} to write it under the primary method`));
      } else c.add(ok(name, `the state of workspace ${workspace} decrypts with ${read.encryption?.method ?? "?"}`));
    });
  } catch (e) {
    c.add(fail(name, message(e), "configure the key the state was written with (as a fallback method), in the encryption setting or TF_ENCRYPTION"));
  }
}
