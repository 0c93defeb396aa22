// `objstate state push` of a 64 MiB state as whole processes, against a bare PutObject
// script of the same file, alternating (issue 38: <= 1.5x). Run with:
//   npm run build && bash scripts/with-servers.sh node bench/state-push.mjs
// A realistic pretty-printed state (bench/outputs-state.mjs) in a file; the push goes
// through the CLI as published (dist/pkg/cli.cjs) with a lock table; the bare script reads
// the file and sends it with its Content-MD5 (what any careful uploader does).
// Env: BENCH_STATE_MIB (default 64), BENCH_ROUNDS (default 7).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { S3Client, CreateBucketCommand } from "@aws-sdk/client-s3";
import { realisticState } from "./outputs-state.mjs";

const env = process.env;
for (const v of ["OBJSTATE_TEST_S3_ENDPOINT", "OBJSTATE_TEST_DYNAMODB_ENDPOINT"])
  if (!env[v]) throw new Error(`${v} is not set: run through scripts/with-servers.sh`);
const SIZE = Number(env.BENCH_STATE_MIB ?? 64) * 1024 * 1024;
const ROUNDS = Number(env.BENCH_ROUNDS ?? 7);
const credentials = { accessKeyId: env.OBJSTATE_TEST_ACCESS_KEY, secretAccessKey: env.OBJSTATE_TEST_SECRET_KEY };
const bucket = `bench-push-${process.pid}`;
const s3 = new S3Client({ endpoint: env.OBJSTATE_TEST_S3_ENDPOINT, region: "us-east-1", forcePathStyle: true, credentials });
await s3.send(new CreateBucketCommand({ Bucket: bucket }));
s3.destroy();
const dir = mkdtempSync(join(tmpdir(), "bench-push-"));
const file = join(dir, "state.json");
writeFileSync(file, realisticState({ bytes: SIZE, outputsFirst: true }));
const config = join(dir, "backend.json");
writeFileSync(
  config,
  JSON.stringify({
    bucket,
    key: "push.tfstate",
    prefix: "",
    endpoint: env.OBJSTATE_TEST_S3_ENDPOINT,
    kvstoreTable: `bench-push-locks-${process.pid}`,
    kvstoreEndpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT,
  }),
);
const bare = join(dir, "bare.mjs");
writeFileSync(
  bare,
  `import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { S3Client, PutObjectCommand } from ${JSON.stringify(import.meta.resolve("@aws-sdk/client-s3"))};
const s3 = new S3Client({ endpoint: process.env.OBJSTATE_TEST_S3_ENDPOINT, region: "us-east-1", forcePathStyle: true,
  credentials: { accessKeyId: process.env.OBJSTATE_TEST_ACCESS_KEY, secretAccessKey: process.env.OBJSTATE_TEST_SECRET_KEY },
  requestChecksumCalculation: "WHEN_REQUIRED", responseChecksumValidation: "WHEN_REQUIRED" });
const body = readFileSync(process.argv[2]);
await s3.send(new PutObjectCommand({ Bucket: ${JSON.stringify(bucket)}, Key: "bare.tfstate", Body: body, ContentMD5: createHash("md5").update(body).digest("base64") }));
s3.destroy();
`,
);
const cli = fileURLToPath(new URL("../dist/pkg/cli.cjs", import.meta.url));
const childEnv = {
  ...env,
  AWS_ACCESS_KEY_ID: credentials.accessKeyId,
  AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
};
const run = (args) => {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { env: childEnv, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${args.join(" ")} failed: ${r.stderr}`);
  return performance.now() - t;
};
// The table is created by the first push; one warm-up of each.
run([cli, "init", "--create-bucket", "--create-table", "--config", config]);
const push = () => run([cli, "state", "push", file, "--force", "--config", config]);
const sdk = () => run([bare, file]);
push();
sdk();
const ratios = [];
for (let r = 0; r < ROUNDS; r++) {
  const [a, b] = r % 2 === 0 ? [push(), sdk()] : [sdk(), push()].reverse();
  ratios.push(a / b);
  console.log(`round ${r + 1}: push ${a.toFixed(0)} ms, bare PutObject ${b.toFixed(0)} ms, ${(a / b).toFixed(2)}x`);
}
ratios.sort((x, y) => x - y);
const med = ratios[Math.floor(ratios.length / 2)];
console.log(
  `state push of ${SIZE / 1048576} MiB, whole process: median ${med.toFixed(2)}x a bare PutObject script (bound <= 1.5x): ${med <= 1.5 ? "PASS" : "FAIL"}`,
);
rmSync(dir, { recursive: true, force: true });
