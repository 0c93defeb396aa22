/**
 * No acknowledged write is lost, on the embedded store and lock table: concurrent CLI processes increment one
 * state naively (pull → +1 → push --lock-timeout 60s); every acknowledged push lands, the
 * others are refused with exit 5 and write nothing.
 */
import { describe, it } from "node:test";
import { embeddedTarget } from "../../support/targets.js";
import { COUNTS, TIMEOUT_MS, cliFor, naiveCycles } from "./harness.js";

describe("naive concurrent writers on the embedded store", { timeout: TIMEOUT_MS }, () => {
  it(`${COUNTS.processes} processes × ${COUNTS.cycles} naive pull → +1 → push cycles lose no acknowledged push; the others exit 5`, async (t) => {
    const { acknowledged, conflicts } = await naiveCycles(cliFor(await embeddedTarget().setup({ locks: true })));
    t.diagnostic(`${acknowledged} pushes acknowledged, ${conflicts} refused as conflicts`);
  });
});
