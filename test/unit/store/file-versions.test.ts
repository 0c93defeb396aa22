/**
 * The embedded store's own versions: retention applied on write, and crash safety (a
 * writer killed between archiving the current version and replacing it).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it } from "node:test";
import { FileDriver } from "../../../src/store/file.js";

let n = 0;
async function freshDriver(): Promise<FileDriver> {
  const root = await fs.mkdtemp(path.join(tmpdir(), "objstate-versions-"));
  return new FileDriver({ bucket: `bkt-${++n}`, endpoint: pathToFileURL(root).href });
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of it) out.push(v);
  return out;
}

const hash = (k: string): string => createHash("sha256").update(k).digest("hex");

describe("embedded store versions", () => {
  it("applies the retention rule on write: keeps the newest N noncurrent versions, under the rule's prefix only", async () => {
    const d = await freshDriver();
    await d.setRetention({ prefix: "env:/", newerNoncurrentVersions: 1 });
    for (let i = 1; i <= 4; i++) {
      await d.put("env:/k", Buffer.from(`v${i}`));
      await d.put("other/k", Buffer.from(`v${i}`));
    }
    const kept = await collect(d.listVersions("env:/k"));
    assert.deepEqual(await Promise.all(kept.map(async (v) => (await d.get("env:/k", { versionId: v.versionId }))?.body.toString())), ["v4", "v3"]);
    assert.equal((await collect(d.listVersions("other/k"))).length, 4, "outside the prefix nothing expires");
    assert.equal(
      (await fs.readdir(path.join(d.bucketDir, ".meta", hash("env:/k")))).filter((f) => f.endsWith(".json")).length,
      2,
      "metadata of expired versions goes with them",
    );
    await d.setRetention({ prefix: "env:/" });
    assert.equal(await d.getRetention(), null);
  });

  it("a writer killed after archiving and before replacing leaves every version intact and listed once", async () => {
    const d = await freshDriver();
    await d.put("k", Buffer.from("one"));
    await d.put("k", Buffer.from("two"));
    const [current] = await collect(d.listVersions("k"));
    // What the killed writer left: the current version linked into the archive, plus its temp file.
    await fs.link(path.join(d.bucketDir, "k"), path.join(d.bucketDir, ".versions", hash("k"), current?.versionId as string));
    await fs.writeFile(path.join(d.bucketDir, ".tmp-00000000-0000-4000-8000-000000000000.k"), "thr");
    const listed = await collect(d.listVersions("k"));
    assert.deepEqual(
      listed.map((v) => v.isLatest),
      [true, false],
    );
    assert.equal((await d.get("k"))?.body.toString(), "two");
    await d.put("k", Buffer.from("three"), { ifMatch: createHash("md5").update("two").digest("hex") });
    const after = await collect(d.listVersions("k"));
    assert.deepEqual(await Promise.all(after.map(async (v) => (await d.get("k", { versionId: v.versionId }))?.body.toString())), ["three", "two", "one"]);
    assert.deepEqual(
      (await d.listLeftovers("")).map((l) => l.key),
      ["k"],
      "only the temp file is a leftover",
    );
  });

  it("version IDs sort newest first and name a version whether current or archived; bad IDs read as absent", async () => {
    const d = await freshDriver();
    await d.put("k", Buffer.from("one"));
    const [first] = await collect(d.listVersions("k"));
    assert.equal((await d.head("k"))?.versionId, first?.versionId);
    await d.put("k", Buffer.from("two"));
    const [second, again] = await collect(d.listVersions("k"));
    assert.equal(again?.versionId, first?.versionId);
    assert.ok((second?.versionId ?? "") < (first?.versionId ?? ""));
    for (const bad of ["../k", "null", "", `${first?.versionId}/x`]) assert.equal(await d.get("k", { versionId: bad }), null, bad);
  });
});
