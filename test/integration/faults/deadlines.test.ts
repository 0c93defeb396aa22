/**
 * Stalled servers (Ceph RGW + dynalite behind a paused proxy, as if SIGSTOPped): every
 * command ends within its `--timeout` with one clear line naming the endpoint that did not
 * answer, and a push whose lock table still answers leaves no lock behind.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { FaultProxy } from "../../support/fault-proxy.js";
import { TIMEOUT_MS, assertNoLock, explain, scratch, stateText } from "../../unit/faults/harness.js";
import { faulty, type Faulty } from "./setup.js";

/** The per-request deadline given to every command. */
const DEADLINE = "2s";
/**
 * Beyond the deadline: starting node and loading the SDK on a loaded 2-core machine, and
 * the requests that come after the stalled one (releasing the lock). Without a deadline
 * the command would never end; a hard stop at HARD_STOP_MS turns that into a failure.
 */
const SLACK_MS = 5_000;
const HARD_STOP_MS = 45_000;

describe("a stalled gateway or lock table: every command ends within its deadline", { timeout: TIMEOUT_MS }, () => {
  let f: Faulty;
  const files = scratch();
  let lineage: string;
  before(async () => {
    f = await faulty();
    lineage = randomUUID();
    const seeded = await f.direct(["state", "push", files.file("seed.json", stateText(lineage, 1, ["seed"]))]);
    assert.equal(seeded.code, 0, explain("seed", seeded));
  });
  after(async () => {
    await f.close();
  });

  /** Run `cmd` through the proxies with --timeout; it must fail in time, naming `stalled`'s endpoint. */
  async function endsInTime(cmd: string[], stalled: FaultProxy): Promise<void> {
    const proc = f.startProxied([...cmd, "--timeout", DEADLINE]);
    const stop = setTimeout(() => proc.kill9(), HARD_STOP_MS);
    const r = await proc.done;
    clearTimeout(stop);
    const what = `objstate ${cmd[0]} ${cmd[1] ?? ""} against a stalled ${stalled === f.s3 ? "gateway" : "lock table"}`;
    assert.notEqual(r.signal, "SIGKILL", explain(`${what} did not end within ${HARD_STOP_MS} ms`, r));
    assert.ok(r.ms < 2_000 + SLACK_MS, explain(`${what} took ${r.ms} ms`, r));
    assert.equal(r.code, 1, explain(what, r));
    const lines = r.stderr.split("\n").filter((l) => l.startsWith("objstate: error:"));
    assert.equal(lines.length, 1, explain(`${what}: one error line`, r));
    assert.match(lines[0] as string, new RegExp(new URL(stalled.url).host.replace(/\./g, "\\.")), explain(`${what}: the error must name the endpoint`, r));
    assert.match(lines[0] as string, /within 2 s/, explain(`${what}: the error must say which deadline passed`, r));
  }

  it("stalled gateway: pull, push, repair, output, workspace list end in time naming the S3 endpoint; push and repair leave no lock", async () => {
    f.s3.pause();
    try {
      await endsInTime(["state", "pull"], f.s3);
      await endsInTime(["state", "push", files.file("s3.json", stateText(lineage, 2, ["seed", "s3"]))], f.s3);
      await assertNoLock(f.direct);
      await endsInTime(["state", "repair"], f.s3);
      await endsInTime(["output"], f.s3);
      await endsInTime(["workspace", "list"], f.s3);
      await assertNoLock(f.direct);
    } finally {
      await f.s3.resume();
    }
    const pull = await f.direct(["state", "pull"]);
    assert.equal(pull.code, 0, explain("pull after the gateway resumed", pull));
  });

  it("stalled lock table: pull, push, lock, unlock, force-unlock, repair end in time naming the DynamoDB endpoint", async () => {
    f.table.pause();
    try {
      await endsInTime(["state", "pull"], f.table);
      await endsInTime(["state", "push", files.file("table.json", stateText(lineage, 2, ["seed", "table"]))], f.table);
      await endsInTime(["lock"], f.table);
      await endsInTime(["unlock", randomUUID()], f.table);
      await endsInTime(["force-unlock", randomUUID(), "--force"], f.table);
      await endsInTime(["state", "repair"], f.table);
    } finally {
      await f.table.resume();
    }
    // The table answered again, the requests the stall held have been served: no lock is left.
    await assertNoLock(f.direct);
    const pull = await f.direct(["state", "pull"]);
    assert.equal(pull.code, 0, explain("pull after the table resumed", pull));
  });
});
