/**
 * The lock-table driver contract (`LockTableDriver`, src/lock/types.ts) as the backend relies
 * on it, run unchanged against every driver: the embedded table (unit tests) and DynamoDB on
 * dynalite (integration tests). The differences the drivers have on purpose are stated once,
 * in {@link LockDriverDifferences}, and asserted as they are (never a test skipped silently).
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import type { ErrorCode } from "../../src/error-codes.js";
import { isObjstateError } from "../../src/errors.js";
import type { LockTableDriver } from "../../src/lock/types.js";
import { commitDigestSuite } from "./commit-digest-suite.js";

/** Where the drivers differ on purpose. */
export interface LockDriverDifferences {
  /**
   * A table that does not exist: `created-on-write` (reads find nothing, deletes and
   * conditional updates do nothing, the first write makes the table: the embedded table's
   * zero setup) or `TABLE_NOT_FOUND` (every item call says so: DynamoDB, whose tables
   * `objstate init --create-table` makes).
   */
  readonly absentTable: "created-on-write" | "TABLE_NOT_FOUND";
  /** A driver on a table keyed other than by `LockID` (String): by `Key` (S), or by `LockID` of type N. */
  badTable(schema: "other-key" | "number-key"): Promise<LockTableDriver>;
}

const ID = "my-bucket/env:/dev/tool.tfstate";
const RECORD = "ReleasedIDs";

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of items) out.push(x);
  return out;
}

const refused =
  (code: ErrorCode) =>
  (e: unknown): boolean => {
    assert.ok(isObjstateError(e, code), `expected ${code}, got ${String(e)}`);
    return true;
  };

/**
 * The whole driver contract, against drivers made by `open` (a fresh driver on a table of its
 * own that does not exist yet; the suite creates it where it needs it, and closes the driver).
 */
export function lockDriverSuite(name: string, open: () => Promise<LockTableDriver>, differences: LockDriverDifferences): void {
  const opened: LockTableDriver[] = [];
  after(() => {
    for (const t of opened) t.close();
  });
  const fresh = async (): Promise<LockTableDriver> => {
    const t = await open();
    opened.push(t);
    return t;
  };
  const ready = async (): Promise<LockTableDriver> => {
    const t = await fresh();
    await t.createTable();
    return t;
  };

  describe(`${name}: lock table driver conformance`, () => {
    describe("the table", () => {
      it("an absent table is described as null; createTable makes it keyed by LockID (S, HASH), and is idempotent, also twice at once", async () => {
        const t = await fresh();
        assert.equal(await t.describeKeySchema(), null);
        await Promise.all([t.createTable(), t.createTable()]);
        await t.createTable();
        assert.deepEqual(await t.describeKeySchema(), [{ name: "LockID", type: "S", keyType: "HASH" }]);
      });

      it(`item calls on an absent table: ${differences.absentTable === "TABLE_NOT_FOUND" ? "TABLE_NOT_FOUND, naming the table" : "reads find nothing, the first write makes the table"}`, async () => {
        const t = await fresh();
        if (differences.absentTable === "TABLE_NOT_FOUND") {
          const calls: [string, () => Promise<unknown>][] = [
            ["putIfAbsent", () => t.putIfAbsent(ID, "Info", "x")],
            ["get", () => t.get(ID, "Info")],
            ["put", () => t.put(ID, "Info", "x")],
            ["updateIf", () => t.updateIf(ID, "Info", "x", { Info: "y" })],
            ["deleteIf", () => t.deleteIf(ID, "Info", "x")],
            ["delete", () => t.delete(ID)],
            ["putLease", () => t.putLease(ID, "x", 10, 1)],
            ["getLease", () => t.getLease(ID)],
            ["getDigest", () => t.getDigest(ID)],
            ["scanAttrs", () => collect(t.scanAttrs(["Info"]))],
          ];
          for (const [what, call] of calls) await assert.rejects(call, (e) => refused("TABLE_NOT_FOUND")(e) && (e as Error).message.includes(t.location), what);
          assert.equal(await t.describeKeySchema(), null, "nothing made the table");
        } else {
          assert.equal(await t.get(ID, "Info"), null);
          assert.equal(await t.getLease(ID), null);
          assert.equal(await t.getDigest(ID), null);
          assert.deepEqual(await collect(t.scanAttrs(["Info"])), []);
          assert.equal(await t.updateIf(ID, "Info", "x", { Info: "y" }), false);
          assert.equal(await t.deleteIf(ID, "Info", "x"), false);
          await t.delete(ID);
          assert.equal(await t.describeKeySchema(), null, "reads and deletes do not make the table");
          assert.equal(await t.putIfAbsent(ID, "Info", "x"), null);
          assert.deepEqual(await t.describeKeySchema(), [{ name: "LockID", type: "S", keyType: "HASH" }], "the first write makes it");
        }
      });

      for (const schema of ["other-key", "number-key"] as const) {
        it(`a table keyed ${schema === "other-key" ? "by another attribute" : "by a LockID of type N"} is described as it is, and item calls fail with LOCK_TABLE_ERROR`, async () => {
          const t = await differences.badTable(schema);
          opened.push(t);
          assert.deepEqual(
            await t.describeKeySchema(),
            schema === "other-key" ? [{ name: "Key", type: "S", keyType: "HASH" }] : [{ name: "LockID", type: "N", keyType: "HASH" }],
          );
          await assert.rejects(t.putIfAbsent(ID, "Info", "x"), refused("LOCK_TABLE_ERROR"));
          await assert.rejects(t.get(ID, "Info"), refused("LOCK_TABLE_ERROR"));
          await assert.rejects(t.put(ID, "Digest", "d"), refused("LOCK_TABLE_ERROR"));
          await assert.rejects(t.deleteIf(ID, "Info", "x"), refused("LOCK_TABLE_ERROR"));
        });
      }
    });

    describe("items", () => {
      it('putIfAbsent writes once, then answers the holder\'s value ("" when the item lacks the attribute)', async () => {
        const t = await ready();
        assert.equal(await t.putIfAbsent(ID, "Info", "first"), null);
        assert.equal(await t.putIfAbsent(ID, "Info", "second"), "first");
        assert.equal(await t.get(ID, "Info"), "first");
        await t.put(`${ID}-md5`, "Digest", "abc");
        assert.equal(await t.putIfAbsent(`${ID}-md5`, "Info", "x"), "");
        assert.equal(await t.get(`${ID}-md5`, "Digest"), "abc", "the refused write changed nothing");
        assert.equal(await t.get(`${ID}-md5`, "Info"), null);
      });

      it("get: an absent item or attribute is null", async () => {
        const t = await ready();
        assert.equal(await t.get(ID, "Info"), null);
        await t.put(ID, "Info", "v");
        assert.equal(await t.get("other/id", "Info"), null);
        assert.equal(await t.get(ID, "Digest"), null);
        assert.equal(await t.get(ID, "Info"), "v");
      });

      it("put replaces the whole item", async () => {
        const t = await ready();
        await t.put(ID, "Info", "one");
        assert.equal(await t.updateIf(ID, "Info", "one", { Other: "kept?" }), true);
        await t.put(ID, "Digest", "two");
        assert.equal(await t.get(ID, "Info"), null);
        assert.equal(await t.get(ID, "Other"), null);
        assert.equal(await t.get(ID, "Digest"), "two");
      });

      it("deleteIf deletes only while the attribute has that value; delete is unconditional, and absent is fine", async () => {
        const t = await ready();
        assert.equal(await t.deleteIf(ID, "Info", "mine"), false, "absent item");
        await t.put(ID, "Info", "mine");
        assert.equal(await t.deleteIf(ID, "Info", "theirs"), false, "other value");
        assert.equal(await t.deleteIf(ID, "Digest", "mine"), false, "other attribute");
        assert.equal(await t.get(ID, "Info"), "mine");
        assert.equal(await t.deleteIf(ID, "Info", "mine"), true);
        assert.equal(await t.get(ID, "Info"), null);
        assert.equal(await t.deleteIf(ID, "Info", "mine"), false, "already gone");
        await t.delete(ID);
        await t.put(ID, "Digest", "d");
        await t.delete(ID);
        await t.delete(ID);
        assert.equal(await t.get(ID, "Digest"), null);
      });

      it("ids with /, :, case, unicode and 1000 characters are distinct items", async () => {
        const t = await ready();
        const ids = ["B/k:1", "b/k:1", "bücket/ключ:☃", `b/${"y".repeat(1000)}a`, `b/${"y".repeat(1000)}b`];
        for (const id of ids) assert.equal(await t.putIfAbsent(id, "Info", id), null, id.slice(0, 20));
        for (const id of ids) assert.equal(await t.get(id, "Info"), id, id.slice(0, 20));
        for (const id of ids) assert.equal(await t.deleteIf(id, "Info", id), true, id.slice(0, 20));
      });
    });

    describe("updateIf (compare and set)", () => {
      it("sets attributes only while the condition holds, keeping the others; never creates the item; repeating succeeds", async () => {
        const t = await ready();
        assert.equal(await t.updateIf(ID, "Info", "a", { Expires: "1" }), false, "absent item");
        assert.equal(await t.get(ID, "Expires"), null, "absent item: not created");
        await t.put(ID, "Info", "a");
        assert.equal(await t.updateIf(ID, "Info", "b", { Expires: "1" }), false, "other value");
        assert.equal(await t.get(ID, "Expires"), null);
        assert.equal(await t.updateIf(ID, "Info", "a", { Expires: "100", Released: "no" }), true);
        assert.equal(await t.updateIf(ID, "Info", "a", { Expires: "100", Released: "no" }), true, "repeating succeeds");
        assert.deepEqual([await t.get(ID, "Info"), await t.get(ID, "Expires"), await t.get(ID, "Released")], ["a", "100", "no"]);
        assert.equal(await t.updateIf(ID, "Expires", "100", { Info: "b", Expires: "200" }), true, "the condition's attribute may change");
        assert.deepEqual([await t.get(ID, "Info"), await t.get(ID, "Expires")], ["b", "200"]);
        assert.equal(await t.deleteIf(ID, "Released", "no"), true, "deleteIf on any attribute");
      });

      it("expected null: only an existing item without the attribute (a record written by hand)", async () => {
        const t = await ready();
        assert.equal(await t.updateIf(ID, RECORD, null, { [RECORD]: "[]" }), false, "absent item");
        assert.equal(await t.get(ID, RECORD), null);
        await t.put(ID, "Other", "x");
        assert.equal(await t.updateIf(ID, RECORD, null, { [RECORD]: "[1]" }), true);
        assert.equal(await t.updateIf(ID, RECORD, null, { [RECORD]: "[2]" }), false, "the attribute is there now");
        assert.deepEqual([await t.get(ID, RECORD), await t.get(ID, "Other")], ["[1]", "x"]);
      });

      it("an empty set only checks the condition, and an absent item fails it", async () => {
        const t = await ready();
        assert.equal(await t.updateIf(ID, "Info", "a", {}), false, "absent item");
        assert.equal(await t.updateIf(ID, "Info", null, {}), false, "absent item, expected null");
        await t.put(ID, "Info", "a");
        assert.equal(await t.updateIf(ID, "Info", "a", {}), true);
        assert.equal(await t.updateIf(ID, "Info", "b", {}), false);
        assert.equal(await t.updateIf(ID, "Digest", null, {}), true, "exists without the attribute");
        assert.equal(await t.updateIf(ID, "Info", null, {}), false, "exists with it");
      });

      it("setting LockID (the key) is LOCK_TABLE_ERROR, and changes nothing", async () => {
        const t = await ready();
        await t.put(ID, "Info", "a");
        await assert.rejects(t.updateIf(ID, "Info", "a", { LockID: "other" }), refused("LOCK_TABLE_ERROR"));
        assert.equal(await t.get(ID, "Info"), "a");
        assert.equal(await t.get("other", "Info"), null);
      });

      it("of 8 writers updating from the same value at once, exactly one wins; a compare-and-set counter loses no update", async () => {
        const t = await ready();
        for (let r = 0; r < 5; r++) {
          await t.put(`upd/${r}`, "Info", "start");
          const results = await Promise.all(Array.from({ length: 8 }, (_, i) => t.updateIf(`upd/${r}`, "Info", "start", { Info: `w${i}`, By: `w${i}` })));
          const won = results.flatMap((x, i) => (x ? [i] : []));
          assert.equal(won.length, 1, `round ${r}: ${won.join(",")}`);
          assert.deepEqual([await t.get(`upd/${r}`, "Info"), await t.get(`upd/${r}`, "By")], [`w${won[0]}`, `w${won[0]}`]);
        }
        await t.put("counter", "Info", "0");
        const worker = async (): Promise<void> => {
          for (let i = 0; i < 10;) {
            const cur = (await t.get("counter", "Info")) ?? "";
            if (await t.updateIf("counter", "Info", cur, { Info: String(Number(cur) + 1) })) i++;
          }
        };
        await Promise.all(Array.from({ length: 4 }, worker));
        assert.equal(await t.get("counter", "Info"), "40");
      });
    });

    describe("reads side by side", () => {
      it("reads asked for at once (a server's requests) each answer for their own item: more than a batch, repeated and absent ones", async () => {
        const t = await ready();
        const ids = Array.from({ length: 130 }, (_, i) => `${ID}-${i}`);
        await Promise.all(ids.map((id, i) => (i % 3 === 0 ? Promise.resolve() : t.put(id, "Info", `value ${i}`))));
        const asked = [...ids, ids[1] as string, ids[2] as string, `${ID}-never`];
        const got = await Promise.all(asked.map((id) => t.get(id, "Info")));
        assert.deepEqual(
          got,
          asked.map((id) => {
            const i = Number(id.slice(ID.length + 1));
            return Number.isNaN(i) || i % 3 === 0 ? null : `value ${i}`;
          }),
        );
        const [lease, digest] = await Promise.all([t.getLease(ids[1] as string), t.getDigest(ids[0] as string)]);
        assert.deepEqual([lease, digest], [{ info: "value 1", expires: undefined }, null]);
      });
    });

    describe("concurrent putIfAbsent", () => {
      it("of 8 writers at once, exactly one wins each round, and the others are told its value", async () => {
        const t = await ready();
        for (let r = 0; r < 10; r++) {
          const results = await Promise.all(Array.from({ length: 8 }, (_, i) => t.putIfAbsent(`race/${r}`, "Info", `w${i}`)));
          const won = results.flatMap((x, i) => (x === null ? [`w${i}`] : []));
          assert.equal(won.length, 1, `round ${r}: ${won.join(",")}`);
          for (const x of results) if (x !== null) assert.equal(x, won[0]);
          assert.equal(await t.get(`race/${r}`, "Info"), won[0]);
        }
      });
    });

    describe("leases", () => {
      it("putLease writes {Info, Expires} when absent; a live lease blocks (answered with its holder); an expired one is replaced", async () => {
        const t = await ready();
        assert.equal(await t.putLease(ID, "holder-a", 1000, 500), null);
        assert.deepEqual(await t.getLease(ID), { info: "holder-a", expires: 1000 });
        assert.deepEqual(await t.putLease(ID, "holder-b", 2000, 999), { info: "holder-a", expires: 1000 }, "live");
        assert.deepEqual(await t.putLease(ID, "holder-b", 2000, 1000), { info: "holder-a", expires: 1000 }, "Expires equal to now is still live");
        assert.equal(await t.putLease(ID, "holder-b", 2000, 1001), null, "expired: taken over");
        assert.deepEqual(await t.getLease(ID), { info: "holder-b", expires: 2000 });
      });

      it('a lock without Expires (the tool\'s own) never expires; one without Info reads as ""', async () => {
        const t = await ready();
        assert.equal(await t.putLease(ID, "tool", undefined, 1), null);
        assert.deepEqual(await t.getLease(ID), { info: "tool", expires: undefined });
        assert.deepEqual(await t.putLease(ID, "other", 10, Number.MAX_SAFE_INTEGER), { info: "tool", expires: undefined });
        await t.put(`${ID}-2`, "Digest", "d");
        assert.deepEqual(await t.getLease(`${ID}-2`), { info: "", expires: undefined });
        assert.deepEqual(await t.putLease(`${ID}-2`, "x", 10, 5), { info: "", expires: undefined }, "an item without Expires blocks");
        assert.equal(await t.getLease("absent"), null);
      });

      it("renewLease sets Info and Expires only while Info is the one expected", async () => {
        const t = await ready();
        assert.equal(await t.renewLease(ID, "a", "a2", 10), false, "absent");
        assert.equal(await t.getLease(ID), null, "not created");
        await t.putLease(ID, "a", 5, 1);
        assert.equal(await t.renewLease(ID, "b", "b2", 10), false);
        assert.deepEqual(await t.getLease(ID), { info: "a", expires: 5 });
        assert.equal(await t.renewLease(ID, "a", "a2", 10), true);
        assert.deepEqual(await t.getLease(ID), { info: "a2", expires: 10 });
        assert.equal(await t.renewLease(ID, "a", "a3", 20), false, "the old Info no longer matches");
      });

      it("of 8 takers of one expired lease at once, exactly one wins; the others are told the winner", async () => {
        const t = await ready();
        for (let r = 0; r < 5; r++) {
          const id = `lease/${r}`;
          await t.putLease(id, "old", 10, 1);
          const results = await Promise.all(Array.from({ length: 8 }, (_, i) => t.putLease(id, `w${i}`, 100, 50)));
          const won = results.flatMap((x, i) => (x === null ? [`w${i}`] : []));
          assert.equal(won.length, 1, `round ${r}: ${won.join(",")}`);
          for (const x of results) if (x !== null) assert.deepEqual(x, { info: won[0], expires: 100 });
        }
      });
    });

    describe("scanAttrs", () => {
      it("yields every item that has the attribute, with its value and Expires, and no other item", async () => {
        const t = await ready();
        await t.putLease("a", "info-a", 42, 1);
        await t.putLease("b", "info-b", undefined, 1);
        await t.put("c", "Digest", "d");
        await t.put("d-released", RECORD, "[]");
        const items = (await collect(t.scanAttrs(["Info"]))).sort((x, y) => (x.id < y.id ? -1 : 1));
        assert.deepEqual(items, [
          { id: "a", values: { Info: "info-a" }, expires: 42 },
          { id: "b", values: { Info: "info-b" }, expires: undefined },
        ]);
        assert.deepEqual(await collect(t.scanAttrs([RECORD])), [{ id: "d-released", values: { [RECORD]: "[]" }, expires: undefined }]);
      });

      it("scanAttrs: one scan yields every item that has any of the attributes, with those it has", async () => {
        const t = await ready();
        await t.putLease("a", "info-a", 42, 1);
        await t.put("c", "Digest", "d");
        await t.commitDigest("e", null, { digest: "0".repeat(32), generation: 1, set: { LastWrite: "w" } });
        await t.put("f", RECORD, "[]");
        const items = (await collect(t.scanAttrs(["Info", "LastWrite"]))).sort((x, y) => (x.id < y.id ? -1 : 1));
        assert.deepEqual(items, [
          { id: "a", values: { Info: "info-a" }, expires: 42 },
          { id: "e", values: { LastWrite: "w" }, expires: undefined },
        ]);
      });
    });

    describe("the released record (docs/decisions/013)", () => {
      it("created with putIfAbsent, then extended with updateIf from what was read: of 6 recorders at once, none is lost", async () => {
        const t = await ready();
        const item = `${ID}-released`;
        const remember = async (entry: string): Promise<void> => {
          let current = await t.get(item, RECORD);
          for (;;) {
            const next = JSON.stringify([...(current === null ? [] : (JSON.parse(current) as string[])), entry]);
            if (current === null) {
              const existing = await t.putIfAbsent(item, RECORD, next);
              if (existing === null) return;
              current = existing;
            } else {
              if (await t.updateIf(item, RECORD, current, { [RECORD]: next })) return;
              current = await t.get(item, RECORD);
            }
          }
        };
        await Promise.all(Array.from({ length: 6 }, (_, i) => remember(`lock-${i}`)));
        const stored = JSON.parse((await t.get(item, RECORD)) ?? "[]") as string[];
        assert.deepEqual([...stored].sort(), ["lock-0", "lock-1", "lock-2", "lock-3", "lock-4", "lock-5"]);
      });
    });

    describe("the digest item and its commit point", () => {
      commitDigestSuite(ready);

      it("getDigest: null without an item; Digest, Generation and CommitLockID as committed, other attributes aside", async () => {
        const t = await ready();
        assert.equal(await t.getDigest(`${ID}-md5`), null);
        await t.put(`${ID}-md5`, "Other", "x");
        assert.deepEqual(await t.getDigest(`${ID}-md5`), { digest: null, generation: 0, lockId: undefined });
        assert.equal(
          await t.commitDigest(`${ID}-md5`, { digest: null, generation: 0, lockId: undefined }, { digest: "a".repeat(32), generation: 1, lockId: "L" }),
          true,
        );
        assert.deepEqual(await t.getDigest(`${ID}-md5`), { digest: "a".repeat(32), generation: 1, lockId: "L" });
        assert.equal(await t.get(`${ID}-md5`, "Other"), "x");
        assert.equal(await t.get(`${ID}-md5`, "Digest"), "a".repeat(32), "Digest is a string attribute the tool's own backend reads");
      });
    });
  });
}
