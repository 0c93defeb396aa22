/** Cross-process behaviour: mutual exclusion under contention, and crash safety mid-write. */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../src/index.js";
import type { Target } from "../support/targets.js";

const WORKER = fileURLToPath(new URL("../support/backend-worker.js", import.meta.url));

function worker(props: ObjectStoreBackendConfigProps, args: string[]): ChildProcess {
  return spawn(process.execPath, [WORKER, ...args], {
    env: { ...process.env, OBJSTATE_WORKER_PROPS: JSON.stringify(props), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function exited(p: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  let stderr = "";
  p.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => p.on("exit", (code, signal) => resolve({ code, signal, stderr })));
}

async function connect(props: ObjectStoreBackendConfigProps): Promise<ObjectStoreBackend> {
  return ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
    env: {},
    onWarning: () => undefined,
    digestRetry: { timeoutMs: 500, intervalMs: 100 },
  });
}

export function processSuite(makeTarget: () => Target): void {
  let target: Target;
  before(() => {
    target = makeTarget();
  });

  describe("across processes", () => {
    it("8 processes x 25 lock/read/write/unlock cycles end at exactly 200 with no lock left", async () => {
      const props = await target.setup({ locks: true });
      const procs = Array.from({ length: 8 }, () => worker(props, ["counter", "25"]));
      const results = await Promise.all(procs.map(exited));
      for (const r of results) assert.equal(r.code, 0, r.stderr);
      const b = await connect(props);
      const state = JSON.parse((await b.readState("default"))?.toString() ?? "{}") as { counter: number };
      assert.equal(state.counter, 200);
      assert.equal(await b.lockInfo("default"), null);
      b.close();
    });

    it("a writer killed (SIGKILL) mid-upload leaves the previous state intact and its lock removable by ID", async () => {
      const props = await target.setup({ locks: true });
      const b = await connect(props);
      const previous = JSON.stringify({ version: 4, serial: 1, resources: ["a", "b"] });
      await b.writeState("default", previous);
      const bucketDir = target.bucketDir?.(props.bucket);
      // Large enough to be still on the wire when it dies.
      const size = bucketDir === undefined ? 128 * 1024 * 1024 : 512 * 1024 * 1024;
      const p = worker(props, ["crash", String(size)]);
      const done = exited(p);
      let lockId = "";
      const lines = createInterface({ input: p.stdout as NodeJS.ReadableStream });
      for await (const line of lines) {
        if (line.startsWith("LOCKED ")) lockId = line.slice(7);
        if (line === "UPLOADING") break; // S3: multipart parts are on the wire
        if (line === "WRITING" && bucketDir !== undefined) {
          // Embedded: wait until the temp file of the new state exists, then kill.
          for (let i = 0; i < 500 && !readdirSync(bucketDir).some((f) => f.startsWith(".tmp-")); i++) await new Promise((r) => setTimeout(r, 2));
          break;
        }
        if (line === "FINISHED") assert.fail("the write finished before it could be interrupted");
      }
      p.kill("SIGKILL");
      const r = await done;
      assert.equal(r.signal, "SIGKILL", r.stderr);
      assert.match(lockId, /^[0-9a-f-]{36}$/);
      // The previous state reads back intact, digest included (readState checks it).
      assert.equal((await b.readState("default"))?.toString(), previous);
      // The dead writer's lock is still there, and removable with its ID.
      assert.equal((await b.lockInfo("default"))?.ID, lockId);
      await assert.rejects(b.lock("default"), { code: "STATE_LOCKED" });
      await b.unlock("default", lockId);
      await b.writeState("default", '{"version":4,"serial":2}');
      assert.equal((await b.readState("default"))?.toString(), '{"version":4,"serial":2}');
      b.close();
    });
  });
}
