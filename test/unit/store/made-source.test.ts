import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { isObjstateError } from "../../../src/errors.js";
import { madeSource } from "../../../src/store/made-source.js";

const md5 = (b: Uint8Array): string => createHash("md5").update(b).digest("hex");

async function readAll(source: { open(): AsyncIterable<Uint8Array> }, onPiece?: (n: number) => void): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of source.open()) {
    onPiece?.(c.length);
    parts.push(Buffer.from(c));
  }
  return Buffer.concat(parts);
}

/** Pieces an iterable makes afresh on every iteration. */
const remade = (make: () => Generator<Buffer>): Iterable<Buffer> => ({ [Symbol.iterator]: make });

describe("madeSource: bytes made afresh for each read, never held whole", () => {
  it("the first read makes the bytes once and takes their MD5 from what it yields; later reads yield the same bytes in pieces of at most 1 MiB", async () => {
    const bytes = randomBytes(6 * 1024 * 1024 + 5);
    let makings = 0;
    const pieces = function* (): Generator<Buffer> {
      makings++;
      for (let at = 0; at < bytes.length; at += 64 * 1024) yield bytes.subarray(at, at + 64 * 1024);
    };
    const source = madeSource(bytes.length, remade(pieces), "the bytes");
    assert.equal(makings, 0, "nothing is made before a read asks");
    let largest = 0;
    const first = await readAll(source, (n) => (largest = Math.max(largest, n)));
    assert.equal(await source.madeMd5.settled, md5(bytes));
    assert.equal(makings, 1, "the MD5 came from the read's own pieces, not from a second making");
    assert.equal(await source.madeMd5.now(), md5(bytes));
    assert.equal(makings, 1, "now() after a read has it makes nothing again");
    const late = await readAll(source, (n) => (largest = Math.max(largest, n)));
    assert.ok(first.equals(bytes));
    assert.ok(late.equals(bytes));
    assert.ok(largest <= 1024 * 1024, `largest piece ${largest}`);
  });

  it("now() before any read takes the MD5 by a pass of its own; a read that stops early leaves it to the next read", async () => {
    const bytes = randomBytes(5 * 1024 * 1024);
    let makings = 0;
    const pieces = remade(function* () {
      makings++;
      for (let at = 0; at < bytes.length; at += 100_000) yield bytes.subarray(at, at + 100_000);
    });
    const early = madeSource(bytes.length, pieces, "the bytes");
    assert.equal(await early.madeMd5.now(), md5(bytes));
    assert.ok((await readAll(early)).equals(bytes));

    makings = 0;
    const peeked = madeSource(bytes.length, pieces, "the bytes");
    for await (const c of peeked.open()) {
      assert.ok(c.length > 0);
      break; // a look at the first bytes (the guard's header)
    }
    assert.ok((await readAll(peeked)).equals(bytes));
    assert.equal(await peeked.madeMd5.settled, md5(bytes));
    assert.equal(makings, 2, "the peek and the whole read, and no pass of its own");
  });

  it("a reader done with each chunk before the next ({reusable}) gets one buffer refilled; any other reader a fresh one per chunk (a socket may still queue the last)", async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 7);
    const source = madeSource(bytes.length, [bytes.subarray(0, 100), bytes.subarray(100)], "the bytes");
    const seen = (reusable: boolean): Promise<{ buffers: Set<ArrayBufferLike>; copy: Buffer }> =>
      (async () => {
        const buffers = new Set<ArrayBufferLike>();
        const parts: Buffer[] = [];
        for await (const c of source.open({ reusable })) {
          buffers.add(c.buffer);
          parts.push(Buffer.from(c)); // copied before the next is asked for
        }
        return { buffers, copy: Buffer.concat(parts) };
      })();
    const reused = await seen(true);
    assert.ok(reused.copy.equals(bytes));
    assert.equal(reused.buffers.size, 1);
    const fresh = await seen(false);
    assert.ok(fresh.copy.equals(bytes));
    assert.equal(fresh.buffers.size, 4);
    assert.equal(await source.madeMd5.settled, md5(bytes));
  });

  it("ahead(): the next read adopts what the pass made and hashed, and makes the rest where the pass stopped; every byte is made once", async () => {
    const bytes = randomBytes(40 * 1024 * 1024 + 3);
    let makings = 0;
    let made = 0;
    const source = madeSource(
      bytes.length,
      remade(function* () {
        makings++;
        for (let at = 0; at < bytes.length; at += 64 * 1024) {
          made = at + 64 * 1024;
          yield bytes.subarray(at, at + 64 * 1024);
        }
      }),
      "the bytes",
    );
    source.ahead();
    // Left alone, the pass keeps at most 16 MiB (and a chunk) for the read, then waits.
    for (let i = 0; i < 400 && made < 16 * 1024 * 1024; i++) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(made >= 16 * 1024 * 1024 && made <= 18 * 1024 * 1024, `made ${made} bytes ahead`);
    assert.ok((await readAll(source)).equals(bytes));
    assert.equal(await source.madeMd5.settled, md5(bytes));
    assert.equal(makings, 1, "the read went on with the pass's making");
  });

  it("ahead() then now() without a read: the pass hashes to the end alone; a read after makes afresh", async () => {
    for (const n of [3 * 1024 * 1024 + 1, 20 * 1024 * 1024]) {
      const bytes = randomBytes(n);
      let makings = 0;
      const source = madeSource(
        n,
        remade(function* () {
          makings++;
          yield bytes;
        }),
        "the bytes",
      );
      source.ahead();
      await new Promise((r) => setTimeout(r, 50)); // the small one is all kept and its pass ended
      assert.equal(await source.madeMd5.now(), md5(bytes));
      assert.ok((await readAll(source)).equals(bytes));
      assert.equal(makings, 2);
    }
  });

  it("a making that fails during ahead() fails the read that adopts it, and the MD5", async () => {
    const failing = () =>
      madeSource(
        3 * 1024 * 1024,
        remade(function* () {
          yield Buffer.alloc(2 * 1024 * 1024);
          throw new Error("the cipher broke");
        }),
        "the bytes",
      );
    const read = failing();
    read.ahead();
    await assert.rejects(readAll(read), /the cipher broke/);
    await assert.rejects(read.madeMd5.settled, /the cipher broke/);
    const alone = failing();
    alone.ahead();
    await new Promise((r) => setTimeout(r, 20));
    await assert.rejects(alone.madeMd5.now(), /the cipher broke/);
  });

  // Without the hand-over the MD5 never settles: the timeout turns that hang into a failure.
  it("now() while a read takes the MD5, and that read stops early: a pass of its own takes over", { timeout: 60_000 }, async () => {
    const bytes = randomBytes(6 * 1024 * 1024);
    const source = madeSource(
      bytes.length,
      remade(function* () {
        for (let at = 0; at < bytes.length; at += 256 * 1024) yield bytes.subarray(at, at + 256 * 1024);
      }),
      "the bytes",
    );
    const md5Now = (async () => {
      for await (const c of source.open()) {
        assert.ok(c.length > 0);
        const asked = source.madeMd5.now(); // asked while this read is taking it
        await new Promise((r) => setImmediate(r));
        return asked; // then the read stops (an upload that failed)
      }
      throw new Error("no chunk");
    })();
    assert.equal(await await md5Now, md5(bytes));
  });

  it("text pieces are their characters as bytes (base64), mixed with buffers: read, and hashed, exactly", async () => {
    const text = randomBytes(3 * 1024 * 1024).toString("base64");
    const pieces = [Buffer.from('{"data":"'), text.slice(0, 70_000), text.slice(70_000, 2_000_001), text.slice(2_000_001), Buffer.from('"}')];
    const want = Buffer.concat(pieces.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : p)));
    const read = madeSource(want.length, pieces, "the envelope");
    assert.ok((await readAll(read)).equals(want));
    assert.equal(await read.madeMd5.settled, md5(want));
    assert.equal(await madeSource(want.length, pieces, "the envelope").madeMd5.now(), md5(want));
  });

  it("making that fails, or makes another number of bytes, fails every read and the MD5 (INPUT_CHANGED for the count)", async () => {
    const failing = () =>
      madeSource(
        3 * 1024 * 1024,
        remade(function* () {
          yield Buffer.alloc(2 * 1024 * 1024);
          throw new Error("the cipher broke");
        }),
        "the bytes",
      );
    const read = failing();
    await assert.rejects(readAll(read), /the cipher broke/);
    await assert.rejects(read.madeMd5.settled, /the cipher broke/);
    await assert.rejects(failing().madeMd5.now(), /the cipher broke/);
    const short = madeSource(100, [Buffer.alloc(60)], "the envelope");
    await assert.rejects(short.madeMd5.now(), (e: unknown) => isObjstateError(e, "INPUT_CHANGED") && /the envelope/.test((e as Error).message));
    await assert.rejects(readAll(short), (e: unknown) => isObjstateError(e, "INPUT_CHANGED"));
    const shortRead = madeSource(100, [Buffer.alloc(60)], "the envelope");
    await assert.rejects(readAll(shortRead), (e: unknown) => isObjstateError(e, "INPUT_CHANGED"));
    await assert.rejects(shortRead.madeMd5.settled, (e: unknown) => isObjstateError(e, "INPUT_CHANGED"));
    const long = madeSource(10, [Buffer.alloc(60)], "the envelope");
    await assert.rejects(long.madeMd5.now(), (e: unknown) => isObjstateError(e, "INPUT_CHANGED"));
  });
});
