/**
 * The commit point under pauses (issue 23 "objstate serve under faults"), on a plain and on
 * a versioned Ceph bucket, with two `objstate serve` replicas: replica A reaches Ceph and
 * dynalite through the fault proxies, replica B directly. Client X writes through A and A
 * is frozen (its request held in a proxy) right after its store check, or between storing
 * the state and committing it; X's lock is force-unlocked and client Y writes through B;
 * then A resumes. No acknowledged write may be lost, the serial never goes back, and X's
 * write is refused (409), never acknowledged. Quick runs hold A for a moment; the full
 * fault suite (OBJSTATE_FAULTS_FULL=1) holds it for 35 s, as the report did.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import type { FaultProxy } from "../../support/fault-proxy.js";
import { HttpBackendClient, toolState } from "../../support/http-backend-client.js";
import { cephTarget } from "../../support/targets.js";
import { FULL, TIMEOUT_MS, explain } from "../../unit/faults/harness.js";
import { startReplica, type Replica } from "./serve-replica.js";
import { faulty, type Faulty } from "./setup.js";

/** How long replica A stays frozen while Y writes (the report: 30 s or more). */
const PAUSE_MS = FULL ? 35_000 : 200;
const STATE_PUT = { method: "PUT", path: /\/tool\.tfstate(\?|$)/ };
/** The commit: the conditional update of the digest item. */
const COMMIT = { target: /\.(UpdateItem|PutItem)$/, body: '"Digest"' };

interface Setup {
  readonly f: Faulty;
  readonly a: Replica;
  readonly b: Replica;
  close(): Promise<void>;
}

async function setup(versioned: boolean): Promise<Setup> {
  const f = await faulty();
  if (versioned) {
    const raw = await cephTarget().raw(f.props.bucket);
    await raw.enableVersioning();
    raw.close();
  }
  const a = await startReplica({ ...f.props, endpoint: f.s3.url, kvstoreEndpoint: f.table.url });
  const b = await startReplica(f.props);
  return {
    f,
    a,
    b,
    close: async () => {
      await Promise.all([a.stop(), b.stop()]);
      await f.close();
    },
  };
}

/** Until the proxy holds a request (the ones before the stall match its rule too, so waitFor would find those). */
async function heldIn(proxy: FaultProxy): Promise<void> {
  while (proxy.heldCount() === 0) await sleep(10);
}

const serialOf = (body: Buffer | null): number => (JSON.parse(body?.toString() ?? "{}") as { serial: number }).serial;
const tokenOf = (body: Buffer | null): unknown => (JSON.parse(body?.toString() ?? "{}") as { outputs: { by: { value: unknown } } }).outputs.by.value;
const stateBy = (serial: number, lineage: string, by: string): Buffer => toolState(serial, lineage, { by: { value: by, type: "string" } });

/** Two writes through `client`: A's store driver then knows what the bucket does with conditions (a long-lived replica). */
async function warmUp(client: HttpBackendClient, lineage: string): Promise<void> {
  const l = await client.lock("OperationTypeApply");
  assert.ok(l.ok);
  for (const serial of [1, 2]) assert.equal((await client.put(stateBy(serial, lineage, "seed"))).status, 200);
  assert.equal((await client.unlock()).status, 200);
}

/** Y's whole apply through replica B, as the tool sends it: GET, LOCK, GET, POST, UNLOCK. Returns the state it built on. */
async function applyThrough(y: HttpBackendClient, lineage: string, by: string): Promise<{ base: Buffer | null; serial: number }> {
  await y.get();
  const l = await y.lock("OperationTypeApply");
  assert.ok(l.ok, `Y could not lock: ${JSON.stringify(l)}`);
  const base = await y.get();
  const serial = serialOf(base) + 1;
  const posted = await y.put(stateBy(serial, lineage, by));
  assert.equal(posted.status, 200, `Y's write: ${posted.status} ${posted.body.toString()}`);
  assert.equal((await y.unlock()).status, 200);
  return { base, serial };
}

for (const versioned of [false, true]) {
  const bucket = versioned ? "a versioned Ceph bucket" : "a plain Ceph bucket";
  describe(`a replica frozen in a write, on ${bucket}`, { timeout: TIMEOUT_MS }, () => {
    let s: Setup;
    before(async () => {
      s = await setup(versioned);
    });
    after(async () => {
      await s.close();
    });

    it("frozen right after its store check: its late PUT is refused or ignored, its client gets 409, the acknowledged write stands", async (t) => {
      const { f, a, b } = s;
      const lineage = randomUUID();
      const x = new HttpBackendClient({ bases: [a.url], workspace: "frozen-check" });
      const y = new HttpBackendClient({ bases: [b.url], workspace: "frozen-check" });
      await warmUp(x, lineage);
      const xl = await x.lock("OperationTypeApply");
      assert.ok(xl.ok);
      assert.equal(serialOf(await x.get()), 2);
      f.s3.stall(STATE_PUT);
      const xPost = x.put(stateBy(3, lineage, "x"));
      // Held in the proxy: A checked the lock and the store, and its PUT is on the wire.
      await heldIn(f.s3);
      const unlocked = await f.direct(["force-unlock", xl.id, "--force", "-w", "frozen-check"]);
      assert.equal(unlocked.code, 0, explain("force-unlock of X's lock", unlocked));
      const yApply = await applyThrough(y, lineage, "y");
      assert.equal(yApply.serial, 3);
      await sleep(PAUSE_MS);
      await f.s3.resume();
      const xStatus = await xPost;
      assert.equal(xStatus.status, 409, `X's write, overtaken while frozen, was answered ${xStatus.status}: ${xStatus.body.toString()}`);
      // Y's acknowledged write is what every replica serves, and the serial did not go back.
      for (const via of [y, x]) {
        const now = await via.get();
        assert.equal(serialOf(now), 3);
        assert.equal(tokenOf(now), "y", "the acknowledged write was lost");
      }
      // On a versioned bucket the late PUT landed as the newest version: A, its commit refused,
      // wrote the committed state again over it before answering, so no reader had anything to
      // heal (the tool's own S3 backend reads the bucket too). A plain bucket refused the PUT.
      const restored = a.events("state repaired").filter((e) => e["workspace"] === "frozen-check");
      assert.deepEqual(
        restored.map((e) => [e["action"], e["serial"]]),
        versioned ? [["restored", 3]] : [],
        `A's log: ${a.log()}`,
      );
      assert.deepEqual(
        b.events("state repaired").filter((e) => e["workspace"] === "frozen-check"),
        [],
        `B's log: ${b.log()}`,
      );
      // And the state stays writable.
      const next = await applyThrough(y, lineage, "y2");
      assert.equal(next.serial, 4);
      assert.equal(tokenOf(await x.get()), "y2");
      t.diagnostic(
        `${versioned ? "versioned" : "plain"} bucket, frozen ≥ ${PAUSE_MS / 1000} s after its store check: 2 acknowledged (y, y2), 0 lost, 1 refused (X: 409), ${restored.length} healed (restored)`,
      );
    });

    it("frozen between storing and committing: the next reader commits the stored write, X's late commit is refused (409), nothing acknowledged is lost", async (t) => {
      const { f, a, b } = s;
      const lineage = randomUUID();
      const x = new HttpBackendClient({ bases: [a.url], workspace: "frozen-commit" });
      const y = new HttpBackendClient({ bases: [b.url], workspace: "frozen-commit" });
      await warmUp(x, lineage);
      const xl = await x.lock("OperationTypeApply");
      assert.ok(xl.ok);
      f.table.stall(COMMIT);
      const xPost = x.put(stateBy(3, lineage, "x"));
      await heldIn(f.table);
      const unlocked = await f.direct(["force-unlock", xl.id, "--force", "-w", "frozen-commit"]);
      assert.equal(unlocked.code, 0, explain("force-unlock of X's lock", unlocked));
      // Y's GET finds X's write stored, never committed, and nothing committed since: its writer lost the lock, so B commits it.
      const yApply = await applyThrough(y, lineage, "y");
      assert.equal(serialOf(yApply.base), 3);
      assert.equal(tokenOf(yApply.base), "x");
      assert.equal(yApply.serial, 4);
      const repaired = b.events("state repaired").filter((e) => e["workspace"] === "frozen-commit");
      assert.deepEqual(
        repaired.map((e) => [e["action"], e["serial"]]),
        [["adopted", 3]],
        `B's log: ${b.log()}`,
      );
      await sleep(PAUSE_MS);
      await f.table.resume();
      const xStatus = await xPost;
      assert.equal(xStatus.status, 409, `X's write, committed late over a newer commit, was answered ${xStatus.status}: ${xStatus.body.toString()}`);
      for (const via of [y, x]) {
        const now = await via.get();
        assert.equal(serialOf(now), 4);
        assert.equal(tokenOf(now), "y");
      }
      t.diagnostic(
        `${versioned ? "versioned" : "plain"} bucket, frozen ≥ ${PAUSE_MS / 1000} s between storing and committing: 1 acknowledged (y), 0 lost, 1 refused (X's late commit: 409), 1 healed (X's stored write adopted)`,
      );
    });
  });
}
