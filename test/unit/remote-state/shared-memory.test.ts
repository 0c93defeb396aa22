/**
 * Shared memory for scanned bodies is reused (util/shared-memory.ts): V8 does not count a
 * SharedArrayBuffer towards what starts a collection, so one per read piled up in a
 * long-running process (`objstate serve` answering outputs: +64 MiB per request).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { ObjectStoreBackend } from "../../../src/backend/backend.js";
import { ObjectStoreBackendConfig } from "../../../src/config/backend-config.js";
import { readRemoteOutputs } from "../../../src/remote-state/fetch-outputs.js";
import { startTopLevelScan } from "../../../src/remote-state/parallel-scan.js";
import { scanTopLevel } from "../../../src/state/extract-outputs.js";
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

it("a scan in the worker over a copy in a reused, longer buffer, or over a shared body shorter than its memory, gives the whole-buffer answer", async () => {
  const text = Buffer.from(JSON.stringify({ version: 4, resources: [{ a: "}".repeat(5000) }], outputs: { x: { value: 1 } } }));
  const want = scanTopLevel(text, ["version", "outputs"]);
  // A long buffer in the pool: the copy lands in its first bytes.
  drain();
  giveShared(takeShared(text.length * 3));
  const copied = startTopLevelScan(["version", "outputs"], Buffer.from(text), { inWorker: true });
  assert.deepEqual(await copied.finish(Buffer.from(text)), want);
  const view = takeShared(text.length);
  assert.ok(view.buffer.byteLength > text.length);
  text.copy(view);
  const shared = startTopLevelScan(["version", "outputs"], view, { inWorker: true });
  assert.deepEqual(await shared.finish(view), want);
});

it(
  "readRemoteOutputs gives the scan's shared copy back: reading the outputs of a large state again allocates no new shared memory",
  { skip: availableParallelism() < 2 ? "the scan runs in a worker only with 2 cores or more" : false },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-shared-"));
    const props = { bucket: "b-shared", endpoint: `file://${dir}`, kvstoreEndpoint: `file://${dir}`, kvstoreTable: "locks" };
    const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    try {
      const state = JSON.stringify({
        version: 4,
        serial: 1,
        lineage: "l",
        resources: [{ pad: "x".repeat(4 * 1024 * 1024) }],
        outputs: { a: { value: 1, type: "number" } },
      });
      await backend.writeState("default", state);
      drain();
      const first = await readRemoteOutputs(backend, "default");
      assert.equal(first.get("a"), 1);
      assert.equal(first.source.streamed, true, "scanned in the worker while it was read");
      const idle = takeShared(1);
      assert.ok(idle.buffer.byteLength >= state.length, "the scan's copy came back to the pool");
      giveShared(idle);
      await readRemoteOutputs(backend, "default");
      assert.equal(takeShared(1).buffer, idle.buffer, "the second read used the same memory");
    } finally {
      backend.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
