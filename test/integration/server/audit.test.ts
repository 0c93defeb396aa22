/**
 * The audit log's events from two replicas at once on Ceph RGW, on a bucket without versioning
 * and on a versioned one (where RGW ignores If-None-Match and the driver checks by hand): each
 * event is its own object, so none may be lost and none doubled.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AuditLog, type AuditRecord } from "../../../src/backend/audit.js";
import { layout } from "../../../src/config/layout.js";
import { cephTarget } from "../../support/targets.js";

const L = layout("env:", "tool.tfstate", "s3");

describe("audit events from two replicas (Ceph RGW)", () => {
  for (const versioned of [false, true]) {
    it(`${versioned ? "a versioned bucket" : "a bucket without versioning"}: every line of both replicas, once`, async () => {
      const target = cephTarget();
      const props = await target.setup({ locks: false });
      const bucket = props.bucket as string;
      const [one, two] = [await target.raw(bucket), await target.raw(bucket)];
      try {
        if (versioned) await one.enableVersioning();
        const a = new AuditLog(one, L, { deadlineMs: 60_000 });
        const b = new AuditLog(two, L, { deadlineMs: 60_000 });
        const n = 25;
        const entry = (workspace: string) => ({
          principal: { name: "ci", via: "token", tokenId: "tok_1" },
          action: "write",
          workspace,
          surface: "http" as const,
          outcome: "ok" as const,
        });
        // Each replica one event at a time, both at once.
        await Promise.all(
          [a, b].map(async (log, r) => {
            for (let i = 0; i < n; i++) assert.equal(await log.record(entry(`r${r}-${i}`)), true);
          }),
        );
        const page = await a.read({ since: new Date(Date.now() - 3_600_000), limit: 1000 });
        const got = page.records.map((x: AuditRecord) => x.workspace).sort();
        const want = Array.from({ length: n }, (_, i) => [`r0-${i}`, `r1-${i}`])
          .flat()
          .sort();
        assert.deepEqual(got, want);
      } finally {
        one.close();
        two.close();
      }
    });
  }
});
