/**
 * backendConsoleApi over a real embedded store and lock table: summaries from one listing
 * (size, time), serial and who from a HEAD and resource counts made in the background, outputs, locks,
 * force-unlock, and history, diff and rollback through the backend's version methods.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { backendConsoleApi, lockView } from "../../../src/console/adapter.js";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { makeState } from "../../support/console-memory.js";
import { embeddedTarget } from "../../support/targets.js";

/** Poll `read` until `done` holds (background counting), at most 5 s. */
async function eventually<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  const until = Date.now() + 5000;
  for (;;) {
    const v = await read();
    if (done(v) || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("backendConsoleApi over the embedded store", () => {
  let backend: ObjectStoreBackend;
  const prod = makeState(5, 3, { url: { value: "https://x" }, pw: { value: "s3cret", sensitive: true } });

  before(async () => {
    const props = await embeddedTarget().setup({ locks: true });
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, who: "tester@console", onWarning: () => {} });
    await backend.writeState("prod", prod);
    await backend.writeState("default", makeState(1, 0));
  });
  after(() => backend.close());

  it("lists every workspace with size and time from the listing (no state read), serial and who read and resources counted in the background, and locks", async () => {
    const lock = await backend.lock("prod", { operation: "apply", info: "CI run 7" });
    try {
      const reads: string[] = [];
      const counting: ObjectStoreBackend = Object.assign(Object.create(backend) as ObjectStoreBackend, {
        readState: (ws: string) => (reads.push(ws), backend.readState(ws)),
      });
      const api = backendConsoleApi(counting);
      assert.equal(await api.hasHistory(), true, "the embedded store keeps every version");
      const list = await api.listWorkspaces();
      assert.deepEqual(
        list.map((w) => w.name),
        ["default", "prod"],
      );
      const p = list[1];
      assert.equal(p?.size, Buffer.byteLength(prod));
      assert.ok(Math.abs(Date.parse(p?.lastWrite?.time ?? "") - Date.now()) < 60_000);
      assert.equal(p?.lastWrite?.pending, true, "serial and who are object metadata: read in the background");
      assert.equal(p?.lastWrite?.who, undefined);
      const known = await eventually(
        () => api.listWorkspaces(),
        (l) => l[1]?.lastWrite?.pending !== true,
      );
      assert.equal(known[1]?.lastWrite?.serial, 5);
      assert.equal(known[1]?.lastWrite?.who, "tester@console");
      assert.equal(known[1]?.lastWrite?.time, p?.lastWrite?.time, "the listing's time is the HEAD's");
      assert.equal(p?.resources, undefined, "not counted yet on the first view: the page does not wait for state reads");
      assert.deepEqual(p?.lock, { id: lock.ID, who: "tester@console", operation: "apply", info: "CI run 7", created: lock.Created, expires: undefined });
      assert.equal(list[0]?.lock, null);
      const later = await eventually(
        () => api.listWorkspaces(),
        (l) => l[1]?.resources !== undefined,
      );
      assert.equal(later[1]?.resources, 3);
      assert.equal(later[0]?.resources, 0);
      const readsAfterCount = reads.length;
      await api.listWorkspaces();
      assert.equal(reads.length, readsAfterCount, "a count is kept for as long as the write it was made from is the current one");
      assert.equal((await api.locks()).get("prod")?.id, lock.ID);
      assert.equal(await api.lock("default"), null);
      const h = await api.history("prod", { limit: 5 });
      assert.deepEqual(
        h.map((v) => [v.serial, v.isLatest, v.resources, v.who]),
        [[5, true, 3, "tester@console"]],
      );
      await assert.rejects(api.forceUnlock("prod", "not-the-id"), (e) => isObjstateError(e, "LOCK_ID_MISMATCH"));
      await api.forceUnlock("prod", lock.ID);
      assert.equal(await backend.lockInfo("prod"), null);
    } finally {
      await backend.unlock("prod", lock.ID).catch(() => {});
    }
  });

  it("a new write is counted again; one workspace's own page counts at once", async () => {
    const api = backendConsoleApi(backend);
    await backend.writeState("counted", makeState(1, 1), { force: true });
    assert.equal((await api.workspace("counted")).resources, 1);
    await backend.writeState("counted", makeState(2, 2), { force: true });
    const w = await api.workspace("counted");
    assert.equal(w.resources, 2);
    assert.equal(w.lastWrite?.serial, 2);
  });

  it("the Workspaces list makes no HEAD per workspace: a write seen before is reused while the listing shows its ETag, a new write shows its size and time at once and its serial once read; locks and a workspace's own page are fresh", async () => {
    const heads: string[] = [];
    const counting: ObjectStoreBackend = Object.assign(Object.create(backend) as ObjectStoreBackend, {
      lastWrite: (ws: string) => (heads.push(ws), backend.lastWrite(ws)),
    });
    const api = backendConsoleApi(counting);
    await backend.writeState("cached", makeState(1, 1), { force: true });
    const row = async (): Promise<ReturnType<typeof api.listWorkspaces> extends Promise<(infer R)[]> ? R | undefined : never> =>
      (await api.listWorkspaces()).find((w) => w.name === "cached");
    assert.equal((await eventually(row, (r) => r?.lastWrite?.pending !== true))?.lastWrite?.serial, 1);
    const headsBefore = heads.length;
    assert.equal((await row())?.lastWrite?.serial, 1);
    assert.equal(heads.length, headsBefore, "an unchanged write is not read again");
    const bigger = makeState(2, 9);
    await backend.writeState("cached", bigger, { force: true });
    const lock = await backend.lock("cached");
    try {
      const changed = await row();
      assert.equal(changed?.size, Buffer.byteLength(bigger), "the new size at once, from the listing");
      assert.equal(changed?.lastWrite?.pending, true, "never the old serial beside the new size");
      assert.equal(changed?.lastWrite?.serial, null);
      assert.equal(changed?.lock?.id, lock.ID, "the lock is read fresh");
      assert.equal((await eventually(row, (r) => r?.lastWrite?.pending !== true))?.lastWrite?.serial, 2);
      await backend.writeState("cached", makeState(3, 3), { force: true, lockId: lock.ID });
      assert.equal((await api.workspace("cached")).lastWrite?.serial, 3, "one workspace's page reads the store");
      await backend.deleteWorkspace("cached", { lockId: lock.ID });
      assert.equal(
        (await api.listWorkspaces()).find((w) => w.name === "cached"),
        undefined,
        "a deleted workspace leaves the list",
      );
    } finally {
      await backend.unlock("cached", lock.ID).catch(() => {});
    }
  });

  it("outputs with their sensitivity, sorted; a workspace without state has none", async () => {
    const api = backendConsoleApi(backend);
    assert.deepEqual(await api.outputs("prod"), [
      { name: "pw", value: '"s3cret"', sensitive: true },
      { name: "url", value: '"https://x"', sensitive: false },
    ]);
    assert.deepEqual(await api.outputs("nothing-here"), []);
    const none = await api.workspace("nothing-here");
    assert.equal(none.lastWrite, null);
    assert.equal(none.size, 0);
  });

  it("hasHistory is what the store says of versioning, asked once per TTL", async () => {
    let asked = 0;
    let status: "enabled" | "off" = "off";
    let t = 0;
    const b: ObjectStoreBackend = Object.assign(Object.create(backend) as ObjectStoreBackend, {
      versioning: () => (asked++, Promise.resolve(status)),
    });
    const api = backendConsoleApi(b, { versioningTtlMs: 1000, now: () => t });
    assert.equal(await api.hasHistory(), false);
    status = "enabled";
    assert.equal(await api.hasHistory(), false, "reused within the TTL");
    t += 1000;
    assert.equal(await api.hasHistory(), true);
    assert.equal(asked, 2);
  });

  it("a lease's Expires (epoch seconds) becomes an ISO time", () => {
    const info = { ID: "i", Operation: "o", Info: "", Who: "w", Version: "v", Created: "c", Path: "p", Expires: 1_800_000_000 };
    assert.equal(lockView(info)?.expires, "2027-01-15T08:00:00.000Z");
    assert.equal(lockView(null), null);
  });

  it("history (newest first, ISO times, resources for the newest chartVersions), diff by version, rollback to a new version", async () => {
    await backend.writeState("hist", makeState(1, 1), { force: true });
    await backend.writeState("hist", makeState(2, 2));
    await backend.writeState("hist", makeState(3, 4));
    const api = backendConsoleApi(backend, { chartVersions: 2 });
    const h = await api.history("hist", { limit: 10 });
    assert.deepEqual(
      h.map((v) => [v.serial, v.resources, v.isLatest]),
      [
        [3, 4, true],
        [2, 2, false],
        [1, undefined, false],
      ],
    );
    assert.ok(!Number.isNaN(Date.parse(h[0]?.lastModified ?? "")));
    const [v3, , v1] = h.map((v) => v.versionId) as [string, string, string];
    const d = await api.diff("hist", v1, v3);
    assert.equal(d.resources.added.length, 3);
    await assert.rejects(api.diff("hist", v1, "no-such-version"), (e) => isObjstateError(e, "VERSION_NOT_FOUND"));
    const rolled = await api.rollback("hist", v1);
    assert.equal(rolled.serial, 4);
    assert.match(rolled.md5 ?? "", /^[0-9a-f]{32}$/);
    const after = await api.history("hist", { limit: 10 });
    assert.equal(after.length, 4);
    assert.deepEqual([after[0]?.serial, after[0]?.operation, after[0]?.resources, after[0]?.isLatest], [4, "rollback", 1, true]);
    assert.equal((await api.workspace("hist")).resources, 1);
    assert.equal(await backend.lockInfo("hist"), null, "the rollback's own lock is released");
  });

  it("version: one version by ID, from the versions described before (no listing), else searched among the newest `limit`", async () => {
    await backend.writeState("one", makeState(1, 1), { force: true });
    await backend.writeState("one", makeState(2, 2));
    let listings = 0;
    const counting: ObjectStoreBackend = Object.assign(Object.create(backend) as ObjectStoreBackend, {
      history: (ws: string, o: { limit?: number }) => (listings++, backend.history(ws, o)),
    });
    const fresh = backendConsoleApi(counting);
    const [v2, v1] = (await backendConsoleApi(backend).history("one", { limit: 10 })).map((v) => v.versionId) as [string, string];
    assert.equal((await fresh.version("one", v1, { limit: 10 }))?.serial, 1, "searched when never described");
    assert.equal(listings, 1);
    assert.equal(await fresh.version("one", "no-such-version", { limit: 10 }), null);
    const warm = backendConsoleApi(counting);
    await warm.history("one", { limit: 10 });
    listings = 0;
    assert.deepEqual([(await warm.version("one", v2, { limit: 10 }))?.serial, (await warm.version("one", v1, { limit: 10 }))?.serial], [2, 1]);
    assert.equal(listings, 0, "version contents never change: no listing, no read");
  });

  it("exists: default, a workspace with a state, one only locked, and a deleted one with versions; not a name with nothing", async () => {
    const api = backendConsoleApi(backend);
    assert.equal(await api.exists("default"), true);
    assert.equal(await api.exists("prod"), true);
    assert.equal(await api.exists("nothing-here"), false);
    const lock = await backend.lock("locked-only", { operation: "apply" });
    try {
      assert.equal(await api.exists("locked-only"), true, "a lock without a state: its page offers force-unlock");
    } finally {
      await backend.unlock("locked-only", lock.ID);
    }
    assert.equal(await api.exists("locked-only"), false);
    await backend.writeState("gone", makeState(1, 1));
    await backend.deleteWorkspace("gone");
    assert.equal(await backend.readState("gone"), null);
    assert.equal(await api.exists("gone"), true, "its versions can still be rolled back to");
  });

  it("a rollback confirmed against a version that is no longer current is refused under the lock; nothing is written", async () => {
    const api = backendConsoleApi(backend);
    await backend.writeState("confirmed", makeState(1, 1), { force: true });
    await backend.writeState("confirmed", makeState(2, 2), { force: true });
    const [seen, first] = (await api.history("confirmed", { limit: 5 })).map((v) => v.versionId) as [string, string];
    await backend.writeState("confirmed", makeState(3, 3), { force: true });
    await assert.rejects(api.rollback("confirmed", first, { expectCurrent: seen }), (e) => isObjstateError(e, "STATE_CONFLICT"));
    assert.equal((await api.history("confirmed", { limit: 5 })).length, 3, "nothing written");
    const now = (await api.history("confirmed", { limit: 1 }))[0]?.versionId;
    assert.equal((await api.rollback("confirmed", first, { expectCurrent: now })).serial, 4);
  });
});

describe("the console's background queue", () => {
  it("lets the event loop turn between jobs that never wait on I/O (the embedded store's)", async () => {
    const { backgroundQueue } = await import("../../../src/console/adapter.js");
    const later = backgroundQueue(2);
    const JOBS = 5000;
    let done = 0;
    for (let i = 0; i < JOBS; i++) later(`k${i}`, () => Promise.resolve(done++));
    assert.equal(done, 0, "no job runs before the caller (the page) has been answered");
    // Exact, whatever the machine's speed: an immediate queued now runs in the same turn as
    // the queue's first, after its first `limit` jobs; a queue that started each next job
    // from the last one's promise would run all of them first.
    const seenByImmediate = await new Promise<number>((r) => setImmediate(() => r(done)));
    assert.equal(seenByImmediate, 2, `the next turn came after ${seenByImmediate} of ${JOBS} jobs`);
    // And timers get their turn too: one due in 1 ms runs long before 5,000 jobs (2,500
    // turns of the loop) are done. (A bound of 50 jobs here was flaky: a fast turn costs a
    // few µs, so tens of jobs can run before the timer is due.)
    const seenByTimer = await new Promise<number>((r) => setTimeout(() => r(done), 0));
    assert.ok(seenByTimer < JOBS, `the timer ran after ${seenByTimer} of ${JOBS} jobs`);
    while (done < JOBS) await new Promise((r) => setImmediate(r));
    assert.equal(done, JOBS);
  });

  it("runs one job per key at a time, at most `limit` at once", async () => {
    const { backgroundQueue } = await import("../../../src/console/adapter.js");
    const later = backgroundQueue(3);
    let running = 0;
    let peak = 0;
    let runs = 0;
    const job = async (): Promise<void> => {
      running++;
      runs++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
    };
    for (let i = 0; i < 10; i++) later(`k${i % 5}`, job);
    while (runs < 5 || running > 0) await new Promise((r) => setTimeout(r, 5));
    assert.equal(runs, 5, "a key queued again before it ran keeps its one place");
    assert.equal(peak, 3);
  });
});
