/**
 * A read shows each piece to its watcher (`onData`) before hashing it, so that what the
 * watcher does with the bytes (the server sends them) runs beside the hash instead of after
 * it. The hash still covers every byte, in order.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { openSync, closeSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { readWhole } from "../../../src/store/file.js";
import { readBody } from "../../../src/store/s3.js";
import type { Hasher } from "../../../src/util/md5.js";

/** A hasher that notes, at each piece, how far the watcher had been shown. */
function watchedHasher(shown: () => number): Hasher & { readonly seenAt: number[]; readonly ends: number[]; hex(): string } {
  const h = createHash("md5");
  const seenAt: number[] = [];
  const ends: number[] = [];
  let hashed = 0;
  return {
    seenAt,
    ends,
    write(bytes: Uint8Array): void {
      hashed += bytes.length;
      seenAt.push(shown());
      ends.push(hashed);
      h.update(bytes);
    },
    digest: () => h.copy().digest("hex"),
    hex: () => h.copy().digest("hex"),
  };
}

const dir = mkdtempSync(join(tmpdir(), "objstate-read-order-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("reads show bytes to the watcher before hashing them", () => {
  it("embedded store: each 1 MiB piece reaches onData before the hash", async () => {
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 5, 7);
    bytes.write("differs", 2_000_000);
    const file = join(dir, "obj");
    writeFileSync(file, bytes);
    let shown = 0;
    const hash = watchedHasher(() => shown);
    const fd = openSync(file, "r");
    try {
      const body = await readWhole(fd, bytes.length, hash, (_b, filled) => (shown = filled));
      assert.ok(body.equals(bytes));
    } finally {
      closeSync(fd);
    }
    assert.equal(hash.ends.length, 4);
    // When each piece was hashed, the watcher had already been shown it.
    assert.deepEqual(hash.seenAt, hash.ends);
    assert.equal(hash.hex(), createHash("md5").update(bytes).digest("hex"));
  });

  it("S3 driver: each chunk of the response reaches onData before the hash", async () => {
    const chunks = [Buffer.alloc(65_536, 1), Buffer.alloc(65_536, 2), Buffer.alloc(100, 3)];
    const whole = Buffer.concat(chunks);
    async function* response(): AsyncIterable<Uint8Array> {
      for (const c of chunks) yield c;
    }
    let shown = 0;
    const hash = watchedHasher(() => shown);
    const body = await readBody(response(), whole.length, hash, (_b, filled) => (shown = filled));
    assert.ok(body.equals(whole));
    assert.deepEqual(hash.seenAt, hash.ends);
    assert.deepEqual(hash.ends, [65_536, 131_072, 131_172]);
    assert.equal(hash.hex(), createHash("md5").update(whole).digest("hex"));
  });
});

describe("S3 bodies in shared memory only for a caller that asks", () => {
  const MiB = 1024 * 1024;
  async function* response(n: number): AsyncIterable<Uint8Array> {
    for (let i = 0; i < n; i += 65_536) yield Buffer.alloc(Math.min(65_536, n - i), 0x20);
  }
  it("a watched 2 MiB body is an ordinary buffer (the server's GET: V8 would not collect shared ones in time)", async () => {
    const body = await readBody(response(2 * MiB), 2 * MiB, undefined, () => undefined);
    assert.equal(body.length, 2 * MiB);
    assert.ok(!(body.buffer instanceof SharedArrayBuffer));
  });
  it("with sharedBody (the outputs scan's worker reads it in place) it is in shared memory", async () => {
    const body = await readBody(response(2 * MiB), 2 * MiB, undefined, () => undefined, true);
    assert.ok(body.buffer instanceof SharedArrayBuffer);
  });
});
