/**
 * A writer of one workspace through the library, in a process of its own, for the frozen
 * writer tests (test/unit/faults/paused-writer.test.ts). Config props come as JSON in
 * OBJSTATE_WORKER_PROPS; prints its outcome as one JSON line.
 *   hold-and-write TTL_MS STATE   take the lock with a lease (renewed by its heartbeat),
 *                                 write STATE under it, release it
 *   take-and-write lease|force STATE
 *                                 take the lock once the holder's lease has run out (or
 *                                 force-unlock it first), write STATE under it, release it
 * Freeze it with OBJSTATE_TEST_PAUSE_AT (see src/util/test-pause.ts).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig, type LockInfo } from "../../src/index.js";
import { outcomeOf, report } from "./paused-process.js";

const [mode, how, state] = process.argv.slice(2) as [string, string, string];
const props = JSON.parse(process.env["OBJSTATE_WORKER_PROPS"] ?? "{}") as Record<string, unknown>;
const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props as never), {
  env: {},
  who: `${mode}-${process.pid}@test`,
  onWarning: () => undefined,
});

/** Take the lock, waiting (polling) while another holds it. */
async function take(): Promise<LockInfo> {
  if (how === "force") {
    const holder = await backend.lockInfo("default");
    if (holder !== null) await backend.unlock("default", holder.ID);
  }
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      return await backend.lock("default", { operation: "take over" });
    } catch (e) {
      if (!isObjstateError(e, "STATE_LOCKED") || Date.now() > deadline) throw e;
      await sleep(100);
    }
  }
}

if (mode === "hold-and-write") {
  const held = await backend.acquire("default", { operation: "frozen apply", ttl: Number(how) });
  report(await outcomeOf(() => backend.writeState("default", state, { lockId: held.id })));
  await held.release().catch(() => undefined); // taken over meanwhile: nothing to give back
} else {
  const lock = await take();
  report(await outcomeOf(() => backend.writeState("default", state, { lockId: lock.ID })));
  await backend.unlock("default", lock.ID).catch(() => undefined);
}
backend.close();
