// Benchmarks of the runtime backend against the real servers (Ceph RGW + dynalite).
// Run with: npm run bench:backend   (starts and stops the servers itself)
//  1. push / pull of a 64 MiB state: objstate vs a bare SDK PutObject / GetObject of the
//     same bytes, same run; peak RSS above the process baseline, in state sizes.
//  2. lock -> write 1 KiB -> unlock: objstate vs the 5 bare SDK round trips of an unfenced
//     cycle, and vs the bare round trips of the fenced protocol objstate speaks (guard read,
//     lock check and digest item read in parallel, conditional PUT, the commit: a conditional
//     update of the digest item, two-step release).
import { spawnSync } from "node:child_process";
import { randomBytes, randomUUID, createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { S3Client, PutObjectCommand, GetObjectCommand, CreateBucketCommand } from "@aws-sdk/client-s3";
import { DynamoDBClient, CreateTableCommand, PutItemCommand, GetItemCommand, DeleteItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../dist/src/index.js";

const env = process.env;
for (const v of ["OBJSTATE_TEST_S3_ENDPOINT", "OBJSTATE_TEST_DYNAMODB_ENDPOINT"])
  if (!env[v]) throw new Error(`${v} is not set: run through scripts/with-servers.sh (npm run bench:backend)`);
const MiB = 1024 * 1024;
const SIZE = Number(env.BENCH_STATE_MIB ?? 64) * MiB;
const ROUNDS = Number(env.BENCH_ROUNDS ?? 9);
const CYCLES = Number(env.BENCH_CYCLES ?? 200);
const credentials = { accessKeyId: env.OBJSTATE_TEST_ACCESS_KEY, secretAccessKey: env.OBJSTATE_TEST_SECRET_KEY };
const s3 = new S3Client({
  endpoint: env.OBJSTATE_TEST_S3_ENDPOINT,
  region: "us-east-1",
  forcePathStyle: true,
  credentials,
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED",
});
const ddb = new DynamoDBClient({ endpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT, region: "us-east-1", credentials });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const bucket = `bench-${process.pid}`;
const table = `bench-locks-${process.pid}`;
await s3.send(new CreateBucketCommand({ Bucket: bucket }));
await ddb.send(
  new CreateTableCommand({
    TableName: table,
    AttributeDefinitions: [{ AttributeName: "LockID", AttributeType: "S" }],
    KeySchema: [{ AttributeName: "LockID", KeyType: "HASH" }],
    BillingMode: "PAY_PER_REQUEST",
  }),
);
await new Promise((r) => setTimeout(r, 600));

function child(op, impl, key) {
  const r = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(new URL("./backend-child.mjs", import.meta.url)), op, impl, bucket, key, String(SIZE)], {
    env: { ...env, BENCH_TABLE: table },
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`${op} ${impl} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

console.log(`backend bench: state ${SIZE / MiB} MiB, ${ROUNDS} paired rounds; lock cycle x ${CYCLES} paired`);
// Time: objstate and the bare SDK alternate within each round, in one process, so drift
// of the shared server (memstore fills, gc runs) hits both alike; the figure is the
// median of the per-round ratios.
const backendBig = await ObjectStoreBackend.connect(
  ObjectStoreBackendConfig.from({
    bucket,
    key: "tool.tfstate",
    prefix: "",
    endpoint: env.OBJSTATE_TEST_S3_ENDPOINT,
    accessKey: credentials.accessKeyId,
    secretKey: credentials.secretAccessKey,
    kvstoreTable: table,
    kvstoreEndpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT,
  }),
  { env: {}, onWarning: () => undefined },
);
// A state (the guard reads its header) whose serial changes every round: the same content
// again would be a no-op write and measure nothing.
const padding = randomBytes(SIZE).toString("base64");
const stateOf = (serial) => {
  const head = `{"version":4,"serial":${serial},"lineage":"bench","pad":"`;
  return Buffer.from(head + padding.slice(0, SIZE - head.length - 2) + '"}');
};
let serial = 0;
const state = stateOf(0);
const timed = async (fn) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};
const rounds = { push: [], pull: [] };
for (let r = 0; r < ROUNDS; r++) {
  const sdkFirst = r % 2 === 0;
  const next = stateOf(++serial);
  const pushO = () => timed(() => backendBig.writeState("default", next));
  const pushS = () => timed(() => s3.send(new PutObjectCommand({ Bucket: bucket, Key: "sdk.tfstate", Body: state, ContentType: "application/json" })));
  const pullO = () =>
    timed(async () => {
      if ((await backendBig.readState("default")).length !== SIZE) throw new Error("short read");
    });
  const pullS = () =>
    timed(async () => {
      if ((await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "sdk.tfstate" }))).Body.transformToByteArray()).length !== SIZE)
        throw new Error("short read");
    });
  for (const [op, o, s] of [
    ["push", pushO, pushS],
    ["pull", pullO, pullS],
  ]) {
    let a, b;
    if (sdkFirst) {
      b = await s();
      a = await o();
    } else {
      a = await o();
      b = await s();
    }
    rounds[op].push({ o: a, s: b, ratio: a / b });
  }
}
backendBig.close();
const mem = {};
for (const op of ["push", "pull"])
  for (const impl of ["sdk", "objstate"]) mem[`${op}-${impl}`] = child(op, impl, impl === "sdk" ? "sdk.tfstate" : "tool.tfstate");
const over = (x) => ((x.peakRss - x.baselineRss) / SIZE).toFixed(2);
for (const op of ["push", "pull"]) {
  const rs = rounds[op];
  console.log(
    `  ${op}: objstate ${median(rs.map((x) => x.o)).toFixed(0)} ms vs bare SDK ${median(rs.map((x) => x.s)).toFixed(0)} ms; median per-round ratio ${median(rs.map((x) => x.ratio)).toFixed(3)}x (target <= 1.15x)` +
      `; peak RSS above baseline ${over(mem[`${op}-objstate`])}x state (bare SDK ${over(mem[`${op}-sdk`])}x; target <= ~2x)`,
  );
}

// Lock cycle: objstate vs the same five round trips with bare clients.
const backend = await ObjectStoreBackend.connect(
  ObjectStoreBackendConfig.from({
    bucket,
    key: "cycle.tfstate",
    prefix: "",
    endpoint: env.OBJSTATE_TEST_S3_ENDPOINT,
    accessKey: credentials.accessKeyId,
    secretKey: credentials.secretAccessKey,
    kvstoreTable: table,
    kvstoreEndpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT,
  }),
  { env: {}, onWarning: () => undefined },
);
const kibOf = (n) => Buffer.from(JSON.stringify({ version: 4, serial: n, lineage: "bench", pad: randomBytes(450).toString("hex") }));
let cycle = 0;
let kib = kibOf(0);
async function objstateCycle() {
  kib = kibOf(++cycle);
  const lock = await backend.lock("default", { operation: "bench" });
  await backend.writeState("default", kib, { lockId: lock.ID });
  await backend.unlock("default", lock.ID);
}
let etag;
let generation = 0;
async function fencedBareCycle() {
  const id = `${bucket}/fenced.tfstate`;
  const info = JSON.stringify({ ID: randomUUID(), Operation: "bench", Info: "", Who: "bench@host", Version: "0", Created: new Date().toISOString(), Path: id });
  await ddb.send(new PutItemCommand({ TableName: table, Item: { LockID: { S: id }, Info: { S: info } }, ConditionExpression: "attribute_not_exists(LockID)" }));
  const [head, , digestItem] = await Promise.all([
    s3.send(new GetObjectCommand({ Bucket: bucket, Key: "fenced.tfstate", Range: "bytes=0-65535" })).then(
      async (r) => {
        await r.Body.transformToByteArray();
        return r;
      },
      () => undefined,
    ),
    ddb.send(new GetItemCommand({ TableName: table, Key: { LockID: { S: id } }, ConsistentRead: true })),
    ddb.send(new GetItemCommand({ TableName: table, Key: { LockID: { S: `${id}-md5` } }, ConsistentRead: true })),
  ]);
  etag = head?.ETag?.replace(/"/g, "");
  await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: "fenced.tfstate",
      Body: kib,
      ContentType: "application/json",
      ContentMD5: createHash("md5").update(kib).digest("base64"),
      ...(etag === undefined ? { IfNoneMatch: "*" } : { IfMatch: etag }),
    }),
  );
  const seen = digestItem.Item;
  await ddb.send(
    new UpdateItemCommand({
      TableName: table,
      Key: { LockID: { S: `${id}-md5` } },
      ConditionExpression: seen === undefined ? "attribute_not_exists(LockID)" : "#d = :od AND #g = :og",
      UpdateExpression: "SET #d = :nd, #g = :ng, #l = :nl",
      ExpressionAttributeNames: { "#d": "Digest", "#g": "Generation", "#l": "CommitLockID" },
      ExpressionAttributeValues: {
        ":nd": { S: createHash("md5").update(kib).digest("hex") },
        ":ng": { N: String(generation + 1) },
        ":nl": { S: JSON.parse(info).ID },
        ...(seen === undefined ? {} : { ":od": seen.Digest, ":og": seen.Generation }),
      },
    }),
  );
  generation += 1;
  const ID = JSON.parse(info).ID;
  await ddb.send(
    new UpdateItemCommand({
      TableName: table,
      Key: { LockID: { S: id } },
      ConditionExpression: "Info = :i",
      UpdateExpression: "SET Released = :r",
      ExpressionAttributeValues: { ":i": { S: info }, ":r": { S: ID } },
    }),
  );
  await ddb.send(
    new DeleteItemCommand({
      TableName: table,
      Key: { LockID: { S: id } },
      ConditionExpression: "Released = :r",
      ExpressionAttributeValues: { ":r": { S: ID } },
    }),
  );
}
async function bareCycle() {
  const id = `${bucket}/bare.tfstate`;
  const info = JSON.stringify({ ID: randomUUID(), Operation: "bench", Info: "", Who: "bench@host", Version: "0", Created: new Date().toISOString(), Path: id });
  await ddb.send(new PutItemCommand({ TableName: table, Item: { LockID: { S: id }, Info: { S: info } }, ConditionExpression: "attribute_not_exists(LockID)" }));
  await ddb.send(new GetItemCommand({ TableName: table, Key: { LockID: { S: id } }, ConsistentRead: true }));
  await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: "bare.tfstate",
      Body: kib,
      ContentType: "application/json",
      ContentMD5: createHash("md5").update(kib).digest("base64"),
    }),
  );
  await ddb.send(new PutItemCommand({ TableName: table, Item: { LockID: { S: `${id}-md5` }, Digest: { S: createHash("md5").update(kib).digest("hex") } } }));
  await ddb.send(
    new DeleteItemCommand({ TableName: table, Key: { LockID: { S: id } }, ConditionExpression: "Info = :i", ExpressionAttributeValues: { ":i": { S: info } } }),
  );
}
for (let i = 0; i < 20; i++) {
  await objstateCycle();
  await bareCycle();
  await fencedBareCycle();
}
const tObj = [],
  tBare = [],
  tFenced = [];
for (let i = 0; i < CYCLES; i++) {
  const o = await timed(objstateCycle),
    b = await timed(bareCycle),
    f = await timed(fencedBareCycle);
  tObj.push(o);
  tBare.push(b);
  tFenced.push(f);
}
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
console.log(
  `  lock -> write 1 KiB -> unlock: objstate ${median(tObj).toFixed(2)} ms vs 5 bare SDK round trips (unfenced) ${median(tBare).toFixed(2)} ms (medians) -> ${(median(tObj) / median(tBare)).toFixed(3)}x; totals ${(sum(tObj) / sum(tBare)).toFixed(3)}x`,
);
console.log(
  `  lock -> write 1 KiB -> unlock: objstate vs the same fenced protocol with bare SDK calls ${median(tFenced).toFixed(2)} ms -> ${(median(tObj) / median(tFenced)).toFixed(3)}x; totals ${(sum(tObj) / sum(tFenced)).toFixed(3)}x (target <= 1.2x)`,
);
backend.close();
s3.destroy();
ddb.destroy();
