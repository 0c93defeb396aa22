/**
 * The embedded lock table's own behaviour: its files (schema, items, claims), and correctness
 * across processes. What every lock driver does is asserted by the conformance suite
 * (test/behaviour/lock-driver-suite.ts, driver-conformance.test.ts). Run as `node file.test.js --worker …` this file is also the child process
 * the concurrency tests start, so the test needs no helper script.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isObjstateError } from "../../../src/errors.js";
import { encodeId, FileLockTable } from "../../../src/lock/file.js";
import { acquireClaim } from "../../../src/store/claim.js";
import { openLockTable } from "../../../src/lock/index.js";
import type { LockTableDriver } from "../../../src/lock/types.js";

const SELF = fileURLToPath(import.meta.url);
const LOCK_ID = "my-bucket/env:/dev/tool.tfstate";

/**
 * What a table directory holds besides its schema and items: temp files, and claim
 * directories' contents other than their one kept spare (so: claims left behind). Empty
 * when nothing is left over.
 */
async function leftIn(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of await fs.readdir(dir)) {
    if (!name.startsWith(".") || name === ".schema.json") continue;
    if (!name.startsWith(".claim-i-")) {
      out.push(name);
      continue;
    }
    const inside = await fs.readdir(path.join(dir, name));
    const spares = inside.filter((f) => f.startsWith(".spare-"));
    if (spares.length !== 1) out.push(`${name}: ${spares.length} spares`);
    out.push(...inside.filter((f) => !f.startsWith(".spare-")).map((f) => `${name}/${f}`));
  }
  return out;
}

if (process.argv[2] === "--worker") {
  await runWorker(process.argv.slice(3));
} else {
  defineTests();
}

function defineTests(): void {
  let root: string;
  let endpoint: string;
  let n = 0;
  /** A fresh table name per test, so tests never see each other's items. */
  const table = (): string => `tbl-${++n}`;
  const open = (name: string): FileLockTable => new FileLockTable({ table: name, endpoint });

  before(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), "objstate-filelock-"));
    endpoint = pathToFileURL(root).href;
  });
  after(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  describe("opening", () => {
    test("openLockTable picks the embedded table for file: endpoints", async () => {
      const t = await openLockTable({ table: "locks", endpoint });
      assert.equal(t.kind, "file");
      assert.match(t.location, /embedded lock table "locks"/);
      assert.ok(t instanceof FileLockTable);
      assert.equal(t.dir, path.join(root, ".kvstore", "locks"));
      t.close();
    });

    test("a relative file: endpoint is resolved against cwd", async () => {
      const t = await openLockTable({ table: "locks", endpoint: "file:./state-dir", cwd: root });
      assert.ok(t instanceof FileLockTable);
      assert.equal(t.dir, path.join(root, "state-dir", ".kvstore", "locks"));
    });

    test("openLockTable picks DynamoDB for http(s) and bare hosts, without sending anything", async () => {
      for (const ep of ["http://127.0.0.1:1", "https://127.0.0.1:1", "127.0.0.1:1"]) {
        const t = await openLockTable({ table: "locks", endpoint: ep, credentials: async () => ({ accessKeyId: "a", secretAccessKey: "b" }) });
        assert.equal(t.kind, "dynamodb");
        assert.match(t.location, /127\.0\.0\.1:1/);
        t.close();
      }
    });

    test("refuses a non-file endpoint and unsafe table names", () => {
      assert.throws(
        () => new FileLockTable({ table: "locks", endpoint: "http://127.0.0.1:1" }),
        (e) => isObjstateError(e, "INVALID_ENDPOINT"),
      );
      for (const bad of ["", "ab", "a/b/c", "../x", "lo cks", "x".repeat(256)]) {
        assert.throws(
          () => new FileLockTable({ table: bad, endpoint }),
          (e) => isObjstateError(e, "LOCK_TABLE_ERROR"),
          bad,
        );
      }
    });
  });

  describe("item names", () => {
    test("ids with / and : become one safe path segment", () => {
      const name = encodeId(LOCK_ID);
      assert.doesNotMatch(name, /[/\\:]/);
      assert.equal(name, "my-bucket%2Fenv%3A%2Fdev%2Ftool.tfstate");
    });

    test("ids that differ only by case get different names (case-insensitive disks)", () => {
      assert.notEqual(encodeId("Bucket/Key").toLowerCase(), encodeId("bucket/key").toLowerCase());
    });

    test("long ids are shortened with a hash, stay distinct and fit a file name", () => {
      const a = `b/${"x".repeat(400)}a`;
      const b = `b/${"x".repeat(400)}b`;
      assert.notEqual(encodeId(a), encodeId(b));
      assert.ok(encodeId(a).length < 240);
      assert.match(encodeId(a), /~[0-9a-f]{64}$/);
      // The shortened form never equals a plain encoding, because `~` is always escaped.
      assert.equal(encodeId("~"), "%7E");
    });
  });

  describe("key schema", () => {
    test("absent table → null; createTable → LockID S HASH with a schema file", async () => {
      const t = open(table());
      assert.equal(await t.describeKeySchema(), null);
      await t.createTable();
      assert.deepEqual(await t.describeKeySchema(), [{ name: "LockID", type: "S", keyType: "HASH" }]);
      const onDisk = JSON.parse(await fs.readFile(path.join(t.dir, ".schema.json"), "utf8")) as unknown;
      assert.deepEqual(onDisk, [{ name: "LockID", type: "S", keyType: "HASH" }]);
    });

    test("createTable is idempotent and keeps an existing schema", async () => {
      const t = open(table());
      await fs.mkdir(t.dir, { recursive: true });
      await fs.writeFile(path.join(t.dir, ".schema.json"), JSON.stringify([{ name: "Other", type: "S", keyType: "HASH" }]));
      await t.createTable();
      await t.createTable();
      assert.deepEqual(await t.describeKeySchema(), [{ name: "Other", type: "S", keyType: "HASH" }]);
    });

    test("a table directory without a schema file has the default key", async () => {
      const t = open(table());
      await fs.mkdir(t.dir, { recursive: true });
      assert.deepEqual(await t.describeKeySchema(), [{ name: "LockID", type: "S", keyType: "HASH" }]);
      assert.equal(await t.putIfAbsent(LOCK_ID, "Info", "x"), null);
      assert.equal(await t.get(LOCK_ID, "Info"), "x");
    });

    test("wrong schemas are reported as written: other key name, type N, composite key", async () => {
      const schemas = [
        [{ name: "Key", type: "S", keyType: "HASH" }],
        [{ name: "LockID", type: "N", keyType: "HASH" }],
        [
          { name: "LockID", type: "S", keyType: "HASH" },
          { name: "Sort", type: "S", keyType: "RANGE" },
        ],
      ];
      for (const schema of schemas) {
        const t = open(table());
        await fs.mkdir(t.dir, { recursive: true });
        await fs.writeFile(path.join(t.dir, ".schema.json"), JSON.stringify(schema));
        assert.deepEqual(await t.describeKeySchema(), schema);
      }
    });

    test("item calls on a wrongly keyed table fail like DynamoDB would", async () => {
      const t = open(table());
      await fs.mkdir(t.dir, { recursive: true });
      await fs.writeFile(path.join(t.dir, ".schema.json"), JSON.stringify([{ name: "LockID", type: "N", keyType: "HASH" }]));
      const calls: (() => Promise<unknown>)[] = [
        () => t.putIfAbsent(LOCK_ID, "Info", "x"),
        () => t.get(LOCK_ID, "Info"),
        () => t.put(LOCK_ID, "Info", "x"),
        () => t.deleteIf(LOCK_ID, "Info", "x"),
        () => t.delete(LOCK_ID),
      ];
      for (const call of calls) {
        await assert.rejects(call, (e) => isObjstateError(e, "LOCK_TABLE_ERROR") && /LockID \(N, HASH\)/.test(e.message));
      }
    });

    test("a malformed schema file is a clear error", async () => {
      const t = open(table());
      await fs.mkdir(t.dir, { recursive: true });
      await fs.writeFile(path.join(t.dir, ".schema.json"), "{not json");
      await assert.rejects(
        () => t.describeKeySchema(),
        (e) => isObjstateError(e, "LOCK_TABLE_ERROR") && e.message.includes(".schema.json"),
      );
    });
  });

  describe("items", () => {
    test("the first write creates the table", async () => {
      const t = open(table());
      assert.equal(await t.putIfAbsent(LOCK_ID, "Info", "x"), null);
      assert.deepEqual(await t.describeKeySchema(), [{ name: "LockID", type: "S", keyType: "HASH" }]);
      const u = open(table());
      await u.put(LOCK_ID, "Digest", "d");
      assert.notEqual(await u.describeKeySchema(), null);
    });

    test("one file per item holding {LockID, attr}, and no temporary files left", async () => {
      const t = open(table());
      await t.put(LOCK_ID, "Digest", "d1");
      await t.putIfAbsent(`${LOCK_ID}-md5`, "Info", "i1");
      await t.putIfAbsent(`${LOCK_ID}-md5`, "Info", "i2");
      await t.deleteIf(`${LOCK_ID}-md5`, "Info", "nope");
      const names = (await fs.readdir(t.dir)).filter((f) => !f.startsWith(".claim-i-")).sort();
      assert.deepEqual(names, [".schema.json", `i-${encodeId(LOCK_ID)}`, `i-${encodeId(`${LOCK_ID}-md5`)}`].sort());
      assert.deepEqual(await leftIn(t.dir), []);
      const content = JSON.parse(await fs.readFile(path.join(t.dir, `i-${encodeId(LOCK_ID)}`), "utf8")) as unknown;
      assert.deepEqual(content, { LockID: LOCK_ID, Digest: "d1" });
    });

    test("deleteIf deletes only on a match", async () => {
      const t = open(table());
      assert.equal(await t.deleteIf(LOCK_ID, "Info", "x"), false, "absent table");
      await t.put(LOCK_ID, "Info", "mine");
      assert.equal(await t.deleteIf("other/id", "Info", "mine"), false, "absent item");
      assert.equal(await t.deleteIf(LOCK_ID, "Info", "theirs"), false, "other value");
      assert.equal(await t.deleteIf(LOCK_ID, "Digest", "mine"), false, "other attribute");
      assert.equal(await t.get(LOCK_ID, "Info"), "mine");
      assert.equal(await t.deleteIf(LOCK_ID, "Info", "mine"), true);
      assert.equal(await t.get(LOCK_ID, "Info"), null);
      assert.equal(await t.deleteIf(LOCK_ID, "Info", "mine"), false, "already gone");
      assert.deepEqual(
        (await fs.readdir(t.dir)).filter((f) => !f.startsWith(".")),
        [],
        "the item is gone",
      );
      assert.deepEqual(await leftIn(t.dir), []);
    });

    test("a corrupt item file is an error, not an absent item", async () => {
      const t = open(table());
      await t.createTable();
      await fs.writeFile(path.join(t.dir, `i-${encodeId(LOCK_ID)}`), "{trunc");
      await assert.rejects(
        () => t.get(LOCK_ID, "Info"),
        (e) => isObjstateError(e, "LOCK_TABLE_ERROR"),
      );
      await assert.rejects(
        () => t.putIfAbsent(LOCK_ID, "Info", "x"),
        (e) => isObjstateError(e, "LOCK_TABLE_ERROR"),
      );
    });

    test("a table removed under a driver is re-created on the next write", async () => {
      const t = open(table());
      await t.put(LOCK_ID, "Info", "a");
      await fs.rm(t.dir, { recursive: true });
      await t.put(LOCK_ID, "Info", "c");
      assert.notEqual(await t.describeKeySchema(), null);
      assert.equal(await t.get(LOCK_ID, "Info"), "c");
    });
  });

  describe("updateIf (multi-attribute items)", () => {
    test("sets attributes only when the condition holds, keeping the others", async () => {
      const t = open(table());
      assert.equal(await t.updateIf(LOCK_ID, "Info", "a", { Expires: "1" }), false, "absent table");
      await t.put(LOCK_ID, "Info", "a");
      assert.equal(await t.updateIf("other/id", "Info", "a", { Expires: "1" }), false, "absent item: not created");
      assert.equal(await t.get("other/id", "Info"), null);
      assert.equal(await t.updateIf(LOCK_ID, "Info", "b", { Expires: "1" }), false, "other value");
      assert.equal(await t.get(LOCK_ID, "Expires"), null);
      assert.equal(await t.updateIf(LOCK_ID, "Info", "a", { Expires: "100", Released: "no" }), true);
      assert.equal(await t.updateIf(LOCK_ID, "Info", "a", { Expires: "100", Released: "no" }), true, "repeating succeeds");
      assert.equal(await t.updateIf(LOCK_ID, "Info", "a", {}), true, "empty set: just the condition");
      const item = JSON.parse(await fs.readFile(path.join(t.dir, `i-${encodeId(LOCK_ID)}`), "utf8")) as unknown;
      assert.deepEqual(item, { LockID: LOCK_ID, Info: "a", Expires: "100", Released: "no" });
      assert.equal(await t.updateIf(LOCK_ID, "Expires", "100", { Info: "b", Expires: "200" }), true, "the condition attribute may change");
      assert.equal(await t.get(LOCK_ID, "Info"), "b");
      assert.equal(await t.get(LOCK_ID, "Expires"), "200");
      assert.equal(await t.putIfAbsent(LOCK_ID, "Info", "c"), "b");
      assert.equal(await t.deleteIf(LOCK_ID, "Released", "no"), true, "deleteIf on any attribute");
      await assert.rejects(
        () => t.updateIf(LOCK_ID, "Info", "b", { LockID: "x" }),
        (e) => isObjstateError(e, "LOCK_TABLE_ERROR"),
      );
      assert.deepEqual(
        (await fs.readdir(t.dir)).filter((f) => !f.startsWith(".")),
        [],
        "the item is gone",
      );
      assert.deepEqual(await leftIn(t.dir), [], "no claim or temp left");
    });

    test("reads item files written by older versions (one attribute)", async () => {
      const t = open(table());
      await t.createTable();
      await fs.writeFile(path.join(t.dir, `i-${encodeId(LOCK_ID)}`), `${JSON.stringify({ LockID: LOCK_ID, Info: "old" })}\n`);
      assert.equal(await t.updateIf(LOCK_ID, "Info", "old", { Expires: "5" }), true);
      assert.equal(await t.get(LOCK_ID, "Expires"), "5");
      assert.equal(await t.get(LOCK_ID, "Info"), "old");
    });

    test("deleteIf and updateIf wait for the item's claim (the compare and the change are one step)", async () => {
      const t = open(table());
      await t.put(LOCK_ID, "Info", "a");
      const claimDir = path.join(t.dir, `.claim-i-${encodeId(LOCK_ID)}`);
      const held = await acquireClaim(claimDir, { prepare: () => fs.mkdir(claimDir, { recursive: true }).then(() => undefined), what: "test" });
      let done = false;
      const del = t.deleteIf(LOCK_ID, "Info", "a").then((r) => ((done = true), r));
      await sleep(150);
      assert.equal(done, false, "deleteIf went ahead while another process held the claim");
      assert.equal(await t.get(LOCK_ID, "Info"), "a");
      await held.release();
      assert.equal(await del, true);
      assert.equal(await t.get(LOCK_ID, "Info"), null);
    });

    test("8 processes updating with the same expected value: exactly one wins", async () => {
      const name = table();
      const t = open(name);
      const rounds = 40;
      for (let r = 0; r < rounds; r++) await t.put(`upd/${r}`, "Info", "start");
      const startAt = Date.now() + 1500;
      const outputs = await Promise.all(
        Array.from({ length: 8 }, (_, i) => runChild(["update-race", endpoint, name, String(rounds), `p${i}`, String(startAt)])),
      );
      const results = outputs.map((o) => JSON.parse(o) as boolean[]);
      for (let r = 0; r < rounds; r++) {
        const winners = results.flatMap((res, i) => (res[r] === true ? [`p${i}`] : []));
        assert.equal(winners.length, 1, `round ${r}: winners ${winners.join(",")}`);
        assert.equal(await t.get(`upd/${r}`, "Info"), winners[0]);
        assert.equal(await t.get(`upd/${r}`, "By"), winners[0], "both attributes of the winner");
      }
    });

    test("4 processes × 25 compare-and-set increments with updateIf lose no update", async () => {
      const name = table();
      const t = open(name);
      await t.put(LOCK_ID, "Info", "0");
      const startAt = Date.now() + 1500;
      await Promise.all(Array.from({ length: 4 }, (_, i) => runChild(["cas", endpoint, name, "25", `p${i}`, String(startAt)])));
      assert.equal(await t.get(LOCK_ID, "Info"), "100");
      assert.deepEqual(await leftIn(t.dir), [], "no temp or claim files left");
    });
  });

  describe("across processes", () => {
    test("8 processes racing putIfAbsent: exactly one winner per round, losers see the winner", async () => {
      const name = table();
      const procs = 8;
      const rounds = 150;
      const startAt = Date.now() + 1500;
      const outputs = await Promise.all(Array.from({ length: procs }, (_, i) => runChild(["race", endpoint, name, String(rounds), `p${i}`, String(startAt)])));
      const results = outputs.map((o) => JSON.parse(o) as (string | null)[]);
      const t = open(name);
      for (let r = 0; r < rounds; r++) {
        const winners = results.flatMap((res, i) => (res[r] === null ? [`p${i}`] : []));
        assert.equal(winners.length, 1, `round ${r}: winners ${winners.join(",")}`);
        const winner = winners[0];
        for (const res of results) if (res[r] !== null) assert.equal(res[r], winner, `round ${r}`);
        assert.equal(await t.get(`race/${r}`, "Info"), winner);
      }
      assert.deepEqual(await leftIn(t.dir), [], "no temp or claim files left");
    });

    test("6 processes × 20 lock/unlock cycles guarding a read-modify-write counter", async () => {
      const name = table();
      const procs = 6;
      const cycles = 20;
      const counter = path.join(root, `${name}-counter`);
      await fs.writeFile(counter, "0");
      const startAt = Date.now() + 1500;
      await Promise.all(Array.from({ length: procs }, (_, i) => runChild(["mutex", endpoint, name, String(cycles), `p${i}`, String(startAt), counter])));
      assert.equal(await fs.readFile(counter, "utf8"), String(procs * cycles));
      assert.equal(await open(name).get(LOCK_ID, "Info"), null, "lock released at the end");
    });
  });
}

/** Run this file as a worker; resolves with its stdout, rejects on a non-zero exit. */
function runChild(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SELF, "--worker", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`worker ${args.join(" ")} exited ${code}: ${err}`))));
  });
}

async function runWorker(args: string[]): Promise<void> {
  const [mode, endpoint, table, count, tag, startAt, counter] = args;
  if (endpoint === undefined || table === undefined || tag === undefined) throw new Error(`bad worker args ${args.join(" ")}`);
  const t = await openLockTable({ table, endpoint });
  // Start together, so the processes really collide instead of running one after another.
  await sleep(Math.max(0, Number(startAt) - Date.now()));
  if (mode === "race") await raceWorker(t, Number(count), tag);
  else if (mode === "mutex" && counter !== undefined) await mutexWorker(t, Number(count), tag, counter);
  else if (mode === "update-race") await updateRaceWorker(t, Number(count), tag);
  else if (mode === "cas") await casWorker(t, Number(count), tag);
  else throw new Error(`unknown worker mode ${mode}`);
  t.close();
}

async function raceWorker(t: LockTableDriver, rounds: number, tag: string): Promise<void> {
  const results: (string | null)[] = [];
  for (let r = 0; r < rounds; r++) results.push(await t.putIfAbsent(`race/${r}`, "Info", tag));
  process.stdout.write(JSON.stringify(results));
}

/**
 * Take the lock, increment a counter file with a deliberately non-atomic read, pause and
 * write, release. Also fire stale unlocks, which must never release someone else's lock.
 */
async function mutexWorker(t: LockTableDriver, cycles: number, tag: string, counter: string): Promise<void> {
  for (let c = 0; c < cycles; c++) {
    const me = `${tag}-${c}`;
    for (;;) {
      if (await t.deleteIf(LOCK_ID, "Info", `${tag}-stale`)) throw new Error("a stale unlock released a lock");
      if ((await t.putIfAbsent(LOCK_ID, "Info", me)) === null) break;
      await sleep(Math.random() * 3);
    }
    if ((await t.get(LOCK_ID, "Info")) !== me) throw new Error(`${me} holds the lock but reads another holder`);
    const value = Number(await fs.readFile(counter, "utf8"));
    if (!Number.isInteger(value)) throw new Error("counter file was torn: two holders at once");
    await sleep(1);
    await fs.writeFile(counter, String(value + 1));
    if (!(await t.deleteIf(LOCK_ID, "Info", me))) throw new Error(`${me} could not release its own lock`);
  }
}

async function updateRaceWorker(t: LockTableDriver, rounds: number, tag: string): Promise<void> {
  const results: boolean[] = [];
  for (let r = 0; r < rounds; r++) results.push(await t.updateIf(`upd/${r}`, "Info", "start", { Info: tag, By: tag }));
  process.stdout.write(JSON.stringify(results));
}

/** Increment the Info counter with updateIf, retrying on a lost race; stale deletes must never hit. */
async function casWorker(t: LockTableDriver, increments: number, tag: string): Promise<void> {
  for (let i = 0; i < increments;) {
    const cur = await t.get(LOCK_ID, "Info");
    if (cur === null) throw new Error("the counter item vanished");
    if (await t.deleteIf(LOCK_ID, "Info", `${tag}-stale`)) throw new Error("a stale delete removed the item");
    if (await t.updateIf(LOCK_ID, "Info", cur, { Info: String(Number(cur) + 1), By: tag })) i++;
  }
}
