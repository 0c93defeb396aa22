/**
 * A writer frozen (SIGSTOP) while it holds a key's claim, for longer than every claim
 * timeout, keeps it: another process's write on that key waits and gives up with
 * STORE_BUSY, and when the frozen writer resumes, its check still holds. Before, a claim
 * older than 30 s was broken: the other write went ahead and was then overwritten by the
 * frozen writer's stale rename (lost, not even in history), deleted by its stale delete,
 * or its lock replaced by a stale renew.
 *
 * Quick: frozen 2 s, with the claim's wait limit scaled to 1 s for both processes
 * (`OBJSTATE_TEST_CLAIM_WAIT_MS`), so the pause outlasts every claim timeout and the suite
 * stays short. Full (`OBJSTATE_FAULTS_FULL=1`): frozen 50 s, past the real 45 s wait limit
 * and the 30 s after which claims used to be broken.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { FileLockTable } from "../../../src/lock/file.js";
import { FileDriver } from "../../../src/store/file.js";
import type { PauseStep } from "../../../src/util/test-pause.js";
import { startWorker, stopped, type Outcome } from "../../support/paused-process.js";

const FULL = process.env["OBJSTATE_FAULTS_FULL"] === "1";
const PAUSE_MS = FULL ? 50_000 : 2_000;
const ENV: Record<string, string> = FULL ? {} : { OBJSTATE_TEST_CLAIM_WAIT_MS: "1000" };
const WORKER = fileURLToPath(new URL("../../support/claim-worker.js", import.meta.url));
const TIMEOUT = FULL ? 10 * 60_000 : 60_000;

let root: string;
let endpoint: string;
let n = 0;

before(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), "objstate-claim-pause-"));
  endpoint = pathToFileURL(root).href;
});
after(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

const md5 = (s: string): string => createHash("md5").update(s).digest("hex");

/**
 * Run `first` until it stops itself at `step`; then run `second` to its end while `first`
 * stays frozen (at least {@link PAUSE_MS} in all); then resume `first`.
 */
async function frozenWhileAnotherWrites(first: string[], step: PauseStep, second: string[]): Promise<{ first: Outcome; second: Outcome; firstPid: number }> {
  const a = startWorker(WORKER, first, ENV, step);
  try {
    await stopped(a);
    const since = Date.now();
    const b = await startWorker(WORKER, second, ENV).outcome;
    await sleep(Math.max(0, PAUSE_MS - (Date.now() - since)));
    assert.equal(a.ended(), false, "the first writer stayed frozen");
    a.resume();
    return { first: await a.outcome, second: b, firstPid: a.pid };
  } finally {
    if (!a.ended()) a.kill();
  }
}

/** The bodies of every version of `key`, newest first ("(deleted)" for a delete marker). */
async function history(d: FileDriver, key: string): Promise<string[]> {
  const out: string[] = [];
  for await (const v of d.listVersions(key)) out.push(v.deleteMarker ? "(deleted)" : ((await d.get(key, { versionId: v.versionId }))?.body.toString() ?? "?"));
  return out;
}

function refusedBusy(o: Outcome, pid: number): void {
  assert.equal(o.ok, false, `the second writer went ahead while the first one held the key's claim: ${JSON.stringify(o)}`);
  if (o.ok) return;
  assert.equal(o.code, "STORE_BUSY", o.message);
  assert.match(
    o.message,
    new RegExp(
      `is held by another writer \\(claim \\S+/\\.claim-[^ ,]+, of process ${pid} on this host\\); .*if no objstate process is running there, delete that file$`,
    ),
  );
}

describe("a writer frozen holding a key's claim keeps it, however long", { timeout: TIMEOUT }, () => {
  it("If-Match put frozen after its check: the other write waits and is refused; the frozen one lands on what it checked; nothing is lost", async () => {
    const bucket = `bucket-${++n}`;
    const d = new FileDriver({ bucket, endpoint });
    await d.put("k", Buffer.from("v1"));
    const r = await frozenWhileAnotherWrites(["put", endpoint, bucket, "k", "A", md5("v1")], "store-checked", ["put", endpoint, bucket, "k", "B", md5("v1")]);
    refusedBusy(r.second, r.firstPid);
    assert.deepEqual(r.first, { ok: true }, "the frozen writer's check still held when it resumed");
    assert.deepEqual(await history(d, "k"), ["A", "v1"]);
  });

  it("plain put frozen right after taking the claim: the other write waits; every version stays in history", async () => {
    const bucket = `bucket-${++n}`;
    const d = new FileDriver({ bucket, endpoint });
    await d.put("k", Buffer.from("v1"));
    const r = await frozenWhileAnotherWrites(["put", endpoint, bucket, "k", "A"], "store-claimed", ["put", endpoint, bucket, "k", "B"]);
    refusedBusy(r.second, r.firstPid);
    assert.deepEqual(r.first, { ok: true });
    assert.deepEqual(await history(d, "k"), ["A", "v1"]);
  });

  it("deleteIfMatch frozen after its check: a write of the key waits; the delete removes only what it checked", async () => {
    const bucket = `bucket-${++n}`;
    const d = new FileDriver({ bucket, endpoint });
    await d.put("k", Buffer.from("v1"));
    const r = await frozenWhileAnotherWrites(["delete-if-match", endpoint, bucket, "k", md5("v1")], "store-delete-checked", [
      "put",
      endpoint,
      bucket,
      "k",
      "B",
      md5("v1"),
    ]);
    refusedBusy(r.second, r.firstPid);
    assert.deepEqual(r.first, { ok: true, value: true });
    assert.equal(await d.get("k"), null);
    assert.deepEqual(await history(d, "k"), ["(deleted)", "v1"]);
  });

  it("lock table: a renew frozen after its compare keeps the item; a takeover of the expired lease waits and does not take it", async () => {
    const name = `table-${++n}`;
    const t = new FileLockTable({ table: name, endpoint });
    const nowSec = Math.floor(Date.now() / 1000);
    assert.equal(await t.putLease("L", "holder", nowSec - 100, nowSec), null);
    const r = await frozenWhileAnotherWrites(
      ["update-if", endpoint, name, "L", "Info", "holder", JSON.stringify({ Info: "holder-renewed", Expires: String(nowSec + 3600) })],
      "table-checked",
      ["put-lease", endpoint, name, "L", "taker", String(nowSec + 3600), String(nowSec)],
    );
    refusedBusy(r.second, r.firstPid);
    assert.deepEqual(r.first, { ok: true, value: true });
    assert.equal(await t.get("L", "Info"), "holder-renewed");
  });
});
