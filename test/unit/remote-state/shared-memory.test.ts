/**
 * Shared memory for scanned bodies is reused (util/shared-memory.ts): V8 does not count a
 * SharedArrayBuffer towards what starts a collection, so one per read piled up in a
 * long-running process (`objstate serve` answering outputs: +64 MiB per request).
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { giveShared, takeShared } from "../../../src/util/shared-memory.js";

/** Empties the pool (a test before may have left a buffer in it): the idle one is taken and dropped. */
function drain(): void {
  takeShared(0);
}

it("a buffer given back is taken again (a view of the length asked for); the largest idle one is kept; ordinary buffers are ignored", () => {
  drain();
  const a = takeShared(1024);
  assert.ok(a.buffer instanceof SharedArrayBuffer);
  assert.equal(a.length, 1024);
  giveShared(a);
  const b = takeShared(100);
  assert.equal(b.buffer, a.buffer, "the idle buffer is reused");
  assert.equal(b.length, 100);
  // Taken: not handed out twice.
  const c = takeShared(100);
  assert.notEqual(c.buffer, a.buffer);
  giveShared(c);
  giveShared(b);
  assert.equal(takeShared(10).buffer, a.buffer, "the larger of two given back stays");
  giveShared(Buffer.alloc(4096));
  const d = takeShared(2000);
  assert.ok(d.buffer instanceof SharedArrayBuffer && d.buffer.byteLength === 2000, "an ordinary buffer never becomes the pool's");
});
