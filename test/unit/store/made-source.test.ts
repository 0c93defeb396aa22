import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { isObjstateError } from "../../../src/errors.js";
import { madeSource } from "../../../src/store/byte-source.js";

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
  it("every read, started while the MD5 is taken or after, yields the same bytes in pieces of at most 1 MiB; madeMd5 is their MD5", async () => {
    const bytes = randomBytes(6 * 1024 * 1024 + 5);
    let taken = 0;
    const pieces = function* (): Generator<Buffer> {
      for (let at = 0; at < bytes.length; at += 64 * 1024) {
        taken = at;
        yield bytes.subarray(at, at + 64 * 1024);
      }
    };
    const source = madeSource(bytes.length, remade(pieces), "the bytes");
    // The hash goes on in turns: a read can start beside it.
    assert.ok(taken < bytes.length - 64 * 1024, "the pieces are hashed in turns, not all at once");
    let largest = 0;
    const early = readAll(source, (n) => (largest = Math.max(largest, n)));
    assert.equal(await source.madeMd5, md5(bytes));
    const late = await readAll(source, (n) => (largest = Math.max(largest, n)));
    assert.ok((await early).equals(bytes));
    assert.ok(late.equals(bytes));
    assert.ok(largest <= 1024 * 1024, `largest piece ${largest}`);
  });

  it("text pieces are their characters as bytes (base64), mixed with buffers: read, and hashed, exactly", async () => {
    const text = randomBytes(3 * 1024 * 1024).toString("base64");
    const pieces = [Buffer.from('{"data":"'), text.slice(0, 70_000), text.slice(70_000, 2_000_001), text.slice(2_000_001), Buffer.from('"}')];
    const want = Buffer.concat(pieces.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : p)));
    const source = madeSource(want.length, pieces, "the envelope");
    assert.ok((await readAll(source)).equals(want));
    assert.equal(await source.madeMd5, md5(want));
  });

  it("making that fails, or makes another number of bytes, fails every read and the MD5 (INPUT_CHANGED for the count)", async () => {
    const failing = madeSource(
      3 * 1024 * 1024,
      remade(function* () {
        yield Buffer.alloc(2 * 1024 * 1024);
        throw new Error("the cipher broke");
      }),
      "the bytes",
    );
    await assert.rejects(readAll(failing), /the cipher broke/);
    await assert.rejects(failing.madeMd5, /the cipher broke/);
    const short = madeSource(100, [Buffer.alloc(60)], "the envelope");
    await assert.rejects(short.madeMd5, (e: unknown) => isObjstateError(e, "INPUT_CHANGED") && /the envelope/.test((e as Error).message));
    await assert.rejects(readAll(short), (e: unknown) => isObjstateError(e, "INPUT_CHANGED"));
    const long = madeSource(10, [Buffer.alloc(60)], "the envelope");
    await assert.rejects(long.madeMd5, (e: unknown) => isObjstateError(e, "INPUT_CHANGED"));
  });
});
