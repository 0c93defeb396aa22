/**
 * The "locks that heal" proof, run unchanged on the embedded store and on Ceph + dynalite,
 * with the lock table or with a lockfile and no table: N lease-holding processes × C
 * cycles (acquire → read counter → write counter+1 → release, 1 s leases), while once per
 * cycle a random worker is SIGKILLed (and started again for its remaining cycles) or
 * SIGSTOPped beyond its lease and then resumed. Quick counts by default; the issue's
 * 8 × 20 under `OBJSTATE_FAULTS_FULL=1`.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { FULL } from "./harness.js";

const WORKER = fileURLToPath(new URL("../../support/lease-worker.js", import.meta.url));

/** Processes, cycles each, and the lease. */
export const LEASE_COUNTS = FULL ? { processes: 8, cycles: 20, ttlMs: 1_000 } : { processes: 3, cycles: 4, ttlMs: 1_000 };
/** How long a stopped worker stays frozen: well past its lease, the clock margin and the seconds rounding. */
const FREEZE_MS = 5_500;

interface Slot {
  remaining: number;
  proc: ChildProcess | undefined;
  finished: boolean;
  /** Between HELD and FREE: holding the lock (the faults aim at holders). */
  holding: boolean;
}

/** What the workers reported. */
interface Tally {
  /** Acknowledged values, with the lock ID each was written under. */
  readonly acks: { n: number; id: string }[];
  /** Writes of killed workers that were sent but not acknowledged (they may or may not have landed). */
  inDoubt: number;
  lost: number;
  kills: number;
  freezes: number;
}

export async function leaseCycles(props: ObjectStoreBackendConfigProps, lockfile: boolean): Promise<Tally> {
  const { processes, cycles, ttlMs } = LEASE_COUNTS;
  const tally: Tally = { acks: [], inDoubt: 0, lost: 0, kills: 0, freezes: 0 };
  const slots: Slot[] = Array.from({ length: processes }, () => ({ remaining: cycles, proc: undefined, finished: false, holding: false }));
  const failures: string[] = [];
  let wake: () => void = () => undefined;

  const start = (slot: Slot): void => {
    const child = spawn(process.execPath, [WORKER, String(slot.remaining)], {
      env: { ...process.env, OBJSTATE_WORKER_PROPS: JSON.stringify(props), OBJSTATE_WORKER_TTL: String(ttlMs), OBJSTATE_WORKER_LOCKFILE: lockfile ? "1" : "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    slot.proc = child;
    let writing = false;
    let buf = "";
    let stderr = "";
    child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const [word, a, b] = line.split(" ");
        if (word === "HELD") slot.holding = true;
        else if (word === "FREE") slot.holding = false;
        else if (word === "WRITING") writing = true;
        else if (word === "ACK") {
          writing = false;
          slot.remaining--;
          tally.acks.push({ n: Number(a), id: b as string });
        } else if (word === "LOST") {
          writing = false;
          tally.lost++;
        }
      }
    });
    child.on("exit", (code, signal) => {
      slot.proc = undefined;
      slot.holding = false;
      if (signal === "SIGKILL") {
        if (writing) tally.inDoubt++;
        if (slot.remaining > 0) start(slot);
        else slot.finished = true;
      } else {
        // The whole error: Node prints the thrown error's fields on many lines before its version.
        if (code !== 0) failures.push(`worker exited ${code}: ${stderr.trim().split("\n").slice(-40).join(" | ")}`);
        slot.finished = true;
      }
      wake();
    });
  };
  for (const s of slots) start(s);

  const allDone = (): boolean => slots.every((s) => s.finished);
  // One fault per cycle, at a random moment, to a worker holding the lock (a random live one when none does).
  for (let f = 0; f < cycles && !allDone() && failures.length === 0; f++) {
    await sleep(100 + Math.random() * 400);
    const live = slots.filter((s) => s.proc !== undefined && !s.finished);
    const holders = live.filter((s) => s.holding);
    const pool = holders.length > 0 ? holders : live;
    const victim = pool[Math.floor(Math.random() * pool.length)];
    if (victim?.proc === undefined) continue;
    if (Math.random() < 0.5) {
      tally.kills++;
      victim.proc.kill("SIGKILL");
    } else {
      tally.freezes++;
      const p = victim.proc;
      p.kill("SIGSTOP");
      await sleep(FREEZE_MS);
      p.kill("SIGCONT");
    }
  }
  while (!allDone()) await new Promise<void>((resolve) => ((wake = resolve), setTimeout(resolve, 1_000)));
  assert.deepEqual(failures, []);

  const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
    env: {},
    onWarning: () => undefined,
    lockfile,
    digestRetry: { timeoutMs: 300, intervalMs: 100 },
  });
  try {
    // A killed worker's write may have landed without its digest: the repair (under the lock) settles that first.
    await backend.repairState("default").catch(() => undefined);
    const state = await backend.readState("default");
    const counter = state === null ? 0 : (JSON.parse(state.toString()) as { counter: number }).counter;
    const values = tally.acks.map((a) => a.n).sort((x, y) => x - y);
    // Every acknowledged value is distinct: no two holders ever wrote over the same state.
    assert.equal(new Set(values).size, values.length, `an acknowledged value was written twice: ${values.join(",")}`);
    // Nothing acknowledged was lost: the counter counts every acknowledged write, plus only such
    // writes of killed workers as were in flight when they died.
    assert.ok(
      counter >= values.length && counter <= values.length + tally.inDoubt,
      `counter ${counter}, ${values.length} acknowledged, ${tally.inDoubt} in doubt`,
    );
    assert.equal(values.length, processes * cycles);
    // No lock is left for good: once the leases of killed holders have run out, a plain lock is taken at once.
    await sleep(ttlMs + 3_000);
    const lock = await backend.lock("default", { ttl: 5_000 });
    await backend.unlock("default", lock.ID);
    assert.deepEqual(await backend.locks(), []);
  } finally {
    backend.close();
  }
  return tally;
}
