/**
 * Lost replies (Ceph RGW + dynalite): the lock table does a write but its reply never
 * reaches objstate (the proxy cuts the connection after the table answered). The client
 * retries; objstate must recognise its own lock, its own release and its own digest, so
 * the command succeeds and leaves no lock behind.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { ProxyLogEntry, RequestMatch } from "../../support/fault-proxy.js";
import { TIMEOUT_MS, assertNoLock, explain, parseState, scratch, stateText } from "../../unit/faults/harness.js";
import { faulty, type Faulty } from "./setup.js";

const LOCK_WRITE: RequestMatch = { target: "DynamoDB_20120810.PutItem", body: '"Info"' };
const UNLOCK: RequestMatch = { target: "DynamoDB_20120810.DeleteItem" };
/** The first step of an unrecorded release (state push's own lock): the item marked `Released` by its ID. */
const RELEASE_MARK: RequestMatch = { target: "DynamoDB_20120810.UpdateItem", body: '"Released"' };
/** A recorded release's record of its lock ID, written right before the lock item is deleted. */
const RELEASE_RECORD: RequestMatch = { target: /\.(PutItem|UpdateItem)$/, body: '"ReleasedIDs"' };
const DIGEST_WRITE: RequestMatch = { target: /\.(PutItem|UpdateItem)$/, body: '"Digest"' };

describe("a lost reply from the lock table", { timeout: TIMEOUT_MS }, () => {
  let f: Faulty;
  const files = scratch();
  before(async () => {
    f = await faulty();
  });
  after(async () => {
    await f.close();
  });

  /** The drop's log entry if it has happened by now (it happens before the client sees anything). */
  async function fired(drop: Promise<ProxyLogEntry>): Promise<ProxyLogEntry | undefined> {
    return Promise.race([drop, new Promise<undefined>((r) => setImmediate(() => r(undefined)))]);
  }

  for (const [name, match] of [
    ["the lock write", LOCK_WRITE],
    ["the unlock", UNLOCK],
    ["the release mark", RELEASE_MARK],
    ["the digest write", DIGEST_WRITE],
  ] as const) {
    it(`state push succeeds and leaves no lock when the reply to ${name} is lost`, async () => {
      const ws = name.replace(/\W+/g, "-").replace(/^-|-$/g, "");
      const lineage = randomUUID();
      const text = stateText(lineage, 1, [ws]);
      const drop = f.table.dropReplyOnce(match);
      const push = await f.proxied(["state", "push", files.file(`${ws}.json`, text), "-w", ws]);
      assert.equal((await fired(drop))?.outcome, "dropped", `no reply to ${name} was dropped`);
      assert.equal(push.code, 0, explain(`push with the reply to ${name} lost`, push));
      const pull = await f.direct(["state", "pull", "-w", ws]);
      assert.equal(pull.code, 0, explain("pull", pull));
      assert.equal(pull.stdout, text);
      await assertNoLock(f.direct, ws);
      // A later write still works (the digest matches, the lineage guard sees the state).
      const next = await f.direct(["state", "push", files.file(`${ws}-2.json`, stateText(lineage, 2, [ws, "next"])), "-w", ws]);
      assert.equal(next.code, 0, explain("next push", next));
      assert.deepEqual(parseState((await f.direct(["state", "pull", "-w", ws])).stdout).tokens, [ws, "next"]);
    });
  }

  it("lock and unlock succeed and leave no lock when the replies to the lock write and the unlock are lost", async () => {
    const ws = "lock-unlock";
    const lockDrop = f.table.dropReplyOnce(LOCK_WRITE);
    const lock = await f.proxied(["lock", "-w", ws]);
    assert.equal((await fired(lockDrop))?.outcome, "dropped", "no reply to the lock write was dropped");
    assert.equal(lock.code, 0, explain("lock with its reply lost", lock));
    const id = lock.stdout.trim();
    assert.match(id, /^[0-9a-f-]{36}$/);
    const held = await f.direct(["lock", "-w", ws]);
    assert.equal(held.code, 3, explain("the lock is held", held));
    assert.match(held.stderr, new RegExp(`ID ${id}`));

    const unlockDrop = f.table.dropReplyOnce(UNLOCK);
    const unlock = await f.proxied(["unlock", id, "-w", ws]);
    assert.equal((await fired(unlockDrop))?.outcome, "dropped", "no reply to the unlock was dropped");
    assert.equal(unlock.code, 0, explain("unlock with its reply lost", unlock));
    await assertNoLock(f.direct, ws);
  });

  it("unlock succeeds, recorded, and leaves no lock when the reply to its release record is lost", async () => {
    const ws = "release-record";
    const lock = await f.direct(["lock", "-w", ws]);
    assert.equal(lock.code, 0, explain("lock", lock));
    const id = lock.stdout.trim();
    const drop = f.table.dropReplyOnce(RELEASE_RECORD);
    const unlock = await f.proxied(["unlock", id, "-w", ws]);
    assert.equal((await fired(drop))?.outcome, "dropped", "no reply to the release record was dropped");
    assert.equal(unlock.code, 0, explain("unlock with the reply to its record lost", unlock));
    await assertNoLock(f.direct, ws);
    // Recorded: once another holder has the lock, the same UNLOCK again is a release already made, not another's lock.
    const next = await f.direct(["lock", "-w", ws]);
    assert.equal(next.code, 0, explain("lock again", next));
    const again = await f.direct(["unlock", id, "-w", ws]);
    assert.notEqual(again.code, 0, explain("the unlock repeated", again));
    assert.match(again.stderr, /already released/);
    assert.equal((await f.direct(["unlock", next.stdout.trim(), "-w", ws])).code, 0);
  });

  it("state push succeeds when the gateway's reply to the state PUT is lost: the retry finds its own write", async () => {
    const ws = "state-put";
    const lineage = randomUUID();
    const text = stateText(lineage, 1, [ws]);
    // Only the state object's PUT (not the guard's ranged GET), answered by the gateway, then cut.
    const drop = f.s3.dropReplyOnce({ method: "PUT", path: new RegExp(`/${ws}/`) });
    const push = await f.proxied(["state", "push", files.file(`${ws}.json`, text), "-w", ws]);
    assert.equal((await fired(drop))?.outcome, "dropped", "no reply to the state PUT was dropped");
    assert.equal(push.code, 0, explain("push with the reply to its PUT lost", push));
    assert.equal((await f.direct(["state", "pull", "-w", ws])).stdout, text);
    await assertNoLock(f.direct, ws);
  });
});
