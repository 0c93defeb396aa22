/**
 * The MD5 worker: bytes in shared memory are hashed where they are, bytes elsewhere through
 * its staging slices, in the order they were given either way.
 */
import assert from "node:assert/strict";
import { randomFillSync } from "node:crypto";
import { describe, it } from "node:test";
import { md5Hex, ParallelMd5 } from "../../../src/util/md5.js";

const sharedBuffer = (size: number): Buffer => Buffer.from(new SharedArrayBuffer(size));

const MiB = 1024 * 1024;

describe("ParallelMd5", () => {
  it("bytes in shared memory are taken at once, without a wait, and hash like the same bytes anywhere else", async () => {
    const shared = randomFillSync(sharedBuffer(16 * MiB));
    const h = new ParallelMd5();
    // 16 MiB is four times the worker's window: copied bytes would have to wait for it.
    for (let at = 0; at < shared.length; at += MiB) assert.equal(h.offer(shared.subarray(at, at + MiB)), undefined);
    assert.equal(await h.digest(), md5Hex(Buffer.from(shared)));
  });

  it("shared and copied bytes mixed in any order hash in the order given", async () => {
    const shared = randomFillSync(sharedBuffer(6 * MiB));
    const plain = Buffer.from(shared);
    const h = new ParallelMd5();
    await h.write(plain.subarray(0, 1000));
    await h.write(shared.subarray(1000, 3 * MiB + 7));
    await h.write(plain.subarray(3 * MiB + 7, 5 * MiB));
    await h.write(shared.subarray(5 * MiB));
    assert.equal(await h.digest(), md5Hex(plain));
  });

  it("offer takes copied bytes at once while the worker has room and asks to wait once it has none", async () => {
    const bytes = randomFillSync(Buffer.allocUnsafe(12 * MiB));
    const h = new ParallelMd5();
    assert.equal(h.offer(bytes.subarray(0, MiB)), undefined);
    const wait = h.offer(bytes.subarray(MiB));
    assert.ok(wait instanceof Promise, "11 MiB more than a 4-slice window was taken without a wait");
    await wait;
    assert.equal(await h.digest(), md5Hex(bytes));
  });
});
