/**
 * Locks that heal on the Ceph RGW + dynalite: lease-holding workers that are SIGKILLed or
 * frozen past their lease never let two writers in, lose no acknowledged write, and
 * leave no lock behind — with the dynalite lock table, and with a lockfile and no table.
 */
import { describe, it } from "node:test";
import { cephTarget } from "../../support/targets.js";
import { TIMEOUT_MS } from "../../unit/faults/harness.js";
import { LEASE_COUNTS, leaseCycles } from "../../unit/faults/lease-harness.js";

const { processes, cycles } = LEASE_COUNTS;

describe("lease-holding workers killed and frozen on the Ceph RGW + dynalite", { timeout: TIMEOUT_MS }, () => {
  it(`${processes} processes × ${cycles} cycles with 1 s leases and the lock table`, async (t) => {
    const tally = await leaseCycles(await cephTarget().setup({ locks: true }), false);
    t.diagnostic(
      `${tally.acks.length} acknowledged, ${tally.lost} refused by fencing, ${tally.kills} killed, ${tally.freezes} frozen, ${tally.inDoubt} in doubt`,
    );
  });
  it(`${processes} processes × ${cycles} cycles with 1 s leases, a lockfile and no table`, async (t) => {
    const tally = await leaseCycles(await cephTarget().setup({ locks: false }), true);
    t.diagnostic(
      `${tally.acks.length} acknowledged, ${tally.lost} refused by fencing, ${tally.kills} killed, ${tally.freezes} frozen, ${tally.inDoubt} in doubt`,
    );
  });
});
