import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { GatheringWriter } from "../../../src/store/byte-source.js";
import { FileDriver } from "../../../src/store/file.js";
import type { ByteSource } from "../../../src/store/types.js";

/** A writev that takes a macrotask (as a write through the thread pool does) and records each batch. */
function recorder(fail?: number): { batches: Uint8Array[][]; writev: (chunks: readonly Uint8Array[]) => Promise<void> } {
  const batches: Uint8Array[][] = [];
  return {
    batches,
    writev: async (chunks) => {
      batches.push([...chunks]);
      await new Promise((r) => setImmediate(r));
      if (fail !== undefined && batches.length === fail) throw new Error("disk full");
    },
  };
}

const chunks = (n: number, size: number): Buffer[] => Array.from({ length: n }, (_, i) => Buffer.alloc(size, i));

describe("GatheringWriter", () => {
  it("writes chunks that are all there in two writes (the first at once, the rest together), in order", async () => {
    const r = recorder();
    const w = new GatheringWriter(r.writev, 1 << 30);
    const cs = chunks(16, 1024);
    for (const c of cs) await w.add(c);
    await w.end();
    assert.equal(r.batches.length, 2);
    assert.deepEqual(r.batches.flat(), cs);
  });

  it("holds no more than maxQueued bytes: add waits for the write under way", async () => {
    const r = recorder();
    const w = new GatheringWriter(r.writev, 4096);
    const cs = chunks(16, 1024);
    for (const c of cs) await w.add(c);
    await w.end();
    assert.deepEqual(r.batches.flat(), cs);
    for (const b of r.batches) assert.ok(b.length <= 5, `a batch of ${b.length} chunks`);
  });

  it("reports a failed write to the next add or to end, and writes nothing after it", async () => {
    const r = recorder(1);
    const w = new GatheringWriter(r.writev, 1 << 30);
    await w.add(Buffer.from("a"));
    await w.add(Buffer.from("b"));
    await assert.rejects(w.end(), /disk full/);
    await assert.rejects(w.add(Buffer.from("c")), /disk full/);
    assert.equal(r.batches.length, 1);
  });
});

describe("a streamed write to the embedded store whose chunks are all there", () => {
  let root: string;
  before(async () => (root = await fs.mkdtemp(path.join(os.tmpdir(), "objstate-gather-"))));
  after(async () => fs.rm(root, { recursive: true, force: true }));

  it("goes to the temp file in a few writes, not one per chunk, and stores the bytes in order", async () => {
    const driver = new FileDriver({ bucket: "gather", endpoint: `file://${root}` });
    await driver.createBucket();
    const cs = chunks(16, 64 * 1024).map((c) => Buffer.concat([c, randomBytes(16)]));
    const whole = Buffer.concat(cs);
    const source: ByteSource = {
      size: whole.length,
      async *open() {
        yield* cs;
      },
    };
    // Count the data writes of file handles (the temp file's) during the put.
    const probe = await fs.open(path.join(root, "probe"), "w");
    const proto = Object.getPrototypeOf(probe) as { write: (...a: unknown[]) => Promise<unknown>; writev: (...a: unknown[]) => Promise<unknown> };
    await probe.close();
    const { write, writev } = proto;
    let calls = 0;
    proto.write = function (this: unknown, ...a: unknown[]) {
      if (Buffer.isBuffer(a[0]) || a[0] instanceof Uint8Array) calls += 1;
      return write.apply(this, a);
    };
    proto.writev = function (this: unknown, ...a: unknown[]) {
      calls += 1;
      return writev.apply(this, a);
    };
    try {
      await driver.put("state.json", source, { md5: createHash("md5").update(whole).digest("hex") });
    } finally {
      proto.write = write;
      proto.writev = writev;
    }
    assert.ok(calls <= 3, `${calls} writes for 16 chunks`);
    const back = await driver.get("state.json");
    assert.ok(back !== null && back.body.equals(whole));
  });
});
