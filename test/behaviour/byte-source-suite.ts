/**
 * Streamed writes (a {@link ByteSource}), run unchanged against every driver: the driver
 * stores exactly the source's bytes with their MD5, refuses bytes that no longer match
 * the MD5 they were checked with, and a source that changed size; the backend writes a
 * source through the same guard, fencing and same-content check as bytes in memory.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../src/index.js";
import type { ByteSource, ObjectStoreDriver } from "../../src/store/types.js";
import { uniqueName, type Target } from "../support/targets.js";

const md5 = (b: Uint8Array): string => createHash("md5").update(b).digest("hex");

/** A source over `bytes` (read afresh each time: the test may change them), counting opens. */
function sourceOf(bytes: Buffer, options: { chunk?: number; size?: number } = {}): ByteSource & { opens: number; bytes: Buffer } {
  const chunk = options.chunk ?? 64 * 1024;
  const s = {
    opens: 0,
    bytes,
    size: options.size ?? bytes.length,
    async *open(): AsyncGenerator<Uint8Array> {
      s.opens += 1;
      for (let off = 0; off < s.bytes.length; off += chunk) yield s.bytes.subarray(off, off + chunk);
    },
  };
  return s;
}

function state(serial: number, lineage: string, pad = 0): Buffer {
  return Buffer.from(JSON.stringify({ version: 4, serial, lineage, outputs: { o: { value: "v", type: "string" } }, resources: [{ pad: "p".repeat(pad) }] }));
}

export function byteSourceSuite(makeTarget: () => Target): void {
  let target: Target;
  let raw: ObjectStoreDriver;
  const open: ObjectStoreBackend[] = [];

  before(async () => {
    target = makeTarget();
    const props = await target.setup({ locks: false });
    raw = await target.raw(props.bucket);
    await raw.createBucket();
  });
  after(() => {
    raw.close();
    for (const b of open) b.close();
  });

  describe("driver put of a ByteSource", () => {
    it("stores exactly the source's bytes, with their MD5 as ETag and the metadata", async () => {
      const bytes = Buffer.from("x".repeat(3 * 1024 * 1024 + 17));
      const source = sourceOf(bytes);
      await raw.put("s/one", source, {
        md5: md5(bytes),
        contentType: "application/json",
        metadata: { "objstate-serial": "1" },
        ifNoneMatch: true,
      });
      const got = await raw.get("s/one");
      assert.ok(got?.body.equals(bytes));
      assert.equal(got?.meta.etag, md5(bytes));
      assert.equal(got?.meta.metadata?.["objstate-serial"], "1");
      assert.equal(source.opens, 1, "an MD5 given up front: one read of the source");
    });

    it("stores a source whose chunks arrive over time exactly, and a failing one not at all", async () => {
      const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => String(i % 10).repeat(7001)).join(""));
      const arriving = (failAt?: number): ByteSource => ({
        size: bytes.length,
        async *open() {
          for (let off = 0, n = 0; off < bytes.length; off += 7001, n++) {
            if (n === failAt) throw new Error("the client went away");
            // Every tenth chunk after a pause, the rest at once: bursts arrive during a write.
            if (n % 10 === 0) await new Promise((r) => setTimeout(r, 1));
            yield bytes.subarray(off, off + 7001);
          }
        },
      });
      await raw.put("s/stable", arriving(), { md5: md5(bytes) });
      assert.ok((await raw.get("s/stable"))?.body.equals(bytes));
      // The store words the failure its own way; what matters is that nothing is stored.
      await assert.rejects(raw.put("s/stable-failed", arriving(150), { md5: md5(bytes) }));
      assert.equal(await raw.head("s/stable-failed"), null);
      assert.deepEqual(
        (await raw.listLeftovers("s/")).filter((l) => l.key === "s/stable-failed"),
        [],
        "no temp file of the failed write is left",
      );
    });

    it("without an MD5, hashes the source first (S3 sends it as Content-MD5) and still stores the right bytes", async () => {
      const bytes = Buffer.from("y".repeat(200_000));
      await raw.put("s/no-md5", sourceOf(bytes), {});
      assert.equal((await raw.head("s/no-md5"))?.etag, md5(bytes));
    });

    it("refuses bytes that do not hash to the MD5 they were checked with (the source changed): STORE_INTEGRITY, the old object stays", async () => {
      const old = Buffer.from('{"old": true}');
      await raw.put("s/changed", old, {});
      const checked = Buffer.from("a".repeat(300_000));
      const source = sourceOf(Buffer.from(checked));
      source.bytes[150_000] = 0x62; // changed in place after it was hashed
      await assert.rejects(raw.put("s/changed", source, { md5: md5(checked) }), (e: unknown) => isObjstateError(e, "STORE_INTEGRITY"));
      assert.ok((await raw.get("s/changed"))?.body.equals(old));
      assert.deepEqual(
        (await raw.listLeftovers("s/")).filter((l) => l.key === "s/changed" && !l.id.includes(".meta/")),
        [],
        "no temp file of the refused write is left",
      );
    });

    it("refuses a source that yields fewer or more bytes than its size: INPUT_CHANGED, nothing stored", async () => {
      const bytes = Buffer.from("z".repeat(100_000));
      for (const size of [bytes.length + 10, bytes.length - 10]) {
        await assert.rejects(raw.put(`s/size-${size}`, sourceOf(bytes, { size }), { md5: md5(bytes), ifNoneMatch: true }), (e: unknown) =>
          isObjstateError(e, "INPUT_CHANGED"),
        );
        assert.equal(await raw.head(`s/size-${size}`), null);
      }
    });

    it("is conditional like bytes in memory: If-None-Match on an existing object and a stale If-Match are refused", async () => {
      const a = Buffer.from('{"a": 1}');
      await raw.put("s/cond", sourceOf(a), { md5: md5(a), ifNoneMatch: true });
      const b = Buffer.from('{"b": 2}');
      await assert.rejects(raw.put("s/cond", sourceOf(b), { md5: md5(b), ifNoneMatch: true }), (e: unknown) => isObjstateError(e, "PRECONDITION_FAILED"));
      await assert.rejects(raw.put("s/cond", sourceOf(b), { md5: md5(b), ifMatch: md5(Buffer.from("other")) }), (e: unknown) =>
        isObjstateError(e, "PRECONDITION_FAILED"),
      );
      await raw.put("s/cond", sourceOf(b), { md5: md5(b), ifMatch: md5(a) });
      assert.ok((await raw.get("s/cond"))?.body.equals(b));
    });
  });

  describe("writeState of a ByteSource", () => {
    async function backend(): Promise<{ b: ObjectStoreBackend; props: ObjectStoreBackendConfigProps }> {
      const props = await target.setup({ locks: true });
      const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, who: "tester@streams", onWarning: () => undefined });
      open.push(b);
      return { b, props };
    }

    it("writes it guarded and fenced: header and MD5 recorded, same content again is a no-op, an older serial is refused", async () => {
      const { b } = await backend();
      const lineage = uniqueName("lineage");
      const first = state(5, lineage, 2 * 1024 * 1024);
      const r = await b.writeState("default", sourceOf(first), { md5: md5(first) });
      assert.deepEqual(r, { written: true, md5: md5(first), serial: 5 });
      assert.ok((await b.readState())?.equals(first));
      const again = sourceOf(first);
      assert.deepEqual(await b.writeState("default", again), { written: false, md5: md5(first), serial: 5 });
      await assert.rejects(b.writeState("default", sourceOf(state(4, lineage))), (e: unknown) => isObjstateError(e, "STATE_CONFLICT"));
      const next = state(6, lineage);
      assert.deepEqual(await b.writeState("default", sourceOf(next)), { written: true, md5: md5(next), serial: 6 });
      assert.ok((await b.readState())?.equals(next));
    });

    it("records serial, lineage and MD5 as object metadata", async () => {
      const { b, props } = await backend();
      const lineage = uniqueName("lineage");
      const s = state(9, lineage);
      await b.writeState("default", sourceOf(s), { md5: md5(s) });
      const store = await target.raw(props.bucket);
      try {
        const meta = await store.head(b.statePath());
        assert.equal(meta?.metadata?.["objstate-serial"], "9");
        assert.equal(meta?.metadata?.["objstate-lineage"], lineage);
        assert.equal(meta?.metadata?.["objstate-md5"], md5(s));
      } finally {
        store.close();
      }
    });

    it("a wrong MD5 from the caller writes nothing", async () => {
      const { b } = await backend();
      const s = state(1, uniqueName("lineage"));
      await assert.rejects(b.writeState("default", sourceOf(s), { md5: md5(Buffer.from("something else")) }), (e: unknown) =>
        isObjstateError(e, "STORE_INTEGRITY"),
      );
      assert.equal(await b.readState(), null);
    });
  });
}
