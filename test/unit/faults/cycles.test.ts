/**
 * No acknowledged write is lost, on the embedded store and lock table: concurrent CLI
 * processes increment one state, under the lock (every cycle lands) and naively (every
 * acknowledged push lands, the others are refused with exit 5).
 */
import { describe, it } from "node:test";
import { embeddedTarget } from "../../support/targets.js";
import { COUNTS, TIMEOUT_MS, cliFor, lockedCycles, naiveCycles } from "./harness.js";

describe("concurrent writers on the embedded store", { timeout: TIMEOUT_MS }, () => {
  const target = embeddedTarget();

  it(`${COUNTS.processes} processes × ${COUNTS.cycles} lock → pull → +1 → push --lock-id → unlock cycles end at exactly ${COUNTS.processes * COUNTS.cycles}`, async () => {
    await lockedCycles(cliFor(await target.setup({ locks: true })));
  });

  it(`${COUNTS.processes} processes × ${COUNTS.cycles} naive pull → +1 → push cycles lose no acknowledged push; the others exit 5`, async () => {
    await naiveCycles(cliFor(await target.setup({ locks: true })));
  });
});
