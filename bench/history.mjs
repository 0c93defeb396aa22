// Benchmarks of versions against the real servers (Ceph RGW, versioned bucket).
// Run with: npm run bench:history   (starts and stops the servers itself)
//  1. `history --limit 50` of a 64 MiB state with 200 versions: bytes read (counted by a
//     loopback proxy between the client and RGW) and time, vs one bare ListObjectVersions
//     page plus 50 bare ranged GETs of the same size (sequential, and 8 at a time as
//     objstate does), alternating in the same run.
//  2. `diff` of two 64 MiB versions: time and peak RSS vs two bare GETs plus two JSON.parse.
//
// Memory on Ceph stays bounded: the 200 versions are made by CopyObject of the first one
// with MetadataDirective REPLACE (RGW copies the head, about 4 MiB, and shares the tail
// RADOS objects by refcount), so they cost about 200 x 4 MiB, not 200 x 64 MiB. Every
// version and the bucket are deleted at the end.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, request as httpRequest, Agent } from "node:http";
import { fileURLToPath } from "node:url";
import {
  S3Client,
  CreateBucketCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  CopyObjectCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  DeleteObjectCommand,
  DeleteBucketCommand,
} from "@aws-sdk/client-s3";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../dist/src/index.js";
import { diffStates, formatStateDiff } from "../dist/src/state-entry.js";
import { listenLow } from "../dist/test/support/port.js";

const env = process.env;
if (!env.OBJSTATE_TEST_S3_ENDPOINT) throw new Error("OBJSTATE_TEST_S3_ENDPOINT is not set: run through scripts/with-servers.sh (npm run bench:history)");
const MiB = 1024 * 1024;
const SIZE = Number(env.BENCH_STATE_MIB ?? 64) * MiB;
const VERSIONS = Number(env.BENCH_VERSIONS ?? 200);
const LIMIT = 50;
const PEEK = 4096;
const ROUNDS = Number(env.BENCH_ROUNDS ?? 9);
const credentials = { accessKeyId: env.OBJSTATE_TEST_ACCESS_KEY, secretAccessKey: env.OBJSTATE_TEST_SECRET_KEY };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const timed = async (fn) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

/** A v4 state of about `size` bytes: many resources, so a diff has real work to do. */
function bigState(serial, size, variant) {
  const resources = [];
  const pad = randomBytes(300).toString("hex");
  let bytes = 0;
  for (let i = 0; bytes < size - 1024; i++) {
    // The variant changes one resource in 1000, drops a few and adds a few.
    if (variant === 1 && i % 5000 === 7) continue;
    const r = {
      mode: "managed",
      type: "example_thing",
      name: `r${i}`,
      provider: 'provider["registry.example/x/y"]',
      instances: [{ schema_version: 0, attributes: { id: `id-${i}`, tag: variant === 1 && i % 1000 === 3 ? "changed" : "same", pad } }],
    };
    bytes += JSON.stringify(r).length + 1;
    resources.push(r);
  }
  if (variant === 1)
    for (let j = 0; j < 10; j++)
      resources.push({
        mode: "managed",
        type: "example_thing",
        name: `new${j}`,
        provider: 'provider["registry.example/x/y"]',
        instances: [{ schema_version: 0, attributes: { id: `n-${j}` } }],
      });
  return Buffer.from(
    JSON.stringify({
      version: 4,
      terraform_version: "1.9.0",
      serial,
      lineage: "bench-lineage",
      outputs: { pw: { value: "secret", type: "string", sensitive: true } },
      resources,
    }),
  );
}

// ------------------------------------------------------------------ child: peak memory of one diff
if (process.argv[2] === "child") {
  const [, , , impl, bucket, key, fromId, toId, proxyEndpoint] = process.argv;
  const s3 = new S3Client({
    endpoint: proxyEndpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const base = process.memoryUsage().rss;
  if (impl === "sdk") {
    const get = async (v) => Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: v }))).Body.transformToByteArray());
    const [a, b] = await Promise.all([get(fromId), get(toId)]);
    const pa = JSON.parse(a.toString("utf8"));
    const pb = JSON.parse(b.toString("utf8"));
    if (pa.resources.length === pb.resources.length) throw new Error("no difference");
  } else {
    const b = await ObjectStoreBackend.connect(
      ObjectStoreBackendConfig.from({
        bucket,
        key: "tool.tfstate",
        prefix: "",
        endpoint: proxyEndpoint,
        accessKey: credentials.accessKeyId,
        secretKey: credentials.secretAccessKey,
      }),
      { env: {}, onWarning: () => undefined },
    );
    const [x, y] = await Promise.all([b.readVersion("diff", fromId), b.readVersion("diff", toId)]);
    const d = diffStates(x, y);
    formatStateDiff(d);
    b.close();
  }
  process.stdout.write(JSON.stringify({ baselineRss: base, peakRss: process.resourceUsage().maxRSS * 1024 }));
  process.exit(0);
}

// ------------------------------------------------------------------ a counting loopback proxy
const upstream = new URL(env.OBJSTATE_TEST_S3_ENDPOINT);
const agent = new Agent({ keepAlive: true });
const counter = { bytes: 0, requests: 0 };
const proxy = createServer((req, res) => {
  counter.requests++;
  const up = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent }, (r) => {
    res.writeHead(r.statusCode ?? 502, r.headers);
    r.on("data", (c) => (counter.bytes += c.length));
    r.pipe(res);
  });
  up.on("error", () => res.destroy());
  req.pipe(up);
});
await listenLow(proxy);
const proxyEndpoint = `http://127.0.0.1:${proxy.address().port}`;
const counted = async (fn) => {
  const before = { ...counter };
  const ms = await timed(fn);
  return { ms, bytes: counter.bytes - before.bytes, requests: counter.requests - before.requests };
};

const s3 = new S3Client({
  endpoint: proxyEndpoint,
  region: "us-east-1",
  forcePathStyle: true,
  credentials,
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED",
});
const bucket = `bench-history-${process.pid}`;
await s3.send(new CreateBucketCommand({ Bucket: bucket }));
await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: "Enabled" } }));
const backend = await ObjectStoreBackend.connect(
  ObjectStoreBackendConfig.from({
    bucket,
    key: "tool.tfstate",
    prefix: "",
    endpoint: proxyEndpoint,
    accessKey: credentials.accessKeyId,
    secretKey: credentials.secretAccessKey,
  }),
  { env: {}, onWarning: () => undefined },
);
const key = backend.statePath("default");
const diffKey = backend.statePath("diff");

try {
  console.log(
    `history bench: ${SIZE / MiB} MiB state, ${VERSIONS} versions, --limit ${LIMIT}, ${ROUNDS} alternating rounds; diff of two ${SIZE / MiB} MiB versions`,
  );
  const first = Buffer.concat([
    Buffer.from(`{"version":4,"terraform_version":"1.9.0","serial":1,"lineage":"bench-lineage","pad":"`),
    Buffer.alloc(SIZE - 120, 0x61),
    Buffer.from('"}'),
  ]);
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: first, ContentType: "application/json" }));
  const made = performance.now();
  for (let v = 2; v <= VERSIONS; v++) {
    await s3.send(
      new CopyObjectCommand({
        Bucket: bucket,
        Key: key,
        CopySource: `${bucket}/${key}`,
        MetadataDirective: "REPLACE",
        ContentType: "application/json",
        // Every other version looks written by objstate; the rest by another client (header scan).
        Metadata:
          v % 2 === 0
            ? { "objstate-serial": String(v), "objstate-lineage": "bench-lineage", "objstate-who": "bench@host", "objstate-operation": "apply" }
            : { n: String(v) },
      }),
    );
  }
  console.log(`  made ${VERSIONS} versions by CopyObject in ${((performance.now() - made) / 1000).toFixed(1)} s`);

  // 1. history --limit 50
  const objstateHistory = async () => {
    let n = 0;
    for await (const v of backend.history("default", { limit: LIMIT })) if (v.serial !== undefined || v.lineage !== undefined) n++;
    if (n !== LIMIT) throw new Error(`history gave ${n} described versions`);
  };
  const barePage = () => s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key, MaxKeys: LIMIT }));
  const ranged = (v) =>
    s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: v, Range: `bytes=0-${PEEK - 1}` })).then((r) => r.Body.transformToByteArray());
  const bareSequential = async () => {
    const page = await barePage();
    for (const v of page.Versions ?? []) await ranged(v.VersionId);
  };
  const bareParallel = async () => {
    const page = await barePage();
    const ids = (page.Versions ?? []).map((v) => v.VersionId);
    for (let i = 0; i < ids.length; i += 8) await Promise.all(ids.slice(i, i + 8).map(ranged));
  };
  const rows = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? ["o", "s", "p"] : ["p", "s", "o"];
    const got = {};
    for (const which of order) got[which] = await counted(which === "o" ? objstateHistory : which === "s" ? bareSequential : bareParallel);
    rows.push(got);
  }
  const o = rows.map((x) => x.o);
  console.log(
    `  history --limit ${LIMIT}: objstate ${median(o.map((x) => x.ms)).toFixed(0)} ms, ${median(o.map((x) => x.requests))} requests, ${(median(o.map((x) => x.bytes)) / 1024).toFixed(0)} KiB read ` +
      `(budget ${LIMIT} x ${PEEK / 1024} KiB = ${(LIMIT * PEEK) / 1024} KiB of bodies plus one listing page)`,
  );
  console.log(
    `    bare page + ${LIMIT} ranged GETs: sequential ${median(rows.map((x) => x.s.ms)).toFixed(0)} ms (${(median(rows.map((x) => x.s.bytes)) / 1024).toFixed(0)} KiB), 8 at a time ${median(rows.map((x) => x.p.ms)).toFixed(0)} ms (${(median(rows.map((x) => x.p.bytes)) / 1024).toFixed(0)} KiB)`,
  );
  console.log(
    `    median per-round ratio: vs sequential ${median(rows.map((x) => x.o.ms / x.s.ms)).toFixed(2)}x, vs 8 at a time ${median(rows.map((x) => x.o.ms / x.p.ms)).toFixed(2)}x (target <= 2x); bytes vs bare ${median(rows.map((x) => x.o.bytes / x.p.bytes)).toFixed(2)}x`,
  );

  // 2. diff of two big versions
  const a = bigState(1, SIZE, 0);
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: diffKey, Body: a, ContentType: "application/json" }));
  const b = bigState(2, SIZE, 1);
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: diffKey, Body: b, ContentType: "application/json" }));
  const ids = [];
  for await (const v of backend.history("diff")) ids.push(v.versionId);
  const [toId, fromId] = ids;
  const diffRounds = [];
  const diffObjstate = async () => {
    const [x, y] = await Promise.all([backend.readVersion("diff", fromId), backend.readVersion("diff", toId)]);
    const d = diffStates(x, y);
    formatStateDiff(d);
    if (d.resources.added.length === 0) throw new Error("no difference found");
  };
  const diffBare = async () => {
    const get = async (v) =>
      Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: diffKey, VersionId: v }))).Body.transformToByteArray());
    const [x, y] = await Promise.all([get(fromId), get(toId)]);
    JSON.parse(x.toString("utf8"));
    JSON.parse(y.toString("utf8"));
  };
  for (let r = 0; r < Math.min(ROUNDS, 5); r++) {
    let t1, t2;
    if (r % 2 === 0) {
      t1 = await timed(diffObjstate);
      t2 = await timed(diffBare);
    } else {
      t2 = await timed(diffBare);
      t1 = await timed(diffObjstate);
    }
    diffRounds.push({ o: t1, s: t2 });
  }
  const child = (impl) => {
    // Straight to RGW: this process (and its proxy) waits in spawnSync meanwhile.
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "child", impl, bucket, diffKey, fromId, toId, env.OBJSTATE_TEST_S3_ENDPOINT], {
      env,
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`diff child ${impl} failed: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const memO = child("objstate");
  const memS = child("sdk");
  const over = (m) => ((m.peakRss - m.baselineRss) / SIZE).toFixed(2);
  console.log(
    `  diff of two ${SIZE / MiB} MiB versions: objstate ${median(diffRounds.map((x) => x.o)).toFixed(0)} ms vs two bare GETs + two JSON.parse ${median(diffRounds.map((x) => x.s)).toFixed(0)} ms; ` +
      `median per-round ratio ${median(diffRounds.map((x) => x.o / x.s)).toFixed(2)}x (goal <= 1.5x); peak RSS above baseline ${over(memO)}x one state (bare ${over(memS)}x)`,
  );
} finally {
  backend.close();
  // Every version and delete marker, then the bucket: nothing of the bench stays on the server.
  let keyMarker;
  let versionMarker;
  do {
    const page = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, KeyMarker: keyMarker, VersionIdMarker: versionMarker }));
    for (const v of [...(page.Versions ?? []), ...(page.DeleteMarkers ?? [])])
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: v.Key, VersionId: v.VersionId }));
    keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
    versionMarker = page.IsTruncated ? page.NextVersionIdMarker : undefined;
  } while (keyMarker !== undefined);
  await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
  s3.destroy();
  proxy.close();
  agent.destroy();
}
