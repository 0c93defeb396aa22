/**
 * No acknowledged write is lost, on Ceph RGW + dynalite: concurrent CLI processes
 * increment one state, under the lock (every cycle lands) and naively (every acknowledged
 * push lands, the others are refused with exit 5).
 */
import { describe, it } from "node:test";
import { cephTarget } from "../../support/targets.js";
import { COUNTS, TIMEOUT_MS, cliFor, lockedCycles, naiveCycles } from "../../unit/faults/harness.js";

describe("concurrent writers on Ceph RGW + dynalite", { timeout: TIMEOUT_MS }, () => {
  const target = cephTarget();

  it(`${COUNTS.processes} processes × ${COUNTS.cycles} lock → pull → +1 → push --lock-id → unlock cycles end at exactly ${COUNTS.processes * COUNTS.cycles}`, async () => {
    await lockedCycles(cliFor(await target.setup({ locks: true })));
  });

  it(`${COUNTS.processes} processes × ${COUNTS.cycles} naive pull → +1 → push cycles lose no acknowledged push; the others exit 5`, async () => {
    await naiveCycles(cliFor(await target.setup({ locks: true })));
  });
});
