// Benchmark of the web console (issue 13): time to answer each page of `objstate serve`
// (the real ObjstateServer, in process, with a users file) over the embedded store with a
// lock table, holding 2,000 workspaces (one in seven locked) and one workspace with 500
// versions. Goal: < 300 ms per page. Timed by the client (in a worker thread, as a browser is
// another process) on loopback, from sending the request to the last byte: an upper bound
// of the server's time.
//
// The Workspaces page is timed twice: its first view (sizes and times from one listing, no
// HEAD and no state read; serial, who and resource counts shown as "…" while read in the
// background) and later views, once they are known. The History page lists the newest 100
// versions (`?all=1`: up to 1,000); the rollback confirmation looks up its two versions (the
// target from the History page viewed before it). BENCH_ROUNDS (default 11) sets the rounds
// per page. The load average is printed before and after: the figures depend on it.
import { rmSync } from "node:fs";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../dist/src/index.js";
import { Logger } from "../dist/src/server/log.js";
import { ObjstateServer } from "../dist/src/server/server.js";
import { hashPassword, parseUsers } from "../dist/src/server/users.js";
import { makeState } from "../dist/test/support/console-memory.js";
import { scratchDir } from "./scratch-dir.mjs";
import { withLowPort } from "../dist/test/support/port.js";

const WORKSPACES = Number(process.env.BENCH_WORKSPACES ?? 2000);
const VERSIONS = Number(process.env.BENCH_VERSIONS ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

const dir = scratchDir("objstate-console-bench-");
let server;
let backend;
let stopClient = async () => undefined;
try {
  const endpoint = `file://${dir}`;
  const config = ObjectStoreBackendConfig.from({ bucket: "bench", endpoint, kvstoreEndpoint: endpoint, kvstoreTable: "locks" });
  backend = await ObjectStoreBackend.connect(config, { env: {}, who: "ci@runner", onWarning: () => {} });
  const setup = performance.now();
  const names = Array.from({ length: WORKSPACES }, (_, i) => `team-${i % 40}-service-${i}`);
  const outs = (tag, n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`out_${i}`, { value: `${tag}-${i}`, sensitive: i % 10 === 0 }]));
  for (let i = 0; i < names.length; i += 16)
    await Promise.all(names.slice(i, i + 16).map((n, j) => backend.writeState(n, makeState(1 + ((i + j) % 50), 20, outs("v", 5)))));
  for (let i = 0; i < names.length; i += 7) await backend.lock(names[i], { operation: "apply", info: `run ${i}` });
  // The history workspace: 500 versions of a state of 100-300 resources (20-60 KiB each).
  const hist = "history-500";
  for (let v = 1; v <= VERSIONS; v++) await backend.writeState(hist, makeState(v, 100 + ((v * 17) % 200), outs(`s${v}`, 100)));
  console.log(`setup: ${WORKSPACES} workspaces + ${VERSIONS} versions written in ${((performance.now() - setup) / 1000).toFixed(1)} s`);

  const users = parseUsers(
    JSON.stringify({ users: { admin: { password: await hashPassword("bench", { N: 1024, r: 8, p: 1 }), roles: { "*": ["admin"] } } } }),
    "users.json",
  );
  server = new ObjstateServer({ backend, users, logger: new Logger("off") });
  await withLowPort((port) => server.listen("127.0.0.1", port));
  const auth = { Authorization: `Basic ${Buffer.from("admin:bench").toString("base64")}` };
  // The client runs in a worker thread, as a browser runs outside the server: its reading of
  // the response must not wait on the server's event loop (nor the server on it).
  const client = new Worker(
    `const { parentPort } = require("node:worker_threads");
     const { performance } = require("node:perf_hooks");
     parentPort.on("message", async ({ url, headers }) => {
       try {
         const s = performance.now();
         const r = await fetch(url, { headers });
         const body = await r.text();
         parentPort.postMessage({ ms: performance.now() - s, status: r.status, body });
       } catch (e) { parentPort.postMessage({ error: String(e) }); }
     });`,
    { eval: true },
  );
  const get = (path) =>
    new Promise((resolve, reject) => {
      client.once("message", (m) => {
        if (m.error !== undefined) reject(new Error(`${path}: ${m.error}`));
        else if (m.status !== 200) reject(new Error(`${path}: HTTP ${m.status}: ${m.body.slice(0, 300)}`));
        else resolve({ ms: m.ms, body: m.body });
      });
      client.postMessage({ url: `${server.url}${path}`, headers: auth });
    });
  stopClient = () => client.terminate();
  const ids = [];
  for await (const v of backend.history(hist, { limit: VERSIONS })) ids.push(v.versionId);

  console.log(`console bench through objstate serve: ${WORKSPACES} workspaces, ${VERSIONS} versions, ${ROUNDS} rounds per page (goal < 300 ms per page)`);
  console.log("page".padEnd(50), "first ms".padStart(9), "median ms".padStart(10), "p95 ms".padStart(8), "bytes".padStart(10));
  let worst = 0;
  const row = (name, first, warm, bytes) => {
    worst = Math.max(worst, q(warm, 0.95));
    console.log(
      name.padEnd(50),
      first.toFixed(1).padStart(9),
      q(warm, 0.5).toFixed(1).padStart(10),
      q(warm, 0.95).toFixed(1).padStart(8),
      String(bytes).padStart(10),
    );
  };
  const time = async (name, path) => {
    const first = await get(path);
    const warm = [];
    let bytes = first.body.length;
    for (let i = 0; i < ROUNDS; i++) {
      const r = await get(path);
      warm.push(r.ms);
      bytes = r.body.length;
    }
    row(name, first.ms, warm, bytes);
  };

  const load = () =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(" ");
  console.log(`load average before: ${load()}`);
  // First view: one listing and one lock listing; serial, who and counts not known yet.
  const cold = await get("/");
  const counting = performance.now();
  while ((await get("/")).body.includes("reload in a moment")) await new Promise((r) => setTimeout(r, 200));
  console.log(
    `(serial, who and resource counts of ${WORKSPACES} workspaces read in the background in ${((performance.now() - counting) / 1000).toFixed(1)} s after the first view)`,
  );
  const warmList = [];
  for (let i = 0; i < ROUNDS; i++) warmList.push((await get("/")).ms);
  row(`Workspaces (${WORKSPACES})`, cold.ms, warmList, cold.body.length);
  await time("Workspaces filtered (?q=service-1)", "/?q=service-1");
  await time(`Lock state JSON (${WORKSPACES})`, "/console/locks");
  await time("Workspace (5 outputs, 10 versions)", `/workspaces/${names[7]}`);
  await time(`Workspace (100 outputs, last 10 of ${VERSIONS} versions)`, `/workspaces/${hist}`);
  await time(`History (newest 100 of ${VERSIONS} + chart)`, `/workspaces/${hist}/history`);
  await time(`History ?all=1 (${VERSIONS} versions + chart of 100)`, `/workspaces/${hist}/history?all=1`);
  await time("Diff (two versions, ~200 resources, 100 outputs)", `/workspaces/${hist}/diff?from=${ids[Math.floor(ids.length / 2)]}&to=${ids[0]}`);
  await time("Rollback confirmation (two versions looked up)", `/workspaces/${hist}/rollback?to=${ids[Math.floor(ids.length / 2)]}`);
  await time(`GET /api/v1/workspaces/{w}/history (${VERSIONS})`, `/api/v1/workspaces/${hist}/history?limit=${VERSIONS}`);
  await time(`GET /api/v1/workspaces (${WORKSPACES})`, "/api/v1/workspaces");
  console.log(`load average after: ${load()}`);
  console.log(
    worst < 300 ? `OK: every page's p95 is under 300 ms (worst ${worst.toFixed(1)} ms)` : `SLOW: a page's p95 is ${worst.toFixed(1)} ms (goal 300 ms)`,
  );
} finally {
  await stopClient();
  await server?.close(1000);
  backend?.close();
  rmSync(dir, { recursive: true, force: true });
}
