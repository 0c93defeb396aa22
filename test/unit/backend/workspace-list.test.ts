/**
 * The listing of every workspace with its lock and last write (`workspace list --json`,
 * GET /api/v1/workspaces): from one listing and one scan of the lock table, with a HEAD only
 * for an object its digest item's record does not describe, and the same answer as each
 * workspace's own status.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { embeddedTarget } from "../../support/targets.js";

type Head = (key: string) => Promise<unknown>;

/** Count the store's HEADs (the driver is internal: reached the way only a test may). */
function countHeads(b: ObjectStoreBackend): { readonly count: number } {
  const store = (b as unknown as { ctx: { store: { head: Head } } }).ctx.store;
  const head = store.head.bind(store);
  const counter = { count: 0 };
  store.head = (key) => (counter.count++, head(key));
  return counter;
}

describe("workspace statuses", () => {
  it("need no HEAD for objstate's own writes, one for a write the record does not describe, and match each workspace's status", async () => {
    const target = embeddedTarget();
    const props = await target.setup({ locks: true });
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined, who: "me@host" });
    for (const [w, serial] of [
      ["default", 3],
      ["a", 1],
      ["b", 2],
    ] as const)
      await b.writeState(w, JSON.stringify({ version: 4, serial, lineage: `l-${w}`, outputs: {}, resources: [] }));
    await b.lock("a", { operation: "apply" });
    const heads = countHeads(b);
    const listed = await b.workspaceStatuses();
    assert.equal(heads.count, 0, "no HEAD per workspace");
    assert.deepEqual(
      listed.map((s) => [s.name, s.lastWrite?.serial, s.lastWrite?.lineage, s.lastWrite?.who, s.lock?.operation ?? null]),
      [
        ["default", 3, "l-default", "me@host", null],
        ["a", 1, "l-a", "me@host", "apply"],
        ["b", 2, "l-b", "me@host", null],
      ],
    );
    for (const s of listed) assert.deepEqual(s, await b.workspaceStatus(s.name));

    // A write that no digest record describes (another tool's, without the lock table): read by a HEAD.
    const other = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ ...props, kvstoreTable: undefined, kvstoreEndpoint: undefined }), {
      env: {},
      onWarning: () => undefined,
      who: "other@host",
    });
    await other.writeState("b", JSON.stringify({ version: 4, serial: 9, lineage: "l-b", outputs: {}, resources: [] }));
    other.close();
    const before = heads.count;
    const again = await b.workspaceStatuses((w) => w !== "default");
    assert.equal(heads.count - before, 1);
    assert.deepEqual(
      again.map((s) => [s.name, s.lastWrite?.serial, s.lastWrite?.who]),
      [
        ["a", 1, "me@host"],
        ["b", 9, "other@host"],
      ],
    );
    assert.deepEqual(again[1], await b.workspaceStatus("b"));
    b.close();
  });
});
