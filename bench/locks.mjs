// Benchmarks of locks that heal against the real servers (Ceph RGW + dynalite), same run, alternating:
//  1. lock -> write 1 KiB -> unlock with a lease (handle + heartbeat, lease check before the
//     write) vs the same cycle with a lock that never expires. Both are fenced (the state PUT is
//     conditional in every objstate write); the lease adds what it costs.
//  2. the lockfile cycle (lockfile, no table) vs the same number of bare SDK round trips
//     (counted from the wire on a first cycle).
// Run with the servers up: npm run bench:locks (through scripts/with-servers.sh), or
// directly with OBJSTATE_TEST_* set (source the servers' env).
import { S3Client, PutObjectCommand, GetObjectCommand, DeleteObjectCommand, CreateBucketCommand } from "@aws-sdk/client-s3";
import { DynamoDBClient, CreateTableCommand } from "@aws-sdk/client-dynamodb";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../dist/src/index.js";

const env = process.env;
for (const v of ["OBJSTATE_TEST_S3_ENDPOINT", "OBJSTATE_TEST_DYNAMODB_ENDPOINT"])
  if (!env[v]) throw new Error(`${v} is not set: run with the test servers' environment`);
const CYCLES = Number(env.BENCH_CYCLES ?? 60);
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
const bucket = `bench-locks-${process.pid}`;
const table = `bench-leases-${process.pid}`;
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

const base = { bucket, endpoint: env.OBJSTATE_TEST_S3_ENDPOINT, accessKey: credentials.accessKeyId, secretKey: credentials.secretAccessKey };
let wire = 0;
const connect = (props, options = {}) =>
  ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ ...base, ...props }), {
    env: {},
    onWarning: () => undefined,
    s3: { onRequest: () => void wire++ },
    ...options,
  });
const plain = await connect({ prefix: "plain", kvstoreTable: table, kvstoreEndpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT });
const leased = await connect({ prefix: "leased", kvstoreTable: table, kvstoreEndpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT }, { ttl: 60_000 });
const lockfile = await connect({ prefix: "lockfile" }, { lockfile: true });

let serial = 0;
const state = () => Buffer.from(JSON.stringify({ version: 4, serial: ++serial, lineage: "bench", pad: "x".repeat(1024 - 60) }));
const timed = async (fn) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};
const plainCycle = async () => {
  const l = await plain.lock("default");
  await plain.writeState("default", state(), { lockId: l.ID });
  await plain.unlock("default", l.ID);
};
const leasedCycle = async () => {
  const h = await leased.acquire("default");
  await leased.writeState("default", state(), { lockId: h.id });
  await h.release();
};
const lockfileCycle = async () => {
  const l = await lockfile.lock("default");
  await lockfile.writeState("default", state(), { lockId: l.ID });
  await lockfile.unlock("default", l.ID);
};

// Warm up every path, and count the lockfile cycle's round trips on the wire.
await plainCycle();
await leasedCycle();
wire = 0;
await lockfileCycle();
const trips = wire;
const body = state();
let n = 0;
const bareTrips = async () => {
  const key = `bare/${n++ % 4}`;
  for (let i = 0; i < trips; i++) {
    if (i === 0 || i === trips - 3) await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    else if (i === trips - 1) await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    else await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body.transformToByteArray().catch(() => undefined);
  }
};
await bareTrips();

const ratios = { lease: [], lockfile: [] };
const ms = { plain: [], leased: [], lockfile: [], bare: [] };
for (let i = 0; i < CYCLES; i++) {
  // Alternate which of each pair goes first, so drift of the shared servers hits both alike.
  const pair = async (x, y) => (i % 2 === 0 ? [await timed(x), await timed(y)] : [await timed(y), await timed(x)].reverse());
  const [b, p] = await pair(leasedCycle, plainCycle);
  const [g, s] = await pair(lockfileCycle, bareTrips);
  ms.plain.push(p);
  ms.leased.push(b);
  ms.lockfile.push(g);
  ms.bare.push(s);
  ratios.lease.push(b / p);
  ratios.lockfile.push(g / s);
}
const f1 = (x) => x.toFixed(1);
console.log(`locks bench: ${CYCLES} alternating rounds, 1 KiB state`);
console.log(
  `lease+fencing cycle ${f1(median(ms.leased))} ms vs plain cycle ${f1(median(ms.plain))} ms: ratio ${median(ratios.lease).toFixed(2)}x (target <= 1.30x)`,
);
console.log(
  `lockfile cycle ${f1(median(ms.lockfile))} ms vs ${trips} bare SDK round trips ${f1(median(ms.bare))} ms: ratio ${median(ratios.lockfile).toFixed(2)}x`,
);
for (const b of [plain, leased, lockfile]) b.close();
s3.destroy();
ddb.destroy();
