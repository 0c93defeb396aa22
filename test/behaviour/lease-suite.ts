/**
 * Locks that heal (docs/design.md §10), run unchanged on every driver pair and every lock mode:
 * the lock table, a lockfile without a table, and both. Time is moved by giving a
 * connection a clock ahead of the real one, so expiry needs no waiting.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, isObjstateError, type ConnectOptions, type ObjectStoreBackendConfigProps } from "../../src/index.js";
import { openLockTable } from "../../src/lock/index.js";
import { suiteTarget, type Target } from "../support/targets.js";

type Mode = "table" | "lockfile" | "both";
const MODES: readonly Mode[] = ["table", "lockfile", "both"];
const TOOL_LOCK = (id: string, path: string): string =>
  JSON.stringify({ ID: id, Operation: "OperationTypeApply", Info: "", Who: "tool@ci", Version: "1.9.0", Created: "2020-01-01T00:00:00Z", Path: path });

export function leaseSuite(makeTarget: () => Target): void {
  const suite = suiteTarget(makeTarget);
  const open = suite.open;

  async function setup(mode: Mode): Promise<ObjectStoreBackendConfigProps> {
    return suite.target.setup({ locks: mode !== "lockfile", extra: { prefix: "p", key: "app.tfstate" } });
  }
  async function connect(props: ObjectStoreBackendConfigProps, mode: Mode, options: ConnectOptions = {}): Promise<ObjectStoreBackend> {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
      env: {},
      who: "tester@lease",
      onWarning: () => undefined,
      lockfile: mode !== "table",
      ...options,
    });
    open.push(b);
    return b;
  }
  /** Plant a lock as the tool writes it (no Expires) in every place of the mode. */
  async function plantToolLock(props: ObjectStoreBackendConfigProps, mode: Mode, id: string): Promise<void> {
    const path = `${props.bucket}/p/app.tfstate`;
    if (mode !== "table") {
      const raw = await suite.target.raw(props.bucket);
      await raw.put("p/app.tfstate.tflock", Buffer.from(TOOL_LOCK(id, path)), { ifNoneMatch: true });
      raw.close();
    }
    if (mode !== "lockfile") {
      const t = await openLockTable({
        table: props.kvstoreTable as string,
        endpoint: props.kvstoreEndpoint as string,
        credentials:
          props.accessKey === undefined
            ? undefined
            : () => Promise.resolve({ accessKeyId: props.accessKey as string, secretAccessKey: props.secretKey as string }),
      });
      await t.put(path, "Info", TOOL_LOCK(id, path));
      t.close();
    }
  }

  for (const mode of MODES) {
    describe(`leases with ${mode === "table" ? "the lock table" : mode === "lockfile" ? "a lockfile and no table" : "a lockfile and the lock table"}`, () => {
      it("stores the lease, says when it expires, and lets the next acquirer take over an expired one; the old holder then cannot write", async () => {
        const props = await setup(mode);
        const a = await connect(props, mode, { ttl: 2_000 });
        const lock = await a.lock("default", { operation: "apply" });
        assert.equal(typeof lock.Expires, "number");
        assert.ok((lock.Expires as number) * 1000 >= Date.now() + 1_000, "Expires is about now + ttl");
        await a.writeState("default", '{"version":4,"serial":1,"lineage":"L","by":"a"}', { lockId: lock.ID });
        const b = await connect(props, mode);
        await assert.rejects(b.lock("default"), (e) => isObjstateError(e, "STATE_LOCKED") && /its lease expires at \d{4}-/.test(e.message));
        // B's clock is 10 s ahead: A's lease has run out for B.
        const late = await connect(props, mode, { lockClock: () => Date.now() + 10_000, ttl: 60_000 });
        const taken = await late.lock("default", { operation: "takeover" });
        assert.notEqual(taken.ID, lock.ID);
        assert.equal((await b.lockInfo("default"))?.ID, taken.ID);
        // A's own clock says its lease still runs, but the lock carries another ID: LOCK_LOST, nothing written.
        await assert.rejects(a.writeState("default", '{"version":4,"serial":2,"lineage":"L","by":"a"}', { lockId: lock.ID }), (e) =>
          isObjstateError(e, "LOCK_LOST"),
        );
        await assert.rejects(a.renewLock("default", lock.ID), (e) => isObjstateError(e, "LOCK_LOST"));
        assert.match((await b.readState("default"))?.toString() ?? "", /"by":"a"/);
        await assert.rejects(a.unlock("default", lock.ID), (e) => isObjstateError(e, "LOCK_ID_MISMATCH"));
        await late.writeState("default", '{"version":4,"serial":2,"lineage":"L","by":"late"}', { lockId: taken.ID });
        await late.unlock("default", taken.ID);
        assert.equal(await b.lockInfo("default"), null);
        assert.deepEqual(await b.locks(), []);
      });

      it("never takes over a lock without Expires (the tool's own), however late the clock", async () => {
        const props = await setup(mode);
        await plantToolLock(props, mode, "11111111-2222-3333-4444-555555555555");
        const far = await connect(props, mode, { lockClock: () => Date.now() + 365 * 86_400_000, ttl: 1_000 });
        await assert.rejects(far.lock("default"), (e) => isObjstateError(e, "STATE_LOCKED") && !/lease/.test(e.message));
        const listed = await far.locks();
        assert.ok(
          listed.length >= 1 && listed.every((l) => l.id === "11111111-2222-3333-4444-555555555555" && l.expires === null && l.workspace === "default"),
        );
        await far.unlock("default", "11111111-2222-3333-4444-555555555555");
        assert.deepEqual(await far.locks(), []);
      });

      it("a handle's heartbeat keeps a 1 s lease for 3.5 s; once the heartbeat stops the lease is lost, taken over, and the holder's write refused", async () => {
        const props = await setup(mode);
        const a = await connect(props, mode, { ttl: 1_000 });
        const b = await connect(props, mode, { ttl: 1_000 });
        const held = await a.acquire("default", { operation: "long apply" });
        await sleep(3_500);
        assert.equal(held.lost, false);
        await assert.rejects(b.lock("default"), (e) => isObjstateError(e, "STATE_LOCKED"));
        await a.writeState("default", '{"version":4,"serial":1,"lineage":"L"}', { lockId: held.id });
        held.stop(); // the heartbeat dies (a frozen or starved holder)
        const deadline = Date.now() + 10_000;
        let taken;
        while (taken === undefined) {
          taken = await b.lock("default", { operation: "next" }).catch((e: unknown) => {
            if (!isObjstateError(e, "STATE_LOCKED") || Date.now() > deadline) throw e;
            return undefined;
          });
          if (taken === undefined) await sleep(200);
        }
        await assert.rejects(a.writeState("default", '{"version":4,"serial":2,"lineage":"L"}', { lockId: held.id }), (e) => isObjstateError(e, "LOCK_LOST"));
        await assert.rejects(held.renew(), (e) => isObjstateError(e, "LOCK_LOST"));
        assert.equal(held.signal.aborted, true);
        assert.ok(isObjstateError(held.signal.reason, "LOCK_LOST"));
        await held.release(); // nothing of A's is left: not an error, and B keeps its lock
        assert.equal((await b.lockInfo("default"))?.ID, taken.ID);
        await b.unlock("default", taken.ID);
      });

      it("lists every lock with its workspace, ID, who, operation, since and lease expiry", async () => {
        const props = await setup(mode);
        const a = await connect(props, mode);
        const l1 = await a.lock("default", { operation: "apply", ttl: 30_000 });
        const l2 = await a.lock("staging", { operation: "plan" });
        const listed = await a.locks();
        const sources = mode === "both" ? ["lockfile", "table"] : [mode === "table" ? "table" : "lockfile"];
        assert.equal(listed.length, 2 * sources.length);
        const d = listed.filter((l) => l.workspace === "default");
        assert.deepEqual(d.map((l) => l.source).sort(), sources);
        for (const l of d) {
          assert.deepEqual(
            { id: l.id, who: l.who, operation: l.operation, since: l.since, expired: l.expired },
            { id: l1.ID, who: "tester@lease", operation: "apply", since: l1.Created, expired: false },
          );
          assert.equal(l.expires, new Date((l1.Expires as number) * 1000).toISOString());
        }
        const s = listed.filter((l) => l.workspace === "staging");
        assert.ok(s.length === sources.length && s.every((l) => l.id === l2.ID && l.expires === null));
        await a.unlock("default", l1.ID);
        await a.unlock("staging", l2.ID);
        assert.deepEqual(await a.locks(), []);
      });
    });
  }

  it("a lockfile is `{statePath}.tflock` holding the lock info JSON, and is gone after unlock", async () => {
    const props = await setup("lockfile");
    const a = await connect(props, "lockfile", { ttl: 5_000 });
    const lock = await a.lock("default");
    const raw = await suite.target.raw(props.bucket);
    const obj = await raw.get("p/app.tfstate.tflock");
    assert.ok(obj !== null);
    assert.deepEqual(JSON.parse(obj.body.toString()), lock);
    await a.unlock("default", lock.ID);
    assert.equal(await raw.get("p/app.tfstate.tflock"), null);
    raw.close();
    assert.deepEqual(a.conditions, { ifNoneMatch: true, ifMatch: true, deleteIfMatch: a.conditions?.deleteIfMatch });
  });
}
