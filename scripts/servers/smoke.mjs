// Quick check that the test servers work the way the tests need them to.
//
//   bash scripts/with-servers.sh node scripts/servers/smoke.mjs
//
// Reads OBJSTATE_TEST_S3_ENDPOINT, OBJSTATE_TEST_ACCESS_KEY, OBJSTATE_TEST_SECRET_KEY,
// OBJSTATE_TEST_ROLE_ARN and OBJSTATE_TEST_DYNAMODB_ENDPOINT. Prints one line per
// check; exits 1 if any check fails, 2 if a variable is missing.
import { S3Client, CreateBucketCommand, PutObjectCommand, GetObjectCommand } from "@aws-sdk/client-s3";
import { performance } from "node:perf_hooks";
import { STSClient, AssumeRoleCommand } from "@aws-sdk/client-sts";
import { DynamoDBClient, CreateTableCommand, DescribeTableCommand } from "@aws-sdk/client-dynamodb";

const env = {};
for (const name of [
  "OBJSTATE_TEST_S3_ENDPOINT",
  "OBJSTATE_TEST_ACCESS_KEY",
  "OBJSTATE_TEST_SECRET_KEY",
  "OBJSTATE_TEST_ROLE_ARN",
  "OBJSTATE_TEST_DYNAMODB_ENDPOINT",
]) {
  if (!process.env[name]) {
    console.error(`smoke: ${name} is not set (run me through scripts/with-servers.sh)`);
    process.exit(2);
  }
  env[name] = process.env[name];
}

const region = "us-east-1"; // another region makes CreateBucket send a LocationConstraint: 400 (G8)
const s3Options = (credentials) => ({
  endpoint: env.OBJSTATE_TEST_S3_ENDPOINT,
  region,
  forcePathStyle: true,
  // G1: radosgw 16 does not understand aws-chunked bodies with trailing checksums.
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED",
  credentials,
});
const userCreds = {
  accessKeyId: env.OBJSTATE_TEST_ACCESS_KEY,
  secretAccessKey: env.OBJSTATE_TEST_SECRET_KEY,
};
const s3 = new S3Client(s3Options(userCreds));

let failed = 0;
async function check(name, fn) {
  const t0 = performance.now();
  try {
    const detail = await fn();
    const ms = (performance.now() - t0).toFixed(0);
    console.log(`ok   ${name} (${ms} ms)${detail ? ` - ${detail}` : ""}`);
  } catch (err) {
    failed++;
    const status = err?.$metadata?.httpStatusCode;
    console.log(`FAIL ${name}: ${err?.name ?? "Error"}${status ? ` (HTTP ${status})` : ""}: ${err?.message ?? err}`);
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

const stamp = `${Date.now().toString(36)}-${process.pid}`;
const bucket = `smoke-${stamp}`;
const key = "dir/state.json";
const body = JSON.stringify({ hello: "world", stamp });

await check(`CreateBucket ${bucket}`, async () => {
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
});

await check("PutObject + GetObject round-trip", async () => {
  const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: "application/json" }));
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const text = await got.Body.transformToString();
  assert(text === body, `body differs: ${text}`);
  assert(got.ETag === put.ETag, `ETag differs: ${got.ETag} vs ${put.ETag}`);
  return `ETag ${put.ETag}`;
});

await check("PutObject If-None-Match: * on an existing key gives 412", async () => {
  let status;
  try {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: "other", IfNoneMatch: "*" }));
  } catch (err) {
    // G7: RGW errors have no message; look at the name / status.
    status = err?.$metadata?.httpStatusCode;
    if (status !== 412) throw err;
  }
  assert(status === 412, "the conditional put succeeded");
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  assert((await got.Body.transformToString()) === body, "content changed");
  return "PreconditionFailed, content unchanged";
});

await check("STS AssumeRole, then GetObject with the temporary credentials", async () => {
  const sts = new STSClient({ endpoint: env.OBJSTATE_TEST_S3_ENDPOINT, region, credentials: userCreds });
  const res = await sts.send(
    new AssumeRoleCommand({
      RoleArn: env.OBJSTATE_TEST_ROLE_ARN,
      RoleSessionName: "smoke-session", // G9: at least 2 chars
      DurationSeconds: 900, // G9: 900..3600 by default
    }),
  );
  const c = res.Credentials;
  assert(c?.AccessKeyId && c.SecretAccessKey && c.SessionToken, "no temporary credentials");
  const tmp = new S3Client(s3Options({ accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken }));
  const got = await tmp.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  assert((await got.Body.transformToString()) === body, "body differs");
  return res.AssumedRoleUser?.Arn;
});

await check("dynalite CreateTable + DescribeTable", async () => {
  const ddb = new DynamoDBClient({
    endpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT,
    region,
    credentials: { accessKeyId: "fake", secretAccessKey: "fake" },
  });
  const TableName = `smoke-locks-${stamp}`;
  await ddb.send(
    new CreateTableCommand({
      TableName,
      AttributeDefinitions: [{ AttributeName: "LockID", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "LockID", KeyType: "HASH" }],
      BillingMode: "PAY_PER_REQUEST",
    }),
  );
  const d = await ddb.send(new DescribeTableCommand({ TableName }));
  assert(d.Table?.TableStatus === "ACTIVE", `status ${d.Table?.TableStatus}`);
  return `${TableName} ACTIVE`;
});

console.log(failed ? `smoke: ${failed} check(s) failed` : "smoke: all checks passed");
process.exit(failed ? 1 : 0);
