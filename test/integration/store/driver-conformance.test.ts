/** The object-store driver conformance suite on S3 (Ceph RGW), the same suite as the embedded store's. */
import { CreateMultipartUploadCommand, S3Client } from "@aws-sdk/client-s3";
import { after } from "node:test";
import { openStore } from "../../../src/store/index.js";
import { storeDriverSuite } from "../../behaviour/store-driver-suite.js";
import { testServers } from "../../support/servers.js";
import { uniqueName } from "../../support/targets.js";

const s = testServers();
const credentials = (): Promise<{ accessKeyId: string; secretAccessKey: string }> =>
  Promise.resolve({ accessKeyId: s.accessKey, secretAccessKey: s.secretKey });
/** A plain SDK client, for what no driver call makes (an upload left incomplete). */
const sdk = new S3Client({
  endpoint: s.s3Endpoint,
  region: "us-east-1",
  forcePathStyle: true,
  credentials: { accessKeyId: s.accessKey, secretAccessKey: s.secretKey },
});
after(() => sdk.destroy());

storeDriverSuite(
  "S3 on Ceph RGW",
  async (options) => {
    const bucket = uniqueName("b");
    return { driver: await openStore({ bucket, endpoint: s.s3Endpoint, credentials, multipartThreshold: options?.multipartThreshold }), bucket };
  },
  {
    alwaysVersioned: false,
    missingBucket: "BUCKET_NOT_FOUND",
    checksMd5OfBuffers: true,
    // RGW ignores If-None-Match and If-Match on a versioned bucket (docs/design.md §10).
    atomicConditionsWhenVersioned: false,
    // RGW accepts NewerNoncurrentVersions and drops it.
    retentionKeepsNewerNoncurrent: false,
    // RGW ignores If-Match on DELETE (the probe finds it; lockfile releases read, check and delete).
    deleteIfMatchHonoured: false,
    leaveLeftover: async ({ bucket }, key) => {
      // What a writer killed during a multipart upload leaves: the upload, never completed.
      await sdk.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    },
  },
);
