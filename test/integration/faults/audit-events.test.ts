/**
 * The audit log's events through `objstate serve` replicas on Ceph RGW under faults (issue 37,
 * item 14; docs/decisions/087): replica A reaches Ceph through a fault proxy, replica B
 * directly, both over one versioned bucket. A replica killed while its event is being stored
 * loses no acknowledged write's event and doubles none; a store that does not take an event
 * gets the event into the server's log at error level before the change is answered.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import type { AuditRecord } from "../../../src/backend/audit.js";
import type { FaultProxy } from "../../support/fault-proxy.js";
import { HttpBackendClient, rawRequest, toolState } from "../../support/http-backend-client.js";
import { cephTarget } from "../../support/targets.js";
import { TIMEOUT_MS } from "../../unit/faults/harness.js";
import { startReplica, type Replica } from "./serve-replica.js";
import { faulty, type Faulty } from "./setup.js";

/** The PUT of an audit object (an event, or a day part of the old layout). */
const AUDIT_PUT = { method: "PUT", path: /\/audit\/\d{4}-\d{2}-\d{2}/ };

interface Setup {
  readonly f: Faulty;
  readonly a: Replica;
  readonly b: Replica;
  close(): Promise<void>;
}

async function setup(): Promise<Setup> {
  const f = await faulty();
  const raw = await cephTarget().raw(f.props.bucket);
  await raw.enableVersioning();
  raw.close();
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

async function heldIn(proxy: FaultProxy): Promise<void> {
  while (proxy.heldCount() === 0) await sleep(10);
}

/** A write's answer: its status, or 0 when the connection ended without one. */
async function put(client: HttpBackendClient, state: Buffer): Promise<number> {
  try {
    return (await client.put(state)).status;
  } catch {
    return 0;
  }
}

async function auditOf(base: string): Promise<AuditRecord[]> {
  const r = await rawRequest(base, "GET", "/api/v1/audit?since=1h&limit=10000", undefined);
  assert.equal(r.status, 200, r.body.toString());
  return (JSON.parse(r.body.toString()) as { records: AuditRecord[] }).records;
}

describe("audit events from two serve replicas on one versioned Ceph bucket", { timeout: TIMEOUT_MS }, () => {
  it("replica A killed (SIGKILL) while storing a write's event, B writing meanwhile: every acknowledged write has exactly one write event, none twice", async () => {
    const s = await setup();
    try {
      const acked: string[] = [];
      const wsA = `a-${randomUUID().slice(0, 8)}`;
      const wsB = `b-${randomUUID().slice(0, 8)}`;
      let aDone = false;
      const onB = (async (): Promise<void> => {
        const y = new HttpBackendClient({ bases: [s.b.url], workspace: wsB, retries: 0 });
        assert.ok((await y.lock("OperationTypeApply")).ok);
        // Until A is dead, and some more after.
        for (let serial = 1, after = 0; after < 5; serial++) {
          assert.equal(await put(y, toolState(serial, "lin-b")), 200);
          acked.push(`${wsB} ${serial}`);
          if (aDone) after++;
        }
        assert.equal((await y.unlock()).status, 200);
      })();
      const x = new HttpBackendClient({ bases: [s.a.url], workspace: wsA, retries: 0 });
      assert.ok((await x.lock("OperationTypeApply")).ok);
      for (let serial = 1; serial <= 3; serial++) {
        assert.equal(await put(x, toolState(serial, "lin-a")), 200);
        acked.push(`${wsA} ${serial}`);
      }
      // A's next audit PUT is held in its proxy: A is then killed with the event on its way.
      s.f.s3.stall(AUDIT_PUT);
      const fourth = put(x, toolState(4, "lin-a"));
      await heldIn(s.f.s3);
      await s.a.kill();
      aDone = true;
      if ((await fourth) === 200) acked.push(`${wsA} 4`);
      // The gateway serves what reached it: the dead replica's event may land after all.
      await s.f.s3.resume();
      await onB;

      const records = await auditOf(s.b.url);
      const lines = records.map((r) => JSON.stringify(r));
      assert.equal(new Set(lines).size, lines.length, "no event twice");
      const writes = records.filter((r) => r.action === "write" && r.outcome === "ok").map((r) => `${r.workspace} ${r.serial}`);
      for (const w of acked) assert.equal(writes.filter((got) => got === w).length, 1, `acknowledged write ${w}: ${writes.join(", ")}`);
      assert.ok(acked.filter((w) => w.startsWith(wsB)).length >= 5);
    } finally {
      await s.close();
    }
  });

  it("a store that does not take a write's event: the write is acknowledged only after the event is in the server's log at error level", async () => {
    const s = await setup();
    try {
      const ws = `c-${randomUUID().slice(0, 8)}`;
      const x = new HttpBackendClient({ bases: [s.a.url], workspace: ws, retries: 0 });
      assert.ok((await x.lock("OperationTypeApply")).ok);
      s.f.s3.stall(AUDIT_PUT);
      const order: string[] = [];
      const written = put(x, toolState(1, "lin-c")).then((status) => {
        order.push(`answered ${status}`);
        return status;
      });
      await s.f.s3.waitFor(AUDIT_PUT);
      order.push("event held");
      assert.equal(await written, 200, "the change is made and answered");
      assert.deepEqual(order, ["event held", "answered 200"]);
      // The log line was written before the answer; its pipe may be read a moment after the socket.
      for (let i = 0; i < 500 && s.a.events("audit event not stored").length === 0; i++) await sleep(20);
      const lost = s.a.events("audit event not stored").map((e) => JSON.parse(String(e["event"])) as AuditRecord);
      assert.deepEqual(
        lost.map((r) => [r.action, r.workspace, r.outcome, r.serial]),
        [["write", ws, "ok", 1]],
      );
      assert.equal(s.a.events("audit event not stored")[0]?.["level"], "error");
      assert.equal(JSON.parse((await x.get())?.toString() ?? "{}").serial, 1, "the write is stored");
      // The held PUT goes on, so that replica A's SIGTERM does not wait for the gateway's answer.
      await s.f.s3.resume();
    } finally {
      await s.close();
    }
  });
});
