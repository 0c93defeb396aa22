/**
 * A separate process driving a backend, for the cross-process tests.
 *   node backend-worker.js counter CYCLES   — CYCLES × (lock → read counter → write counter+1 → unlock)
 *   node backend-worker.js crash BYTES      — lock, then write a BYTES-long state (to be SIGKILLed mid-write)
 * Config props come as JSON in OBJSTATE_WORKER_PROPS.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig, type LockInfo } from "../../src/index.js";

const [mode, arg] = process.argv.slice(2);
const props = JSON.parse(process.env["OBJSTATE_WORKER_PROPS"] ?? "{}") as Record<string, unknown>;
let announced = false;
const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props as never), {
  env: {},
  who: `worker-${process.pid}@test`,
  onWarning: () => undefined,
  s3: {
    onRequest: (r) => {
      // The big state on the wire (one conditional PUT, or parts): the upload is under way.
      if (mode === "crash" && !announced && r.method === "PUT" && (r.path.includes("partNumber=") || Number(r.headers["content-length"] ?? 0) > 1024 * 1024)) {
        announced = true;
        process.stdout.write("UPLOADING\n");
      }
    },
  },
});

async function lockWithRetry(): Promise<LockInfo> {
  for (;;) {
    try {
      return await backend.lock("default", { operation: "counter" });
    } catch (e) {
      if (!isObjstateError(e, "STATE_LOCKED")) throw e;
      await sleep(2 + Math.random() * 15);
    }
  }
}

if (mode === "counter") {
  for (let i = 0; i < Number(arg); i++) {
    const lock = await lockWithRetry();
    const state = await backend.readState("default");
    const n = state === null ? 0 : (JSON.parse(state.toString()) as { counter: number }).counter;
    await backend.writeState("default", JSON.stringify({ version: 4, counter: n + 1, by: process.pid }), { lockId: lock.ID });
    await backend.unlock("default", lock.ID);
  }
  process.stdout.write("DONE\n");
} else if (mode === "crash") {
  const lock = await backend.lock("default", { operation: "crash-test" });
  process.stdout.write(`LOCKED ${lock.ID}\n`);
  const big = Buffer.alloc(Number(arg), "x");
  big.write('{"version":4,"serial":2,"pad":"');
  big.write('"}', big.length - 2);
  process.stdout.write("WRITING\n");
  await backend.writeState("default", big, { lockId: lock.ID });
  process.stdout.write("FINISHED\n");
}
backend.close();
