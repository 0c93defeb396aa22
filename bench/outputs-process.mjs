// One whole process of the outputs benchmark (bench/outputs.mjs): start, read the outputs
// of one stored state, print them as JSON, exit — what `objstate output` costs a user.
//   node outputs-process.mjs sdk|objstate KEY
// sdk:      a bare SDK GetObject + UTF-8 decode + JSON.parse of the whole state, outputs
//           taken (the baseline);
// objstate: the package's main entry, DataRemoteStateObjectStore#fetchOutputs with the
//           lock table (digest-checked), as published.
// Reads OBJSTATE_TEST_* for the servers and BENCH_BUCKET / BENCH_TABLE.
const [how, key] = process.argv.slice(2);
const env = process.env;
const credentials = { accessKeyId: env.OBJSTATE_TEST_ACCESS_KEY, secretAccessKey: env.OBJSTATE_TEST_SECRET_KEY };
let outputs;
if (how === "sdk") {
  const { S3Client, GetObjectCommand } = await import("@aws-sdk/client-s3");
  const s3 = new S3Client({
    endpoint: env.OBJSTATE_TEST_S3_ENDPOINT,
    region: "us-east-1",
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const res = await s3.send(new GetObjectCommand({ Bucket: env.BENCH_BUCKET, Key: key }));
  const array = await res.Body.transformToByteArray();
  const state = JSON.parse(Buffer.from(array.buffer, array.byteOffset, array.length).toString("utf8"));
  outputs = Object.fromEntries(Object.entries(state.outputs).map(([k, o]) => [k, o.value]));
  s3.destroy();
} else {
  const { DataRemoteStateObjectStore } = await import("objstate");
  const remote = new DataRemoteStateObjectStore("big", {
    bucket: env.BENCH_BUCKET,
    key,
    prefix: "",
    endpoint: env.OBJSTATE_TEST_S3_ENDPOINT,
    accessKey: credentials.accessKeyId,
    secretKey: credentials.secretAccessKey,
    kvstoreTable: env.BENCH_TABLE,
    kvstoreEndpoint: env.OBJSTATE_TEST_DYNAMODB_ENDPOINT,
  });
  outputs = (await remote.fetchOutputs({ env: {}, onWarning: () => undefined })).toJSON();
}
process.stdout.write(`${JSON.stringify(outputs)}\n`);
