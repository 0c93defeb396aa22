/**
 * Streamed writes on Ceph RGW + dynalite (the shared suite), and the deadline of a streamed
 * PutObject: it grows with the body's size like that of a body in memory, so an upload that
 * keeps moving is not cut off by a request deadline shorter than it takes.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { openStore } from "../../../src/store/index.js";
import type { ByteSource } from "../../../src/store/types.js";
import { byteSourceSuite } from "../../behaviour/byte-source-suite.js";
import { testServers } from "../../support/servers.js";
import { cephTarget, uniqueName } from "../../support/targets.js";

describe("streamed writes (ByteSource) on Ceph RGW + dynalite", () => byteSourceSuite(cephTarget));

describe("the deadline of a streamed PutObject", () => {
  it("scales with the body: 3 MiB trickling for about 2 s goes through a 1 s request deadline", { timeout: 30_000 }, async () => {
    const s = testServers();
    const bucket = uniqueName("b");
    const store = await openStore({
      bucket,
      endpoint: s.s3Endpoint,
      credentials: () => Promise.resolve({ accessKeyId: s.accessKey, secretAccessKey: s.secretKey }),
      // 1 s + 1 s per MiB of body: 4 s for this one; the shared client's would stay at 1 s.
      timeouts: { connectMs: 1000, idleMs: 1000, requestMs: 1000 },
    });
    try {
      await store.createBucket();
      const piece = Buffer.alloc(256 * 1024, 0x61);
      const pieces = 12;
      const source: ByteSource = {
        size: piece.length * pieces,
        async *open() {
          for (let i = 0; i < pieces; i++) {
            await sleep(170);
            yield piece;
          }
        },
      };
      const md5 = createHash("md5");
      for (let i = 0; i < pieces; i++) md5.update(piece);
      const started = Date.now();
      await store.put("slow", source, { md5: md5.digest("hex"), ifNoneMatch: true });
      assert.ok(Date.now() - started > 1500, "the upload took longer than the plain request deadline");
      assert.equal((await store.head("slow"))?.size, source.size);
      await store.purge("slow");
    } finally {
      store.close();
    }
  });
});
