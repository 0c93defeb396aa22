import { describe, it } from "node:test";
import { embeddedTarget } from "../../support/targets.js";
import { TIMEOUT_MS } from "./harness.js";
import { LONG, longLease } from "./long-lease.js";

const what = `a ${LONG.operationMs / 1000} s operation under a ${LONG.ttlMs / 1000} s lease keeps its lock; killing its heartbeat loses it`;
describe("long operations under short leases on the embedded store", { timeout: TIMEOUT_MS }, () => {
  it(`${what} (lock table)`, async () => {
    await longLease(await embeddedTarget().setup({ locks: true }), false);
  });
  it(`${what} (lockfile, no table)`, async () => {
    await longLease(await embeddedTarget().setup({ locks: false }), true);
  });
});
