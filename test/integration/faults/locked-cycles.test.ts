/**
 * No acknowledged write is lost, on the Ceph RGW + dynalite: concurrent CLI processes increment one
 * state under the lock (lock → pull → +1 → push --lock-id → unlock); every cycle lands.
 */
import { describe, it } from "node:test";
import { cephTarget } from "../../support/targets.js";
import { COUNTS, TIMEOUT_MS, cliFor, lockedCycles } from "../../unit/faults/harness.js";

describe("concurrent writers under the lock on Ceph RGW + dynalite", { timeout: TIMEOUT_MS }, () => {
  it(`${COUNTS.processes} processes × ${COUNTS.cycles} lock → pull → +1 → push --lock-id → unlock cycles end at exactly ${COUNTS.processes * COUNTS.cycles}`, async () => {
    await lockedCycles(cliFor(await cephTarget().setup({ locks: true })));
  });
});
