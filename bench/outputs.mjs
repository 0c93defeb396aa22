// Benchmark of reading remote outputs from a large state, against the real servers (Ceph
// RGW + dynalite). Run with: npm run bench:outputs   (starts and stops the servers itself)
//
// A ~100 MiB realistic state (bench/outputs-state.mjs: many resources with nested
// attributes, pretty-printed as the tool writes it) is stored twice through the backend,
// with a lock table (so reads are digest-checked): outputs first (the tool's order) and
// outputs last. Each round times, in alternating order:
//   (a)  bare SDK GetObject + UTF-8 decode + JSON.parse of the whole state + take outputs
//   (a') fetchOutputs({ scanThreshold: Infinity }): objstate's own read, full parse
//   (b)  fetchOutputs(): objstate's read, outputs picked out by the scanner
// The figures are medians and the median of the per-round ratios; bound (issue 38) (b) <= 1.0 x (a)
// warm in one process, and as whole processes (a fresh process for each read,
// bench/outputs-process.mjs: the package's main entry as published against a bare SDK
// script, alternating).
// Then a breakdown of where the time goes, on one downloaded copy, and (BENCH_CROSSOVER=1)
// the cold-process crossover that sets the scan threshold.
//
// Env: BENCH_STATE_MIB (default 100), BENCH_ROUNDS (default 7), BENCH_CROSSOVER (0/1).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { S3Client, GetObjectCommand, CreateBucketCommand, DeleteObjectCommand, DeleteBucketCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { DynamoDBClient, CreateTableCommand, DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { DataRemoteStateObjectStore, ObjectStoreBackend, ObjectStoreBackendConfig } from "../dist/src/index.js";
import { extractTopLevel } from "../dist/test/support/extract-outputs.js";
import { benchOutputs, realisticState } from "./outputs-state.mjs";

const env = process.env;
for (const v of ["OBJSTATE_TEST_S3_ENDPOINT", "OBJSTATE_TEST_DYNAMODB_ENDPOINT"])
  if (!env[v]) throw new Error(`${v} is not set: run through scripts/with-servers.sh (npm run bench:outputs)`);
const MiB = 1024 * 1024;
const SIZE = Number(env.BENCH_STATE_MIB ?? 100) * MiB;
const ROUNDS = Number(env.BENCH_ROUNDS ?? 7);
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
const timed = async (fn) => {
  const t = performance.now();
  const value = await fn();
  return { ms: performance.now() - t, value };
};
const bucket = `bench-outputs-${process.pid}`;
const table = `bench-outputs-locks-${process.pid}`;
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

const common = {
  bucket,
  prefix: "",
  endpoint: env.OBJSTATE_TEST_S3_ENDPOINT,
  accessKey: credentials.accessKeyId,
  secretKey: credentials.secretAccessKey,
  kvstoreTable: table,
  kvstoreEndpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT,
};
const expected = Object.fromEntries(Object.entries(benchOutputs()).map(([k, o]) => [k, o.value]));
const connectOptions = { env: {}, onWarning: () => undefined };

async function naive(key) {
  const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const array = await res.Body.transformToByteArray();
  const outputs = JSON.parse(Buffer.from(array.buffer, array.byteOffset, array.length).toString("utf8")).outputs;
  return Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, o.value]));
}

console.log(`outputs bench: state ~${(SIZE / MiB).toFixed(0)} MiB, ${ROUNDS} rounds per placement, lock table on (digest-checked reads)`);
const summary = {};
for (const placement of ["first", "last"]) {
  const key = `outputs-${placement}.tfstate`;
  const state = realisticState({ bytes: SIZE, outputsFirst: placement === "first" });
  const writer = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ ...common, key }), connectOptions);
  await writer.writeState("default", state);
  writer.close();
  const remote = new DataRemoteStateObjectStore("big", { ...common, key });
  const runs = {
    a: () => naive(key),
    aFull: async () => (await remote.fetchOutputs({ ...connectOptions, scanThreshold: Infinity })).toJSON(),
    b: async () => (await remote.fetchOutputs(connectOptions)).toJSON(),
  };
  // One untimed pass of each: checks the answers, warms the connection pool and the JIT.
  for (const run of Object.values(runs)) assert.deepEqual(await run(), expected);
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = Object.keys(runs);
    if (r % 2 === 1) order.reverse();
    const t = {};
    for (const k of order) {
      globalThis.gc?.();
      t[k] = (await timed(runs[k])).ms;
    }
    rounds.push(t);
  }
  const m = (k) => median(rounds.map((t) => t[k]));
  if (env.BENCH_VERBOSE === "1")
    for (const t of rounds)
      console.log(
        `    round: ${Object.entries(t)
          .map(([k, v]) => `${k} ${v.toFixed(0)}`)
          .join(", ")}`,
      );
  const ratio = median(rounds.map((t) => t.b / t.a));
  const ratioFull = median(rounds.map((t) => t.b / t.aFull));
  summary[placement] = { bytes: state.length, a: m("a"), aFull: m("aFull"), b: m("b"), ratio, ratioFull };
  console.log(`  outputs ${placement.padEnd(5)} (${(state.length / MiB).toFixed(1)} MiB):`);
  console.log(`    (a)  bare SDK download + JSON.parse + outputs      ${m("a").toFixed(0).padStart(6)} ms`);
  console.log(`    (a') fetchOutputs, full parse (scan off)           ${m("aFull").toFixed(0).padStart(6)} ms`);
  console.log(`    (b)  fetchOutputs (scan)                           ${m("b").toFixed(0).padStart(6)} ms`);
  console.log(`    (b)/(a) = ${ratio.toFixed(3)} (bound <= 1.0); (b)/(a') = ${ratioFull.toFixed(3)}   [medians of per-round ratios]`);
}

// Where the time goes, on one downloaded copy of the outputs-last state.
{
  const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "outputs-last.tfstate" }));
  const bytes = Buffer.from(await res.Body.transformToByteArray());
  const parts = { download: [], readState: [], decode: [], parse: [], scan: [] };
  const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ ...common, key: "outputs-last.tfstate" }), connectOptions);
  for (let r = 0; r < ROUNDS; r++) {
    globalThis.gc?.();
    parts.download.push(
      (await timed(async () => (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "outputs-last.tfstate" }))).Body.transformToByteArray())).ms,
    );
    globalThis.gc?.();
    parts.readState.push((await timed(() => backend.readState("default"))).ms);
    globalThis.gc?.();
    parts.scan.push((await timed(() => extractTopLevel(bytes, ["version", "outputs"], { scanThreshold: 0 }))).ms);
    globalThis.gc?.();
    const d = await timed(() => bytes.toString("utf8"));
    parts.decode.push(d.ms);
    parts.parse.push((await timed(() => JSON.parse(d.value))).ms);
  }
  backend.close();
  const f = (k) => `${median(parts[k]).toFixed(0)} ms`;
  console.log(
    `  breakdown (medians): bare SDK download ${f("download")}, objstate readState (digest-checked) ${f("readState")}; UTF-8 decode ${f("decode")} + JSON.parse ${f("parse")} vs scan ${f("scan")}`,
  );
  summary.breakdown = Object.fromEntries(Object.entries(parts).map(([k, xs]) => [k, median(xs)]));
}

// Whole processes, as `objstate output` costs a user: a fresh process for each read
// (bench/outputs-process.mjs), the bare SDK and objstate alternating, both placements.
{
  const child = fileURLToPath(new URL("./outputs-process.mjs", import.meta.url));
  const childEnv = { ...env, BENCH_BUCKET: bucket, BENCH_TABLE: table };
  const spawnRead = (how, key) => {
    const t = performance.now();
    const r = spawnSync(process.execPath, [child, how, key], { encoding: "utf8", env: childEnv, maxBuffer: 64 * MiB });
    const ms = performance.now() - t;
    if (r.status !== 0) throw new Error(`${how} ${key}: exit ${r.status}: ${r.stderr}`);
    assert.deepEqual(JSON.parse(r.stdout), expected);
    return ms;
  };
  for (const placement of ["first", "last"]) {
    const key = `outputs-${placement}.tfstate`;
    spawnRead("sdk", key);
    spawnRead("objstate", key);
    const rounds = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? ["sdk", "objstate"] : ["objstate", "sdk"];
      const t = {};
      for (const how of order) t[how] = spawnRead(how, key);
      rounds.push(t);
    }
    const ratio = median(rounds.map((t) => t.objstate / t.sdk));
    summary[`process-${placement}`] = { sdk: median(rounds.map((t) => t.sdk)), objstate: median(rounds.map((t) => t.objstate)), ratio };
    console.log(
      `  whole processes, outputs ${placement.padEnd(5)}: bare SDK download + parse ${median(rounds.map((t) => t.sdk)).toFixed(0)} ms, objstate fetchOutputs ${median(rounds.map((t) => t.objstate)).toFixed(0)} ms; ratio ${ratio.toFixed(3)} (bound <= 1.0)`,
    );
  }
}

if (env.BENCH_CROSSOVER === "1") {
  // Cold processes: a state is usually read once per process, so the scanner runs cold.
  const child = fileURLToPath(new URL("./outputs-child.mjs", import.meta.url));
  const cold = (bytes, how) => Number(spawnSync(process.execPath, [child, String(bytes), how], { encoding: "utf8" }).stdout);
  const line = [];
  for (const kib of [64, 256, 1024, 2048, 4096]) {
    const scan = [],
      parse = [];
    for (let r = 0; r < 5; r++) {
      scan.push(cold(kib * 1024, "scan"));
      parse.push(cold(kib * 1024, "parse"));
    }
    line.push(`${kib} KiB scan ${median(scan).toFixed(1)} / parse ${median(parse).toFixed(1)} ms`);
  }
  console.log(`  cold crossover (fresh processes, medians): ${line.join("; ")}`);
}
console.log(JSON.stringify(summary));
// Run against servers that outlive the bench (source /tmp/srv/env.sh), 200 MiB a run would pile up.
for (const o of (await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? [])
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.Key }));
await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
await ddb.send(new DeleteTableCommand({ TableName: table }));
s3.destroy();
ddb.destroy();
