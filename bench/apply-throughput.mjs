// Applies per second through `objstate serve` on Ceph RGW + dynalite against a bare-SDK client
// making the requests Terraform's S3 backend makes for the same apply (issue 38: >= 0.7x).
// Run with:
//   npm run build && bash scripts/with-servers.sh node bench/apply-throughput.mjs
// An apply is LOCK, GET, POST (serial + 1), UNLOCK of a random one of BENCH_WORKSPACES (1,000)
// small states, BENCH_CLIENTS (50) at a time, for BENCH_SECONDS (10) per side, alternating over
// BENCH_ROUNDS (3). The bare side is Terraform's S3 client with a DynamoDB lock: a conditional
// PutItem (lock); GetItem of the digest and GetObject (read); PutObject and PutItem of the digest
// (write); GetItem and a conditional DeleteItem (unlock). A counting loopback proxy in front of
// both stores first reports the store requests each side makes per apply (BENCH_TRACE=1 lists
// one apply's); each round then prints the CPU ms per apply of every process (from /proc).
import { execFileSync, spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { S3Client, CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { DynamoDBClient, CreateTableCommand, DeleteItemCommand, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { freeLowPort } from "../dist/test/support/port.js";

const env = process.env;
for (const v of ["OBJSTATE_TEST_S3_ENDPOINT", "OBJSTATE_TEST_DYNAMODB_ENDPOINT"])
  if (!env[v]) throw new Error(`${v} is not set: run through scripts/with-servers.sh`);
const WORKSPACES = Number(env.BENCH_WORKSPACES ?? 1000);
const CLIENTS = Number(env.BENCH_CLIENTS ?? 50);
const SECONDS = Number(env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 3);
const credentials = { accessKeyId: env.OBJSTATE_TEST_ACCESS_KEY, secretAccessKey: env.OBJSTATE_TEST_SECRET_KEY };
const bucket = `bench-apply-${process.pid}`;
const table = `bench-apply-${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), "bench-apply-"));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The PID listening on a loopback port (`ss`), to read its CPU time. */
function pidOnPort(port) {
  try {
    const out = execFileSync("ss", ["-ltnpH", `sport = :${port}`], { encoding: "utf8" });
    return Number(/pid=(\d+)/.exec(out)?.[1] ?? NaN);
  } catch {
    return NaN; // no `ss`: that process's CPU is reported as 0
  }
}
/** CPU ms (all threads) of a process. */
function cpuMs(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** A loopback proxy to `target` that counts the requests through it. */
async function countingProxy(target) {
  const to = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const proxy = { count: 0 };
  const server = http.createServer((req, res) => {
    proxy.count++;
    if (proxy.trace !== undefined) proxy.trace.push(`${req.headers["x-amz-target"] ?? req.method} ${req.url}`);
    const up = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers, agent }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  const port = await freeLowPort();
  await new Promise((r) => server.listen(port, "127.0.0.1", r));
  proxy.url = `http://127.0.0.1:${port}`;
  proxy.close = () => new Promise((r) => (server.close(r), server.closeAllConnections(), agent.destroy()));
  return proxy;
}

const stateOf = (serial, lineage) =>
  Buffer.from(JSON.stringify({ version: 4, terraform_version: "1.11.4", serial, lineage, outputs: { n: { value: serial, type: "number" } }, resources: [] }));
const lockInfo = () => ({
  ID: randomUUID(),
  Operation: "OperationTypeApply",
  Info: "",
  Who: "bench@apply",
  Version: "1.11.4",
  Created: new Date().toISOString(),
  Path: "",
});

/** Terraform's S3 backend client (DynamoDB lock, digest item), on its own keys. */
function bareSide(s3Endpoint, ddbEndpoint) {
  const s3 = new S3Client({
    endpoint: s3Endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const ddb = new DynamoDBClient({ endpoint: ddbEndpoint, region: "us-east-1", credentials });
  const S = (v) => ({ S: v });
  return {
    async apply(ws) {
      const key = `bare/env:/${ws}/terraform.tfstate`;
      const lockId = `${bucket}/${key}`;
      const info = lockInfo();
      await ddb.send(
        new PutItemCommand({
          TableName: table,
          Item: { LockID: S(lockId), Info: S(JSON.stringify(info)) },
          ConditionExpression: "attribute_not_exists(LockID)",
        }),
      );
      await ddb.send(new GetItemCommand({ TableName: table, Key: { LockID: S(`${lockId}-md5`) }, ConsistentRead: true }));
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const old = JSON.parse(await got.Body.transformToString());
      const body = stateOf(old.serial + 1, old.lineage);
      const md5 = createHash("md5").update(body);
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: "application/json", ContentMD5: md5.copy().digest("base64") }));
      await ddb.send(new PutItemCommand({ TableName: table, Item: { LockID: S(`${lockId}-md5`), Digest: S(md5.digest("hex")) } }));
      await ddb.send(new GetItemCommand({ TableName: table, Key: { LockID: S(lockId) }, ConsistentRead: true }));
      await ddb.send(
        new DeleteItemCommand({
          TableName: table,
          Key: { LockID: S(lockId) },
          ConditionExpression: "Info = :info",
          ExpressionAttributeValues: { ":info": S(JSON.stringify(info)) },
        }),
      );
    },
    async seed(ws) {
      const key = `bare/env:/${ws}/terraform.tfstate`;
      const body = stateOf(1, `bare-${ws}`);
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
      const digest = createHash("md5").update(body).digest("hex");
      await ddb.send(new PutItemCommand({ TableName: table, Item: { LockID: S(`${bucket}/${key}-md5`), Digest: S(digest) } }));
    },
    close() {
      s3.destroy();
      ddb.destroy();
    },
  };
}

/** `objstate serve` (the published CLI, defaults: audit on, log off) on the same stores. */
async function serveSide(s3Endpoint, ddbEndpoint) {
  const config = join(dir, `serve-${randomUUID()}.json`);
  writeFileSync(
    config,
    JSON.stringify({ bucket, prefix: "serve", key: "terraform.tfstate", endpoint: s3Endpoint, kvstoreTable: table, kvstoreEndpoint: ddbEndpoint }),
  );
  const cli = fileURLToPath(new URL("../dist/pkg/cli.cjs", import.meta.url));
  // BENCH_SERVE_NODE_ARGS: options for the server's node (e.g. "--cpu-prof --cpu-prof-dir=/tmp/p").
  const nodeArgs = (env.BENCH_SERVE_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, cli, "serve", "--config", config, "--listen", `127.0.0.1:${await freeLowPort()}`, "--log-level", "off"], {
    env: {
      ...env,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  const url = await new Promise((resolve, reject) => {
    child.stderr.setEncoding("utf8").on("data", (d) => {
      err += d;
      const m = /at (http:\/\/127\.0\.0\.1:\d+)\/state/.exec(err);
      if (m) resolve(m[1]);
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  const call = (method, path, body) =>
    new Promise((resolve, reject) => {
      globalThis.traceMark?.(method);
      const req = http.request(
        `${url}${path}`,
        { method, agent, headers: body === undefined ? {} : { "content-length": body.length, "content-type": "application/json" } },
        (res) => {
          const parts = [];
          res.on("data", (c) => parts.push(c));
          res.on("end", () =>
            res.statusCode === 200 ? resolve(Buffer.concat(parts)) : reject(new Error(`${method} ${path}: ${res.statusCode} ${Buffer.concat(parts)}`)),
          );
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  return {
    pid: child.pid,
    async apply(ws) {
      const info = Buffer.from(JSON.stringify(lockInfo()));
      const id = JSON.parse(info.toString()).ID;
      await call("LOCK", `/state/${ws}`, info);
      const old = JSON.parse((await call("GET", `/state/${ws}`)).toString());
      await call("POST", `/state/${ws}?ID=${id}`, stateOf(old.serial + 1, old.lineage));
      await call("UNLOCK", `/state/${ws}`, info);
    },
    async seed(ws) {
      await call("POST", `/state/${ws}`, stateOf(1, `serve-${ws}`)).catch(async () => {
        const info = Buffer.from(JSON.stringify(lockInfo()));
        await call("LOCK", `/state/${ws}`, info);
        await call("POST", `/state/${ws}?ID=${JSON.parse(info.toString()).ID}`, stateOf(1, `serve-${ws}`));
        await call("UNLOCK", `/state/${ws}`, info);
      });
    },
    close() {
      agent.destroy();
      child.kill("SIGTERM");
      return new Promise((r) => child.once("exit", r));
    },
  };
}

/** Applies per second: CLIENTS workers, each on its own slice of the workspaces (no lock contention). */
async function run(side, seconds) {
  let applies = 0;
  const end = performance.now() + seconds * 1000;
  const per = Math.floor(WORKSPACES / CLIENTS);
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; performance.now() < end; i++) {
        await side.apply(`ws-${c * per + (i % per)}`);
        applies++;
      }
    }),
  );
  return applies / seconds;
}

const setupS3 = new S3Client({ endpoint: env.OBJSTATE_TEST_S3_ENDPOINT, region: "us-east-1", forcePathStyle: true, credentials });
await setupS3.send(new CreateBucketCommand({ Bucket: bucket }));
setupS3.destroy();
const setupDdb = new DynamoDBClient({ endpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT, region: "us-east-1", credentials });
await setupDdb.send(
  new CreateTableCommand({
    TableName: table,
    AttributeDefinitions: [{ AttributeName: "LockID", AttributeType: "S" }],
    KeySchema: [{ AttributeName: "LockID", KeyType: "HASH" }],
    BillingMode: "PAY_PER_REQUEST",
  }),
);
setupDdb.destroy();
await new Promise((r) => setTimeout(r, 600));

// Store requests per apply, through the counting proxies.
const s3p = await countingProxy(env.OBJSTATE_TEST_S3_ENDPOINT);
const ddbp = await countingProxy(env.OBJSTATE_TEST_DYNAMODB_ENDPOINT);
const counts = {};
for (const [name, make] of [
  ["bare", bareSide],
  ["serve", serveSide],
]) {
  const side = await make(s3p.url, ddbp.url);
  await side.seed("count");
  await side.apply("count");
  const [s0, d0] = [s3p.count, ddbp.count];
  for (let i = 0; i < 20; i++) await side.apply("count");
  counts[name] = { s3: (s3p.count - s0) / 20, dynamodb: (ddbp.count - d0) / 20 };
  if (env.BENCH_TRACE === "1") {
    s3p.trace = [];
    ddbp.trace = s3p.trace;
    globalThis.traceMark = (m) => s3p.trace.push(`--- ${m}`);
    await side.apply("count");
    await new Promise((r) => setTimeout(r, 300));
    console.log(name, s3p.trace.join("\n  "));
    globalThis.traceMark = undefined;
    s3p.trace = ddbp.trace = undefined;
  }
  await side.close();
}
await s3p.close();
await ddbp.close();
console.log(`store requests per apply: bare ${JSON.stringify(counts.bare)}, serve ${JSON.stringify(counts.serve)}`);

const bare = bareSide(env.OBJSTATE_TEST_S3_ENDPOINT, env.OBJSTATE_TEST_DYNAMODB_ENDPOINT);
const serve = await serveSide(env.OBJSTATE_TEST_S3_ENDPOINT, env.OBJSTATE_TEST_DYNAMODB_ENDPOINT);
for (let i = 0; i < WORKSPACES; i += CLIENTS) {
  const batch = Array.from({ length: Math.min(CLIENTS, WORKSPACES - i) }, (_, k) => `ws-${i + k}`);
  // A loaded gateway may drop a kept-alive socket: a seed is tried again.
  const seed = (side, ws) => side.seed(ws).catch(() => side.seed(ws));
  await Promise.all(batch.flatMap((ws) => [seed(bare, ws), seed(serve, ws)]));
}
await run(bare, 1);
await run(serve, 1);
const pids = {
  rgw: pidOnPort(new URL(env.OBJSTATE_TEST_S3_ENDPOINT).port),
  osd: pidOnPort(env.CEPH_OSD_PORT_MIN ?? 6800),
  dynalite: pidOnPort(new URL(env.OBJSTATE_TEST_DYNAMODB_ENDPOINT).port),
};
const cpu = { serve: [], bare: [] };
/** CPU ms so far of the stores, the client (this process) and the server. */
const cpuNow = (side) => ({
  ...Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, Number.isNaN(pid) ? 0 : cpuMs(pid)])),
  client: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
  server: side.pid === undefined ? 0 : cpuMs(side.pid),
});
/** The audit objects serve has stored so far (each holds one or more events). */
async function auditObjects() {
  const s3 = new S3Client({ endpoint: env.OBJSTATE_TEST_S3_ENDPOINT, region: "us-east-1", forcePathStyle: true, credentials });
  let n = 0;
  let token;
  do {
    const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "serve/@objstate/audit/", ContinuationToken: token }));
    n += out.KeyCount ?? 0;
    token = out.NextContinuationToken;
  } while (token !== undefined);
  s3.destroy();
  return n;
}
const audit = { objects: 0, applies: 0 };
const ratios = [];
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? [bare, serve] : [serve, bare];
  const got = new Map();
  for (const side of order) {
    const objects = side === serve ? await auditObjects() : 0;
    const before = cpuNow(side);
    const rate = await run(side, SECONDS);
    got.set(side, rate);
    const after = cpuNow(side);
    const per = Object.fromEntries(Object.keys(after).map((k) => [k, ((after[k] - before[k]) / (rate * SECONDS)).toFixed(2)]));
    cpu[side === serve ? "serve" : "bare"].push(per);
    if (side === serve) {
      audit.applies += rate * SECONDS;
      audit.objects += (await auditObjects()) - objects;
    }
  }
  const ratio = got.get(serve) / got.get(bare);
  ratios.push(ratio);
  console.log(`round ${r + 1}: serve ${got.get(serve).toFixed(1)} applies/s, bare SDK ${got.get(bare).toFixed(1)} applies/s, ${ratio.toFixed(2)}x`);
}
for (const k of ["bare", "serve"]) console.log(`CPU ms per apply, ${k}: ${cpu[k].map((c) => JSON.stringify(c)).join(" ")}`);
console.log(`audit objects per serve apply (3 events each): ${(audit.objects / audit.applies).toFixed(2)}`);
const m = median(ratios);
console.log(
  `serve throughput, ${CLIENTS} clients, ${WORKSPACES} workspaces: median ${m.toFixed(2)}x the bare SDK's applies/s (bound >= 0.7x): ${m >= 0.7 ? "PASS" : "FAIL"}`,
);
bare.close();
await serve.close();
rmSync(dir, { recursive: true, force: true });
