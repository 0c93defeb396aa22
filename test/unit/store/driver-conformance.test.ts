/** The object-store driver conformance suite on the embedded store (`file:` endpoints). */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { FileDriver } from "../../../src/store/file.js";
import { openStore } from "../../../src/store/index.js";
import { storeDriverSuite } from "../../behaviour/store-driver-suite.js";
import { uniqueName } from "../../support/targets.js";

const root = mkdtempSync(join(tmpdir(), "objstate-store-conformance-"));
after(() => rmSync(root, { recursive: true, force: true }));

storeDriverSuite(
  "embedded store",
  async (options) => {
    const bucket = uniqueName("b");
    return { driver: await openStore({ bucket, endpoint: `file://${root}`, multipartThreshold: options?.multipartThreshold }), bucket };
  },
  {
    alwaysVersioned: true,
    missingBucket: "empty",
    checksMd5OfBuffers: false,
    atomicConditionsWhenVersioned: true,
    retentionKeepsNewerNoncurrent: true,
    deleteIfMatchHonoured: true,
    leaveLeftover: ({ driver }, key) => {
      // What a writer killed before its rename leaves: a temp file naming its key.
      writeFileSync(join((driver as FileDriver).bucketDir, `.tmp-${randomUUID()}.${encodeURIComponent(key)}`), "partial");
      return Promise.resolve();
    },
  },
);
