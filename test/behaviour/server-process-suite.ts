/**
 * `objstate serve` as processes: SIGTERM finishes a write in flight and leaves clients'
 * locks held; SIGKILL of a replica in the middle of a write leaves the old state or the new
 * one (never a mix), and the client's retry through the other replica succeeds.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../src/index.js";
import { startServeProcess } from "../support/cli.js";
import { HttpBackendClient, toolState } from "../support/http-backend-client.js";
import { uniqueName, type Target } from "../support/targets.js";

interface Replica {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<number | null>;
}

export function serverProcessSuite(makeTarget: () => Target): void {
  let target: Target;
  let props: ObjectStoreBackendConfigProps;
  let configFile: string;
  let backend: ObjectStoreBackend;
  const children: ChildProcess[] = [];

  async function replica(): Promise<Replica> {
    const { child, url, exited } = await startServeProcess(["--config", configFile, "--log-level", "off"], {}, 20_000);
    children.push(child);
    return { child, url, exited };
  }

  /** A POST under `?ID` whose body goes in two parts, `pause` ms apart; `between` runs in the pause. */
  function slowPost(url: string, ws: string, id: string, body: Buffer, pause: number, between: () => void): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const req = request(
        `${url}/state/${ws}?ID=${id}`,
        { method: "POST", agent: false, headers: { "Content-Type": "application/json", "Content-Length": String(body.length) } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.write(body.subarray(0, 100));
      setTimeout(() => {
        between();
        setTimeout(() => req.end(body.subarray(100)), pause);
      }, 100);
    });
  }

  before(async () => {
    target = makeTarget();
    props = await target.setup({ locks: true });
    const dir = mkdtempSync(join(tmpdir(), "objstate-serve-"));
    configFile = join(dir, "backend.json");
    writeFileSync(configFile, JSON.stringify(props));
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
  });
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    backend.close();
  });

  it("SIGTERM: stops accepting, the write in flight completes, the process exits 0, and the client's lock stays held", async () => {
    const r = await replica();
    const ws = uniqueName("ws");
    const c = new HttpBackendClient({ bases: [r.url], workspace: ws, retries: 0 });
    const l = await c.lock("OperationTypeApply");
    assert.ok(l.ok);
    const body = toolState(1, "sigterm", { o: { value: "x".repeat(5000), type: "string" } });
    const status = await slowPost(r.url, ws, l.id, body, 400, () => r.child.kill("SIGTERM"));
    assert.equal(status, 200);
    assert.equal(await r.exited, 0);
    assert.deepEqual(await backend.readState(ws), body);
    assert.equal((await backend.lockInfo(ws))?.ID, l.id);
    await backend.unlock(ws, l.id);
  });

  it("SIGKILL of a replica in the middle of a write: the stored state is the old or the new one, and the retry through the other replica succeeds", async () => {
    const b = await replica();
    const ws = uniqueName("ws");
    const c = new HttpBackendClient({ bases: [b.url], workspace: ws, retries: 0 });
    const l = await c.lock("OperationTypeApply");
    assert.ok(l.ok);
    let old = toolState(1, "sigkill", { o: { value: 1, type: "number" } });
    assert.equal((await c.put(old)).status, 200);
    const raw = await target.raw(props.bucket);
    try {
      // Kills at several moments after the body was sent: before, during and after the store write.
      for (const [i, delay] of [0, 15, 40, 120].entries()) {
        const a = await replica();
        const next = toolState(2 + i, "sigkill", { o: { value: 2 + i, type: "number" }, big: { value: "y".repeat(4 * 1024 * 1024), type: "string" } });
        const sent = new Promise<void>((resolve) => {
          const req = request(
            `${a.url}/state/${ws}?ID=${l.id}`,
            { method: "POST", agent: false, headers: { "Content-Type": "application/json", "Content-Length": String(next.length) } },
            (res) => res.resume(),
          );
          req.on("error", () => undefined);
          req.end(next, () => resolve());
        });
        await sent;
        await new Promise((res) => setTimeout(res, delay));
        a.child.kill("SIGKILL");
        await a.exited;
        const stored = (await raw.get(backend.statePath(ws)))?.body;
        assert.ok(
          stored !== undefined && (stored.equals(old) || stored.equals(next)),
          `after a kill ${delay} ms in, the state is neither the old nor the new one (${stored?.length} bytes)`,
        );
        // The client retries the same write against the other replica.
        assert.equal((await c.put(next)).status, 200, `retry after a kill ${delay} ms in`);
        assert.deepEqual(await c.get(), next);
        old = next;
      }
    } finally {
      raw.close();
    }
    assert.equal((await c.unlock()).status, 200);
    b.child.kill("SIGTERM");
    assert.equal(await b.exited, 0);
  });
}
