import { describe, it } from "node:test";
import { cephTarget } from "../../support/targets.js";
import { TIMEOUT_MS } from "../../unit/faults/harness.js";
import { LONG, longLease } from "../../unit/faults/long-lease.js";

const what = `a ${LONG.operationMs / 1000} s operation under a ${LONG.ttlMs / 1000} s lease keeps its lock; killing its heartbeat loses it`;
describe("long operations under short leases on the Ceph RGW + dynalite", { timeout: TIMEOUT_MS }, () => {
  it(`${what} (lock table)`, async () => {
    await longLease(await cephTarget().setup({ locks: true }), false);
  });
  it(`${what} (lockfile, no table)`, async () => {
    await longLease(await cephTarget().setup({ locks: false }), true);
  });
});
