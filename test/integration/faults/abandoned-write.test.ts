/**
 * The abandoned write (Ceph RGW + dynalite): a push stalls in a gateway, its process is
 * killed (kill -9), the lock is force-unlocked and a second push goes through a healthy
 * gateway; then the stalled gateway resumes and serves the stale write. The acknowledged
 * second write must survive, and reads must work without any repair: the stale write is
 * conditional on the version it read, so the resumed gateway refuses it.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { COUNTS, TIMEOUT_MS, assertNoLock, explain, lockIdIn, parseState, scratch, stateText } from "../../unit/faults/harness.js";
import { faulty, type Faulty } from "./setup.js";

describe("an abandoned write resumed late never overwrites an acknowledged one", { timeout: TIMEOUT_MS }, () => {
  let f: Faulty;
  before(async () => {
    f = await faulty();
  });
  after(async () => {
    await f.close();
  });

  it(`${COUNTS.trials} trials: stall, kill -9, force-unlock, second push, resume → the second push's state reads back`, async () => {
    const files = scratch();
    for (let trial = 0; trial < COUNTS.trials; trial++) {
      const ws = `trial${trial}`;
      const w = ["-w", ws];
      const lineage = randomUUID();
      const seeded = await f.direct(["state", "push", files.file(`${ws}-1.json`, stateText(lineage, 1, ["seed"])), ...w]);
      assert.equal(seeded.code, 0, explain("seed", seeded));

      // The gateway stalls on the state write (its reads still answer, so the push gets that far).
      const statePut = { method: "PUT", path: new RegExp(`/${ws}/tool\\.tfstate`) };
      f.s3.stall(statePut);
      const first = f.startProxied(["state", "push", files.file(`${ws}-A.json`, stateText(lineage, 2, ["seed", "A"])), ...w]);
      const held = await f.s3.waitFor(statePut);
      first.kill9();
      const killed = await first.done;
      assert.equal(killed.signal, "SIGKILL", explain("the first push was meant to be killed while stalled", killed));

      // Its lock is left behind; the operator force-unlocks it with the ID the lock error shows.
      const blocked = await f.direct(["lock", ...w]);
      assert.equal(blocked.code, 3, explain("lock while the dead push holds the lock", blocked));
      const unlocked = await f.direct(["force-unlock", lockIdIn(blocked.stderr), "--force", ...w]);
      assert.equal(unlocked.code, 0, explain("force-unlock", unlocked));

      const second = await f.direct(["state", "push", files.file(`${ws}-B.json`, stateText(lineage, 2, ["seed", "B"])), ...w]);
      assert.equal(second.code, 0, explain("second push (acknowledged)", second));

      // The stalled gateway resumes and serves the abandoned write: refused, it was conditional on serial 1's version.
      await f.s3.resume();
      assert.equal(held.held, true);
      assert.equal(held.clientGone, true);
      assert.equal(held.outcome, 412, `the resumed stale write was answered ${String(held.outcome)}, not 412 Precondition Failed`);

      const pull = await f.direct(["state", "pull", ...w]);
      assert.equal(pull.code, 0, explain("pull after the resumed stale write", pull));
      assert.deepEqual(parseState(pull.stdout), { serial: 2, lineage, tokens: ["seed", "B"] }, "the acknowledged second push was overwritten");
      await assertNoLock(f.direct, ws);
      const next = await f.direct(["state", "push", files.file(`${ws}-C.json`, stateText(lineage, 3, ["seed", "B", "C"])), ...w]);
      assert.equal(next.code, 0, explain("a later push", next));
    }
  });
});
