/**
 * Lock owners and recorded principals in the library, on every lock mode (the table, a
 * lockfile, both): a lock taken with an owner keeps it in the stored lock info, and a
 * release or a write that names an owner is refused for any other one, from any
 * connection (a server's replicas share nothing but the store and the table).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, isObjstateError, type ObjectStoreBackendConfigProps, type StateVersion } from "../../src/index.js";
import { suiteTarget, type Target } from "../support/targets.js";

type Mode = "table" | "lockfile" | "both";
const MODES: readonly Mode[] = ["table", "lockfile", "both"];
const state = (serial: number): string => JSON.stringify({ version: 4, serial, lineage: "owners", outputs: {}, resources: [] });
const notOwned =
  (who: RegExp) =>
  (e: unknown): boolean =>
    isObjstateError(e, "LOCK_NOT_OWNED") && who.test(e.message) && /force role/.test(e.message);

export function ownerSuite(makeTarget: () => Target): void {
  const suite = suiteTarget(makeTarget);
  const open = suite.open;

  async function connect(props: ObjectStoreBackendConfigProps, mode: Mode): Promise<ObjectStoreBackend> {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
      env: {},
      who: "lib@owners",
      onWarning: () => undefined,
      lockfile: mode !== "table",
    });
    open.push(b);
    return b;
  }
  async function two(mode: Mode, versioned = false): Promise<[ObjectStoreBackend, ObjectStoreBackend]> {
    const props = await suite.target.setup({ locks: mode !== "lockfile" });
    if (versioned) {
      // History and rollback need the bucket to keep versions (the embedded store always does).
      const raw = await suite.target.raw(props.bucket);
      await raw.enableVersioning();
      raw.close();
    }
    return [await connect(props, mode), await connect(props, mode)];
  }
  const history = async (b: ObjectStoreBackend, ws: string): Promise<StateVersion[]> => {
    const out: StateVersion[] = [];
    for await (const v of b.history(ws)) out.push(v);
    return out;
  };

  for (const mode of MODES) {
    describe(`lock owners with ${mode === "table" ? "the lock table" : mode === "lockfile" ? "a lockfile and no table" : "a lockfile and the lock table"}`, () => {
      it("the owner is stored in the lock; a release naming another owner is refused on either connection and leaves the lock; the owner's release works", async () => {
        const [a, b] = await two(mode);
        const lock = await a.lock("default", { operation: "apply", owner: "alice" });
        assert.equal(lock.Owner, "alice");
        assert.equal((await b.lockInfo("default"))?.Owner, "alice", "read back from the store by another connection");
        // On the connection that took it (it knows what it stored) and on another (it reads).
        await assert.rejects(a.unlock("default", lock.ID, { owner: "bob" }), notOwned(/user bob may not release .*belongs to user alice/));
        await assert.rejects(b.unlock("default", lock.ID, { owner: "bob" }), notOwned(/user bob/));
        assert.equal((await b.lockInfo("default"))?.ID, lock.ID, "still held");
        await b.unlock("default", lock.ID, { owner: "alice" });
        assert.equal(await a.lockInfo("default"), null);
      });

      it("a write under the lock naming another owner is refused and writes nothing; the owner's write goes through", async () => {
        const [a, b] = await two(mode);
        const lock = await a.lock("default", { owner: "alice" });
        await a.writeState("default", state(1), { lockId: lock.ID, owner: "alice" });
        await assert.rejects(b.writeState("default", state(2), { lockId: lock.ID, owner: "bob" }), notOwned(/user bob may not write under/));
        await assert.rejects(a.writeState("default", state(2), { lockId: lock.ID, owner: "bob" }), notOwned(/user bob/));
        assert.equal((await b.readState("default"))?.toString(), state(1), "nothing written");
        await b.writeState("default", state(2), { lockId: lock.ID, owner: "alice" });
        // Without an owner the library's own callers are not checked (the server asks for none with `force`).
        await b.writeState("default", state(3), { lockId: lock.ID });
        await a.unlock("default", lock.ID);
      });

      it("a lock without an owner (the CLI's, the library's) belongs to no one: naming an owner is refused, naming none is not", async () => {
        const [a, b] = await two(mode);
        const lock = await a.lock("default", { operation: "apply" });
        assert.equal(lock.Owner, undefined);
        await assert.rejects(b.writeState("default", state(1), { lockId: lock.ID, owner: "alice" }), notOwned(/belongs to no server user.*lib@owners/));
        await assert.rejects(b.unlock("default", lock.ID, { owner: "alice" }), notOwned(/belongs to no server user/));
        await b.unlock("default", lock.ID);
        assert.equal(await a.lockInfo("default"), null);
      });

      it("taking the lock again under its ID is a retry only for the same owner", async () => {
        const [a, b] = await two(mode);
        const lock = await a.lock("default", { id: "0d7a1c5e-owner-retry", owner: "alice" });
        await assert.rejects(b.lock("default", { id: lock.ID, owner: "bob" }), (e: unknown) => isObjstateError(e, "STATE_LOCKED"));
        assert.equal((await b.lock("default", { id: lock.ID, owner: "alice" })).ID, lock.ID);
        await b.unlock("default", lock.ID, { owner: "alice" });
      });
    });
  }

  describe("principals recorded with a write", () => {
    it("a write with a principal records it beside Who; history and lastWrite report it; one without records none; a rollback records its own", async () => {
      const [a] = await two("table", true);
      await a.writeState("w", state(1));
      const lock = await a.lock("w", { owner: "alice" });
      await a.writeState("w", state(2), { lockId: lock.ID, principal: { name: "alice", via: "password" } });
      await a.unlock("w", lock.ID);
      // A write that takes its own lock records its principal too.
      await a.writeState("w", state(3), { principal: { name: "carol", via: "certificate" } });
      const versions = await history(a, "w");
      assert.deepEqual(
        versions.map((v) => [v.serial, v.who, v.principal]),
        [
          [3, "lib@owners", { name: "carol", via: "certificate" }],
          [2, "lib@owners", { name: "alice", via: "password" }],
          [1, "lib@owners", undefined],
        ],
      );
      assert.deepEqual((await a.lastWrite("w"))?.principal, { name: "carol", via: "certificate" });
      const first = versions[2]?.versionId as string;
      await a.rollback("w", first, { principal: { name: "dave", via: "password" } });
      assert.deepEqual((await history(a, "w"))[0]?.principal, { name: "dave", via: "password" });
      const held = await a.lock("w", { owner: "alice" });
      await assert.rejects(a.rollback("w", first, { lockId: held.ID, owner: "bob" }), notOwned(/user bob/));
      await a.unlock("w", held.ID);
    });
  });
}
