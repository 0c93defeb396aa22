// Peak memory of one push or pull in a fresh process (so peak RSS belongs to it alone).
//   node --expose-gc backend-child.mjs push|pull sdk|objstate BUCKET KEY BYTES
// Prints JSON { ms, baselineRss, peakRss } (bytes). The baseline is taken after the
// clients are loaded and connected, before the state exists.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { S3Client, PutObjectCommand, GetObjectCommand } from "@aws-sdk/client-s3";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../dist/src/index.js";

const [op, impl, bucket, key, bytesArg] = process.argv.slice(2);
const size = Number(bytesArg);
const env = process.env;
const endpoint = env.OBJSTATE_TEST_S3_ENDPOINT;
const credentials = { accessKeyId: env.OBJSTATE_TEST_ACCESS_KEY, secretAccessKey: env.OBJSTATE_TEST_SECRET_KEY };
const sdk = new S3Client({
  endpoint,
  region: "us-east-1",
  forcePathStyle: true,
  credentials,
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED",
});
const backend = await ObjectStoreBackend.connect(
  ObjectStoreBackendConfig.from({
    bucket,
    key,
    prefix: "",
    endpoint,
    accessKey: credentials.accessKeyId,
    secretKey: credentials.secretAccessKey,
    kvstoreTable: env.BENCH_TABLE,
    kvstoreEndpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT,
  }),
  { env: {}, onWarning: () => undefined },
);
await sdk.send(new PutObjectCommand({ Bucket: bucket, Key: `${key}.warm`, Body: "x" }));
await backend.listWorkspaces();
await backend.lockInfo("default");
globalThis.gc?.();
const baselineRss = process.memoryUsage().rss;
// A state document of exactly `size` bytes in one buffer (the library refuses bytes that are
// not a state): random letters between a header and the closing quote and brace.
const data = op === "push" ? stateOfSize(size) : undefined;
function stateOfSize(n) {
  const b = randomBytes(n);
  for (let i = 0; i < n; i++) b[i] = 97 + (b[i] % 26);
  const head = Buffer.from('{"version":4,"serial":1000000,"lineage":"bench-child","pad":"');
  head.copy(b, 0);
  b.write('"}', n - 2);
  return b;
}
const t = performance.now();
let got;
if (op === "push" && impl === "sdk") await sdk.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: data, ContentType: "application/json" }));
else if (op === "push")
  await backend.writeState("default", data, { force: true }); // over the parent's state: not a history
else if (impl === "sdk") got = await (await sdk.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body.transformToByteArray();
else got = await backend.readState("default");
const ms = performance.now() - t;
if (op === "pull" && got.length !== size) throw new Error(`pulled ${got.length} bytes, expected ${size}`);
// VmHWM, not getrusage's maxRSS: on Linux ru_maxrss survives exec, so a child spawned by a
// big parent would report the parent's peak.
const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))[1]) * 1024;
process.stdout.write(JSON.stringify({ ms, baselineRss, peakRss: hwm }) + "\n");
backend.close();
sdk.destroy();
