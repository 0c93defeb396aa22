/**
 * The embedded store's side of the driver contract used for fencing and repair, beyond the
 * conformance suite (test/behaviour/store-driver-suite.ts): If-Match writes atomic across
 * processes, claims, ranged reads, and its own kinds of leftovers.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { isObjstateError } from "../../../src/errors.js";
import { acquireClaim } from "../../../src/store/claim.js";
import { FileDriver } from "../../../src/store/file.js";

const FILE_DRIVER_URL = new URL("../../../src/store/file.js", import.meta.url).href;
const CLAIM_URL = new URL("../../../src/store/claim.js", import.meta.url).href;

let root: string;
let counter = 0;

function freshDriver(): FileDriver {
  counter += 1;
  return new FileDriver({ bucket: `bucket-${counter}`, endpoint: `file://${root}` });
}

function md5(b: Buffer | string): string {
  return createHash("md5").update(b).digest("hex");
}

/** Run an ES module snippet in a child node process; resolves with its stdout (rejects on exit ≠ 0). */
function child(code: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    c.stdout.on("data", (d: Buffer) => (out += d.toString()));
    c.stderr.on("data", (d: Buffer) => (err += d.toString()));
    c.on("close", (rc) => (rc === 0 ? resolve(out) : reject(new Error(`child exited ${rc}: ${err}`))));
  });
}

/** Code that opens the driver `d` on the same bucket in a child. */
function openIn(d: FileDriver): string {
  return `import { FileDriver } from ${JSON.stringify(FILE_DRIVER_URL)};
    const d = new FileDriver({ bucket: ${JSON.stringify(path.basename(d.bucketDir))}, endpoint: ${JSON.stringify(`file://${root}`)} });`;
}

before(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), "objstate-file-contract-"));
});

after(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe("FileDriver If-Match", () => {
  it("replaces only when the current etag matches; absent or other etag → PRECONDITION_FAILED, nothing changed", async () => {
    const d = freshDriver();
    await assert.rejects(
      d.put("k", Buffer.from("x"), { ifMatch: md5("x") }),
      (e) => isObjstateError(e, "PRECONDITION_FAILED") && /does not exist/.test(e.message),
    );
    assert.equal(await d.head("k"), null, "a refused write creates nothing");
    await d.put("k", Buffer.from("one"), { contentType: "text/one" });
    await assert.rejects(
      d.put("k", Buffer.from("two"), { ifMatch: md5("other") }),
      (e) => isObjstateError(e, "PRECONDITION_FAILED") && e.message.includes(md5("one")),
    );
    const kept = await d.get("k");
    assert.equal(kept?.body.toString(), "one");
    assert.equal(kept?.meta.contentType, "text/one", "metadata of the refused write was not kept");
    await d.put("k", Buffer.from("two"), { ifMatch: md5("one") });
    assert.equal((await d.get("k"))?.body.toString(), "two");
    // Quoted ETags (as S3 returns them) work too.
    await d.put("k", Buffer.from("three"), { ifMatch: `"${md5("two")}"` });
    assert.equal((await d.get("k"))?.body.toString(), "three");
    const metas = await fs.readdir(path.join(d.bucketDir, ".meta", createHash("sha256").update("k").digest("hex")));
    assert.deepEqual(
      metas.filter((f) => !f.startsWith(".spare-")).length,
      3,
      `metadata of the current and the two older versions, no claim left: ${metas.join(",")}`,
    );
    assert.equal(metas.filter((f) => f.startsWith(".spare-")).length, 1, "one spare kept for full disks");
    assert.deepEqual(
      (await fs.readdir(d.bucketDir)).filter((n) => n.startsWith(".tmp-")),
      [],
    );
  });

  it("If-Match together with If-None-Match never writes", async () => {
    const d = freshDriver();
    await d.put("k", Buffer.from("a"));
    await assert.rejects(d.put("k", Buffer.from("b"), { ifMatch: md5("a"), ifNoneMatch: true }), (e) => isObjstateError(e, "PRECONDITION_FAILED"));
    assert.equal((await d.get("k"))?.body.toString(), "a");
  });

  it("8 processes writing with the same expected etag: exactly one wins, the rest get PRECONDITION_FAILED", async () => {
    const d = freshDriver();
    await d.put("race", Buffer.from("start"));
    for (let round = 0; round < 3; round++) {
      const expected = (await d.head("race"))?.etag ?? "";
      const startAt = Date.now() + 700;
      const outs = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          child(`${openIn(d)}
            await new Promise((r) => setTimeout(r, ${startAt} - Date.now()));
            try { await d.put("race", Buffer.from("r${round}-w${i}"), { ifMatch: ${JSON.stringify(expected)} }); process.stdout.write("won"); }
            catch (e) { process.stdout.write(e.code === "PRECONDITION_FAILED" ? "lost" : "error " + e.code + " " + e.message); }`),
        ),
      );
      const winners = outs.flatMap((o, i) => (o === "won" ? [i] : []));
      assert.equal(winners.length, 1, outs.join(","));
      assert.equal(outs.filter((o) => o === "lost").length, 7, outs.join(","));
      const got = await d.get("race");
      assert.equal(got?.body.toString(), `r${round}-w${winners[0]}`);
      assert.equal(got?.meta.etag, md5(got?.body ?? ""));
    }
  });

  it("4 processes × 15 compare-and-swap increments of one counter lose no update", async () => {
    const d = freshDriver();
    await d.put("n", Buffer.from("0"));
    const startAt = Date.now() + 700;
    await Promise.all(
      Array.from({ length: 4 }, () =>
        child(`${openIn(d)}
          await new Promise((r) => setTimeout(r, ${startAt} - Date.now()));
          for (let i = 0; i < 15; ) {
            const cur = await d.get("n");
            try { await d.put("n", Buffer.from(String(Number(cur.body.toString()) + 1)), { ifMatch: cur.meta.etag }); i++; }
            catch (e) { if (e.code !== "PRECONDITION_FAILED") throw e; }
          }`),
      ),
    );
    assert.equal((await d.get("n"))?.body.toString(), "60");
  });

  it("a write drops old metadata of versions that never became current, and keeps every kept version's", async () => {
    const d = freshDriver();
    for (const v of ["1", "2", "3"]) await d.put("k", Buffer.from(v), { contentType: `text/v${v}` });
    const dir = path.join(d.bucketDir, ".meta", createHash("sha256").update("k").digest("hex"));
    // Left by racing writers whose versions never became current: one old, one recent.
    const stale = path.join(dir, "999999991-1000.json");
    const recent = path.join(dir, "999999992-2000.json");
    for (const f of [stale, recent]) await fs.writeFile(f, "{}");
    const past = new Date(Date.now() - 120_000);
    await fs.utimes(stale, past, past);
    // Archived versions' metadata is as old as the stale file: it must stay all the same.
    for (const name of await fs.readdir(dir))
      if (/^\d+-\d+\.json$/.test(name) && !name.startsWith("99999999")) await fs.utimes(path.join(dir, name), past, past);
    await d.put("k", Buffer.from("4"), { contentType: "text/v4" });
    await assert.rejects(fs.access(stale), "the stale metadata is gone");
    await fs.access(recent); // may belong to a write still in flight
    const versions: string[] = [];
    for await (const v of d.listVersions("k")) versions.push(v.versionId);
    assert.equal(versions.length, 4);
    const types = await Promise.all(versions.map(async (id) => (await d.head("k", { versionId: id }))?.contentType));
    assert.deepEqual(types, ["text/v4", "text/v3", "text/v2", "text/v1"], "every kept version keeps its metadata");
  });

  it("a claim left by a process that died does not block writers; nor does one whose pid now runs another program, or one from before a restart", async () => {
    const d = freshDriver();
    await d.put("k", Buffer.from("a"));
    const dir = path.join(d.bucketDir, ".meta", createHash("sha256").update("k").digest("hex"));
    const dead = path.join(dir, await deadClaimName());
    await fs.writeFile(dead, "");
    // The pid reused: a claim naming a running process (this one) with another start time.
    const [, host, boot, , start, uuid] = claimParts(await deadClaimName());
    const reused = path.join(dir, `.claim-${host}-${boot}-${process.pid}-${String(Number(start) + 1)}-${uuid}`);
    await fs.writeFile(reused, "");
    // From before this machine restarted: another boot ID, this very process's pid and start.
    const [, h2, , , , u2] = claimParts(await deadClaimName());
    const mine = claimParts(await liveClaimName(dir));
    const rebooted = path.join(dir, `.claim-${h2}-${boot === "ffffffff" ? "fffffffe" : "ffffffff"}-${process.pid}-${mine[4]}-${u2}`);
    await fs.writeFile(rebooted, "");
    await d.put("k", Buffer.from("b"), { ifMatch: md5("a") });
    assert.equal((await d.get("k"))?.body.toString(), "b");
    for (const f of [dead, reused, rebooted]) await assert.rejects(fs.access(f), /ENOENT/, `${path.basename(f)} was broken`);
  });

  it("a claim of a live process is never broken, however old: writers give up with STORE_BUSY naming it and its process", async () => {
    const d = freshDriver();
    await d.put("k", Buffer.from("a"));
    const dir = path.join(d.bucketDir, ".meta", createHash("sha256").update("k").digest("hex"));
    const held = await acquireClaim(dir, { prepare: async () => undefined, what: "test" });
    const [name] = (await fs.readdir(dir)).filter((f) => f.startsWith(".claim-"));
    const hourAgo = new Date(Date.now() - 3_600_000);
    await fs.utimes(path.join(dir, name as string), hourAgo, hourAgo);
    const file = path.join(dir, name as string);
    await assert.rejects(acquireClaim(dir, { prepare: async () => undefined, what: "object k", waitMs: 300 }), (e) => {
      assert.ok(isObjstateError(e, "STORE_BUSY"), String(e));
      assert.equal(
        e.message,
        `object k is held by another writer (claim ${file}, of process ${process.pid} on this host); objstate never breaks the claim of a process that may still run: if no objstate process is running there, delete that file`,
      );
      assert.equal(e.details?.["path"], file);
      return true;
    });
    await held.release();
    await d.put("k", Buffer.from("b"), { ifMatch: md5("a") });
    assert.equal((await d.get("k"))?.body.toString(), "b");
  });

  it("a claim from another host (a shared file system) is never broken, even of a pid that does not run here", async () => {
    const d = freshDriver();
    await d.put("k", Buffer.from("a"));
    const dir = path.join(d.bucketDir, ".meta", createHash("sha256").update("k").digest("hex"));
    const [, , boot, pid, start, uuid] = claimParts(await deadClaimName());
    const foreign = path.join(dir, `.claim-000000000000-${boot}-${pid}-${start}-${uuid}`);
    await fs.writeFile(foreign, "");
    const past = new Date(Date.now() - 86_400_000);
    await fs.utimes(foreign, past, past);
    const claim = (): Promise<unknown> => acquireClaim(dir, { prepare: async () => undefined, what: "object k", waitMs: 300 });
    await assert.rejects(
      claim(),
      (e) => isObjstateError(e, "STORE_BUSY") && e.message.includes(`of process ${pid} on another host`) && e.message.includes("delete that file"),
    );
    // A name this version cannot read, too (made after: a claim found first is the one named, in directory order).
    const older = path.join(dir, `.claim-000000000000-${pid}-${randomUUID()}`);
    await fs.writeFile(older, "");
    await fs.rm(foreign);
    await assert.rejects(claim(), (e) => isObjstateError(e, "STORE_BUSY") && e.message.includes(older));
    await fs.rm(older);
    await (await acquireClaim(dir, { prepare: async () => undefined, what: "object k" })).release();
    assert.deepEqual(await d.listLeftovers(""), [], "live and foreign claims are no leftovers");
  });

  it("a live claim makes a writer wait, and it gives up with STORE_BUSY naming the claim", async () => {
    const dir = await fs.mkdtemp(path.join(root, "claim-"));
    const held = await acquireClaim(dir, { prepare: async () => undefined, what: "object k" });
    await assert.rejects(
      acquireClaim(dir, { prepare: async () => undefined, what: "object k", waitMs: 300 }),
      (e) => isObjstateError(e, "STORE_BUSY") && e.message.includes(dir),
    );
    const waiting = acquireClaim(dir, { prepare: async () => undefined, what: "object k", waitMs: 5000 });
    await new Promise((r) => setTimeout(r, 100));
    await held.release();
    await (await waiting).release();
    assert.deepEqual(
      (await fs.readdir(dir)).map((f) => f.replace(/-.*/, "-*")),
      [".spare-*"],
      "no claim left, one spare kept",
    );
  });
});

/** The parts of a claim name: [name, host, boot, pid, start, uuid]. */
function claimParts(name: string): [string, string, string, string, string, string] {
  const m = /^\.claim-([0-9a-f]{12})-([0-9a-f]{8})-(\d+)-(\d+)-([0-9a-f-]{36})$/.exec(name);
  assert.ok(m !== null, name);
  return m as unknown as [string, string, string, string, string, string];
}

/** The name of a claim taken by a child process that then exited without releasing it. */
async function deadClaimName(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(root, "dead-claim-"));
  await child(`import { acquireClaim } from ${JSON.stringify(CLAIM_URL)};
    await acquireClaim(${JSON.stringify(dir)}, { prepare: async () => undefined, what: "x" });`);
  const [name] = (await fs.readdir(dir)).filter((f) => f.startsWith(".claim-"));
  assert.ok(name !== undefined);
  return name;
}

/** The name of a claim this process takes (and releases) in `dir`. */
async function liveClaimName(dir: string): Promise<string> {
  const held = await acquireClaim(dir, { prepare: async () => undefined, what: "x" });
  const [name] = (await fs.readdir(dir)).filter((f) => f.startsWith(".claim-"));
  await held.release();
  assert.ok(name !== undefined);
  return name;
}

describe("FileDriver metadata and ranged reads", () => {
  it("maxBytes reads only the first bytes; size is the whole object's and no md5 is claimed", async () => {
    const d = freshDriver();
    const body = Buffer.from('{"version":4,"serial":3,"lineage":"x","rest":"' + "y".repeat(10_000) + '"}');
    await d.put("big", body);
    const part = await d.get("big", { maxBytes: 20, md5: true });
    assert.equal(part?.body.toString(), body.subarray(0, 20).toString());
    assert.equal(part?.meta.size, body.length);
    assert.equal(part?.md5, undefined);
    const all = await d.get("big", { maxBytes: body.length + 5, md5: true });
    assert.equal(all?.body.length, body.length);
    assert.equal(all?.md5, md5(body));
    assert.equal((await d.get("big", { maxBytes: 0 }))?.body.length, 0);
  });
});

describe("FileDriver leftovers", () => {
  it("lists temp, claim and orphaned metadata files by prefix, oldest first, and removes them", async () => {
    const d = freshDriver();
    await d.put("team-a/tool.tfstate", Buffer.from("a"));
    await d.put("team-b/tool.tfstate", Buffer.from("b"));
    const hashA = createHash("sha256").update("team-a/tool.tfstate").digest("hex");
    // What a writer of team-a that crashed at each step leaves behind.
    const tempA = `.tmp-${randomUUID()}.${encodeURIComponent("team-a/tool.tfstate")}`;
    await fs.writeFile(path.join(d.bucketDir, tempA), "partial");
    const tempOld = `.tmp-${randomUUID()}`; // an older objstate's temp: key unknown
    await fs.writeFile(path.join(d.bucketDir, tempOld), "x");
    const claimA = `.meta/${hashA}/${await deadClaimName()}`;
    await fs.writeFile(path.join(d.bucketDir, claimA), "");
    const orphanA = `.meta/${hashA}/1-2.json`;
    await fs.writeFile(
      path.join(d.bucketDir, orphanA),
      JSON.stringify({ key: "team-a/tool.tfstate", size: 1, etag: "e", lastModified: new Date().toISOString() }),
    );
    const tempB = `.tmp-${randomUUID()}.${encodeURIComponent("team-b/tool.tfstate")}`;
    await fs.writeFile(path.join(d.bucketDir, tempB), "bb");
    const past = (s: number): Date => new Date(Date.now() - s * 1000);
    await fs.utimes(path.join(d.bucketDir, tempA), past(300), past(300));
    await fs.utimes(path.join(d.bucketDir, tempOld), past(400), past(400));

    const a = await d.listLeftovers("team-a/");
    // Oldest first: the two back-dated temp files, then the young ones in any order.
    assert.deepEqual(
      a.slice(0, 2).map((l) => [l.id, l.key]),
      [
        [tempOld, undefined],
        [tempA, "team-a/tool.tfstate"],
      ],
    );
    assert.deepEqual(
      a
        .slice(2)
        .map((l) => [l.id, l.key])
        .sort(),
      [
        [claimA, "team-a/tool.tfstate"],
        [orphanA, "team-a/tool.tfstate"],
      ].sort(),
    );
    const first = a[1];
    assert.ok(first !== undefined);
    assert.equal(first.kind, "temp-file");
    assert.equal(first.size, 7);
    assert.ok(first.since instanceof Date && Math.abs(first.since.getTime() - past(300).getTime()) < 2000);
    assert.ok(!a.some((l) => l.id.endsWith(".json") && l.id !== orphanA), "current metadata is no leftover");
    assert.equal((await d.listLeftovers("")).length, 5);

    for (const l of a) await d.removeLeftover(l);
    for (const l of a) await d.removeLeftover(l); // gone already is fine
    assert.deepEqual(await d.listLeftovers("team-a/"), []);
    assert.equal((await d.get("team-a/tool.tfstate"))?.body.toString(), "a", "the object and its metadata stay");
    assert.equal((await d.head("team-a/tool.tfstate"))?.etag, md5("a"));
    assert.deepEqual(
      (await d.listLeftovers("")).map((l) => l.id),
      [tempB],
    );
  });

  it("removes only its own kinds of files, and never current metadata", async () => {
    const d = freshDriver();
    await d.put("k", Buffer.from("v"));
    for (const id of ["../x", "k", ".meta/../../x", ".tmp-a/../../x", "/etc/passwd"]) {
      await assert.rejects(d.removeLeftover({ kind: "temp-file", key: undefined, id, since: undefined }), (e) => isObjstateError(e, "INVALID_LEFTOVER"), id);
    }
    const hash = createHash("sha256").update("k").digest("hex");
    const [current] = (await fs.readdir(path.join(d.bucketDir, ".meta", hash))).filter((f) => f.endsWith(".json"));
    await d.removeLeftover({ kind: "temp-file", key: "k", id: `.meta/${hash}/${current}`, since: undefined });
    assert.equal((await d.head("k"))?.etag, md5("v"));
    assert.deepEqual(
      (await fs.readdir(path.join(d.bucketDir, ".meta", hash))).filter((f) => f.endsWith(".json")),
      [current],
    );
    assert.deepEqual(await freshDriver().listLeftovers(""), [], "no bucket, no leftovers");
  });
});
