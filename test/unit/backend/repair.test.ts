/**
 * Repair on the embedded store: a temp file left by a writer that died is reported and,
 * once older than the lock-free window, removed; a young one is kept.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { utimesSync, writeFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { embeddedTarget } from "../../support/targets.js";

describe("repair on the embedded store", () => {
  it("removes a dead writer's temp file once older than --older-than, keeps a young one", async () => {
    const target = embeddedTarget();
    const props = await target.setup({ locks: true });
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    await b.writeState("default", '{"version":4,"serial":1}');
    const dir = target.bucketDir?.(props.bucket) as string;
    // Named as the embedded store names a write in progress: UUID, then the encoded key.
    const old = join(dir, `.tmp-${randomUUID()}.${encodeURIComponent("env:/tool.tfstate")}`);
    const young = join(dir, `.tmp-${randomUUID()}.${encodeURIComponent("env:/tool.tfstate")}`);
    writeFileSync(old, "half a state", { mode: 0o600 });
    writeFileSync(young, "half a state", { mode: 0o600 });
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    utimesSync(old, twoHoursAgo, twoHoursAgo);
    assert.equal((await b.leftovers()).filter((l) => l.kind === "temp-file").length, 2);
    const report = await b.repairState("default");
    assert.equal(report.action, "ok");
    assert.deepEqual(
      report.leftoversRemoved.map((l) => l.since?.getTime()),
      [twoHoursAgo.getTime()],
    );
    assert.equal(report.leftoversKept.length, 1);
    const names = readdirSync(dir);
    assert.ok(!names.includes(old.slice(dir.length + 1)), "the old temp file is gone");
    assert.ok(names.includes(young.slice(dir.length + 1)), "a young one may belong to a live writer");
    assert.equal((await b.readState("default"))?.toString(), '{"version":4,"serial":1}');
    b.close();
  });
});
