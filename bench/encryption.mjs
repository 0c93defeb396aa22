// Micro-bench of state encryption (issue 26) in memory, no store: a 64 MiB state (realistic
// shape) encrypted into an envelope and decrypted back, against the plain work a push and a
// pull do on the same bytes (a copy and an MD5, as the store's digest). Alternating rounds in
// one process; then peak RSS above a fresh process's baseline for each way, in children.
//
//   npm run build --silent && node bench/encryption.mjs [--mib 64] [--rounds 7]
//
// Targets (issue 26): push and pull with aes_gcm ≤ 1.3× without (the real bound is over the
// network, where the plain side is slower still); peak memory ≤ 2× the state.
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { fstatSync, openSync, readFileSync, readSync, closeSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { realisticState } from "./outputs-state.mjs";
import { scratchDir } from "./scratch-dir.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const { parseEncryptionConfig, StateEncryption } = await import(join(here, "../dist/src/encryption/index.js"));

const { values } = parseArgs({
  options: { mib: { type: "string", default: "64" }, rounds: { type: "string", default: "7" }, child: { type: "string" }, file: { type: "string" } },
});
const MIB = Number(values.mib);
const CONFIG = {
  key_provider: { pbkdf2: { main: { passphrase: "bench-passphrase-not-a-secret-0123" } } },
  method: { aes_gcm: { main: { keys: "key_provider.pbkdf2.main" } } },
  state: { method: "method.aes_gcm.main" },
};
const enc = () => StateEncryption.for(parseEncryptionConfig(CONFIG, { source: "bench", literalSecrets: true }));
let HEADER = { serial: 1, lineage: "bench-lineage" };
/** The state's own serial and lineage (near its top), as the caller of encrypt() passes them. */
const headerOf = (state) => {
  const head = state.subarray(0, 4096).toString();
  return { serial: Number(/"serial":\s*(\d+)/.exec(head)[1]), lineage: /"lineage":\s*"([^"]*)"/.exec(head)[1] };
};
const hwm = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))[1]) * 1024;
const rss = () => process.memoryUsage().rss;

/** What a plain push does with the bytes in memory: digest them (the copy is the store's). */
function plainPush(state) {
  return createHash("md5").update(state).digest();
}
/** A plain pull: the bytes arrive in pieces into one buffer, digested. */
function plainPull(stored) {
  const out = Buffer.allocUnsafe(stored.length);
  const h = createHash("md5");
  for (let at = 0; at < stored.length; at += 1 << 20) {
    const piece = stored.subarray(at, at + (1 << 20));
    h.update(piece);
    piece.copy(out, at);
  }
  h.digest();
  return out;
}
/** Encrypted push: the envelope made and digested. */
async function encPush(e, state) {
  const env = await e.encrypt(state, HEADER);
  return createHash("md5").update(env).digest();
}
/** Encrypted pull: the envelope arrives in pieces, digested and decrypted on the way. */
async function encPull(e, stored) {
  const h = createHash("md5");
  const d = e.decryptor({ workspace: "bench" }, stored.length);
  for (let at = 0; at < stored.length; at += 1 << 20) {
    const piece = stored.subarray(at, at + (1 << 20));
    h.update(piece);
    await d.push(piece);
  }
  h.digest();
  return (await d.end()).state;
}

if (values.child !== undefined) {
  // A fresh process: baseline, then one way, then its peak above the baseline.
  const e = enc();
  await e.encrypt(Buffer.from('{"serial":1}'), HEADER); // derive the key before the baseline
  globalThis.gc?.();
  const base = rss();
  let keep;
  if (values.child === "plain-push" || values.child === "enc-push") {
    const state = readFileSync(values.file);
    HEADER = headerOf(state);
    keep = values.child === "plain-push" ? plainPush(state) : await encPush(e, state);
    keep = [keep, state];
  } else {
    // Pulls read the stored bytes in pieces, as from a socket.
    const fd = openSync(values.file, "r");
    const h = createHash("md5");
    // The stored size is known (Content-Length): both ways allocate their result once.
    const size = fstatSync(fd).size;
    const d = values.child === "enc-pull" ? e.decryptor({ workspace: "bench" }, size) : undefined;
    const whole = d === undefined ? Buffer.allocUnsafe(size) : undefined;
    let got = 0;
    const buf = Buffer.allocUnsafe(1 << 20);
    let n;
    while ((n = readSync(fd, buf, 0, buf.length, null)) > 0) {
      const piece = Buffer.from(buf.subarray(0, n));
      h.update(piece);
      if (d !== undefined) await d.push(piece);
      else got += piece.copy(whole, got);
    }
    closeSync(fd);
    keep = d !== undefined ? (await d.end()).state : whole.subarray(0, got);
  }
  process.stdout.write(JSON.stringify({ base, peak: hwm(), bytes: keep.length ?? 0 }) + "\n");
  process.exit(0);
}

const state = realisticState({ bytes: MIB * 1024 * 1024 });
HEADER = headerOf(state);
const e = enc();
const envelope = await e.encrypt(state, HEADER);
const check = await encPull(e, envelope);
if (!check.equals(state)) throw new Error("round trip differs");
console.log(
  `state ${(state.length / 2 ** 20).toFixed(1)} MiB, envelope ${(envelope.length / 2 ** 20).toFixed(1)} MiB (${(envelope.length / state.length).toFixed(3)}×); node ${process.version}`,
);

const rounds = Number(values.rounds);
const t = { plainPush: [], encPush: [], plainPull: [], encPull: [] };
const cpu = { plainPush: [], encPush: [], plainPull: [], encPull: [] };
/** Wall and CPU time of one call (CPU moves less with the load of a shared machine). */
async function time(name, f) {
  const c = process.cpuUsage();
  const s = performance.now();
  await f();
  t[name].push(performance.now() - s);
  const d = process.cpuUsage(c);
  cpu[name].push((d.user + d.system) / 1000);
}
for (let r = 0; r < rounds; r++) {
  await time("plainPush", () => plainPush(state));
  await time("encPush", () => encPush(e, state));
  await time("plainPull", () => plainPull(state));
  await time("encPull", () => encPull(e, envelope));
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const ratio = (enc, plain) => median(enc.map((x, i) => x / plain[i])).toFixed(2);
for (const [label, src] of [
  ["wall", t],
  ["cpu", cpu],
]) {
  const m = Object.fromEntries(Object.entries(src).map(([k, v]) => [k, median(v)]));
  console.log(
    `${label} push: plain ${m.plainPush.toFixed(0)} ms, aes_gcm ${m.encPush.toFixed(0)} ms (+${(m.encPush - m.plainPush).toFixed(0)} ms, ${ratio(src.encPush, src.plainPush)}×)`,
  );
  console.log(
    `${label} pull: plain ${m.plainPull.toFixed(0)} ms, aes_gcm ${m.encPull.toFixed(0)} ms (+${(m.encPull - m.plainPull).toFixed(0)} ms, ${ratio(src.encPull, src.plainPull)}×)`,
  );
}
const m = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)]));
console.log(
  `medians of ${rounds} alternating rounds; encryption throughput ${(state.length / 2 ** 20 / (m.encPush / 1000)).toFixed(0)} MiB/s, decryption ${(state.length / 2 ** 20 / (m.encPull / 1000)).toFixed(0)} MiB/s`,
);

const dir = scratchDir("objstate-bench-enc-");
try {
  writeFileSync(join(dir, "state"), state);
  writeFileSync(join(dir, "envelope"), envelope);
  for (const [way, file] of [
    ["plain-push", "state"],
    ["enc-push", "state"],
    ["plain-pull", "state"],
    ["enc-pull", "envelope"],
  ]) {
    const r = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--child", way, "--file", join(dir, file), "--mib", String(MIB)], {
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`${way}: ${r.stderr}`);
    const { base, peak } = JSON.parse(r.stdout);
    console.log(`peak RSS ${way}: ${((peak - base) / 2 ** 20).toFixed(0)} MiB above baseline = ${((peak - base) / state.length).toFixed(2)}× the state`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
