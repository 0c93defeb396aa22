/**
 * The backend's read of a state over the store's streamed get: the watcher (`onData`) sees the
 * buffer fill up to the whole state.
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
  it("shows the filling buffer to onData up to the whole state", async () => {
    const target = embeddedTarget();
    const props = await target.setup({ locks: true });
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    try {
      const big = stateOf(2 * MiB + 3);
      await b.writeState("default", big);
      const seen: number[] = [];
      const read = await b.readState("default", { onData: (body, filled) => seen.push(filled, body.length) });
      assert.equal(read?.toString(), big);
      assert.ok(seen.length > 2, "seen more than once as it filled");
      assert.deepEqual(seen.slice(-2), [big.length, big.length]);
    } finally {
      b.close();
    }
  });
});
