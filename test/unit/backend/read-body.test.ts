/**
 * The backend's read of a state over the store's streamed get: the watcher (`onData`) sees the
 * buffer fill up to the whole state, and a reader that asks (`sharedBody`, the outputs scan's
 * worker) gets a large state in shared memory; others an ordinary buffer.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { embeddedTarget } from "../../support/targets.js";

const MiB = 1024 * 1024;

function stateOf(bytes: number): string {
  const head = '{"version":4,"serial":1,"lineage":"l-1","outputs":{"pad":{"value":"';
  const tail = '"}},"resources":[]}';
  return head + "x".repeat(bytes - head.length - tail.length) + tail;
}

describe("the backend's read of a state", () => {
  it("shows the filling buffer to onData up to the whole state, in shared memory from 1 MiB only with sharedBody", async () => {
    const target = embeddedTarget();
    const props = await target.setup({ locks: true });
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    try {
      const big = stateOf(2 * MiB + 3);
      await b.writeState("default", big);
      const seen: number[] = [];
      const shared = await b.readState("default", { sharedBody: true, onData: (body, filled) => seen.push(filled, body.length) });
      assert.equal(shared?.toString(), big);
      assert.ok(shared?.buffer instanceof SharedArrayBuffer, "the outputs scan's worker reads it where it is");
      assert.deepEqual(seen.slice(-2), [big.length, big.length]);
      const plain = await b.readState("default", { onData: () => undefined });
      assert.equal(plain?.toString(), big);
      assert.ok(!(plain?.buffer instanceof SharedArrayBuffer), "a watcher that did not ask (the server's GET): an ordinary buffer");
      const small = stateOf(64 * 1024);
      await b.writeState("default", small.replace('"serial":1', '"serial":2'));
      const under = await b.readState("default", { sharedBody: true, onData: () => undefined });
      assert.ok(!(under?.buffer instanceof SharedArrayBuffer), "below 1 MiB: an ordinary buffer");
    } finally {
      b.close();
    }
  });
});
