// `objstate workspace list` (text and --json) against `terraform workspace list` on one bucket
// of BENCH_WORKSPACES workspaces (default 10,000) in the S3 layout, on the real servers (Ceph RGW +
// dynalite), whole processes, alternating in one run. Prints each median and its ratio to
// Terraform's. Run: npm run build && bash scripts/with-servers.sh node bench/workspaces.mjs
// (BENCH_BUCKET: an already seeded bucket; BENCH_BASELINE_CLI: see below)
// (`terraform` on PATH; it runs with a CLI config of its own and talks only to the loopback Ceph).
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { createHash } from "node:crypto";
import { S3Client, CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { DynamoDBClient, CreateTableCommand, BatchWriteItemCommand } from "@aws-sdk/client-dynamodb";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../dist/src/index.js";
import { lastWriteRecord } from "../dist/src/backend/workspaces.js";

const env = process.env;
for (const v of ["OBJSTATE_TEST_S3_ENDPOINT", "OBJSTATE_TEST_DYNAMODB_ENDPOINT"])
  if (!env[v]) throw new Error(`${v} is not set: run with scripts/with-servers.sh`);
const N = Number(env.BENCH_WORKSPACES ?? 10_000);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 5);
const s3Endpoint = env.OBJSTATE_TEST_S3_ENDPOINT;
const ddbEndpoint = env.OBJSTATE_TEST_DYNAMODB_ENDPOINT;
const credentials = { accessKeyId: env.OBJSTATE_TEST_ACCESS_KEY, secretAccessKey: env.OBJSTATE_TEST_SECRET_KEY };
const bucket = env.BENCH_BUCKET ?? `bench-ws-${process.pid}`;
const table = `${bucket}-locks`;
const key = "terraform.tfstate";
const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "dist", "pkg", "cli.cjs");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const s3 = new S3Client({ endpoint: s3Endpoint, region: "us-east-1", forcePathStyle: true, credentials });
const ddb = new DynamoDBClient({ endpoint: ddbEndpoint, region: "us-east-1", credentials });
if (env.BENCH_BUCKET === undefined) {
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
  // The first states through the library (each under its lock, committed); the rest as those
  // writes leave them, faster: the object with objstate's metadata, the digest item with its record.
  const seeder = await ObjectStoreBackend.connect(
    ObjectStoreBackendConfig.from({
      bucket,
      endpoint: s3Endpoint,
      accessKey: credentials.accessKeyId,
      secretKey: credentials.secretAccessKey,
      key,
      kvstoreTable: table,
      kvstoreEndpoint: ddbEndpoint,
    }),
    { env: {}, onWarning: () => undefined, layout: "s3" },
  );
  const t0 = performance.now();
  const names = ["default", ...Array.from({ length: N }, (_, i) => `ws-${String(i).padStart(5, "0")}`)];
  const doc = (w) => JSON.stringify({ version: 4, serial: 1, lineage: `l-${w}`, outputs: {}, resources: [] });
  const THROUGH_LIBRARY = 50;
  for (const w of names.slice(0, THROUGH_LIBRARY)) await seeder.writeState(w, doc(w));
  seeder.close();
  const items = [];
  let next = THROUGH_LIBRARY;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < names.length) {
        const w = names[next++];
        const body = doc(w);
        const md5 = createHash("md5").update(body).digest("hex");
        const path = w === "default" ? key : `env:/${w}/${key}`;
        const meta = {
          "objstate-md5": md5,
          "objstate-serial": "1",
          "objstate-lineage": `l-${w}`,
          "objstate-who": "bench@host",
          "objstate-generation": "1",
          "objstate-parent-md5": "none",
        };
        await s3.send(new PutObjectCommand({ Bucket: bucket, Key: path, Body: body, ContentType: "application/json", Metadata: meta }));
        items.push({ LockID: { S: `${bucket}/${path}-md5` }, Digest: { S: md5 }, Generation: { N: "1" }, LastWrite: { S: lastWriteRecord(md5, meta) } });
      }
    }),
  );
  for (let i = 0; i < items.length; i += 25)
    await ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }));
  process.stderr.write(`seeded ${names.length} states in ${((performance.now() - t0) / 1000).toFixed(1)} s (bucket ${bucket})\n`);
}

// Terraform: an s3 backend on the loopback Ceph, a CLI config of its own, no checkpoint calls.
const tfDir = mkdtempSync(path.join(env.TMPDIR ?? tmpdir(), "bench-ws-tf-"));
mkdirSync(tfDir, { recursive: true });
writeFileSync(path.join(tfDir, "cli.tfrc"), "");
writeFileSync(
  path.join(tfDir, "main.tf"),
  `terraform {
  backend "s3" {
    bucket = "${bucket}"
    key = "${key}"
    region = "us-east-1"
    endpoints = { s3 = "${s3Endpoint}" }
    use_path_style = true
    skip_credentials_validation = true
    skip_requesting_account_id = true
    skip_metadata_api_check = true
    skip_region_validation = true
    skip_s3_checksum = true
  }
}
`,
);
const tfEnv = {
  PATH: env.PATH,
  HOME: tfDir,
  TF_CLI_CONFIG_FILE: path.join(tfDir, "cli.tfrc"),
  TF_IN_AUTOMATION: "1",
  CHECKPOINT_DISABLE: "1",
  AWS_ACCESS_KEY_ID: credentials.accessKeyId,
  AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
  AWS_EC2_METADATA_DISABLED: "true",
};
const init = spawnSync("terraform", ["init", "-input=false", "-no-color"], { cwd: tfDir, env: tfEnv, encoding: "utf8" });
if (init.status !== 0) throw new Error(`terraform init failed: ${init.stderr}`);

const objEnv = {
  PATH: env.PATH,
  HOME: tfDir,
  PROVIDER_ACCESS_KEY: credentials.accessKeyId,
  PROVIDER_SECRET_KEY: credentials.secretAccessKey,
  AWS_EC2_METADATA_DISABLED: "true",
};
const objArgs = ["--bucket", bucket, "--endpoint", s3Endpoint, "--key", key, "--layout", "s3", "--kvstore-table", table, "--kvstore-endpoint", ddbEndpoint];
const objstate = (path, json) => () =>
  spawnSync(process.execPath, [path, "workspace", "list", ...(json ? ["--json"] : []), ...objArgs], { env: objEnv, encoding: "utf8", maxBuffer: 1 << 28 });
const runs = {
  terraform: () => spawnSync("terraform", ["workspace", "list"], { cwd: tfDir, env: tfEnv, encoding: "utf8", maxBuffer: 1 << 28 }),
  objstate: objstate(cli, false),
  "objstate --json": objstate(cli, true),
};
// BENCH_BASELINE_CLI: another build's dist/pkg/cli.cjs, run in the same rounds (a before/after on a loaded machine).
if (env.BENCH_BASELINE_CLI !== undefined)
  Object.assign(runs, { baseline: objstate(env.BENCH_BASELINE_CLI, false), "baseline --json": objstate(env.BENCH_BASELINE_CLI, true) });
const times = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
const lines = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(runs)) {
    const t = performance.now();
    const r = run();
    times[name].push(performance.now() - t);
    if (r.status !== 0) throw new Error(`${name} failed (${r.status}): ${r.stderr}`);
    lines[name] = name.endsWith("--json") ? JSON.parse(r.stdout).length : r.stdout.split("\n").filter((l) => l.trim() !== "").length;
  }
}
const tf = median(times.terraform);
console.log(`workspace list of ${N + 1} workspaces (S3 layout, Ceph RGW + dynalite), median of ${ROUNDS}, whole process:`);
for (const name of Object.keys(runs)) {
  const m = median(times[name]);
  console.log(`  ${name.padEnd(16)} ${(m / 1000).toFixed(2)} s  ${lines[name]} listed  ${(m / tf).toFixed(2)} x terraform`);
}
