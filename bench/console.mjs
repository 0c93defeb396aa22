/* global fetch */
// Benchmark of the web console (issue 13): server-side time to answer each page for a
// store of 2,000 workspaces and a workspace with 500 versions, goal < 300 ms per page.
// The data come from an in-memory ConsoleApi holding ready-made view data, so the figures
// are the console's own work (routing, role checks, view models, rendering, escaping,
// sending) and not the store's reads, which the backend's benchmarks measure.
// Timed inside the server, from the request's arrival to the response's last byte.
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";
import { CsrfTokens, handleConsole } from "../dist/src/console/index.js";
import { renderHistory } from "../dist/src/console/pages/history.js";
import { renderWorkspaces, sortByLastWrite } from "../dist/src/console/pages/workspaces.js";
import { diffStates } from "../dist/src/state/diff.js";
import { makeState } from "../dist/test/support/console-memory.js";

const WORKSPACES = 2000;
const VERSIONS = 500;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 21);
const t0 = Date.parse("2026-01-01T00:00:00Z");

const summaries = Array.from({ length: WORKSPACES }, (_, i) => ({
  name: `team-${i % 40}-service-${i}`,
  lock: i % 7 === 0 ? { id: `lock-${i}`, who: `user${i % 13}@host-${i % 5}`, operation: "apply", info: `<run ${i}>`, created: new Date(t0 + i * 60_000).toISOString(), expires: i % 14 === 0 ? new Date(t0 + i * 60_000 + 3_600_000).toISOString() : undefined } : null,
  lastWrite: { time: new Date(t0 + ((i * 7919) % WORKSPACES) * 3_600_000).toISOString(), who: `ci@runner-${i % 9}`, serial: i },
  size: 1000 + i * 37,
  resources: i % 300,
}));
const versions = Array.from({ length: VERSIONS }, (_, i) => ({
  versionId: `v-${VERSIONS - i}-${"x".repeat(24)}`,
  lastModified: new Date(t0 + (VERSIONS - i) * 3_600_000).toISOString(),
  size: 50_000 + ((i * 131) % 9000),
  serial: VERSIONS - i,
  lineage: "5f0c3a52-0000-4000-8000-000000000000",
  who: i % 2 === 0 ? "ci@runner" : "alice@laptop",
  operation: "apply",
  isLatest: i === 0,
  deleteMarker: false,
  resources: 200 + ((i * 17) % 100),
}));
const byName = new Map(summaries.map((s) => [s.name, s]));
// A large diff: 500 resources on one side, 400 (changed) on the other, 100 outputs.
const outs = (tag) => Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`out_${i}`, { value: `${tag}-${i}`, sensitive: i % 10 === 0 }]));
const bigDiff = diffStates(makeState(499, 500, outs("a"), "a"), makeState(500, 400, outs("b"), "b"));
const api = {
  hasHistory: true,
  listWorkspaces: async () => summaries,
  workspace: async (w) => byName.get(w) ?? summaries[0],
  lock: async (w) => byName.get(w)?.lock ?? null,
  locks: async () => new Map(summaries.map((s) => [s.name, s.lock])),
  outputs: async () => Array.from({ length: 100 }, (_, i) => ({ name: `out_${i}`, value: JSON.stringify(`value-${i}`), sensitive: i % 10 === 0 })),
  history: async (_w, { limit }) => versions.slice(0, limit),
  diff: async () => bigDiff,
  rollback: async () => ({ serial: VERSIONS + 1 }),
  forceUnlock: async () => {},
};

const csrf = new CsrfTokens();
const timings = [];
const server = createServer((req, res) => {
  const start = performance.now();
  res.on("finish", () => timings.push(performance.now() - start));
  const ctx = { user: "admin", can: () => true, log: () => {}, api, csrf };
  void handleConsole(req, res, ctx);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${server.address().port}`;
const ws = summaries[5].name;
const pages = {
  [`Workspaces (${WORKSPACES})`]: "/",
  [`Workspaces filtered`]: "/?q=service-1",
  "Workspace (100 outputs, 10 versions)": `/workspaces/${ws}`,
  [`History (${VERSIONS} versions + chart)`]: `/workspaces/${ws}/history`,
  "Diff (500/400 resources, 100 outputs)": `/workspaces/${ws}/diff?from=a&to=b`,
  [`Rollback confirmation (${VERSIONS} versions searched)`]: `/workspaces/${ws}/rollback?to=${versions[250].versionId}`,
  [`Lock state JSON (${WORKSPACES})`]: "/console/locks",
};
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
console.log(`console bench: ${WORKSPACES} workspaces, ${VERSIONS} versions, ${ROUNDS} rounds per page (goal < 300 ms per page, server side)`);
console.log("page".padEnd(46), "median ms".padStart(10), "p95 ms".padStart(8), "max ms".padStart(8), "bytes".padStart(10));
let worst = 0;
for (const [name, path] of Object.entries(pages)) {
  timings.length = 0;
  let bytes = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const r = await fetch(`${base}${path}`);
    if (r.status !== 200) throw new Error(`${path}: HTTP ${r.status}`);
    bytes = (await r.arrayBuffer()).byteLength;
  }
  const warm = timings.slice(1); // the first round compiles the code paths
  worst = Math.max(worst, q(warm, 0.95));
  console.log(name.padEnd(46), q(warm, 0.5).toFixed(1).padStart(10), q(warm, 0.95).toFixed(1).padStart(8), Math.max(...warm).toFixed(1).padStart(8), String(bytes).padStart(10));
}
// The pure renderers alone, for comparison with the whole request.
const frame = { base: "", user: "admin", now: Date.now(), csrf: "0.x" };
for (const [name, fn] of [
  [`renderWorkspaces alone (${WORKSPACES})`, () => renderWorkspaces({ frame, rows: sortByLastWrite(summaries), query: "", total: WORKSPACES })],
  [`renderHistory alone (${VERSIONS})`, () => renderHistory({ frame, workspace: ws, versions, canRollback: true })],
]) {
  const xs = [];
  for (let i = 0; i < ROUNDS; i++) {
    const s = performance.now();
    fn();
    xs.push(performance.now() - s);
  }
  console.log(name.padEnd(46), q(xs.slice(1), 0.5).toFixed(1).padStart(10), q(xs.slice(1), 0.95).toFixed(1).padStart(8));
}
console.log(worst < 300 ? `OK: every page's p95 is under 300 ms (worst ${worst.toFixed(1)} ms)` : `SLOW: a page's p95 is ${worst.toFixed(1)} ms (goal 300 ms)`);
server.close();

// The same pages through backendConsoleApi over a real embedded store and lock table: here
// the store's reads are most of it. The first view of the Workspaces page reads every
// state (the "first view" column); later views within summaryTtlMs (10 s) read only the
// locks. BENCH_CONSOLE_STORE=0 skips this part.
if (process.env.BENCH_CONSOLE_STORE !== "0") {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { ObjectStoreBackend, ObjectStoreBackendConfig } = await import("../dist/src/index.js");
  const { backendConsoleApi } = await import("../dist/src/console/index.js");
  const dir = mkdtempSync(join(tmpdir(), "objstate-console-bench-"));
  try {
    const endpoint = `file://${dir}`;
    const config = ObjectStoreBackendConfig.from({ bucket: "bench", endpoint, kvstoreEndpoint: endpoint, kvstoreTable: "locks" });
    const backend = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => {} });
    const state = makeState(3, 20, { url: { value: "https://x" } });
    const names = Array.from({ length: WORKSPACES }, (_, i) => `ws-${i}`);
    for (let i = 0; i < names.length; i += 16) await Promise.all(names.slice(i, i + 16).map((n) => backend.writeState(n, state)));
    for (const n of names.slice(0, 50)) await backend.lock(n, { operation: "apply" });
    const storeApi = backendConsoleApi(backend);
    const storeTimings = [];
    const s2 = createServer((req, res) => {
      const start = performance.now();
      res.on("finish", () => storeTimings.push(performance.now() - start));
      void handleConsole(req, res, { user: "admin", can: () => true, log: () => {}, api: storeApi, csrf });
    });
    await new Promise((r) => s2.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${s2.address().port}`;
    for (const [name, path] of [[`Workspaces via embedded store (${WORKSPACES})`, "/"], [`Lock state JSON via embedded store (${WORKSPACES})`, "/console/locks"], ["Workspace via embedded store", "/workspaces/ws-7"]]) {
      storeTimings.length = 0;
      for (let i = 0; i < 6; i++) await (await fetch(`${url}${path}`)).arrayBuffer();
      const warm = storeTimings.slice(1);
      console.log(name.padEnd(46), q(warm, 0.5).toFixed(1).padStart(10), q(warm, 0.95).toFixed(1).padStart(8), Math.max(...warm).toFixed(1).padStart(8), `  first view ${(storeTimings[0] ?? 0).toFixed(1)} ms`);
    }
    s2.close();
    backend.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
