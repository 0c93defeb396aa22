// Benchmark of the config layer (issue: package and value objects).
// Prints per-item cost of build + validate + synthesize for 1 backend + 1,000 remote
// states, the library's load time, and whole-process time, each beside a baseline
// measured in the same run (an empty Node process).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);

function wall(args) {
  const s = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { encoding: "utf8" });
  const ms = Number(process.hrtime.bigint() - s) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(" ")} failed: ${r.stderr}`);
  return { ms, stdout: r.stdout };
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const empty = [],
  load = [],
  loadConfig = [],
  whole = [],
  perItem = [],
  perItemNoPrint = [],
  firstPerItem = [],
  inProcLoad = [];
for (let i = 0; i < ROUNDS; i++) {
  empty.push(wall(["-e", ""]).ms);
  load.push(wall(["--input-type=module", "-e", `await import(${JSON.stringify(here("../dist/src/index.js"))})`]).ms);
  loadConfig.push(wall(["--input-type=module", "-e", `await import(${JSON.stringify(here("../dist/src/config-entry.js"))})`]).ms);
  const once = wall([here("./config-workload.mjs"), "1000", "once"]);
  whole.push(once.ms);
  firstPerItem.push(JSON.parse(once.stdout).firstRunPerItemMs);
  const j = JSON.parse(wall([here("./config-workload.mjs"), "1000"]).stdout);
  perItem.push(j.perItemMs);
  perItemNoPrint.push(j.perItemNoPrintMs);
  inProcLoad.push(j.loadMs);
}
const PEER_PER_ITEM = 0.14,
  PEER_LOAD = 180;
const m = {
  emptyNode: median(empty),
  importObjstate: median(load),
  importObjstateConfig: median(loadConfig),
  wholeProcess: median(whole),
  perItemWarm: median(perItem),
  perItemWarmNoPrint: median(perItemNoPrint),
  perItemFirstRun: median(firstPerItem),
  loadInProcess: median(inProcLoad),
};
const loadOverEmpty = m.importObjstate - m.emptyNode;
console.log(`config bench (${ROUNDS} rounds, medians; 1 backend + 1,000 remote states)`);
console.log(`  empty node process           ${m.emptyNode.toFixed(1)} ms   (baseline)`);
console.log(
  `  node + import objstate       ${m.importObjstate.toFixed(1)} ms   load = ${loadOverEmpty.toFixed(1)} ms over baseline; in-process import ${m.loadInProcess.toFixed(1)} ms (target < 60 ms; peer ~${PEER_LOAD} ms)`,
);
console.log(
  `  node + import objstate/config ${m.importObjstateConfig.toFixed(1)} ms   load = ${(m.importObjstateConfig - m.emptyNode).toFixed(1)} ms over baseline (configs + synthesis only, no runtime)`,
);
console.log(
  `  whole process, one workload  ${m.wholeProcess.toFixed(1)} ms   (load + build/validate/synthesize/print 1,001 configs; ${(m.wholeProcess - m.emptyNode).toFixed(1)} ms over baseline)`,
);
console.log(
  `  per remote state, warm       ${(m.perItemWarm * 1000).toFixed(2)} us  (${(PEER_PER_ITEM / m.perItemWarm).toFixed(1)}x cheaper than the peer's ${PEER_PER_ITEM} ms; target >= 10x)`,
);
console.log(
  `  same, without printing   ${(m.perItemWarmNoPrint * 1000).toFixed(2)} us  (${(PEER_PER_ITEM / m.perItemWarmNoPrint).toFixed(1)}x cheaper; build + validate + synthesize to objects, merge)`,
);
console.log(
  `  per remote state, first run  ${(m.perItemFirstRun * 1000).toFixed(2)} us  (${(PEER_PER_ITEM / m.perItemFirstRun).toFixed(1)}x cheaper, cold JIT)`,
);
console.log(JSON.stringify(m));
