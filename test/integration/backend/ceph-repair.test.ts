/**
 * What only an S3 store shows: leftovers of dead writers (incomplete multipart uploads),
 * versioned buckets, and multipart objects whose objstate MD5 record disagrees with the
 * digest. Against Ceph RGW + dynalite.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, describe, it } from "node:test";
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { openLockTable } from "../../../src/lock/index.js";
import { runCli } from "../../support/cli.js";
import { testServers } from "../../support/servers.js";
import { cephTarget } from "../../support/targets.js";
import { cliArgs } from "../../unit/cli/suite.js";

const md5 = (b: Uint8Array | string): string => createHash("md5").update(b).digest("hex");
const s = testServers();
const sdk = new S3Client({
  endpoint: s.s3Endpoint,
  region: "us-east-1",
  forcePathStyle: true,
  credentials: { accessKeyId: s.accessKey, secretAccessKey: s.secretKey },
});
const quiet = { env: {}, digestRetry: { timeoutMs: 300, intervalMs: 100 }, onWarning: () => undefined };
const open: { close(): void }[] = [];
after(() => {
  for (const o of open) o.close();
  sdk.destroy();
});

async function startUpload(bucket: string, key: string, metadata?: Record<string, string>): Promise<string> {
  const up = await sdk.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, Metadata: metadata }));
  return up.UploadId as string;
}

describe("repair and doctor on Ceph RGW + dynalite", () => {
  it("an incomplete multipart upload under the prefix is listed, kept while young, removed by repair once old enough", async () => {
    const props = await cephTarget().setup({ locks: true });
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), quiet);
    open.push(b);
    await b.writeState("default", '{"version":4,"serial":1}');
    const id = await startUpload(props.bucket, "env:/dead/tool.tfstate");
    const listed = await b.leftovers();
    assert.deepEqual(
      listed.map((l) => [l.kind, l.key, l.id]),
      [["multipart-upload", "env:/dead/tool.tfstate", id]],
    );

    const doctor = runCli(["doctor", ...cliArgs(props).args], { env: cliArgs(props).env });
    assert.match(
      doctor.stdout,
      /^warn {2}leftovers: 1 leftover of unfinished writes under the prefix \(multipart-upload env:\/dead\/tool\.tfstate; oldest from .*\) — fix: run objstate state repair/m,
    );

    const young = await b.repairState("default");
    assert.equal(young.leftoversRemoved.length, 0);
    assert.equal(young.leftoversKept.length, 1, "a young upload may belong to a writer at work");
    const repair = runCli(["state", "repair", "--older-than", "0s", ...cliArgs(props).args], { env: cliArgs(props).env });
    assert.equal(repair.code, 0, repair.stderr);
    assert.match(repair.stdout, /removed multipart-upload env:\/dead\/tool\.tfstate/);
    const left = await sdk.send(new ListMultipartUploadsCommand({ Bucket: props.bucket }));
    assert.equal(left.Uploads?.length ?? 0, 0);
    assert.equal(await b.lockInfo("default"), null);
  });

  it("doctor on a versioned bucket leaves no version or delete marker of its probe", async () => {
    const props = await cephTarget().setup({ locks: true });
    await sdk.send(new PutBucketVersioningCommand({ Bucket: props.bucket, VersioningConfiguration: { Status: "Enabled" } }));
    const { args, env } = cliArgs(props);
    const r = runCli(["doctor", ...args], { env });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /wrote and deleted env:\/\.objstate-doctor-/);
    const versions = await sdk.send(new ListObjectVersionsCommand({ Bucket: props.bucket }));
    assert.deepEqual(
      [...(versions.Versions ?? []), ...(versions.DeleteMarkers ?? [])].map((v) => v.Key),
      [],
    );
  });

  it("doctor says no digest is recorded when the table has none, instead of 'matches'", async () => {
    const props = await cephTarget().setup({ locks: true });
    const { args, env } = cliArgs(props);
    await sdk.send(new (await import("@aws-sdk/client-s3")).PutObjectCommand({ Bucket: props.bucket, Key: "env:/tool.tfstate", Body: '{"serial":1}' }));
    const r = runCli(["doctor", ...args], { env });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^ok {4}digest: the state of workspace default \(12 bytes\) has no digest recorded/m);
    assert.doesNotMatch(r.stdout, /matches its digest/);
  });

  it("a multipart object whose objstate MD5 record disagrees with the digest is hashed before anything is declared", async () => {
    const props = await cephTarget().setup({ locks: true });
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), quiet);
    open.push(b);
    const part = randomBytes(5 * 1024 * 1024);
    const body = Buffer.concat([
      Buffer.from('{"version":4,"serial":1,"pad":"'),
      Buffer.from(part.toString("hex").slice(0, 5 * 1024 * 1024)),
      Buffer.from('"}'),
    ]);
    const key = b.statePath("default");
    const id = await startUpload(props.bucket, key, { "objstate-md5": "0123456789abcdef0123456789abcdef" });
    const first = body.subarray(0, 5 * 1024 * 1024);
    const second = body.subarray(5 * 1024 * 1024);
    const p1 = await sdk.send(new UploadPartCommand({ Bucket: props.bucket, Key: key, UploadId: id, PartNumber: 1, Body: first }));
    const p2 = await sdk.send(new UploadPartCommand({ Bucket: props.bucket, Key: key, UploadId: id, PartNumber: 2, Body: second }));
    await sdk.send(
      new CompleteMultipartUploadCommand({
        Bucket: props.bucket,
        Key: key,
        UploadId: id,
        MultipartUpload: {
          Parts: [
            { PartNumber: 1, ETag: p1.ETag },
            { PartNumber: 2, ETag: p2.ETag },
          ],
        },
      }),
    );
    const table = await openLockTable({
      table: props.kvstoreTable as string,
      endpoint: props.kvstoreEndpoint as string,
      credentials: () => Promise.resolve({ accessKeyId: s.accessKey, secretAccessKey: s.secretKey }),
    });
    open.push(table);
    await table.put(`${b.describe("default")}-md5`, "Digest", md5(body));
    assert.ok((await b.readState("default"))?.equals(body), "the bytes match the digest: the wrong record does not make it a mismatch");
  });
});
