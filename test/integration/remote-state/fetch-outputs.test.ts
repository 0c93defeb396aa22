/**
 * Reading remote outputs against the real servers: Ceph RGW (S3) + dynalite (DynamoDB API).
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { ListBucketsCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { DynamoDBClient, ListTablesCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import { DataRemoteStateObjectStore, ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { testServers } from "../../support/servers.js";
import { cephTarget, uniqueName } from "../../support/targets.js";
import { FAST_DIGEST, outputsSuite, rejectsWith, stateWith, type Snapshot } from "../../unit/remote-state/outputs-suite.js";

let clients: { s3: S3Client; ddb: DynamoDBClient } | undefined;
function servers(): { s3: S3Client; ddb: DynamoDBClient } {
  if (clients === undefined) {
    const s = testServers();
    const credentials = { accessKeyId: s.accessKey, secretAccessKey: s.secretKey };
    clients = {
      s3: new S3Client({ endpoint: s.s3Endpoint, region: "us-east-1", forcePathStyle: true, credentials }),
      ddb: new DynamoDBClient({ endpoint: s.dynamoEndpoint, region: "us-east-1", credentials }),
    };
  }
  return clients;
}
after(() => {
  clients?.s3.destroy();
  clients?.ddb.destroy();
});

/**
 * Every bucket and table this file's process made (uniqueName puts its pid in each name:
 * other test files run beside it on the same servers), every object of the config's bucket,
 * every item of the config's table.
 */
const ours = (name: string | undefined): boolean => name?.includes(`-${process.pid}-`) === true;
const snapshot: Snapshot = async (props) => {
  const { s3, ddb } = servers();
  const lines: string[] = [];
  for (const b of (await s3.send(new ListBucketsCommand({}))).Buckets ?? []) if (ours(b.Name)) lines.push(`bucket ${b.Name}`);
  if (lines.includes(`bucket ${props.bucket}`)) {
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: props.bucket, ContinuationToken: token }));
      for (const o of page.Contents ?? []) lines.push(`object ${o.Key} ${o.Size} ${o.ETag}`);
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }
  // ListTables pages at 100 names, and the shared test server holds many more.
  let start: string | undefined;
  do {
    const page = await ddb.send(new ListTablesCommand({ ExclusiveStartTableName: start }));
    for (const t of page.TableNames ?? []) if (ours(t)) lines.push(`table ${t}`);
    start = page.LastEvaluatedTableName;
  } while (start !== undefined);
  if (typeof props.kvstoreTable === "string" && lines.includes(`table ${props.kvstoreTable}`)) {
    for (const item of (await ddb.send(new ScanCommand({ TableName: props.kvstoreTable, ConsistentRead: true }))).Items ?? [])
      lines.push(`item ${JSON.stringify(item)}`);
  }
  return lines.sort();
};

describe("fetchOutputs on Ceph RGW + dynalite", () => outputsSuite(cephTarget, { snapshot }));

describe("fetchOutputs on Ceph RGW + dynalite, specifics", () => {
  const quiet = { env: {}, digestRetry: FAST_DIGEST, onWarning: () => undefined };

  it("a missing DynamoDB lock table is TABLE_NOT_FOUND, and the read creates neither table nor bucket", async () => {
    const target = cephTarget();
    const props = { ...(await target.setup({ locks: false })), kvstoreEndpoint: testServers().dynamoEndpoint, kvstoreTable: uniqueName("absent") };
    const before = await snapshot(props);
    await rejectsWith(new DataRemoteStateObjectStore("net", props).fetchOutputs(quiet), "TABLE_NOT_FOUND");
    assert.deepEqual(await snapshot(props), before);
  });

  it("the lock item stays as the holder left it while outputs are read", async () => {
    const target = cephTarget();
    const props = await target.setup({ locks: true });
    const w = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), quiet);
    await w.writeState("default", stateWith({ a: 1 }));
    const lock = await w.lock("default", { operation: "apply", info: "held during the read" });
    const before = await snapshot(props);
    assert.ok(
      before.some((l) => l.includes(lock.ID)),
      "the lock item is in the table",
    );
    assert.equal((await new DataRemoteStateObjectStore("net", props).fetchOutputs(quiet)).number("a"), 1);
    assert.deepEqual(await snapshot(props), before);
    await w.unlock("default", lock.ID);
    w.close();
  });

  it("reads a large multipart state's outputs (digest from the bytes, not the ETag)", async () => {
    const target = cephTarget();
    const props = await target.setup({ locks: true });
    const w = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { ...quiet, multipartThreshold: 5 * 1024 * 1024 });
    const filler = Array.from({ length: 80_000 }, (_, i) => ({ id: `r-${i}`, attributes: { outputs: { value: i }, tags: { a: '}]"' } } }));
    const state = `{"version": 4, "resources": ${JSON.stringify(filler, null, 1)}, "outputs": {"vpc": {"value": "vpc-mp"}}}`;
    assert.ok(state.length > 5 * 1024 * 1024);
    await w.writeState("default", state);
    w.close();
    const out = await new DataRemoteStateObjectStore("net", props).fetchOutputs(quiet);
    assert.equal(out.source.method, "scan");
    assert.equal(out.source.streamed, true, "scanned while it downloaded");
    assert.deepEqual(out.toJSON(), { vpc: "vpc-mp" });
    assert.deepEqual((await new DataRemoteStateObjectStore("net", props).fetchOutputs(quiet)).toJSON(), { vpc: "vpc-mp" }, "read again");
  });
});
