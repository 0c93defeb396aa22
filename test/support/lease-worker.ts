/**
 * A lease-holding counter process for the "locks that heal" proofs:
 *   node lease-worker.js CYCLES — CYCLES × (acquire (lease) → read counter → write counter+1 (fenced) → release)
 * Config props in OBJSTATE_WORKER_PROPS; lease ms in OBJSTATE_WORKER_TTL; OBJSTATE_WORKER_LOCKFILE=1
 * locks with a lockfile. Prints `WRITING n` before a write, `ACK n ID` once it is acknowledged,
 * `LOST CODE` when fencing refused a write (the lease was lost), `HELD`/`FREE` around each
 * holding, `DONE` at the end.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig, type LockHandle } from "../../src/index.js";

const cycles = Number(process.argv[2]);
const props = JSON.parse(process.env["OBJSTATE_WORKER_PROPS"] ?? "{}") as Record<string, unknown>;
const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props as never), {
  env: {},
  who: `lease-worker-${process.pid}@test`,
  onWarning: () => undefined,
  ttl: Number(process.env["OBJSTATE_WORKER_TTL"] ?? "1000"),
  lockfile: process.env["OBJSTATE_WORKER_LOCKFILE"] === "1",
  digestRetry: { timeoutMs: 300, intervalMs: 100 },
});
const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

async function acquire(): Promise<LockHandle> {
  for (;;) {
    try {
      return await backend.acquire("default", { operation: "lease-counter" });
    } catch (e) {
      if (!isObjstateError(e, "STATE_LOCKED")) throw e;
      await sleep(20 + Math.random() * 80);
    }
  }
}

/** The counter, repairing under our lock a write whose writer was killed before it recorded its digest. */
async function readCounter(lockId: string): Promise<{ n: number; etag: string | null }> {
  for (let i = 0; ; i++) {
    try {
      const cur = await backend.readStateVersion("default");
      return { n: cur === null ? 0 : (JSON.parse(cur.body.toString()) as { counter: number }).counter, etag: cur?.etag ?? null };
    } catch (e) {
      if (i > 3 || !(isObjstateError(e, "DIGEST_MISMATCH") || isObjstateError(e, "TORN_WRITE"))) throw e;
      await backend.repairState("default", { lockId });
    }
  }
}

let done = 0;
while (done < cycles) {
  const held = await acquire();
  say("HELD");
  try {
    const { n, etag } = await readCounter(held.id);
    // A little work between the read and the write: the window the faults aim at.
    await sleep(200 + Math.random() * 300);
    say(`WRITING ${n + 1}`);
    await backend.writeState("default", JSON.stringify({ version: 4, counter: n + 1, by: held.id }), { lockId: held.id, ifMatch: etag });
    say(`ACK ${n + 1} ${held.id}`);
    done++;
  } catch (e) {
    if (!(isObjstateError(e, "LOCK_LOST") || isObjstateError(e, "STATE_CONFLICT") || isObjstateError(e, "LOCK_NOT_HELD") || isObjstateError(e, "STATE_LOCKED")))
      throw e;
    say(`LOST ${(e as { code: string }).code}`);
  } finally {
    await held.release().catch(() => undefined);
    say("FREE");
  }
}
say("DONE");
backend.close();
