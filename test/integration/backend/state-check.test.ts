/**
 * Decision 089 on S3 (Ceph RGW + dynalite): a streamed state the library refuses at its very
 * end (read only by the upload) is never stored, in one PUT or a multipart upload.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { before, describe, it } from "node:test";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { bufferSource } from "../../../src/store/byte-source.js";
import { cephTarget, type Target } from "../../support/targets.js";

const state = (serial: number, pad: number): string =>
  `{"version": 4, "serial": ${serial}, "lineage": "check-s3", "outputs": {}, "resources": [{"pad": "${"p".repeat(pad)}"}]}`;

describe("one rule for what a state is, on Ceph RGW + dynalite", () => {
  let target: Target;
  let props: ObjectStoreBackendConfigProps;
  before(async () => {
    target = cephTarget();
    props = await target.setup({ locks: true });
  });

  it("a streamed state refused at its end (its MD5 given: read only by the upload) leaves nothing stored", async () => {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    const raw = await target.raw(props.bucket);
    try {
      const first = state(1, 10);
      await b.writeState("default", first);
      // One PUT, and a multipart upload.
      for (const size of [200 * 1024, 12 * 1024 * 1024]) {
        const truncated = Buffer.from(state(2, size).slice(0, -1));
        const md5 = createHash("md5").update(truncated).digest("hex");
        await assert.rejects(b.writeState("default", bufferSource(truncated, 64 * 1024), { md5 }), (e) => isObjstateError(e, "STATE_INVALID"));
      }
      assert.equal((await b.readState("default"))?.toString(), first);
      let versions = 0;
      for await (const v of raw.listVersions(b.statePath("default"))) if (!v.deleteMarker) versions++;
      assert.equal(versions, 1, "no version was added");
    } finally {
      raw.close();
      b.close();
    }
  });
});
