/**
 * The audit log (src/backend/audit.ts) on the embedded store: one object per change, several
 * replicas at once, a lost reply, a store that fails, and reading back (old day parts too) by
 * time and workspace.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AuditLog, auditRecord, parseSince, type AuditEntry, type AuditRecord } from "../../../src/backend/audit.js";
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

/** The audit objects' keys, in listing order. */
async function keysOf(store: ObjectStoreDriver): Promise<string[]> {
  const keys: string[] = [];
  for await (const k of store.list(auditPrefix(L))) keys.push(k);
  return keys;
}

async function versionsOf(store: ObjectStoreDriver, key: string): Promise<number> {
  let n = 0;
  for await (const _ of store.listVersions(key)) n++;
  return n;
}

/** A driver whose next `n` puts are stored and then answered with a timeout (a reply lost on the way). */
function lostReplies(store: ObjectStoreDriver, n: number): ObjectStoreDriver {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop === "put") {
        return async (key: string, body: Buffer, options: PutOptions = {}) => {
          const r = await target.put(key, body, options);
          if (n-- > 0) throw new ObjstateError("ENDPOINT_TIMEOUT", "no answer (test)");
          return r;
        };
      }
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

describe("audit log", () => {
  it("stores each change as its own object under {prefix}/@objstate/audit/{day}/, keyed by its time, with only the principal's own fields", async () => {
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
    const keys = await keysOf(store);
    assert.equal(keys.length, 2, keys.join(","));
    for (const key of keys) assert.match(key, /^env:\/@objstate\/audit\/2026-11-26\/2026-11-26T10:00:00\.000Z-[0-9a-f]{12}\.json$/);
    const lines = (await Promise.all(keys.map((k) => linesOf(store, k)))).flat().sort((a, b) => b.action.localeCompare(a.action));
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
    for (const key of keys) assert.ok(!(await store.get(key))!.body.toString().includes("secret-token-value"));
  });

  it("two replicas at once: every event stored once, events that waited grouped into one object, none replacing another", async () => {
    const { endpoint, bucket, store } = await freshStore();
    // Two drivers over one bucket: two servers, each with its own process state.
    const other = await openStore({ bucket, endpoint });
    const a = new AuditLog(store, L, { deadlineMs: 30_000 });
    const b = new AuditLog(other, L, { deadlineMs: 30_000 });
    const n = 40;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => [a.record(entry(`a-${i}`)), b.record(entry(`b-${i}`))]).flat());
    assert.ok(results.every((r) => r));
    const keys = await keysOf(store);
    // Group commit: each log stores its first event alone, and the 39 that waited for it in one more object.
    assert.equal(keys.length, 4, keys.join(","));
    const page = await a.read({ since: new Date(Date.now() - 3_600_000), limit: 1000 });
    const want = Array.from({ length: n }, (_, i) => [`a-${i}`, `b-${i}`])
      .flat()
      .sort();
    assert.deepEqual(page.records.map((r) => r.workspace).sort(), want);
    for (const key of keys) assert.equal(await versionsOf(store, key), 1, `${key} was written once`);
  });

  it("an object of grouped events is keyed by its latest event: a read from a time between them finds the later one", async () => {
    const { store } = await freshStore();
    const times = ["2026-11-26T10:00:00.000Z", "2026-11-26T10:00:01.000Z", "2026-11-26T10:00:02.000Z"].map((t) => new Date(t));
    const log = new AuditLog(store, L, { now: () => times.shift() ?? new Date() });
    assert.deepEqual(await Promise.all(["first", "grouped-1", "grouped-2"].map((w) => log.record(entry(w)))), [true, true, true]);
    const keys = await keysOf(store);
    assert.equal(keys.length, 2, keys.join(","));
    assert.ok(
      keys.some((k) => k.includes("/2026-11-26T10:00:02.000Z-")),
      keys.join(","),
    );
    const page = await log.read({ since: new Date("2026-11-26T10:00:01.500Z"), limit: 10 });
    assert.deepEqual(
      page.records.map((r) => r.workspace),
      ["grouped-2"],
    );
  });

  it("a write that landed but whose answer was lost is tried again and finds itself there: one object, one event", async () => {
    const { store } = await freshStore();
    const errors: unknown[] = [];
    const log = new AuditLog(lostReplies(store, 1), L, { deadlineMs: 10_000, onError: (e) => errors.push(e) });
    assert.equal(await log.record(entry("once")), true);
    assert.ok(errors.some((e) => isObjstateError(e, "ENDPOINT_TIMEOUT")));
    const keys = await keysOf(store);
    assert.equal(keys.length, 1);
    assert.equal(await versionsOf(store, keys[0] as string), 1);
    const page = await log.read({ since: new Date(Date.now() - 3_600_000), limit: 10 });
    assert.deepEqual(
      page.records.map((r) => r.workspace),
      ["once"],
    );
  });

  it("a store outage past the deadline: the event goes to onLost (the server's log), never nowhere; the next one is stored once the store is back", async () => {
    const { store } = await freshStore();
    const f = flaky(store);
    const errors: unknown[] = [];
    const lost: string[] = [];
    const log = new AuditLog(f.store, L, { deadlineMs: 300, onError: (e) => errors.push(e), onLost: (l) => lost.push(l) });
    f.setDown(true);
    assert.equal(await log.record(entry("w1", { serial: 1 })), false);
    assert.equal(log.pending, 0);
    assert.ok(
      errors.length >= 2 && errors.every((e) => isObjstateError(e, "ENDPOINT_UNREACHABLE")),
      `retried within the deadline: ${errors.map(String).join("; ")}`,
    );
    assert.deepEqual(
      lost.map((l) => [(JSON.parse(l) as AuditRecord).workspace, (JSON.parse(l) as AuditRecord).serial]),
      [["w1", 1]],
    );
    f.setDown(false);
    assert.equal(await log.record(entry("w2")), true);
    assert.deepEqual(
      (await log.read({ since: new Date(Date.now() - 3_600_000), limit: 10 })).records.map((r) => r.workspace),
      ["w2"],
    );
  });

  it("a pause that ends past the deadline (a late timer on a busy process) issues no further write", async () => {
    const { store } = await freshStore();
    let puts = 0;
    const counting = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "put") {
          return () => {
            puts++;
            return Promise.reject(new ObjstateError("ENDPOINT_UNREACHABLE", "the store is down (test)"));
          };
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const errors: unknown[] = [];
    // The first failure blocks the event loop past the deadline while the retry's pause runs.
    const block = (): void => {
      const until = Date.now() + 400;
      while (Date.now() < until);
    };
    const log = new AuditLog(counting, L, {
      deadlineMs: 300,
      onError: (e) => {
        errors.push(e);
        if (errors.length === 1) setTimeout(block, 0);
      },
    });
    assert.equal(await log.record(entry("late")), false);
    assert.equal(puts, 1, "no write was issued after the deadline");
    assert.ok(
      errors.every((e) => isObjstateError(e, "ENDPOINT_UNREACHABLE")),
      errors.map(String).join("; "),
    );
  });

  it("reading: day parts from before decision 087 and events, merged in time order, from `since`, one workspace, at most `limit`", async () => {
    const { store } = await freshStore();
    const prefix = auditPrefix(L);
    const line = (sec: number, ws: string, serial: number): string =>
      `${JSON.stringify({ ...auditRecord(entry(ws, { serial }), new Date(Date.parse("2026-11-26T00:00:00Z") + sec * 1000)) })}\n`;
    // The old layout: a day's parts of appended lines, one damaged line among them.
    await store.put(`${prefix}2026-11-25.jsonl`, Buffer.from(line(-10, "even", -2)));
    await store.put(`${prefix}2026-11-26.jsonl`, Buffer.from(line(2, "odd", 1) + line(5, "even", 4) + "not a record\n"));
    await store.put(`${prefix}2026-11-26.1.jsonl`, Buffer.from(line(8, "odd", 7)));
    let t = Date.parse("2026-11-26T00:00:00.000Z");
    const log = new AuditLog(store, L, { now: () => new Date((t += 1000)) });
    for (let i = 0; i < 12; i++) {
      if (i === 1 || i === 4 || i === 7) t += 1000;
      else assert.equal(await log.record(entry(i % 2 === 0 ? "even" : "odd", { serial: i })), true);
    }
    const all = await log.read({ since: new Date("2026-11-26T00:00:00Z"), limit: 100 });
    assert.deepEqual(
      all.records.map((r) => r.serial),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    );
    assert.equal(all.truncated, false);
    assert.equal(all.unreadable, 1);
    const even = await log.read({ since: new Date("2026-11-26T00:00:04Z"), workspace: "even", limit: 3 });
    assert.deepEqual(
      even.records.map((r) => r.serial),
      [4, 6, 8],
    );
    assert.equal(even.truncated, true);
    const back = await log.read({ since: new Date("2026-11-25T00:00:00Z"), limit: 2 });
    assert.deepEqual(
      back.records.map((r) => r.serial),
      [-2, 0],
    );
    assert.equal(back.truncated, true);
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
