/**
 * A crash between storing the state and committing it (Ceph RGW + dynalite): the push is
 * killed (kill -9) while its commit (the digest item's update) is stalled in the lock
 * table's proxy, so the state is stored and the commit never happens. While the dead
 * writer's lock stands, nobody can tell its write from one still finishing; once the lock
 * is gone (force-unlocked, or its lease ran out) the next read commits the write, says so,
 * and needs no repair. Through `objstate serve`, the tool's next apply just works and the
 * server logs the repair; a torn write that cannot be proved gets one clear 409.
 */
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { HttpBackendClient, rawRequest, toolState } from "../../support/http-backend-client.js";
import { cephTarget } from "../../support/targets.js";
import { TIMEOUT_MS, assertNoLock, explain, lockIdIn, parseState, scratch, seed, stateText } from "../../unit/faults/harness.js";
import { startReplica } from "./serve-replica.js";
import { faulty, stateLockId, type Faulty } from "./setup.js";

const COMMIT = { target: /\.(PutItem|UpdateItem)$/, body: '"Digest"' };

describe("a crash between storing and committing", { timeout: TIMEOUT_MS }, () => {
  let f: Faulty;
  before(async () => {
    f = await faulty();
  });
  after(async () => {
    await f.close();
  });

  it("kill -9 while the commit is stalled → reads wait while its lock stands → force-unlock → the next pull commits it and says so", async () => {
    const files = scratch();
    const lineage = await seed(f.direct, files);
    const text = stateText(lineage, 2, ["torn"]);
    f.table.stall(COMMIT);
    const push = f.startProxied(["state", "push", files.file("torn.json", text)]);
    await f.table.waitFor(COMMIT);
    push.kill9();
    const killed = await push.done;
    assert.equal(killed.signal, "SIGKILL", explain("the push was meant to be killed while its commit stalled", killed));
    // The crashed process never sent its commit: drop it rather than let it arrive.
    await f.table.close();

    // While the dead writer's lock is there, its write may be finishing: the read does not take it.
    const wedged = await f.direct(["state", "pull"]);
    assert.equal(wedged.code, 4, explain("pull of a stored, uncommitted write under its writer's lock", wedged));
    assert.match(wedged.stderr, /stored but not committed .* its lock [0-9a-f-]{36} is still held.*objstate force-unlock/);

    const blocked = await f.direct(["lock"]);
    assert.equal(blocked.code, 3, explain("lock while the dead push holds it", blocked));
    const unlocked = await f.direct(["force-unlock", lockIdIn(blocked.stderr), "--force"]);
    assert.equal(unlocked.code, 0, explain("force-unlock", unlocked));

    const pull = await f.direct(["state", "pull"]);
    assert.equal(pull.code, 0, explain("pull once the lock is gone", pull));
    assert.equal(pull.stdout, text);
    assert.deepEqual(parseState(pull.stdout).tokens, ["torn"]);
    assert.match(pull.stderr, /committed the last write to .* \(serial 2.*stopped before committing it/);

    const digestId = `${stateLockId(f.props)}-md5`;
    assert.equal(await f.item(digestId, "Digest"), createHash("md5").update(text).digest("hex"));
    const note = JSON.parse((await f.item(digestId, "Repaired")) ?? "null") as {
      at: string;
      who: string;
      previous: string | null;
      forced: boolean;
      adopted: string | null;
    } | null;
    assert.ok(note !== null, "the repair was not recorded on the digest item");
    assert.equal(note.forced, false);
    assert.match(note.adopted ?? "", /^[0-9a-f-]{36}$/);
    const repair = await f.direct(["state", "repair"]);
    assert.equal(repair.code, 0, explain("state repair", repair));
    assert.match(repair.stdout + repair.stderr, /nothing to repair/);
    await assertNoLock(f.direct);
  });
});

describe("a torn write and the tool's next apply through objstate serve", { timeout: TIMEOUT_MS }, () => {
  let f: Faulty;
  before(async () => {
    f = await faulty();
  });
  after(async () => {
    await f.close();
  });

  it("kill -9 between storing and committing under a 2 s lease: GET (unlocked), LOCK, POST, UNLOCK all succeed with no operator action, and the server logs the repair", async (t) => {
    const files = scratch();
    const lineage = await seed(f.direct, files, "apply");
    const text = stateText(lineage, 2, ["torn"]);
    f.table.stall(COMMIT);
    const push = f.startProxied(["state", "push", files.file("torn.json", text), "-w", "apply", "--lock-ttl", "2s"]);
    await f.table.waitFor(COMMIT);
    push.kill9();
    await push.done;
    await f.table.close();
    // The dead writer's lease runs out (2 s, plus the takeover margin of 1 s).
    await sleep(3_500);

    const server = await startReplica(f.props);
    try {
      const tool = new HttpBackendClient({ bases: [server.url], workspace: "apply", retries: 0 });
      const got = await tool.get();
      assert.equal(got?.toString(), text, "the GET before LOCK did not serve the stored write");
      const l = await tool.lock("OperationTypeApply");
      assert.ok(l.ok, `LOCK: ${JSON.stringify(l)}`);
      const base = parseState((await tool.get())?.toString() ?? "");
      assert.deepEqual(base.tokens, ["torn"]);
      const next = toolState(base.serial + 1, lineage, { tokens: { value: [...base.tokens, "apply"], type: ["list", "string"] } });
      assert.equal((await tool.put(next)).status, 200);
      assert.equal((await tool.unlock()).status, 200);
      assert.deepEqual(await tool.get(), next);
      const repaired = server.events("state repaired");
      assert.equal(repaired.length, 1, `the server's log: ${server.log()}`);
      assert.equal(repaired[0]?.["action"], "adopted");
      assert.equal(repaired[0]?.["workspace"], "apply");
      assert.equal(repaired[0]?.["serial"], 2);
      assert.equal(repaired[0]?.["level"], "warn");
      t.diagnostic("kill -9 between storing and committing: the next apply through serve succeeded with no operator action; 1 healed (adopted), 0 lost");
    } finally {
      await server.stop();
    }
  });

  it("a torn write that cannot be proved (an older objstate's, no commit intent recorded): one 409 naming the repair command, at once", async () => {
    const lineage = randomUUID();
    const server = await startReplica(f.props);
    const raw = await cephTarget().raw(f.props.bucket);
    try {
      const tool = new HttpBackendClient({ bases: [server.url], workspace: "unproven", retries: 0 });
      const l = await tool.lock("OperationTypeApply");
      assert.ok(l.ok);
      assert.equal((await tool.put(toolState(1, lineage))).status, 200);
      assert.equal((await tool.unlock()).status, 200);
      const older = toolState(2, lineage);
      const md5 = createHash("md5").update(older).digest("hex");
      await raw.put(`env:/unproven/tool.tfstate`, older, { metadata: { "objstate-serial": "2", "objstate-md5": md5, "objstate-who": "old@objstate" } });
      const r = await rawRequest(server.url, "GET", "/state/unproven", undefined);
      assert.equal(r.status, 409, r.body.toString());
      const body = JSON.parse(r.body.toString()) as { code: string; message: string };
      assert.equal(body.code, "TORN_WRITE");
      assert.match(body.message, /objstate state repair -w unproven/);
    } finally {
      raw.close();
      await server.stop();
    }
  });
});
