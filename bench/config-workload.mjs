// One process: load objstate, build + validate + synthesize one backend and N remote
// states, merge them into one document. Prints {loadMs, perItemMs, totalMs} as JSON.
const t0 = performance.now();
const lib = await import("../dist/src/index.js");
const t1 = performance.now();
const N = Number(process.argv[2] ?? 1000);
const { ObjectStoreBackendConfig, DataRemoteStateObjectStoreConfig, DataRemoteStateObjectStore, mergeToolJson, formatToolJson } = lib;

function workload(print = true) {
  const docs = [
    ObjectStoreBackendConfig.builder().bucket("state-bucket").key("root.tfstate").kvstoreTable("locks").encrypt(true).region("eu-west-1").build().toToolJson(),
  ];
  for (let i = 0; i < N; i++) {
    const config = DataRemoteStateObjectStoreConfig.from({
      bucket: "state-bucket",
      key: `stack-${i}.tfstate`,
      prefix: "states",
      region: "eu-west-1",
      kvstoreTable: "locks",
      endpoint: "https://s3.example.com",
      assumeRoleSessionExpiration: 1800,
      workspace: "prod",
      defaults: { vpc_id: "vpc-0", subnets: ["a", "b"] },
    });
    docs.push(new DataRemoteStateObjectStore(`stack_${i}`, config).toToolJson());
  }
  const doc = mergeToolJson(...docs);
  return print ? formatToolJson(doc) : doc;
}

const first = performance.now();
let out = workload();
const firstMs = performance.now() - first;
if (process.argv[3] === "once") {
  // Whole-process mode: load, one cold workload, exit.
  process.stdout.write(JSON.stringify({ loadMs: t1 - t0, firstRunPerItemMs: firstMs / (N + 1), bytes: out.length }) + "\n");
  process.exit(0);
}
// Warm runs: the steady per-item cost.
const runs = [];
for (let r = 0; r < 15; r++) {
  const s = performance.now();
  out = workload();
  runs.push(performance.now() - s);
}
runs.sort((a, b) => a - b);
const median = runs[Math.floor(runs.length / 2)];
// The same without printing the document (JSON.stringify of ~0.5 MB with indentation).
const objRuns = [];
for (let r = 0; r < 15; r++) {
  const s = performance.now();
  workload(false);
  objRuns.push(performance.now() - s);
}
objRuns.sort((a, b) => a - b);
const objMedian = objRuns[Math.floor(objRuns.length / 2)];
process.stdout.write(
  JSON.stringify({
    loadMs: t1 - t0,
    firstRunPerItemMs: firstMs / (N + 1),
    perItemMs: median / (N + 1),
    perItemNoPrintMs: objMedian / (N + 1),
    bytes: out.length,
    totalMs: performance.now(),
  }) + "\n",
);
