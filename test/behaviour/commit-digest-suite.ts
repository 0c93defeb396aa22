/**
 * The commit point's driver method (`LockTableDriver.commitDigest`, docs/design.md §5), run
 * unchanged against the embedded lock table and DynamoDB (dynalite): one atomic
 * conditional update of a digest item, fenced by its generation and digest.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LockTableDriver } from "../../src/lock/types.js";

const ID = "my-bucket/env:/dev/tool.tfstate-md5";
const D1 = "11111111111111111111111111111111";
const D2 = "22222222222222222222222222222222";
const D3 = "33333333333333333333333333333333";

/** `fresh` gives a driver on an empty table of its own. */
export function commitDigestSuite(fresh: () => Promise<LockTableDriver>): void {
  test("commits over an absent item (generation 1), then only from the generation and digest it saw", async () => {
    const t = await fresh();
    assert.equal(await t.getDigest(ID), null);
    assert.equal(await t.commitDigest(ID, null, { digest: D1, generation: 1, lockId: "lock-a" }), true);
    const first = await t.getDigest(ID);
    assert.deepEqual(first, { digest: D1, generation: 1, lockId: "lock-a" });
    // A second writer that also saw "no item" lost: the item exists now.
    assert.equal(await t.commitDigest(ID, null, { digest: D2, generation: 1, lockId: "lock-b" }), false);
    assert.equal(await t.commitDigest(ID, first, { digest: D2, generation: 2, lockId: "lock-b" }), true);
    // A stale writer that saw generation 1 cannot commit, whatever it sets.
    assert.equal(await t.commitDigest(ID, first, { digest: D3, generation: 2, lockId: "lock-c" }), false);
    assert.deepEqual(await t.getDigest(ID), { digest: D2, generation: 2, lockId: "lock-b" });
    // Same generation, other digest (an item replaced and counted up again): refused too.
    assert.equal(await t.commitDigest(ID, { digest: D1, generation: 2, lockId: undefined }, { digest: D3, generation: 3 }), false);
  });

  test("repeating a commit that happened succeeds (a retry after a lost reply, or an adopter first) and changes nothing", async () => {
    const t = await fresh();
    await t.commitDigest(ID, null, { digest: D1, generation: 1 });
    const seen = await t.getDigest(ID);
    assert.equal(await t.commitDigest(ID, seen, { digest: D2, generation: 2, lockId: "lock-a", set: { Repaired: "note" } }), true);
    assert.equal(await t.commitDigest(ID, seen, { digest: D2, generation: 2, lockId: "lock-a", set: { Repaired: "note" } }), true);
    assert.deepEqual(await t.getDigest(ID), { digest: D2, generation: 2, lockId: "lock-a" });
    // Another digest at that generation was not this commit.
    assert.equal(await t.commitDigest(ID, seen, { digest: D3, generation: 2 }), false);
  });

  test("an item without Generation (the tool's own S3 backend writes only Digest) counts as generation 0, compared with its exact Digest", async () => {
    const t = await fresh();
    const spelled = ` ${D1.toUpperCase()}\n`;
    await t.put(ID, "Digest", spelled);
    const seen = await t.getDigest(ID);
    assert.deepEqual(seen, { digest: spelled, generation: 0, lockId: undefined });
    assert.equal(await t.commitDigest(ID, { digest: D3, generation: 0, lockId: undefined }, { digest: D2, generation: 1 }), false, "another digest");
    assert.equal(
      await t.commitDigest(ID, { digest: spelled, generation: 3, lockId: undefined }, { digest: D2, generation: 4 }),
      false,
      "a generation the item does not have",
    );
    assert.equal(await t.commitDigest(ID, seen, { digest: D2, generation: 1 }), true);
    assert.deepEqual(await t.getDigest(ID), { digest: D2, generation: 1, lockId: undefined });
    // The tool replaces the whole item: objstate's generation is gone, and a writer that saw it loses.
    const counted = await t.getDigest(ID);
    await t.put(ID, "Digest", D3);
    assert.equal(await t.commitDigest(ID, counted, { digest: D1, generation: 2 }), false);
  });

  test("keeps the item's other attributes, sets the given ones, and removes CommitLockID when the commit names no lock", async () => {
    const t = await fresh();
    await t.commitDigest(ID, null, { digest: D1, generation: 1, lockId: "lock-a" });
    assert.equal(await t.updateIf(ID, "Digest", D1, { Note: "kept" }), true);
    assert.equal(await t.commitDigest(ID, await t.getDigest(ID), { digest: D2, generation: 2, set: { Repaired: "{}" } }), true);
    assert.equal(await t.get(ID, "Note"), "kept");
    assert.equal(await t.get(ID, "Repaired"), "{}");
    assert.equal(await t.get(ID, "CommitLockID"), null);
    assert.deepEqual(await t.getDigest(ID), { digest: D2, generation: 2, lockId: undefined });
  });

  test("of many writers committing from the same item at once, exactly one wins", async () => {
    const t = await fresh();
    await t.commitDigest(ID, null, { digest: D1, generation: 1 });
    const seen = await t.getDigest(ID);
    const digests = Array.from({ length: 8 }, (_, i) => `${i}`.repeat(32));
    const results = await Promise.all(digests.map((d, i) => t.commitDigest(ID, seen, { digest: d, generation: 2, lockId: `lock-${i}` })));
    assert.equal(results.filter((r) => r).length, 1, `winners: ${JSON.stringify(results)}`);
    const won = digests[results.indexOf(true)];
    assert.deepEqual(await t.getDigest(ID), { digest: won, generation: 2, lockId: `lock-${results.indexOf(true)}` });
  });
}
