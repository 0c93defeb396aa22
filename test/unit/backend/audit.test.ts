/**
 * The audit log (src/backend/audit.ts) on the embedded store: one line per change in the day's
 * object, appends from several replicas that never lose a line, a store that fails, parts, and
 * reading back by time and workspace.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AuditLog, parseSince, type AuditEntry, type AuditRecord } from "../../../src/backend/audit.js";
import type { Principal } from "../../../src/backend/principal.js";
import { auditPrefix, layout } from "../../../src/config/layout.js";
import { isObjstateError, ObjstateError } from "../../../src/errors.js";
import { openStore } from "../../../src/store/index.js";
import type { ObjectStoreDriver, PutOptions } from "../../../src/store/types.js";

const L = layout("env:", "tool.tfstate", "file");
const ALICE: Principal = { name: "alice", via: "password" };

async function freshStore(): Promise<{ endpoint: string; bucket: string; store: ObjectStoreDriver }> {
  const endpoint = `file://${mkdtempSync(join(tmpdir(), "objstate-audit-"))}`;
  const bucket = "audit-test";
  const store = await openStore({ bucket, endpoint });
  await store.createBucket();
  return { endpoint, bucket, store };
}

function entry(workspace: string, extra: Partial<AuditEntry> = {}): AuditEntry {
  return { principal: ALICE, action: "write", workspace, surface: "http", outcome: "ok", ...extra };
}

async function linesOf(store: ObjectStoreDriver, key: string): Promise<AuditRecord[]> {
  const got = await store.get(key);
  assert.ok(got !== null, `${key} exists`);
  return got.body
    .toString("utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as AuditRecord);
}

/** A driver whose calls fail while `down` is set: the store unreachable, then back. */
function flaky(store: ObjectStoreDriver): { store: ObjectStoreDriver; setDown(v: boolean): void } {
  let down = false;
  const fail = (): Promise<never> => Promise.reject(new ObjstateError("ENDPOINT_UNREACHABLE", "the store is down (test)"));
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== "function") return v;
      if (prop === "get" || prop === "put" || prop === "list") {
        return (...args: unknown[]) => (down ? fail() : (v as (...a: unknown[]) => unknown).apply(target, args));
      }
      return (v as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { store: wrapped, setDown: (v) => (down = v) };
}

/**
 * A driver over a store that ignores conditional writes, as the S3 driver meets Ceph RGW on a
 * versioned bucket: it checks the condition itself, then writes unconditionally, and another
 * writer can come in between (here, one turn of the event loop always lies between).
 */
function ignoringConditions(store: ObjectStoreDriver): ObjectStoreDriver {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop === "put") {
        return async (key: string, body: Buffer, options: PutOptions = {}) => {
          const meta = await target.head(key);
          if (options.ifNoneMatch === true && meta !== null) throw new ObjstateError("PRECONDITION_FAILED", "exists (test)");
          if (options.ifMatch !== undefined && meta?.etag !== options.ifMatch) throw new ObjstateError("PRECONDITION_FAILED", "changed (test)");
          await new Promise((r) => setImmediate(r));
          return target.put(key, body, { ...options, ifMatch: undefined, ifNoneMatch: undefined });
        };
      }
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

describe("audit log", () => {
  it("writes one JSON line per change to the day's object under {prefix}/@objstate/audit/, with only the principal's own fields", async () => {
    const { store } = await freshStore();
    const now = new Date("2026-11-26T10:00:00.000Z");
    const log = new AuditLog(store, L, { now: () => now });
    // A principal value carrying more than a principal (a careless caller): only its fields are kept.
    const leaky = { name: "ci", via: "token", tokenId: "tok_abc", token: "secret-token-value" } as Principal;
    const oidc: Principal = {
      name: "oidc",
      via: "oidc",
      oidc: { issuer: "https://issuer.example", subject: "repo:org/infra:ref:refs/heads/main", claims: { repository: "org/infra", ref: "refs/heads/main" } },
    };
    assert.equal(await log.record(entry("prod", { principal: leaky, lockId: "L1", serial: 7, md5: "0".repeat(32) })), true);
    assert.equal(await log.record(entry("prod", { principal: oidc, action: "unlock", lockId: "L1" })), true);
    const key = `${auditPrefix(L)}2026-11-26.jsonl`;
    assert.equal(key, "env:/@objstate/audit/2026-11-26.jsonl");
    const lines = await linesOf(store, key);
    assert.deepEqual(lines, [
      {
        time: "2026-11-26T10:00:00.000Z",
        principal: { name: "ci", via: "token", tokenId: "tok_abc" },
        action: "write",
        workspace: "prod",
        surface: "http",
        outcome: "ok",
        lockId: "L1",
        serial: 7,
        md5: "0".repeat(32),
      },
      {
        time: "2026-11-26T10:00:00.000Z",
        principal: {
          name: "oidc",
          via: "oidc",
          oidc: {
            issuer: "https://issuer.example",
            subject: "repo:org/infra:ref:refs/heads/main",
            claims: { repository: "org/infra", ref: "refs/heads/main" },
          },
        },
        action: "unlock",
        workspace: "prod",
        surface: "http",
        outcome: "ok",
        lockId: "L1",
      },
    ]);
    assert.ok(!(await store.get(key))!.body.toString().includes("secret-token-value"));
  });

  it("two replicas appending at once lose no line: each append is conditional and retried on a conflict", async () => {
    const { endpoint, bucket, store } = await freshStore();
    // Two drivers over one bucket: two servers, each with its own process state.
    const other = await openStore({ bucket, endpoint });
    const a = new AuditLog(store, L, { deadlineMs: 30_000 });
    const b = new AuditLog(other, L, { deadlineMs: 30_000 });
    const n = 40;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => [a.record(entry(`a-${i}`)), b.record(entry(`b-${i}`))]).flat());
    assert.ok(results.every((r) => r));
    const day = new Date().toISOString().slice(0, 10);
    const got = (await linesOf(store, a.dayKey(day))).map((r) => r.workspace).sort();
    const want = Array.from({ length: n }, (_, i) => [`a-${i}`, `b-${i}`])
      .flat()
      .sort();
    assert.deepEqual(got, want);
  });

  it("appends after this log's own last write go without reading the part again; another replica's append in between is read and kept", async () => {
    const { endpoint, bucket, store } = await freshStore();
    let gets = 0;
    const counted = new Proxy(store, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (prop === "get") return (...args: unknown[]) => (gets++, (v as (...a: unknown[]) => unknown).apply(target, args));
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const a = new AuditLog(counted, L, { deadlineMs: 30_000 });
    for (let i = 0; i < 20; i++) assert.equal(await a.record(entry(`a-${i}`)), true);
    // The first append creates the part, the second reads it (and learns its ETags are MD5s).
    assert.ok(gets <= 2, `${gets} reads for 20 appends`);
    const b = new AuditLog(await openStore({ bucket, endpoint }), L, { deadlineMs: 30_000 });
    assert.equal(await b.record(entry("b-0")), true);
    assert.equal(await a.record(entry("a-20")), true);
    const day = new Date().toISOString().slice(0, 10);
    const got = (await linesOf(store, a.dayKey(day))).map((r) => r.workspace);
    assert.deepEqual(got, [...Array.from({ length: 20 }, (_, i) => `a-${i}`), "b-0", "a-20"], "every line once, in order");
  });

  it("on a store that ignores conditions (checked by hand, as on Ceph RGW's versioned buckets), appends that crossed are found in the versions and no line is lost", async () => {
    const { endpoint, bucket, store } = await freshStore();
    const other = await openStore({ bucket, endpoint });
    const a = new AuditLog(ignoringConditions(store), L, { deadlineMs: 30_000 });
    const b = new AuditLog(ignoringConditions(other), L, { deadlineMs: 30_000 });
    const n = 30;
    // One at a time per replica, both replicas at once: every append races the other's.
    await Promise.all([
      (async () => {
        for (let i = 0; i < n; i++) assert.equal(await a.record(entry(`a-${i}`)), true);
      })(),
      (async () => {
        for (let i = 0; i < n; i++) assert.equal(await b.record(entry(`b-${i}`)), true);
      })(),
    ]);
    const day = new Date().toISOString().slice(0, 10);
    const got = (await linesOf(store, a.dayKey(day))).map((r) => r.workspace);
    const want = Array.from({ length: n }, (_, i) => [`a-${i}`, `b-${i}`]).flat();
    assert.deepEqual([...got].sort(), [...want].sort(), "every line once");
  });

  it("a store outage: the change is not held up past the deadline, the line waits in memory and is stored once the store is back", async () => {
    const { store } = await freshStore();
    const f = flaky(store);
    const errors: unknown[] = [];
    const log = new AuditLog(f.store, L, { deadlineMs: 200, onError: (e) => errors.push(e) });
    f.setDown(true);
    assert.equal(await log.record(entry("w1")), false);
    assert.equal(log.pending, 1);
    assert.ok(errors.some((e) => isObjstateError(e, "ENDPOINT_UNREACHABLE")));
    f.setDown(false);
    assert.equal(await log.flush(5_000), true);
    assert.equal(log.pending, 0);
    const day = new Date().toISOString().slice(0, 10);
    assert.deepEqual(
      (await linesOf(store, log.dayKey(day))).map((r) => r.workspace),
      ["w1"],
    );
  });

  it("lines the memory cannot hold, or left at close, go to onOverflow (the server's log), never nowhere", async () => {
    const { store } = await freshStore();
    const f = flaky(store);
    const spilled: string[] = [];
    const log = new AuditLog(f.store, L, { deadlineMs: 100, maxPending: 2, onOverflow: (l) => spilled.push(l) });
    f.setDown(true);
    await Promise.all([log.record(entry("o1")), log.record(entry("o2")), log.record(entry("o3"))]);
    assert.deepEqual(
      spilled.map((l) => (JSON.parse(l) as AuditRecord).workspace),
      ["o1"],
    );
    await log.close(100);
    assert.deepEqual(
      spilled.map((l) => (JSON.parse(l) as AuditRecord).workspace),
      ["o1", "o2", "o3"],
    );
  });

  it("a full part sends the day on to the next part; reading returns every part in order, from `since`, one workspace, at most `limit`", async () => {
    const { store } = await freshStore();
    let t = Date.parse("2026-11-25T23:59:59.000Z");
    const log = new AuditLog(store, L, { partBytes: 600, now: () => new Date((t += 1000)) });
    for (let i = 0; i < 12; i++) assert.equal(await log.record(entry(i % 2 === 0 ? "even" : "odd", { serial: i })), true);
    const keys: string[] = [];
    for await (const k of store.list(auditPrefix(L))) keys.push(k.slice(auditPrefix(L).length));
    assert.ok(keys.includes("2026-11-26.jsonl") && keys.includes("2026-11-26.1.jsonl"), keys.join(","));
    const all = await log.read({ since: new Date("2026-11-26T00:00:00Z"), limit: 100 });
    assert.deepEqual(
      all.records.map((r) => r.serial),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    );
    assert.equal(all.truncated, false);
    const even = await log.read({ since: new Date("2026-11-26T00:00:04Z"), workspace: "even", limit: 3 });
    assert.deepEqual(
      even.records.map((r) => r.serial),
      [4, 6, 8],
    );
    assert.equal(even.truncated, true);
  });

  it("parseSince takes an ISO date, an ISO time with its zone, or a duration back from now; anything else is BAD_REQUEST", () => {
    const now = new Date("2026-11-26T12:00:00Z");
    assert.equal(parseSince("2026-11-20", now).toISOString(), "2026-11-20T00:00:00.000Z");
    assert.equal(parseSince("2026-11-26T10:30:00+01:00", now).toISOString(), "2026-11-26T09:30:00.000Z");
    assert.equal(parseSince("90m", now).toISOString(), "2026-11-26T10:30:00.000Z");
    assert.equal(parseSince("7d", now).toISOString(), "2026-11-19T12:00:00.000Z");
    for (const bad of ["yesterday", "2026-11-26T10:30:00", "2026-13-45", "-1h", ""]) {
      assert.throws(
        () => parseSince(bad, now),
        (e) => isObjstateError(e, "BAD_REQUEST"),
        bad,
      );
    }
  });

  it("refuses a layout whose default workspace's key lies under the audit prefix", async () => {
    const { store } = await freshStore();
    assert.throws(
      () => new AuditLog(store, layout("env:", "@objstate/audit/x.tfstate", "file")),
      (e) => isObjstateError(e, "INVALID_LAYOUT"),
    );
    assert.throws(
      () => new AuditLog(store, layout("", "@objstate/audit/x", "file", "s3")),
      (e) => isObjstateError(e, "INVALID_LAYOUT"),
    );
    // Any workspace name is clear of it: `@` is in none.
    assert.doesNotThrow(() => new AuditLog(store, layout("env:", "@objstate", "file")));
  });
});
