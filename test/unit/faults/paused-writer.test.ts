/**
 * Issue 23, on the embedded store and lock table: a writer process frozen (SIGSTOP) at a
 * step of its write, for longer than every timeout, while another process takes the lock
 * over (its lease ran out, or force-unlock) and writes; then the frozen one resumes. No
 * acknowledged write is lost (each is in history, and a write acknowledged before the
 * frozen writer resumed stays current), the serial never goes back, and the frozen write is
 * refused or lands where it was checked.
 *
 * Where the frozen writer holds the state's claim (after taking it, after its If-Match
 * check, after its rename), the other writer cannot go ahead at all: it waits and gives up
 * with STORE_BUSY, and nothing is lost when the frozen one resumes. Before, the claim was
 * broken after 30 s and the frozen writer's rename then replaced the newer, acknowledged
 * write (serial 10 → 3), which was not even kept in history.
 *
 * Quick: frozen ≥ 3 s under a 2 s lease, the claim's wait limit scaled to 1 s for both
 * processes (`OBJSTATE_TEST_CLAIM_WAIT_MS`) so that the pause outlasts every claim timeout
 * in a short run. Full (`OBJSTATE_FAULTS_FULL=1`): frozen ≥ 50 s, past the real 45 s wait
 * limit and the old 30 s claim age.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import type { ObjectStoreDriver } from "../../../src/store/types.js";
import type { PauseStep } from "../../../src/util/test-pause.js";
import { startWorker, stopped, type Outcome } from "../../support/paused-process.js";
import { embeddedTarget } from "../../support/targets.js";
import { FULL, parseState, stateText } from "./harness.js";

const PAUSE_MS = FULL ? 50_000 : 3_000;
const TTL_MS = 2_000;
const WORKER = fileURLToPath(new URL("../../support/paused-writer-worker.js", import.meta.url));
const WAIT_ENV: Record<string, string> = FULL ? {} : { OBJSTATE_TEST_CLAIM_WAIT_MS: "1000" };

interface Case {
  readonly step: PauseStep;
  readonly what: string;
  readonly takeover: "lease" | "force";
  /** Does the frozen writer hold the state's claim there? */
  readonly holdsClaim: boolean;
}

const CASES: readonly Case[] = [
  { step: "store-put", what: "after its store check, before its put", takeover: "lease", holdsClaim: false },
  { step: "store-claimed", what: "right after taking the claim", takeover: "lease", holdsClaim: true },
  { step: "store-checked", what: "after its If-Match check, before the rename", takeover: "lease", holdsClaim: true },
  { step: "store-checked", what: "after its If-Match check, before the rename", takeover: "force", holdsClaim: true },
  { step: "store-renamed", what: "after the rename, still holding the claim", takeover: "lease", holdsClaim: true },
  { step: "store-released", what: "after the rename and the claim, before the digest", takeover: "lease", holdsClaim: false },
];

async function connect(props: ObjectStoreBackendConfigProps): Promise<ObjectStoreBackend> {
  return ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
    env: {},
    onWarning: () => undefined,
    digestRetry: { timeoutMs: 2_000, intervalMs: 500 },
  });
}

/** Every version of the state as the store keeps it, newest first, as (serial, tokens). */
async function history(store: ObjectStoreDriver, key: string): Promise<{ serial: number; tokens: string[] }[]> {
  const out: { serial: number; tokens: string[] }[] = [];
  for await (const v of store.listVersions(key)) {
    if (v.deleteMarker) continue;
    const s = parseState((await store.get(key, { versionId: v.versionId }))?.body.toString() ?? "{}");
    out.push({ serial: s.serial, tokens: s.tokens });
  }
  return out;
}

/** The props of the `store-released` run, for the read that needs helper G's commit point. */
let releasedRun: ObjectStoreBackendConfigProps | undefined;

describe("a writer frozen at any step of its write loses nothing and overwrites nothing (embedded store)", { timeout: FULL ? 20 * 60_000 : 180_000 }, () => {
  for (const c of CASES) {
    it(`frozen ${c.what} (${c.step}) for ≥ ${PAUSE_MS / 1000} s while another writer takes the lock (${c.takeover === "lease" ? "lease ran out" : "force-unlock"}) and writes`, async (t) => {
      const target = embeddedTarget();
      const props = await target.setup({ locks: true });
      const lineage = randomUUID();
      const seeder = await connect(props);
      await seeder.writeState("default", stateText(lineage, 2, ["seed"]));
      const key = seeder.statePath("default");
      seeder.close();
      const env = { ...WAIT_ENV, OBJSTATE_WORKER_PROPS: JSON.stringify(props) };

      const a = startWorker(WORKER, ["hold-and-write", String(TTL_MS), stateText(lineage, 3, ["seed", "A"])], env, c.step);
      let first: Outcome;
      let second: Outcome;
      let pausedMs: number;
      try {
        await stopped(a);
        const since = Date.now();
        second = await startWorker(WORKER, ["take-and-write", c.takeover, stateText(lineage, 10, ["seed", "B"])], env).outcome;
        await sleep(Math.max(0, PAUSE_MS - (Date.now() - since)));
        assert.equal(a.ended(), false, "the first writer stayed frozen until the second one was done");
        pausedMs = Date.now() - since;
        a.resume();
        first = await a.outcome;
      } finally {
        if (!a.ended()) a.kill();
      }

      if (c.holdsClaim) {
        assert.equal(second.ok, false, `the second writer went ahead while the frozen one held the state's claim: ${JSON.stringify(second)}`);
        assert.equal(second.ok ? "" : second.code, "STORE_BUSY", JSON.stringify(second));
        assert.equal(first.ok, true, `its check still held when it resumed: ${JSON.stringify(first)}`);
      } else {
        assert.equal(second.ok, true, `the second writer could write while the first was frozen outside any claim: ${JSON.stringify(second)}`);
      }
      if (c.step === "store-put") {
        assert.equal(first.ok ? "ok" : first.code, "STATE_CONFLICT", "a write checked before the newer one is refused");
      }

      const versions = await history(await target.raw(props.bucket), key);
      const acked = [first.ok ? "A" : undefined, second.ok ? "B" : undefined].filter((x): x is string => x !== undefined);
      for (const token of acked)
        assert.ok(
          versions.some((v) => v.tokens.includes(token)),
          `acknowledged write ${token} is not in history: ${JSON.stringify(versions)}`,
        );
      const current = versions[0];
      assert.ok(current !== undefined);
      // B was acknowledged before A resumed: nothing A did after may replace it.
      assert.equal(current.serial, second.ok ? 10 : 3, `current state: ${JSON.stringify(versions)}`);
      const serials = versions.map((v) => v.serial);
      assert.deepEqual(
        serials,
        [...serials].sort((x, y) => y - x),
        `the serial went back: newest first ${serials.join(", ")}`,
      );
      const refused = [first, second].flatMap((o) => (o.ok ? [] : [o.code]));
      t.diagnostic(
        `frozen ${(pausedMs / 1000).toFixed(1)} s: ${acked.length} acknowledged (${acked.join(", ")}), 0 lost, ${refused.length} refused${refused.length === 0 ? "" : ` (${refused.join(", ")})`}`,
      );

      if (c.step === "store-released") {
        releasedRun = props;
        return;
      }
      const reader = await connect(props);
      try {
        assert.equal(parseState((await reader.readState("default"))?.toString() ?? "{}").serial, current.serial, "the current state reads through objstate");
      } finally {
        reader.close();
      }
    });
  }

  it(
    "…and the newer write reads through objstate after a writer frozen before recording its digest resumes",
    // The frozen writer's late commit is refused by the lock table's commit point (docs/decisions/012).
    async () => {
      assert.ok(releasedRun !== undefined);
      const reader = await connect(releasedRun);
      try {
        assert.equal(parseState((await reader.readState("default"))?.toString() ?? "{}").serial, 10);
      } finally {
        reader.close();
      }
    },
  );
});
