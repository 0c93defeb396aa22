/**
 * A long operation under a short lease keeps its lock (the heartbeat renews it while a
 * competitor keeps trying), and once its heartbeat is killed the lease is lost: taken
 * over, and the holder's next write refused with LOCK_LOST. Quick: 10 s under a 1 s lease;
 * full (`OBJSTATE_FAULTS_FULL=1`): 5 minutes under a 10 s lease.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { FULL } from "./harness.js";

export const LONG = FULL ? { operationMs: 5 * 60_000, ttlMs: 10_000 } : { operationMs: 10_000, ttlMs: 1_000 };

export async function longLease(props: ObjectStoreBackendConfigProps, lockfile: boolean): Promise<{ refusals: number; writes: number }> {
  const options = { env: {}, onWarning: () => undefined, lockfile, ttl: LONG.ttlMs };
  const holder = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), options);
  const rival = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), options);
  try {
    const held = await holder.acquire("default", { operation: "long apply" });
    const end = Date.now() + LONG.operationMs;
    let refusals = 0;
    let writes = 0;
    while (Date.now() < end) {
      await assert.rejects(rival.lock("default"), (e) => isObjstateError(e, "STATE_LOCKED"));
      refusals++;
      await holder.writeState("default", JSON.stringify({ version: 4, serial: writes + 1, lineage: "L" }), { lockId: held.id });
      writes++;
      assert.equal(held.lost, false);
      await sleep(Math.min(LONG.ttlMs, 2_000));
    }
    // Kill the heartbeat: the lease runs out and the rival takes over.
    held.stop();
    const deadline = Date.now() + LONG.ttlMs + 10_000;
    let taken;
    while (taken === undefined) {
      taken = await rival.lock("default", { operation: "takeover" }).catch((e: unknown) => {
        if (!isObjstateError(e, "STATE_LOCKED") || Date.now() > deadline) throw e;
        return undefined;
      });
      if (taken === undefined) await sleep(250);
    }
    await assert.rejects(holder.writeState("default", JSON.stringify({ version: 4, serial: writes + 1, lineage: "L" }), { lockId: held.id }), (e) =>
      isObjstateError(e, "LOCK_LOST"),
    );
    assert.equal(JSON.parse((await rival.readState("default"))?.toString() ?? "{}").serial, writes, "the lost holder wrote nothing");
    await held.release();
    await rival.unlock("default", taken.ID);
    return { refusals, writes };
  } finally {
    holder.close();
    rival.close();
  }
}
