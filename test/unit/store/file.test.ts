/**
 * The embedded store's own behaviour: its files on disk, key and bucket name checks, ACL and
 * encryption records, and atomicity across processes. What every driver does is asserted
 * by the conformance suite (test/behaviour/store-driver-suite.ts, driver-conformance.test.ts).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createHash } from "node:crypto";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { isObjstateError } from "../../../src/errors.js";
import { FileDriver } from "../../../src/store/file.js";
import { openStore } from "../../../src/store/index.js";
import type { ObjectStoreDriver } from "../../../src/store/types.js";

const FILE_DRIVER_URL = new URL("../../../src/store/file.js", import.meta.url).href;

let root: string;
let counter = 0;

/** A fresh bucket (not yet created) in the shared temp root. */
function freshDriver(): FileDriver {
  counter += 1;
  return new FileDriver({ bucket: `bucket-${counter}`, endpoint: `file://${root}` });
}

function md5(b: Buffer): string {
  return createHash("md5").update(b).digest("hex");
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const k of it) out.push(k);
  return out;
}

interface ChildResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run an ES module snippet in a child node process; `release` resolves when it prints `ready`. */
function runChild(code: string, opts: { onReady?: () => void } = {}): { done: Promise<ChildResult>; go: () => void } {
  const child = spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    if (stdout.includes("ready\n") && opts.onReady !== undefined) {
      const f = opts.onReady;
      opts.onReady = undefined;
      f();
    }
  });
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<ChildResult>((resolve) => child.on("close", (c) => resolve({ code: c, stdout, stderr })));
  return { done, go: () => child.stdin.end("go\n") };
}

before(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), "objstate-file-driver-"));
});

after(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe("FileDriver", () => {
  it("is what openStore gives for file: endpoints, relative to cwd", async () => {
    const d = await openStore({ bucket: "via-open", endpoint: "file:./rel/store", cwd: root });
    assert.equal(d.kind, "file");
    assert.equal(d.location, `file:${path.join(root, "rel", "store", "via-open")}`);
    d.close();
  });

  it("stores each object as one flat file named by its encoded key", async () => {
    const d = freshDriver();
    await d.put("env:/w/tool.tfstate", Buffer.from("state"));
    await d.put(".hidden", Buffer.from("dot"));
    const names = (await fs.readdir(d.bucketDir)).filter((n) => !n.startsWith("."));
    assert.deepEqual(names.sort(), ["%2Ehidden", "env%3A%2Fw%2Ftool.tfstate"]);
    assert.equal(await fs.readFile(path.join(d.bucketDir, "env%3A%2Fw%2Ftool.tfstate"), "utf8"), "state");
    assert.deepEqual(await collect(d.list("")), [".hidden", "env:/w/tool.tfstate"]);
  });

  it("records content type, acl and AES256, and reads them back", async () => {
    const d = freshDriver();
    const before = Date.now();
    await d.put("s", Buffer.from("{}"), { contentType: "application/json", acl: "public-read", encrypt: true });
    const head = await d.head("s");
    assert.ok(head);
    assert.equal(head.contentType, "application/json");
    assert.equal(head.acl, "public-read");
    assert.equal(head.serverSideEncryption, "AES256");
    assert.equal(head.size, 2);
    assert.equal(head.etag, md5(Buffer.from("{}")));
    assert.ok(head.lastModified instanceof Date);
    assert.ok(Math.abs(head.lastModified.getTime() - before) < 60_000);
    const got = await d.get("s");
    assert.deepEqual(got?.meta, head);

    // Metadata belongs to a version: replacing the object replaces it.
    await d.put("s", Buffer.from("[]"), { acl: "private" });
    const head2 = await d.head("s");
    assert.equal(head2?.acl, "private");
    assert.equal(head2?.serverSideEncryption, undefined);
    assert.equal(head2?.contentType, undefined);
  });

  it("create-if-absent refuses an existing key with PRECONDITION_FAILED and keeps the content", async () => {
    const d = freshDriver();
    await d.put("lock", Buffer.from("first"), { ifNoneMatch: true });
    await assert.rejects(d.put("lock", Buffer.from("second"), { ifNoneMatch: true }), (e) => isObjstateError(e, "PRECONDITION_FAILED"));
    assert.equal((await d.get("lock"))?.body.toString(), "first");
    // A refused write leaves no temp or metadata behind.
    assert.deepEqual(
      (await fs.readdir(d.bucketDir)).filter((n) => n.startsWith(".tmp-")),
      [],
    );
    await d.delete("lock");
    await d.put("lock", Buffer.from("third"), { ifNoneMatch: true });
    assert.equal((await d.get("lock"))?.body.toString(), "third");
  });

  it("lets exactly one of several processes win a concurrent create-if-absent", async () => {
    const d = freshDriver();
    await d.createBucket();
    for (let round = 0; round < 3; round++) {
      const key = `race-${round}`;
      const writers = 6;
      let ready = 0;
      let releaseAll: () => void = () => undefined;
      const allReady = new Promise<void>((r) => (releaseAll = r));
      const children = Array.from({ length: writers }, (_, i) =>
        runChild(
          `import { FileDriver } from ${JSON.stringify(FILE_DRIVER_URL)};
           const d = new FileDriver({ bucket: ${JSON.stringify(path.basename(d.bucketDir))}, endpoint: ${JSON.stringify(`file://${root}`)} });
           process.stdout.write("ready\\n");
           await new Promise((r) => process.stdin.once("data", r));
           try { await d.put(${JSON.stringify(key)}, Buffer.from("writer-${i}"), { ifNoneMatch: true }); process.stdout.write("won\\n"); }
           catch (e) { process.stdout.write(e.code === "PRECONDITION_FAILED" ? "lost\\n" : "error " + e.message + "\\n"); }`,
          { onReady: () => (++ready === writers ? releaseAll() : undefined) },
        ),
      );
      await allReady;
      for (const c of children) c.go();
      const results = await Promise.all(children.map((c) => c.done));
      const outcomes = results.map((r) => r.stdout.replace("ready\n", "").trim());
      for (const r of results) assert.equal(r.code, 0, r.stderr);
      assert.equal(outcomes.filter((o) => o === "won").length, 1, outcomes.join(","));
      assert.equal(outcomes.filter((o) => o === "lost").length, writers - 1, outcomes.join(","));
      const winner = outcomes.indexOf("won");
      assert.equal((await d.get(key))?.body.toString(), `writer-${winner}`);
    }
  });

  it("deletes objects keeping their versions (delete marker); purge removes every trace; deleting an absent key is fine", async () => {
    const d = freshDriver();
    await d.put("a", Buffer.from("1"), { contentType: "text/plain" });
    await d.put("a/b", Buffer.from("2"));
    await d.put("a", Buffer.from("3"), { contentType: "text/plain" });
    await d.delete("a");
    assert.equal(await d.get("a"), null);
    assert.equal(await d.head("a"), null);
    assert.equal((await d.get("a/b"))?.body.toString(), "2");
    assert.deepEqual(await collect(d.list("")), ["a/b"]);
    await d.delete("a");
    await d.delete("never-was");
    await d.delete("a/b");
    assert.deepEqual(await collect(d.list("")), []);
    const versions = await collect(d.listVersions("a"));
    assert.deepEqual(
      versions.map((v) => [v.deleteMarker, v.isLatest, v.size]),
      [
        [true, true, 0],
        [false, false, 1],
        [false, false, 1],
      ],
    );
    assert.equal((await d.get("a", { versionId: versions[2]?.versionId }))?.body.toString(), "1");
    assert.equal((await d.get("a", { versionId: versions[2]?.versionId }))?.meta.contentType, "text/plain", "an old version keeps its metadata");
    assert.deepEqual(await d.listLeftovers(""), [], "history is not a leftover");
    await d.purge("a");
    await d.purge("a/b");
    assert.deepEqual(await collect(d.listVersions("a")), []);
    assert.deepEqual(await fs.readdir(path.join(d.bucketDir, ".meta")), [], "no metadata left for purged keys");
    assert.deepEqual(await fs.readdir(path.join(d.bucketDir, ".versions")), [], "no versions left for purged keys");
  });

  it("rejects keys that would escape the directory, and bad bucket names", async () => {
    const d = freshDriver();
    for (const key of ["", "/etc/passwd", "../x", "a/../../x", "..", ".", "a/./b", "a/.."]) {
      await assert.rejects(d.put(key, Buffer.from("x")), (e) => isObjstateError(e, "INVALID_KEY"), JSON.stringify(key));
      await assert.rejects(d.get(key), (e) => isObjstateError(e, "INVALID_KEY"), JSON.stringify(key));
      await assert.rejects(d.delete(key), (e) => isObjstateError(e, "INVALID_KEY"), JSON.stringify(key));
    }
    await assert.rejects(d.put("bad\uD800", Buffer.from("x")), (e) => isObjstateError(e, "INVALID_KEY"));
    await assert.rejects(d.put("k".repeat(300), Buffer.from("x")), (e) => isObjstateError(e, "INVALID_KEY"));
    // Dots that are not whole segments are ordinary characters.
    for (const key of ["..x", "a..b", "a/.hidden", "x/..."]) {
      await d.put(key, Buffer.from(key));
      assert.equal((await d.get(key))?.body.toString(), key);
    }
    for (const bucket of ["..", "../up", "a/b", "Ab", "x", ""]) {
      assert.throws(
        () => new FileDriver({ bucket, endpoint: `file://${root}` }),
        (e) => isObjstateError(e, "INVALID_BUCKET"),
        bucket,
      );
    }
    const outside = await fs.readdir(path.dirname(root));
    assert.ok(!outside.includes("x") && !outside.includes("passwd"));
  });

  it("never lets a reader see a partial object or metadata of another version", async () => {
    const d = freshDriver();
    const bucket = path.basename(d.bucketDir);
    const sizes: Record<string, number> = { A: 3 * 1024 * 1024, B: 5 * 1024 * 1024 + 3 };
    await d.put("big", Buffer.alloc(sizes.A ?? 0, "A"), { contentType: "text/A" });
    // The writer is another process, so the race is between processes, not just promises.
    const writer = runChild(
      `import { FileDriver } from ${JSON.stringify(FILE_DRIVER_URL)};
       const d = new FileDriver({ bucket: ${JSON.stringify(bucket)}, endpoint: ${JSON.stringify(`file://${root}`)} });
       for (let i = 0; i < 40; i++) {
         const c = i % 2 === 0 ? "B" : "A";
         await d.put("big", Buffer.alloc(c === "A" ? ${sizes.A} : ${sizes.B}, c), { contentType: "text/" + c });
       }`,
    );
    let finished = false;
    void writer.done.then(() => (finished = true));
    const seen = new Set<string>();
    let reads = 0;
    while (!finished) {
      const [got, head] = await Promise.all([d.get("big"), d.head("big")]);
      assert.ok(got && head);
      const c = String.fromCharCode(got.body[0] ?? 0);
      assert.equal(got.body.length, sizes[c], `size of a ${c} version`);
      assert.ok(got.body.equals(Buffer.alloc(got.body.length, c)), "uniform body");
      assert.equal(got.meta.contentType, `text/${c}`, "metadata of the same version");
      assert.equal(got.meta.size, got.body.length);
      assert.equal(got.meta.etag, md5(got.body));
      assert.equal(head.size, sizes[(head.contentType ?? "").slice(5)], "head: size and type of one version");
      seen.add(c);
      reads += 1;
    }
    const result = await writer.done;
    assert.equal(result.code, 0, result.stderr);
    assert.ok(reads > 5, `only ${reads} reads raced the writer`);
    assert.deepEqual([...seen].sort(), ["A", "B"]);
    const metas = await fs.readdir(path.join(d.bucketDir, ".meta"));
    assert.equal(metas.length, 1, "one key, one metadata directory");
  });

  it("keeps metadata consistent with the data when processes overwrite one key at once", async () => {
    const d: ObjectStoreDriver = freshDriver();
    await d.createBucket();
    const bucket = path.basename((d as FileDriver).bucketDir);
    const children = ["P", "Q", "R", "S"].map((c) =>
      runChild(
        `import { FileDriver } from ${JSON.stringify(FILE_DRIVER_URL)};
         const d = new FileDriver({ bucket: ${JSON.stringify(bucket)}, endpoint: ${JSON.stringify(`file://${root}`)} });
         for (let i = 0; i < 25; i++) await d.put("k", Buffer.alloc(1000 + i, "${c}"), { contentType: "text/${c}", acl: "public-read" });`,
      ),
    );
    const results = await Promise.all(children.map((c) => c.done));
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const got = await d.get("k");
    assert.ok(got);
    const c = String.fromCharCode(got.body[0] ?? 0);
    assert.equal(got.meta.contentType, `text/${c}`);
    assert.equal(got.meta.acl, "public-read");
    assert.equal(got.meta.etag, md5(got.body));
    assert.equal(got.body.length, 1024);
  });

  it("getStream reads the version's open file as it is iterated: chunk by chunk, unmixed by a replacing write, failed by one cut short in place", async () => {
    const d = freshDriver();
    const old = Buffer.alloc(5 * 1024 * 1024 + 7, "o");
    await d.put("s", old);
    const got = await d.getStream("s");
    assert.ok(got !== null);
    const it = got.body[Symbol.asyncIterator]();
    const first = await it.next();
    assert.ok(first.done !== true && first.value.length < old.length, "the first chunk comes before the whole object is read");
    // Replaced now: the rest is still the old version's (the file opened, not the name).
    await d.put("s", Buffer.alloc(old.length, "n"));
    const chunks = [Buffer.from(first.value)];
    for (let next = await it.next(); next.done !== true; next = await it.next()) chunks.push(Buffer.from(next.value));
    assert.ok(chunks.length > 1, "several chunks");
    assert.ok(Buffer.concat(chunks).equals(old), "every byte of the version opened");
    // A file truncated in place after the first chunk: what is left to read is gone.
    const cut = await d.getStream("s");
    const rest = cut?.body[Symbol.asyncIterator]();
    assert.ok((await rest?.next())?.done === false);
    await fs.truncate(path.join(d.bucketDir, "s"), 1024);
    await assert.rejects(
      (async () => {
        for (let next = await rest?.next(); next?.done !== true; next = await rest?.next());
      })(),
      (e) => isObjstateError(e, "STORE_ERROR"),
    );
  });

  it("getStream closes the version's file when its body ends, fails, or is given up before or after its first chunk", async (t) => {
    if (!existsSync("/proc/self/fd")) return t.skip("no /proc/self/fd to count open files");
    const d = freshDriver();
    await d.put("s", Buffer.alloc(3 * 1024 * 1024, "x"));
    const fds = async (): Promise<number> => (await fs.readdir("/proc/self/fd")).length;
    const body = async (): Promise<AsyncIterable<Uint8Array>> => {
      const got = await d.getStream("s");
      assert.ok(got !== null);
      return got.body;
    };
    const before = await fds();
    const unread = await body();
    assert.equal(await fds(), before + 1, "open while the body is pending");
    await unread[Symbol.asyncIterator]().return?.();
    assert.equal(await fds(), before, "given up before the first chunk");
    for await (const c of await body()) {
      assert.ok(c.length > 0);
      break;
    }
    assert.equal(await fds(), before, "given up after the first chunk");
    assert.equal((await collect(await body())).length, 3);
    assert.equal(await fds(), before, "read to the end");
    const failing = await body();
    await fs.truncate(path.join(d.bucketDir, "s"), 0);
    await assert.rejects(collect(failing), (e) => isObjstateError(e, "STORE_ERROR"));
    assert.equal(await fds(), before, "failed");
  });
});
