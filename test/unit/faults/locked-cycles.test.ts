/**
 * No acknowledged write is lost, on the embedded store and lock table: concurrent CLI processes increment one
 * state under the lock (lock → pull → +1 → push --lock-id → unlock); every cycle lands.
 */
import { describe, it } from "node:test";
import { embeddedTarget } from "../../support/targets.js";
import { COUNTS, TIMEOUT_MS, cliFor, lockedCycles } from "./harness.js";

describe("concurrent writers under the lock on the embedded store", { timeout: TIMEOUT_MS }, () => {
  it(`${COUNTS.processes} processes × ${COUNTS.cycles} lock → pull → +1 → push --lock-id → unlock cycles end at exactly ${COUNTS.processes * COUNTS.cycles}`, async () => {
    await lockedCycles(cliFor(await embeddedTarget().setup({ locks: true })));
  });
});
