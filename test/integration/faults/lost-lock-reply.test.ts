/**
 * A LOCK through `objstate serve` whose conditional put was stored by the lock table but
 * whose reply was lost, the SDK's retries then throttled (Ceph RGW + dynalite, the table
 * behind the fault proxy). The answer must never be an error that leaves a lock nobody knows
 * of: either the client is told it holds the lock (and does), or the answer names the lock
 * left (423 with its own lock info), which the client's retry under the same ID then takes.
 * The CLI takes its locks through the same library call.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { RequestMatch } from "../../support/fault-proxy.js";
import { HttpBackendClient } from "../../support/http-backend-client.js";
import { TIMEOUT_MS, explain } from "../../unit/faults/harness.js";
import { startReplica, type Replica } from "./serve-replica.js";
import { faulty, stateLockId, type Faulty } from "./setup.js";

const LOCK_WRITE: RequestMatch = { target: "DynamoDB_20120810.PutItem", body: '"Info"' };
const PUT: RequestMatch = { target: "DynamoDB_20120810.PutItem" };
const ANY: RequestMatch = { target: /^DynamoDB_20120810\./ };

describe("a LOCK whose write was stored but whose reply was lost, then throttled", { timeout: TIMEOUT_MS }, () => {
  let f: Faulty;
  let replica: Replica;
  before(async () => {
    f = await faulty();
    replica = await startReplica({ ...f.props, kvstoreEndpoint: f.table.url });
  });
  after(async () => {
    await replica?.stop();
    await f?.close();
  });

  /** One answer, as the server gave it: the client's own retries of a 5xx would hide it. */
  const client = (workspace: string): HttpBackendClient => new HttpBackendClient({ bases: [replica.url], workspace, retries: 0 });
  const holderId = async (ws: string): Promise<string | undefined> => {
    const info = await f.item(stateLockId(f.props, ws), "Info");
    return info === null ? undefined : (JSON.parse(info) as { ID: string }).ID;
  };

  it("while the table answers reads again: 200, and the client holds the lock it was told it holds", async () => {
    const ws = "read-back";
    const drop = f.table.dropReplyOnce(LOCK_WRITE);
    // The SDK's two retries of the lost put: throttled, so the put fails as far as it knows.
    f.table.throttle(PUT, 2);
    const c = client(ws);
    const l = await c.lock("OperationTypeApply");
    assert.equal((await drop).outcome, "dropped");
    assert.deepEqual(
      f.table.find(PUT).map((e) => e.outcome),
      ["dropped", 400, 400],
    );
    assert.ok(l.ok, `the LOCK was answered ${JSON.stringify(l)}`);
    assert.equal(await holderId(ws), l.id, "the lock stored is the one the client was told it holds");
    assert.equal((await c.unlock()).status, 200);
    assert.equal(await holderId(ws), undefined);
  });

  it("while the table stays throttled: 423 naming the client's own lock, logged; its retry under the same ID takes it", async () => {
    const ws = "left-behind";
    const drop = f.table.dropReplyOnce(LOCK_WRITE);
    f.table.throttle(ANY);
    const c = client(ws);
    const info = c.newLockInfo("OperationTypeApply");
    let l;
    try {
      l = await c.lockWith(info);
    } finally {
      f.table.unthrottle();
    }
    assert.equal((await drop).outcome, "dropped");
    assert.ok(!l.ok && l.status === 423, `the LOCK was answered ${JSON.stringify(l)}`);
    assert.equal(l.holder?.ID, info.ID, "the answer names the lock left: the client's own");
    assert.equal(await holderId(ws), info.ID, "and that is the lock the table holds");
    const logged = replica.events("lock left behind");
    assert.deepEqual(
      logged.map((e) => [e["level"], e["workspace"], e["lockId"]]),
      [["error", ws, info.ID]],
    );
    // LockWithContext (-lock-timeout) sends the same lock info again: it gets the lock.
    const again = await c.lockWith(info);
    assert.ok(again.ok, JSON.stringify(again));
    assert.equal((await c.unlock()).status, 200);
    assert.equal(await holderId(ws), undefined);
  });

  it("objstate lock (the CLI's path through the library): the lock it prints is the one stored", async () => {
    const ws = "cli-read-back";
    const drop = f.table.dropReplyOnce(LOCK_WRITE);
    f.table.throttle(PUT, 2);
    const lock = await f.proxied(["lock", "-w", ws]);
    assert.equal((await drop).outcome, "dropped");
    assert.equal(lock.code, 0, explain("lock with its reply lost, then throttled", lock));
    assert.equal(await holderId(ws), lock.stdout.trim());
    assert.equal((await f.direct(["unlock", lock.stdout.trim(), "-w", ws])).code, 0);
    assert.equal(await holderId(ws), undefined);
  });
});
