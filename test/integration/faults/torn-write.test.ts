/**
 * A crash between the state write and the digest write (Ceph RGW + dynalite): the push is
 * killed (kill -9) while its digest write is stalled in the lock table's proxy, so the
 * state is new and the digest old. Reads fail with exit 4 naming the fix; after the dead
 * writer's lock is force-unlocked, `objstate state repair` records the digest (and that it
 * repaired it) and the state reads again.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { TIMEOUT_MS, assertNoLock, explain, lockIdIn, parseState, scratch, seed, stateText } from "../../unit/faults/harness.js";
import { faulty, stateLockId, type Faulty } from "./setup.js";

describe("a crash between the state and the digest write", { timeout: TIMEOUT_MS }, () => {
  let f: Faulty;
  before(async () => {
    f = await faulty();
  });
  after(async () => {
    await f.close();
  });

  it("kill -9 while the digest write is stalled → reads exit 4 → force-unlock, state repair → readable, repair recorded", async () => {
    const files = scratch();
    const lineage = await seed(f.direct, files);
    const text = stateText(lineage, 2, ["torn"]);
    const digestWrite = { target: /\.(PutItem|UpdateItem)$/, body: '"Digest"' };
    f.table.stall(digestWrite);
    const push = f.startProxied(["state", "push", files.file("torn.json", text)]);
    await f.table.waitFor(digestWrite);
    push.kill9();
    const killed = await push.done;
    assert.equal(killed.signal, "SIGKILL", explain("the push was meant to be killed while its digest write stalled", killed));
    // The crashed process never sent its digest write: drop it rather than let it arrive.
    await f.table.close();

    // While the dead writer's lock is there, nobody can tell a torn write from one in progress.
    const wedged = await f.direct(["state", "pull"]);
    assert.equal(wedged.code, 4, explain("pull of a torn write under a live-looking lock", wedged));
    assert.match(wedged.stderr, /does not match its digest/);

    const blocked = await f.direct(["lock"]);
    assert.equal(blocked.code, 3, explain("lock while the dead push holds it", blocked));
    const unlocked = await f.direct(["force-unlock", lockIdIn(blocked.stderr), "--force"]);
    assert.equal(unlocked.code, 0, explain("force-unlock", unlocked));

    const torn = await f.direct(["state", "pull"]);
    assert.equal(torn.code, 4, explain("pull of a torn write, nobody holding the lock", torn));
    assert.match(torn.stderr, /did not finish recording its digest.*objstate state repair`/);

    const repair = await f.direct(["state", "repair"]);
    assert.equal(repair.code, 0, explain("state repair", repair));
    const pull = await f.direct(["state", "pull"]);
    assert.equal(pull.code, 0, explain("pull after repair", pull));
    assert.equal(pull.stdout, text);
    assert.deepEqual(parseState(pull.stdout).tokens, ["torn"]);

    const digestId = `${stateLockId(f.props)}-md5`;
    assert.equal(await f.item(digestId, "Digest"), createHash("md5").update(text).digest("hex"));
    const note = JSON.parse((await f.item(digestId, "Repaired")) ?? "null") as { at: string; who: string; previous: string | null; forced: boolean } | null;
    assert.ok(note !== null, "the repair was not recorded on the digest item");
    assert.equal(note.forced, false);
    assert.match(note.at, /^\d{4}-\d\d-\d\dT/);
    await assertNoLock(f.direct);
  });
});
