// Push and pull of a 64 MiB state through the library (ObjectStoreBackend on the embedded
// store and lock table) with aes_gcm against the same without encryption, alternating in one
// process; then peak RSS above a fresh process's baseline (the state already in memory for a
// push) for each way, in children (issue 26).
//
//   npm run build --silent && node bench/encryption-state.mjs [--mib 64] [--rounds 5]
//
// Targets: ratio ≤ 1.3× for push and pull; peak memory ≤ 2× the state above baseline. Also
// prints the MD5 of the envelope against the state's, alternating: a push's floor.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { realisticState } from "./outputs-state.mjs";
import { scratchDir } from "./scratch-dir.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const { ObjectStoreBackend, ObjectStoreBackendConfig, parseEncryptionConfig } = await import(join(here, "../dist/src/index.js"));
const { md5Of } = await import(join(here, "../dist/src/util/md5.js"));

const { values } = parseArgs({
  options: {
    mib: { type: "string", default: "64" },
    rounds: { type: "string", default: "5" },
    child: { type: "string" },
    dir: { type: "string" },
    file: { type: "string" },
  },
});
const MIB = Number(values.mib);
const CONFIG = {
  key_provider: { pbkdf2: { main: { passphrase: "bench-passphrase-not-a-secret-0123" } } },
  method: { aes_gcm: { main: { keys: "key_provider.pbkdf2.main" } } },
  state: { method: "method.aes_gcm.main" },
};
const encryption = parseEncryptionConfig(CONFIG, { source: "bench", literalSecrets: true });
const hwm = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))[1]) * 1024;

async function connect(dir, bucket, encrypted) {
  const endpoint = `file:${dir}`;
  return ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ bucket, endpoint, kvstoreEndpoint: endpoint, kvstoreTable: "locks" }), {
    env: {},
    onWarning: () => undefined,
    encryption: encrypted ? encryption : undefined,
  });
}

/** The state with serial `n` (every push is newer than the last). */
function withSerial(state, n) {
  const text = state.subarray(0, 4096).toString("latin1");
  const m = /"serial":\s*(\d+)/.exec(text);
  const at = m.index + m[0].length - m[1].length;
  return Buffer.concat([state.subarray(0, at), Buffer.from(String(n)), state.subarray(at + m[1].length)]);
}

if (values.child !== undefined) {
  const [kind, way] = values.child.split("-");
  const b = await connect(values.dir, `bench-${kind}`, kind === "enc");
  // Warm up: the key derived, the drivers loaded, before the baseline.
  if (kind === "enc") await b.readState("warm").catch(() => undefined);
  let keep;
  if (way === "push") {
    const state = withSerial(readFileSync(values.file), 900_000);
    globalThis.gc?.();
    const base = process.memoryUsage().rss;
    await b.writeState("default", state);
    keep = state;
    process.stdout.write(JSON.stringify({ base, peak: hwm(), bytes: keep.length }) + "\n");
  } else {
    globalThis.gc?.();
    const base = process.memoryUsage().rss;
    keep = await b.readState("default");
    process.stdout.write(JSON.stringify({ base, peak: hwm(), bytes: keep.length }) + "\n");
  }
  b.close();
  process.exit(0);
}

const state = realisticState({ bytes: MIB * 1024 * 1024 });
const dir = scratchDir("objstate-bench-enc-state-");
try {
  const plain = await connect(dir, "bench-plain", false);
  const enc = await connect(dir, "bench-enc", true);
  await enc.writeState("default", withSerial(state, 1));
  if (!(await enc.readState("default")).equals(withSerial(state, 1))) throw new Error("round trip differs");
  const stored = await enc.readState("default", { stored: true });
  console.log(
    `state ${(state.length / 2 ** 20).toFixed(1)} MiB, envelope ${(stored.length / 2 ** 20).toFixed(1)} MiB; embedded store + lock table; node ${process.version}`,
  );
  const rounds = Number(values.rounds);
  const t = { plainPush: [], encPush: [], plainPull: [], encPull: [] };
  const time = async (name, f) => {
    const s = performance.now();
    await f();
    t[name].push(performance.now() - s);
  };
  for (let r = 0; r < rounds; r++) {
    const next = withSerial(state, 10 + r);
    await time("plainPush", () => plain.writeState("default", next));
    await time("encPush", () => enc.writeState("default", next));
    await time("plainPull", () => plain.readState("default"));
    await time("encPull", () => enc.readState("default"));
  }
  plain.close();
  enc.close();
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const ratio = (e, p) => median(e.map((x, i) => x / p[i])).toFixed(2);
  const m = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)]));
  console.log(`push: plain ${m.plainPush.toFixed(0)} ms, aes_gcm ${m.encPush.toFixed(0)} ms (${ratio(t.encPush, t.plainPush)}×)`);
  console.log(`pull: plain ${m.plainPull.toFixed(0)} ms, aes_gcm ${m.encPull.toFixed(0)} ms (${ratio(t.encPull, t.plainPull)}×)`);
  console.log(`medians of ${rounds} alternating rounds (ratio: median of per-round ratios)`);
  // The digest is the MD5 of the stored bytes (OpenTofu's S3 backend checks it), and the
  // envelope is a third larger: where MD5 is a push's critical path, this is its floor.
  const md5Times = { state: [], envelope: [] };
  for (let r = 0; r < rounds; r++) {
    for (const [k, b] of [
      ["state", state],
      ["envelope", stored],
    ]) {
      const s = performance.now();
      await md5Of(b);
      md5Times[k].push(performance.now() - s);
    }
  }
  console.log(
    `MD5 alone (the worker thread): state ${median(md5Times.state).toFixed(0)} ms, envelope ${median(md5Times.envelope).toFixed(0)} ms (${ratio(md5Times.envelope, md5Times.state)}×)`,
  );
  // A push waits for the MD5 of what it stores; the rest of a plain push (its checks, the
  // commit) an encrypted one has too. So no push of the envelope beats this ratio.
  const fixed = m.plainPush - median(md5Times.state);
  console.log(
    `push floor: (MD5 of the envelope + the plain push's other ${fixed.toFixed(0)} ms) / plain push = ${((median(md5Times.envelope) + fixed) / m.plainPush).toFixed(2)}×`,
  );
  const file = join(dir, "state.json");
  writeFileSync(file, state);
  for (const way of ["plain-push", "enc-push", "plain-pull", "enc-pull"]) {
    const r = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--child", way, "--dir", dir, "--file", file], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${way}: ${r.stderr}`);
    const { base, peak } = JSON.parse(r.stdout);
    console.log(`peak RSS ${way}: ${((peak - base) / 2 ** 20).toFixed(0)} MiB above baseline = ${((peak - base) / state.length).toFixed(2)}× the state`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
