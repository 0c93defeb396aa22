/**
 * Guard, fencing, release and repair (docs/design.md §9–§10, issue "No acknowledged write is ever
 * lost"), run unchanged against every driver pair with a lock table.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, it } from "node:test";
import {
  NO_LOCK_ID,
  ObjectStoreBackend,
  ObjectStoreBackendConfig,
  isObjstateError,
  type ObjectStoreBackendConfigProps,
  type RepairEvent,
} from "../../src/index.js";
import { openLockTable } from "../../src/lock/index.js";
import type { LockTableDriver } from "../../src/lock/types.js";
import type { Target } from "../support/targets.js";

const md5 = (b: string | Uint8Array): string => createHash("md5").update(b).digest("hex");
const FAST_DIGEST = { timeoutMs: 300, intervalMs: 100 };
const LINEAGE = "4d6a3f1c-0000-4000-8000-000000000001";

/** A small v4 state with one resource and one output. */
function state(serial: number, extra: Record<string, unknown> = {}, lineage = LINEAGE): string {
  return JSON.stringify({
    version: 4,
    terraform_version: "1.9.0",
    serial,
    lineage,
    outputs: { n: { value: serial, type: "number" } },
    resources: [{ mode: "managed", type: "null_resource", name: "a", instances: [] }],
    ...extra,
  });
}

export function fencingSuite(makeTarget: () => Target): void {
  let target: Target;
  const open: { close(): void }[] = [];

  async function connect(props: ObjectStoreBackendConfigProps, repairs?: RepairEvent[], readOnly = false): Promise<ObjectStoreBackend> {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
      env: {},
      who: "tester@fencing",
      digestRetry: FAST_DIGEST,
      onWarning: () => undefined,
      onRepair: (e) => repairs?.push(e),
      readOnly,
    });
    open.push(b);
    return b;
  }

  async function table(props: ObjectStoreBackendConfigProps): Promise<LockTableDriver> {
    const creds =
      props.accessKey === undefined ? undefined : () => Promise.resolve({ accessKeyId: props.accessKey as string, secretAccessKey: props.secretKey as string });
    const t = await openLockTable({ table: props.kvstoreTable as string, endpoint: props.kvstoreEndpoint as string, credentials: creds });
    open.push(t);
    return t;
  }

  before(() => {
    target = makeTarget();
  });
  after(() => {
    for (const o of open) o.close();
  });

  describe("lineage guard", () => {
    it("refuses another lineage, a lower serial and the same serial with other content; force overrides", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      assert.deepEqual(await b.writeState("default", state(5)), { written: true, md5: md5(state(5)), serial: 5 });
      const refused = async (bytes: string, pattern: RegExp): Promise<void> => {
        await assert.rejects(b.writeState("default", bytes), (e) => {
          assert.ok(isObjstateError(e, "STATE_CONFLICT"), String(e));
          assert.match(e.message, pattern);
          return true;
        });
        assert.equal((await b.readState("default"))?.toString(), state(5), "a refused write changes nothing");
      };
      await refused(state(6, {}, "another-lineage"), new RegExp(`another lineage.*lineage ${LINEAGE}, serial 5.*lineage another-lineage, serial 6`));
      await refused(state(4), /older state.*serial 5.*serial 4/);
      await refused(state(5, { changed: true }), /same serial/);
      // Force overrides the guard.
      assert.equal((await b.writeState("default", state(4), { force: true })).written, true);
      assert.equal((await b.readState("default"))?.toString(), state(4));
      // A newer serial of the same lineage is the normal case.
      assert.equal((await b.writeState("default", state(7))).written, true);
    });

    it("the same content again is a no-op success", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      await b.writeState("default", state(1));
      const raw = await target.raw(props.bucket);
      open.push(raw);
      const before = await raw.head(b.statePath("default"));
      assert.deepEqual(await b.writeState("default", state(1)), { written: false, md5: md5(state(1)), serial: 1 });
      const afterHead = await raw.head(b.statePath("default"));
      assert.equal(afterHead?.etag, before?.etag);
      assert.equal(afterHead?.lastModified?.getTime(), before?.lastModified?.getTime(), "no new write");
    });

    it("an empty stored state, or one without a lineage, may be overwritten by anything", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      await b.writeState("default", JSON.stringify({ version: 4, serial: 9, lineage: "new-workspace", outputs: {}, resources: [] }));
      await b.writeState("default", state(1));
      assert.equal((await b.readState("default"))?.toString(), state(1));
      await b.writeState("w", '{"version":4,"serial":50,"resources":["x"]}');
      await b.writeState("w", state(1));
      assert.equal((await b.readState("w"))?.toString(), state(1));
    });

    it("guards large states from their first bytes, without reading them whole", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      const big = (serial: number, lineage = LINEAGE): string => state(serial, { pad: "y".repeat(256 * 1024) }, lineage);
      await b.writeState("default", big(3));
      await assert.rejects(b.writeState("default", big(2)), { code: "STATE_CONFLICT" });
      await assert.rejects(b.writeState("default", big(4, "other")), { code: "STATE_CONFLICT" });
      assert.equal((await b.writeState("default", big(4))).written, true);
    });
  });

  describe("fencing", () => {
    it("a write conditional on what was read fails when the state changed since, and changes nothing", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      await b.writeState("default", state(1));
      const seen = await b.readStateVersion("default");
      assert.ok(seen !== null && seen.etag !== undefined);
      await b.writeState("default", state(2));
      await assert.rejects(
        b.writeState("default", state(3), { ifMatch: seen.etag }),
        (e) => isObjstateError(e, "STATE_CONFLICT") && /changed since it was read/.test(e.message),
      );
      assert.equal((await b.readState("default"))?.toString(), state(2));
      // "There was none" when read, but there is one now.
      await assert.rejects(b.writeState("default", state(3), { ifMatch: null }), { code: "STATE_CONFLICT" });
    });

    it("records who wrote, the lock, serial and lineage as object metadata", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      const lock = await b.lock("default", { operation: "apply" });
      await b.writeState("default", state(3), { lockId: lock.ID });
      await b.unlock("default", lock.ID);
      const raw = await target.raw(props.bucket);
      open.push(raw);
      const meta = (await raw.head(b.statePath("default")))?.metadata ?? {};
      assert.equal(meta["objstate-serial"], "3");
      assert.equal(meta["objstate-lineage"], LINEAGE);
      assert.equal(meta["objstate-lock-id"], lock.ID);
      assert.equal(meta["objstate-operation"], "apply");
      assert.equal(meta["objstate-who"], "tester@fencing");
      assert.equal(meta["objstate-md5"], md5(state(3)));
    });

    it("a writer whose lock was force-unlocked cannot write (LOCK_NOT_HELD), nor under another holder (STATE_LOCKED)", async () => {
      const props = await target.setup({ locks: true });
      const a = await connect(props);
      const b = await connect(props);
      const lock = await a.lock("default");
      await b.unlock("default", lock.ID);
      await assert.rejects(a.writeState("default", state(1), { lockId: lock.ID }), { code: "LOCK_NOT_HELD" });
      const other = await b.lock("default");
      await assert.rejects(a.writeState("default", state(1), { lockId: lock.ID }), { code: "STATE_LOCKED" });
      await b.unlock("default", other.ID);
      assert.equal(await a.readState("default"), null);
    });
  });

  describe("locks", () => {
    it("a release whose first step already happened (lost reply, crash) completes when repeated", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      const t = await table(props);
      const lock = await b.lock("default");
      // The first step of a release: the item marked as released by this ID.
      assert.equal(await t.updateIf(`${b.describe("default")}`, "Info", JSON.stringify(lock), { Released: lock.ID }), true);
      await b.unlock("default", lock.ID);
      assert.equal(await b.lockInfo("default"), null);
      await assert.rejects(b.unlock("default", lock.ID), { code: "LOCK_NOT_FOUND" });
    });

    it("an item without readable lock info says how to clear it, and force-unlock no-id clears it", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      const t = await table(props);
      await t.put(b.describe("default"), "Holder", "written by hand");
      await assert.rejects(b.lock("default"), (e) => isObjstateError(e, "STATE_LOCKED") && e.message.includes(`objstate force-unlock ${NO_LOCK_ID}`));
      await b.unlock("default", NO_LOCK_ID);
      const lock = await b.lock("default");
      await b.unlock("default", lock.ID);
      // Info that is not lock info JSON: the same spelling.
      await t.put(b.describe("w"), "Info", "not json");
      await assert.rejects(b.lock("w"), (e) => isObjstateError(e, "STATE_LOCKED") && e.message.includes(`force-unlock ${NO_LOCK_ID} -w w`));
      await b.unlock("w", NO_LOCK_ID);
      await b.unlock("w", (await b.lock("w")).ID);
    });
  });

  describe("digests and torn writes", () => {
    it("compares the stored digest as hex: upper case and padding written by other tools match", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      await b.writeState("default", state(1));
      const t = await table(props);
      await t.put(`${b.describe("default")}-md5`, "Digest", ` ${md5(state(1)).toUpperCase()}\n`);
      assert.equal((await b.readState("default"))?.toString(), state(1));
    });

    it("a write stopped between storing and committing is committed by the next read (the lock free), which reports it", async () => {
      const props = await target.setup({ locks: true });
      const events: RepairEvent[] = [];
      const b = await connect(props, events);
      await b.writeState("default", state(1));
      await assert.rejects(
        b.writeState("default", state(2), {
          onStored: () => {
            throw new Error("crashed between storing and committing");
          },
        }),
        /crashed/,
      );
      const t = await table(props);
      const digestId = `${b.describe("default")}-md5`;
      const before = await t.getDigest(digestId);
      assert.deepEqual([before?.digest, before?.generation], [md5(state(1)), 1], "the stopped write did not commit");
      // The lock the write took was released by its finally: the read commits the write.
      assert.equal((await b.readState("default"))?.toString(), state(2));
      assert.equal(events.length, 1, "the repair was not reported");
      assert.equal(events[0]?.action, "adopted");
      assert.equal(events[0]?.serial, 2);
      assert.equal(events[0]?.md5, md5(state(2)));
      assert.match(events[0]?.message ?? "", /stored, but its writer stopped before committing it/);
      assert.equal((await t.getDigest(digestId))?.generation, 2);
      assert.equal((await t.getDigest(digestId))?.digest, md5(state(2)));
      const note = JSON.parse((await t.get(digestId, "Repaired")) ?? "null") as { who: string; previous: string };
      assert.equal(note.who, "tester@fencing");
      assert.equal(note.previous, md5(state(1)));
      assert.equal((await b.repairState("default")).action, "ok");
      assert.equal(await b.lockInfo("default"), null, "the read released its short lock");
      assert.equal((await b.readState("default"))?.toString(), state(2));
      assert.equal(events.length, 1, "a committed state is not repaired again");
    });

    it("while a stored write's own lock is held, readers do not commit it (the committed state stands); its writer's commit then succeeds", async () => {
      const props = await target.setup({ locks: true });
      const events: RepairEvent[] = [];
      const b = await connect(props);
      const reader = await connect(props, events);
      await b.writeState("default", state(1));
      const versioned = (await b.versioning()) === "enabled";
      const lock = await b.lock("default");
      const result = await b.writeState("default", state(2), {
        lockId: lock.ID,
        onStored: async () => {
          if (versioned) assert.equal((await reader.readState("default"))?.toString(), state(1), "a reader got a write that is not committed");
          else
            await assert.rejects(
              reader.readState("default"),
              (e) => isObjstateError(e, "TORN_WRITE") && e.message.includes(`its lock ${lock.ID} is still held`),
            );
        },
      });
      assert.equal(result.written, true);
      assert.equal(events.length, 0, "a reader committed a write whose writer holds the lock");
      await b.unlock("default", lock.ID);
      assert.equal((await reader.readState("default"))?.toString(), state(2));
    });

    it("a write whose commit another commit overtook is refused (STATE_CONFLICT), never acknowledged; the later write stands", async () => {
      const props = await target.setup({ locks: true });
      const a = await connect(props);
      const events: RepairEvent[] = [];
      const b = await connect(props, events);
      await a.writeState("default", state(1));
      const lock = await a.lock("default");
      await assert.rejects(
        a.writeState("default", state(2, { by: "a" }), {
          lockId: lock.ID,
          // Between a's store and its commit, its lock is broken and b writes.
          onStored: async () => {
            await b.unlock("default", lock.ID);
            await b.writeState("default", state(3, { by: "b" }));
          },
        }),
        (e) => {
          assert.ok(isObjstateError(e, "STATE_CONFLICT"), String(e));
          assert.match(e.message, /another write was committed .* after this one started.*did not happen/);
          return true;
        },
      );
      assert.equal((await a.readState("default"))?.toString(), state(3, { by: "b" }));
      // b found a's stored write uncommitted under a lock a no longer held: it committed it first.
      assert.deepEqual(
        events.map((e) => [e.action, e.serial]),
        [["adopted", 2]],
      );
      const t = await table(props);
      assert.equal((await t.getDigest(`${a.describe("default")}-md5`))?.generation, 3);
    });

    for (const versioning of [false, true]) {
      it(`a late write that another commit overtook is passed over by readers and by the next write's guard (${versioning ? "versioned bucket" : "bucket as created"})`, async () => {
        const props = await target.setup({ locks: true });
        const raw = await target.raw(props.bucket);
        open.push(raw);
        if (versioning) await raw.enableVersioning();
        const events: RepairEvent[] = [];
        const b = await connect(props, events);
        await b.writeState("default", state(1));
        await b.writeState("default", state(2));
        // What a writer that started at generation 1 and lost its lock leaves when its PUT lands late.
        const late = state(5, { late: true });
        await raw.put(b.statePath("default"), Buffer.from(late), {
          metadata: {
            "objstate-serial": "5",
            "objstate-lineage": LINEAGE,
            "objstate-md5": md5(late),
            "objstate-who": "late@writer",
            "objstate-lock-id": "lost-lock",
            "objstate-generation": "2",
            "objstate-parent-md5": md5(state(1)),
          },
        });
        assert.equal((await b.digestStatus("default")).status, "superseded");
        if ((await b.versioning()) !== "enabled") {
          // The committed bytes are gone with the overwrite: one clear error, naming the way out.
          await assert.rejects(b.readState("default"), (e) => isObjstateError(e, "COMMITTED_VERSION_MISSING") && /state repair --force/.test(e.message));
          await assert.rejects(b.writeState("default", state(3)), { code: "COMMITTED_VERSION_MISSING" });
          assert.equal((await b.writeState("default", state(3), { force: true })).written, true);
          assert.equal((await b.readState("default"))?.toString(), state(3));
          return;
        }
        assert.equal((await b.readState("default"))?.toString(), state(2), "a read served a write that never committed");
        // The read wrote the committed state again over the late write (the lock was free).
        assert.deepEqual(
          events.map((e) => [e.action, e.serial]),
          [["restored", 2]],
        );
        const current = await raw.get(b.statePath("default"));
        assert.equal(current?.body.toString(), state(2));
        assert.equal((await b.digestStatus("default")).status, "match");
        // The guard judges against the committed serial 2, not the late write's 5.
        assert.equal((await b.writeState("default", state(3))).written, true);
        assert.equal((await b.readState("default"))?.toString(), state(3));
      });
    }

    it("the next write's guard judges against the committed state behind a late write, and commits over it", async () => {
      const props = await target.setup({ locks: true });
      const raw = await target.raw(props.bucket);
      open.push(raw);
      await raw.enableVersioning();
      const b = await connect(props);
      await b.writeState("default", state(1));
      await b.writeState("default", state(2));
      const late = state(5, { late: true });
      await raw.put(b.statePath("default"), Buffer.from(late), {
        metadata: {
          "objstate-serial": "5",
          "objstate-lineage": LINEAGE,
          "objstate-md5": md5(late),
          "objstate-generation": "2",
          "objstate-parent-md5": md5(state(1)),
        },
      });
      // No read in between: the write itself passes over the late write (serial 3 < 5 is fine).
      await assert.rejects(b.writeState("default", state(2, { other: true })), (e) => isObjstateError(e, "STATE_CONFLICT") && /same serial/.test(e.message));
      assert.equal((await b.writeState("default", state(3))).written, true);
      assert.equal((await b.readState("default"))?.toString(), state(3));
    });

    it("an older objstate's write that did not record its digest reads as a torn write; repair records it", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      await b.writeState("default", state(1));
      const raw = await target.raw(props.bucket);
      open.push(raw);
      // No intent recorded (objstate before generations): nothing proves no commit came in between.
      await raw.put(b.statePath("default"), Buffer.from(state(2)), {
        metadata: { "objstate-serial": "2", "objstate-md5": md5(state(2)), "objstate-who": "old@objstate" },
      });
      await assert.rejects(b.readState("default"), (e) => {
        assert.ok(isObjstateError(e, "TORN_WRITE"), String(e));
        assert.match(e.message, /the last write did not finish recording its digest/);
        assert.match(e.message, /objstate state repair/);
        return true;
      });
      const report = await b.repairState("default");
      assert.equal(report.action, "recorded-digest");
      assert.equal(report.previous, md5(state(1)));
      assert.equal((await b.readState("default"))?.toString(), state(2));
      const t = await table(props);
      const note = JSON.parse((await t.get(`${b.describe("default")}-md5`, "Repaired")) ?? "null") as { who: string; previous: string };
      assert.equal(note.who, "tester@fencing");
      assert.equal(note.previous, md5(state(1)));
      assert.equal((await b.repairState("default")).action, "ok");
      assert.equal(await b.lockInfo("default"), null, "repair released its lock");
    });

    it("a read-only connection commits nothing", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      await b.writeState("default", state(1));
      await assert.rejects(b.writeState("default", state(2), { onStored: () => Promise.reject(new Error("crash")) }));
      const events: RepairEvent[] = [];
      const ro = await connect(props, events, true);
      if ((await ro.versioning()) === "enabled") assert.equal((await ro.readState("default"))?.toString(), state(1));
      else await assert.rejects(ro.readState("default"), (e) => isObjstateError(e, "TORN_WRITE") && /read-only reader does not commit it/.test(e.message));
      assert.equal(events.length, 0);
      const t = await table(props);
      assert.equal((await t.getDigest(`${b.describe("default")}-md5`))?.digest, md5(state(1)));
    });

    it("pushing the same content again also records a missing digest", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      await assert.rejects(
        b.writeState("default", state(1), {
          onStored: () => {
            throw new Error("crash");
          },
        }),
      );
      assert.deepEqual(await b.writeState("default", state(1)), { written: false, md5: md5(state(1)), serial: 1 });
      assert.equal((await b.readState("default"))?.toString(), state(1));
    });

    it("repair refuses a change made outside objstate unless forced", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      await b.writeState("default", state(1));
      const raw = await target.raw(props.bucket);
      open.push(raw);
      await raw.put(b.statePath("default"), Buffer.from(state(2, { by: "hand" })));
      await assert.rejects(b.readState("default"), { code: "DIGEST_MISMATCH" });
      await assert.rejects(b.repairState("default"), (e) => isObjstateError(e, "REPAIR_REFUSED") && /--force/.test(e.message));
      await assert.rejects(b.readState("default"), { code: "DIGEST_MISMATCH" });
      assert.equal((await b.repairState("default", { force: true })).action, "recorded-digest");
      assert.equal((await b.readState("default"))?.toString(), state(2, { by: "hand" }));
    });

    it("a digest left without a state (an unfinished delete) is removed by repair", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      await b.writeState("w", state(1));
      const raw = await target.raw(props.bucket);
      open.push(raw);
      await raw.delete(b.statePath("w"));
      await assert.rejects(b.readState("w"), { code: "DIGEST_MISMATCH" });
      assert.equal((await b.repairState("w")).action, "removed-orphan-digest");
      assert.equal(await b.readState("w"), null);
    });
  });
}
