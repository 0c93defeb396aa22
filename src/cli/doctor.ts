/**
 * `objstate doctor`: checks each link from settings to a digest-checked read, in order,
 * one line per check with a fix for each failure. A failure skips the checks that
 * depend on it. Exit 1 when any check fails.
 */
import { randomUUID } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { request as httpRequest, type ClientRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import * as path from "node:path";
import { DEFAULT_WORKSPACE } from "../config/layout.js";
import { describeEncryption } from "../config/encryption-setting.js";
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import { describeCredentialSource, resolveEffectiveSettings, type Identity } from "../credentials/index.js";
import { isObjstateError } from "../errors.js";
import { inspectLockTable } from "../backend/table-check.js";
import type { ResolvedBackendSettings } from "../resolve/settings.js";
import { parseEndpoint, plainHttpAdvice, type ParsedEndpoint } from "../io/endpoint.js";
import { isTlsToPlainHttp } from "../io/sdk-errors.js";
import { probeConditions } from "../backend/probe.js";
import type { Acl, ObjectStoreDriver } from "../store/types.js";
import type { Opts } from "./options.js";
import { CliError } from "./io.js";
import { connect, identityFor, lockTableFor, storeFor } from "./runtime.js";
import { warn } from "./warn.js";
import { backendConfigOf, gatherSettings, type SettingsInput } from "./settings.js";
import { paint, printJson } from "./term.js";
import { redactUrl } from "../util/redact.js";
import { printable } from "../util/printable.js";

export type CheckStatus = "ok" | "warn" | "fail" | "skip";

export interface CheckResult {
  readonly name: string;
  readonly status: CheckStatus;
  readonly detail: string;
  readonly fix?: string | undefined;
}

const REACH_TIMEOUT_MS = 5000;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Does an HTTP endpoint answer at all (any status)? Plain node:http(s), not fetch: fetch
 * refuses some ports outright ("bad port"), which says nothing about the server.
 */
function reachHttp(url: string): Promise<{ ok: true; status: number } | { ok: false; reason: string; fix?: string }> {
  return new Promise((resolve) => {
    let req: ClientRequest;
    try {
      req = (url.startsWith("https:") ? httpsRequest : httpRequest)(url, { method: "HEAD", timeout: REACH_TIMEOUT_MS }, (res) => {
        res.resume();
        resolve({ ok: true, status: res.statusCode ?? 0 });
      });
    } catch (e) {
      resolve({ ok: false, reason: message(e) });
      return;
    }
    req.on("timeout", () => req.destroy(Object.assign(new Error(`no answer within ${REACH_TIMEOUT_MS / 1000} s`), { code: "ETIMEDOUT" })));
    req.on("error", (e: NodeJS.ErrnoException) => {
      if (isTlsToPlainHttp(e)) resolve({ ok: false, reason: "TLS handshake answered in plain HTTP", fix: plainHttpAdvice(url) });
      else resolve({ ok: false, reason: e.code === "ETIMEDOUT" ? e.message : (e.code ?? e.message) });
    });
    req.end();
  });
}

/** Is a `file:` directory usable: present and writable, or creatable below a writable ancestor? */
async function reachDir(dir: string): Promise<{ ok: true; detail: string } | { ok: false; reason: string }> {
  let at = dir;
  for (;;) {
    try {
      const st = await stat(at);
      if (!st.isDirectory()) return { ok: false, reason: `${at} is not a directory` };
      await access(at, fsConstants.W_OK | fsConstants.X_OK);
      return { ok: true, detail: at === dir ? `directory ${dir}` : `${dir} does not exist yet; it will be created under ${at}` };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EACCES" || code === "EPERM") return { ok: false, reason: `${at} is not writable` };
      if (code === "EROFS") return { ok: false, reason: `${at} is on a read-only file system` };
      if (code !== "ENOENT") return { ok: false, reason: message(e) };
      const up = path.dirname(at);
      if (up === at) return { ok: false, reason: `no part of ${dir} exists` };
      at = up;
    }
  }
}

/**
 * The fix for a local-disk failure of the embedded store or table: a full disk, a
 * read-only mount, file permissions or a planted link are not credential problems.
 */
function diskFix(e: unknown): string | undefined {
  if (!isObjstateError(e)) return undefined;
  const at = typeof e.details?.["path"] === "string" ? e.details["path"] : "the store directory";
  switch (e.code) {
    case "STORE_NO_SPACE":
      return `free space on the device holding ${at}, or move the store to another disk`;
    case "STORE_READ_ONLY":
      return `remount ${at} read-write, or point the endpoint at a writable directory`;
    case "STORE_PERMISSION":
      return `run objstate as the owner of ${at}, or give this user write access to it`;
    case "UNSAFE_PATH":
      return `remove ${at} (objstate never follows links inside the store) and run again`;
    default:
      return undefined;
  }
}

/** 4b. Does the bucket keep versions (what history and rollback need), and for how long? */
async function versionsCheck(store: ObjectStoreDriver, bucket: string): Promise<CheckResult> {
  try {
    const status = await store.versioning();
    if (status !== "enabled") {
      return {
        name: "versions",
        status: "warn",
        detail: `bucket ${bucket} does not keep versions (versioning ${status}): a bad write cannot be undone, and objstate state history, state diff of old versions and state rollback need versioning`,
        fix: "turn it on with objstate init --versioning",
      };
    }
    const r = await store.getRetention().catch(() => null);
    const kept =
      r === null
        ? "every noncurrent version is kept (no retention rule)"
        : `noncurrent versions under "${r.prefix}" expire ${[r.noncurrentDays === undefined ? undefined : `after ${r.noncurrentDays} days`, r.newerNoncurrentVersions === undefined ? undefined : `beyond the ${r.newerNoncurrentVersions} newest`].filter((x) => x !== undefined).join(" and ")}`;
    return {
      name: "versions",
      status: "ok",
      detail: `bucket ${bucket} keeps every version${store.kind === "file" ? " (the embedded store always does)" : " (bucket versioning on)"}; ${kept}`,
    };
  } catch (e) {
    return {
      name: "versions",
      status: "warn",
      detail: `cannot tell whether bucket ${bucket} keeps versions: ${message(e)}`,
      fix: "history and rollback need bucket versioning: objstate init --versioning",
    };
  }
}

/**
 * The conformance probe's verdict on every condition objstate relies on (docs/design.md §10): the
 * state writes' fencing and lockfiles need the first two; a store without the third
 * releases lockfiles after a read and an ID check, as the tool does.
 */
async function conditionChecks(store: ObjectStoreDriver, near: string, lockfile: boolean, add: (r: CheckResult) => CheckResult): Promise<void> {
  try {
    const v = await probeConditions(store, near);
    const line = (name: string, ok: boolean, yes: string, no: string, fix: string, required: boolean): void => {
      add(ok ? { name, status: "ok", detail: yes } : { name, status: required ? "fail" : "warn", detail: no, fix });
    };
    line(
      "If-None-Match",
      v.ifNoneMatch,
      "a second create-if-absent of the same key is refused",
      `${store.location} ignores If-None-Match: *: a create-if-absent overwrote the object`,
      "use a store that honours conditional writes; lockfiles (--lockfile) are refused on this one",
      lockfile,
    );
    line(
      "If-Match",
      v.ifMatch,
      "a write conditional on another version is refused",
      `${store.location} ignores If-Match: a write conditional on another version replaced the object`,
      "use a store that honours conditional writes; lockfiles (--lockfile) are refused on this one",
      lockfile,
    );
    if (v.deleteIfMatch || !lockfile) {
      // Only lockfiles would use it: without them, a store that ignores it is fine.
      add({
        name: "conditional delete",
        status: "ok",
        detail: v.deleteIfMatch
          ? "a delete conditional on another version is refused"
          : `${store.location} ignores If-Match on DELETE (only lockfiles would use it)`,
      });
    } else {
      add({
        name: "conditional delete",
        status: "warn",
        detail: `${store.location} ignores If-Match on DELETE: lockfiles are released after a read and an ID check (as the tool does), not atomically`,
        fix: "nothing to do unless lockfiles must be released atomically",
      });
    }
  } catch (e) {
    add({
      name: "If-None-Match",
      status: "fail",
      detail: `the conditional-write probe failed: ${message(e)}`,
      fix: diskFix(e) ?? "check the credentials' permissions to put and delete objects",
    });
  }
}

/**
 * The credentials check's failure on one line: the plan, then the error, with the list of
 * what was tried (`NO_CREDENTIALS` carries it, one source per line) joined with "; ".
 */
function credentialsFailure(s: ResolvedBackendSettings, e: unknown): string {
  const tried = isObjstateError(e, "NO_CREDENTIALS") && Array.isArray(e.details?.["tried"]) ? (e.details["tried"] as unknown[]).map(String) : [];
  const text =
    tried.length > 0
      ? `no credentials found; tried, in order: ${tried.map((t, i) => `(${i + 1}) ${t}`).join("; ")}${message(e).includes("A role (") ? `; ${message(e).split("\n").at(-1) as string}` : ""}`
      : message(e).split("\n").join(" ");
  return `${describeCredentialSource(s)}: ${text}`;
}

/** Run every check; returns the results in order. Never throws for a failed check. */
export async function runChecks(input: SettingsInput): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const add = (r: CheckResult): CheckResult => (results.push(r), r);
  const skipAll = (names: readonly string[], why: string): CheckResult[] => {
    for (const name of names) add({ name, status: "skip", detail: why });
    return results;
  };
  const LATER = ["credentials", "object-store endpoint", "bucket", "lock-table endpoint", "lock table", "digest"] as const;

  // 1. Settings.
  let config: ObjectStoreBackendConfig;
  let s: ResolvedBackendSettings;
  try {
    config = backendConfigOf(input);
    s = resolveEffectiveSettings(config, process.env, { onWarning: warn });
  } catch (e) {
    add({
      name: "settings",
      status: "fail",
      detail: message(e),
      fix: "correct the flag, --config file or environment variable named above (objstate config shows every setting and its source)",
    });
    return skipAll(LATER, "settings are not valid");
  }
  const endpoint = s.endpoint.value;
  const table = s.kvstoreTable.value !== undefined && s.kvstoreTable.value !== "" ? s.kvstoreTable.value : undefined;
  const kvEndpoint = s.kvstoreEndpoint.value !== undefined && s.kvstoreEndpoint.value !== "" ? s.kvstoreEndpoint.value : undefined;
  if (endpoint === undefined) {
    add({
      name: "settings",
      status: "fail",
      detail: "no object-store endpoint",
      fix: "pass --endpoint (http(s)://host for an S3 API, file:./dir for the embedded store) or set PROVIDER_OBJECT_STORE_ENDPOINT (or AWS_ENDPOINT_URL_S3)",
    });
    return skipAll(LATER, "settings are not valid");
  }
  if (table !== undefined && kvEndpoint === undefined) {
    add({
      name: "settings",
      status: "fail",
      detail: `kvstoreTable "${table}" is set but kvstoreEndpoint is not`,
      fix: "pass --kvstore-endpoint (http(s)://host for the DynamoDB API, file:./dir for the embedded table)",
    });
    return skipAll(LATER, "settings are not valid");
  }
  let storeAt: ParsedEndpoint;
  let tableAt: ParsedEndpoint | undefined;
  try {
    storeAt = parseEndpoint(endpoint);
    tableAt = kvEndpoint === undefined || table === undefined ? undefined : parseEndpoint(kvEndpoint);
  } catch (e) {
    add({ name: "settings", status: "fail", detail: message(e), fix: "give endpoints as http(s)://host, a bare host, or file:dir" });
    return skipAll(LATER, "settings are not valid");
  }
  const workspace = input.workspace ?? DEFAULT_WORKSPACE;
  add({
    name: "settings",
    status: "ok",
    detail: `bucket ${s.bucket.value}, endpoint ${redactUrl(endpoint)} (${s.endpoint.source})${table === undefined ? ", no lock table" : `, lock table ${table} at ${redactUrl(kvEndpoint ?? "")}`}, workspace ${workspace}`,
  });

  // 2. Credentials.
  let identity: Identity | undefined;
  if (storeAt.kind === "file" && tableAt?.kind !== "http") {
    add({ name: "credentials", status: "ok", detail: "not needed: embedded store and table (file: endpoints)" });
  } else {
    try {
      identity = await identityFor(s, input.settings);
      const before = identity.tried ?? [];
      add({ name: "credentials", status: "ok", detail: before.length === 0 ? identity.source : `${identity.source}; tried first: ${before.join("; ")}` });
    } catch (e) {
      add({
        name: "credentials",
        status: "fail",
        detail: credentialsFailure(s, e),
        fix: "set PROVIDER_ACCESS_KEY and PROVIDER_SECRET_KEY (or --access-key / --secret-key), a profile (--profile), a compute role (--compute-role-name) or a role to assume (--assume-role-role-arn); or AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE (~/.aws), web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), or the container or instance metadata service",
      });
      return skipAll(LATER.slice(1), "no credentials");
    }
  }

  // 3. Object-store endpoint.
  let storeOk = false;
  if (storeAt.kind === "http") {
    const { url } = storeAt;
    const r = await reachHttp(url);
    if (r.ok) {
      storeOk = true;
      add({ name: "object-store endpoint", status: "ok", detail: `${redactUrl(url)} answers (HTTP ${r.status})` });
    } else {
      add({
        name: "object-store endpoint",
        status: "fail",
        detail: `cannot reach ${redactUrl(url)} (${r.reason})`,
        fix: r.fix ?? "check --endpoint / PROVIDER_OBJECT_STORE_ENDPOINT and that the server is running and reachable from here",
      });
    }
  } else {
    const r = await reachDir(storeAt.dir);
    storeOk = r.ok;
    if (r.ok) add({ name: "object-store endpoint", status: "ok", detail: `embedded store, ${r.detail}` });
    else
      add({
        name: "object-store endpoint",
        status: "fail",
        detail: `embedded store: ${r.reason}`,
        fix: `point --endpoint at a directory you can write (file:./.objstate, file:///abs/dir)`,
      });
  }

  // 4. Bucket exists and is writable.
  let bucketOk = false;
  if (!storeOk) {
    add({ name: "bucket", status: "skip", detail: "the object-store endpoint is not reachable" });
  } else {
    const bucket = s.bucket.value as string;
    const store = await storeFor(s, storeAt, identity, input.settings);
    try {
      if (!(await store.bucketExists())) {
        if (storeAt.kind === "http") {
          add({
            name: "bucket",
            status: "fail",
            detail: `bucket ${bucket} does not exist at ${store.location}`,
            fix: "create it with objstate init --create-bucket, or check --bucket and --endpoint",
          });
        } else {
          bucketOk = true;
          add({
            name: "bucket",
            status: "ok",
            detail: `bucket ${bucket} does not exist yet; the embedded store creates it on first write (or: objstate init --create-bucket)`,
          });
        }
      } else {
        const prefix = (s.prefix.value ?? "").replace(/^\/+|\/+$/g, "");
        const probe = `${prefix === "" ? "" : `${prefix}/`}.objstate-doctor-${randomUUID()}`;
        try {
          await store.put(probe, Buffer.from("objstate doctor probe\n"), {
            contentType: "text/plain",
            acl: s.acl.value as Acl | undefined,
            encrypt: s.encrypt.value === true,
          });
          // purge, not delete: on a versioned bucket a delete would leave a version and a marker.
          await store.purge(probe);
          bucketOk = true;
          add({ name: "bucket", status: "ok", detail: `bucket ${bucket} exists and is writable (wrote and deleted ${probe})` });
          await conditionChecks(store, `${prefix === "" ? "" : `${prefix}/`}.objstate-doctor`, input.settings.values.lockfile, add);
        } catch (e) {
          add({
            name: "bucket",
            status: "fail",
            detail: `bucket ${bucket} exists but writing ${probe} failed: ${message(e)}`,
            fix: diskFix(e) ?? `let these credentials put and delete objects in ${bucket}${prefix === "" ? "" : ` under ${prefix}/`}`,
          });
        }
        add(await versionsCheck(store, bucket));
      }
    } catch (e) {
      add({
        name: "bucket",
        status: "fail",
        detail: message(e),
        fix:
          diskFix(e) ?? (isObjstateError(e, "ACCESS_DENIED") ? "check the credentials and their permissions on the bucket" : "check --bucket and --endpoint"),
      });
    } finally {
      store.close();
    }
  }

  // 5. Lock-table endpoint and 6. lock table.
  let tableOk = false;
  let tableExists = false;
  if (tableAt === undefined) {
    add({ name: "lock-table endpoint", status: "skip", detail: "no lock table configured" });
    if (input.settings.values.lockfile)
      add({
        name: "lock table",
        status: "ok",
        detail: "no lock table: state is locked with lockfiles ({state path}.tflock; see the If-None-Match and If-Match checks)",
      });
    else
      add({
        name: "lock table",
        status: "warn",
        detail: "no lock table is configured (kvstoreTable): state is NOT locked, and concurrent writers can overwrite each other",
        fix: "set --kvstore-table and --kvstore-endpoint, then run objstate init --create-table",
      });
  } else {
    let reachable: boolean;
    if (tableAt.kind === "http") {
      const { url } = tableAt;
      const r = await reachHttp(url);
      reachable = r.ok;
      if (r.ok) add({ name: "lock-table endpoint", status: "ok", detail: `${redactUrl(url)} answers (HTTP ${r.status})` });
      else
        add({
          name: "lock-table endpoint",
          status: "fail",
          detail: `cannot reach ${redactUrl(url)} (${r.reason})`,
          fix: r.fix ?? "check --kvstore-endpoint and that the server is running and reachable from here",
        });
    } else {
      const r = await reachDir(tableAt.dir);
      reachable = r.ok;
      if (r.ok) add({ name: "lock-table endpoint", status: "ok", detail: `embedded table, ${r.detail}` });
      else
        add({
          name: "lock-table endpoint",
          status: "fail",
          detail: `embedded table: ${r.reason}`,
          fix: "point --kvstore-endpoint at a directory you can write",
        });
    }
    if (!reachable) {
      add({ name: "lock table", status: "skip", detail: "the lock-table endpoint is not reachable" });
    } else {
      const locks = await lockTableFor(s, tableAt, identity, input.settings);
      try {
        const found = await inspectLockTable(locks);
        if (found.status === "missing") {
          if (tableAt.kind === "http") {
            add({
              name: "lock table",
              status: "fail",
              detail: `lock table ${table} does not exist (${locks.location})`,
              fix: "create it with objstate init --create-table (one key, LockID of type String)",
            });
          } else {
            tableOk = true;
            add({
              name: "lock table",
              status: "ok",
              detail: `lock table ${table} does not exist yet; the embedded table is created on first use (or: objstate init --create-table)`,
            });
          }
        } else if (found.status === "invalid") {
          add({
            name: "lock table",
            status: "fail",
            detail: `lock table ${table} has ${found.keys}; it must have exactly one key, LockID of type String (S)`,
            fix: `use a table keyed by LockID (String): point --kvstore-table at a new table name and run objstate init --create-table`,
          });
        } else {
          tableOk = true;
          tableExists = true;
          add({ name: "lock table", status: "ok", detail: `lock table ${table} has key LockID (String)` });
        }
      } catch (e) {
        add({
          name: "lock table",
          status: "fail",
          detail: message(e),
          fix:
            diskFix(e) ??
            (isObjstateError(e, "ACCESS_DENIED") ? "check the credentials and their permissions on the table" : "check --kvstore-table and --kvstore-endpoint"),
        });
      } finally {
        locks.close();
      }
    }
  }

  // 7. Digest of the selected workspace.
  if (table === undefined) {
    add({ name: "digest", status: "skip", detail: "no lock table, so no digests" });
  } else if (!bucketOk || !tableOk) {
    add({ name: "digest", status: "skip", detail: "needs a working bucket and lock table" });
  } else if (!tableExists) {
    add({ name: "digest", status: "ok", detail: `no digests yet (the lock table does not exist yet)` });
  } else {
    try {
      const backend = await connect(config, input.settings, { digestRetry: { timeoutMs: 0, intervalMs: 0 } });
      try {
        const d = await backend.digestStatus(workspace);
        const where = backend.describe(workspace);
        const repair = `objstate state repair${workspace === "default" ? "" : ` -w ${workspace}`}`;
        if (d.status === "no-state") add({ name: "digest", status: "ok", detail: `workspace ${workspace} has no state yet (${where})` });
        else if (d.status === "no-digest")
          add({
            name: "digest",
            status: "ok",
            detail: `the state of workspace ${workspace} (${d.size} bytes) has no digest recorded, so there is nothing to check it against (the next write records one)`,
          });
        else if (d.status === "match")
          add({ name: "digest", status: "ok", detail: `the state of workspace ${workspace} (${d.size} bytes) matches its digest` });
        else if (d.status === "torn") {
          add({
            name: "digest",
            status: "fail",
            detail: `the last write to workspace ${workspace} was stored but never committed: the stored state is a complete write by objstate (MD5 ${d.actual ?? "?"}), the lock table still has ${d.recorded}`,
            fix: `run ${repair} to commit it (the next read does it too, once no writer of it holds the lock)`,
          });
        } else if (d.status === "superseded") {
          add({
            name: "digest",
            status: "warn",
            detail: `the newest version of workspace ${workspace}'s state (MD5 ${d.actual ?? "?"}) is a write that never committed (another write was committed after it started); reads serve the committed state (${d.recorded})`,
            fix: `run ${repair} to write the committed state again as the newest version (so other clients of the bucket see it too)`,
          });
        } else {
          add({
            name: "digest",
            status: "fail",
            detail: `the state of workspace ${workspace} does not match its digest (lock table ${d.recorded}, object ${d.actual ?? "missing"})`,
            fix:
              d.actual === undefined
                ? `run ${repair} to remove the digest of the missing state`
                : `if the stored state is right, run ${repair} --force to record its digest; else push the right state again (objstate state push)`,
          });
        }
        const left = await backend.leftovers();
        if (left.length > 0) {
          const oldest = left[0]?.since;
          add({
            name: "leftovers",
            status: "warn",
            detail: `${left.length} leftover${left.length === 1 ? "" : "s"} of unfinished writes under the prefix (${left
              .map((l) => `${l.kind} ${l.key ?? l.id}`)
              .slice(0, 3)
              .join(", ")}${left.length > 3 ? ", …" : ""}; oldest from ${oldest?.toISOString() ?? "unknown"})`,
            fix: `run ${repair} to remove those older than an hour (younger ones may belong to a writer still at work)`,
          });
        } else add({ name: "leftovers", status: "ok", detail: "no leftovers of unfinished writes" });
      } finally {
        backend.close();
      }
    } catch (e) {
      add({ name: "digest", status: "fail", detail: message(e), fix: "see the message; objstate state pull shows the same error" });
    }
  }

  // 8. State encryption, only when configured: does the selected workspace's state decrypt, and with which method.
  const encryption = input.settings.values.encryption;
  if (encryption !== undefined) {
    const what = describeEncryption(encryption);
    if (!bucketOk) add({ name: "encryption", status: "skip", detail: `${what}; reading the state needs a working bucket` });
    else {
      try {
        const backend = await connect(config, input.settings, { readOnly: true, digestRetry: { timeoutMs: 0, intervalMs: 0 } });
        try {
          const read = await backend.readStateVersion(workspace);
          if (read === null) add({ name: "encryption", status: "ok", detail: `${what}; workspace ${workspace} has no state yet` });
          else if (read.encryption?.migration === true)
            add({
              name: "encryption",
              status: "warn",
              detail: `the state of workspace ${workspace} was read with ${read.encryption.method}, not the primary method (${what})`,
              fix: `run objstate state rekey${workspace === "default" ? "" : ` -w ${workspace}`} to write it under the primary method`,
            });
          else add({ name: "encryption", status: "ok", detail: `the state of workspace ${workspace} decrypts with ${read.encryption?.method ?? "?"}` });
        } finally {
          backend.close();
        }
      } catch (e) {
        add({
          name: "encryption",
          status: "fail",
          detail: message(e),
          fix: "configure the key the state was written with (as a fallback method), in the encryption setting or TF_ENCRYPTION",
        });
      }
    }
  }
  return results;
}

/** `objstate doctor`. */
export async function doctorAction(opts: Opts): Promise<void> {
  const input = gatherSettings(opts);
  const results = await runChecks(input);
  const failed = results.filter((r) => r.status === "fail").length;
  if (opts.json === true) {
    printJson({ ok: failed === 0, checks: results });
  } else {
    const p = paint(process.stdout);
    const mark: Record<CheckStatus, string> = { ok: p.green("ok  "), warn: p.yellow("warn"), fail: p.red("FAIL"), skip: p.dim("skip") };
    for (const r of results)
      process.stdout.write(`${mark[r.status]}  ${r.name}: ${printable(r.detail)}${r.fix === undefined ? "" : ` — fix: ${printable(r.fix)}`}\n`);
  }
  if (failed > 0) throw new CliError("DOCTOR_FAILED", `${failed} check${failed === 1 ? "" : "s"} failed`);
}
