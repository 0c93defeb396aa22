/**
 * backendConsoleApi over a real embedded store and lock table: summaries, outputs, locks,
 * force-unlock; history and rollback through the version methods when a backend has them.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { backendConsoleApi, lockView, type ConsoleBackend, type VersionRecord } from "../../../src/console/adapter.js";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { makeState } from "../../support/console-memory.js";
import { embeddedTarget } from "../../support/targets.js";

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

  it("lists every workspace with size, resources, serial and lock; the backend keeps history", async () => {
    const lock = await backend.lock("prod", { operation: "apply", info: "CI run 7" });
    try {
      const api = backendConsoleApi(backend);
      assert.equal(api.hasHistory, true);
      const list = await api.listWorkspaces();
      assert.deepEqual(list.map((w) => w.name), ["default", "prod"]);
      const p = list[1];
      assert.equal(p?.size, Buffer.byteLength(prod));
      assert.equal(p?.resources, 3);
      // The last write comes from the store's history: when and by whom.
      assert.equal(p?.lastWrite?.serial, 5);
      assert.equal(p?.lastWrite?.who, "tester@console");
      assert.ok(Math.abs(Date.parse(p?.lastWrite?.time ?? "") - Date.now()) < 60_000);
      assert.deepEqual(p?.lock, { id: lock.ID, who: "tester@console", operation: "apply", info: "CI run 7", created: lock.Created, expires: undefined });
      assert.equal(list[0]?.lock, null);
      assert.equal((await api.locks()).get("prod")?.id, lock.ID);
      assert.equal((await api.lock("default")), null);
      const h = await api.history("prod", { limit: 5 });
      assert.deepEqual(h.map((v) => [v.serial, v.isLatest, v.resources]), [[5, true, 3]]);
      await assert.rejects(api.forceUnlock("prod", "not-the-id"), (e) => isObjstateError(e, "LOCK_ID_MISMATCH"));
      await api.forceUnlock("prod", lock.ID);
      assert.equal(await backend.lockInfo("prod"), null);
    } finally {
      await backend.unlock("prod", lock.ID).catch(() => {});
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

  it("the Workspaces list reuses a summary for summaryTtlMs; locks and the workspace's own page are always fresh", async () => {
    let t = 1_000_000;
    const api = backendConsoleApi(backend, { summaryTtlMs: 5_000, now: () => t });
    await backend.writeState("cached", makeState(1, 1), { force: true });
    assert.equal((await api.listWorkspaces()).find((w) => w.name === "cached")?.lastWrite?.serial, 1);
    await backend.writeState("cached", makeState(2, 2), { force: true });
    const lock = await backend.lock("cached");
    try {
      const within = (await api.listWorkspaces()).find((w) => w.name === "cached");
      assert.equal(within?.lastWrite?.serial, 1, "reused within the TTL");
      assert.equal(within?.lock?.id, lock.ID, "the lock is read fresh");
      assert.equal((await api.workspace("cached")).lastWrite?.serial, 2, "one workspace's page reads the state");
      t += 5_000;
      assert.equal((await api.listWorkspaces()).find((w) => w.name === "cached")?.resources, 2, "read again after the TTL");
      const uncached = backendConsoleApi(backend, { summaryTtlMs: 0 });
      await uncached.listWorkspaces();
    } finally {
      await backend.unlock("cached", lock.ID);
    }
  });

  it("a lease's Expires (epoch seconds) becomes an ISO time", () => {
    const info = { ID: "i", Operation: "o", Info: "", Who: "w", Version: "v", Created: "c", Path: "p", Expires: 1_800_000_000 };
    assert.equal(lockView(info)?.expires, "2027-01-15T08:00:00.000Z");
    assert.equal(lockView(null), null);
  });

  it("with the backend's version methods: history (ISO times, resource counts for the newest), diff by version, rollback", async () => {
    // The version methods arrive with issue 10; this stands in for them over the same store.
    const versions: { id: string; bytes: Buffer; at: Date }[] = [];
    const record = async (ws: string, text: string): Promise<void> => {
      await backend.writeState(ws, text, { force: true });
      versions.unshift({ id: `v${versions.length + 1}`, bytes: Buffer.from(text), at: new Date(Date.UTC(2026, 10, 20 + versions.length)) });
    };
    await record("hist", makeState(1, 1));
    await record("hist", makeState(2, 2));
    await record("hist", makeState(3, 4));
    const rolled: string[] = [];
    const withHistory: ConsoleBackend = Object.assign(Object.create(backend) as ObjectStoreBackend, {
      history: async function* (_ws: string, { limit }: { limit: number }): AsyncIterable<VersionRecord> {
        for (const [i, v] of versions.slice(0, limit).entries()) yield { versionId: v.id, lastModified: v.at, size: v.bytes.length, serial: JSON.parse(v.bytes.toString()).serial as number, lineage: "lineage-1", who: "tester@console", operation: "writeState", isLatest: i === 0, deleteMarker: false };
      },
      readVersion: (_ws: string, id: string) => Promise.resolve(versions.find((v) => v.id === id)?.bytes ?? null),
      rollback: async (ws: string, to: string) => {
        rolled.push(to);
        const doc = JSON.parse((versions.find((v) => v.id === to) as { bytes: Buffer }).bytes.toString()) as { serial: number };
        doc.serial = 4;
        await record(ws, JSON.stringify(doc));
        return { serial: 4, versionId: versions[0]?.id };
      },
    });
    const api = backendConsoleApi(withHistory, { chartVersions: 2 });
    assert.equal(api.hasHistory, true);
    const h = await api.history("hist", { limit: 10 });
    assert.deepEqual(h.map((v) => [v.versionId, v.serial, v.resources, v.isLatest]), [["v3", 3, 4, true], ["v2", 2, 2, false], ["v1", 1, undefined, false]]);
    assert.equal(h[0]?.lastModified, "2026-11-22T00:00:00.000Z");
    const s = await api.workspace("hist");
    assert.deepEqual(s.lastWrite, { time: "2026-11-22T00:00:00.000Z", who: "tester@console", serial: 3 });
    const d = await api.diff("hist", "v1", "v3");
    assert.equal(d.resources.added.length, 3);
    assert.deepEqual(await api.rollback("hist", "v1"), { serial: 4, versionId: "v4" });
    assert.deepEqual(rolled, ["v1"]);
    assert.equal((await api.workspace("hist")).resources, 1);
  });
});
