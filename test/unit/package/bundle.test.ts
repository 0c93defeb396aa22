/**
 * The published build (dist/pkg, made by scripts/bundle.mjs from src): the entries that
 * package.json exports export what the source entries export, share one set of classes,
 * load their lazy parts (drivers, the outputs reader, the MD5 worker) and map stack
 * frames back to src/*.ts. Needs `npm run build` (the suites of the CLI run the bundled
 * command as well: test/support/cli.ts).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
interface Exports {
  readonly [subpath: string]: { readonly import: string; readonly types: string } | string;
}
const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { exports: Exports; bin: { objstate: string } };
const published = (subpath: string): string => {
  const e = pkg.exports[subpath];
  assert.ok(e !== undefined && typeof e !== "string", `package.json exports ${subpath}`);
  return join(repo, e.import);
};
const load = async (file: string): Promise<Record<string, unknown>> => (await import(pathToFileURL(file).href)) as Record<string, unknown>;

/** What a process loaded of the bundle: the chunks (compiled by node:vm or required), V8's verdict on each chunk's code cache, packages from node_modules and built-ins. */
interface Loaded {
  readonly stdout: string;
  readonly chunks: string[];
  readonly required: string[];
  readonly rejected: Record<string, boolean>;
  readonly fromNodeModules: string[];
  readonly builtins: string[];
  readonly childProcess: boolean;
}
function chunksOf(args: string[]): Loaded {
  const dir = mkdtempSync(join(tmpdir(), "objstate-chunks-"));
  try {
    // Loaded before the program: records each script node:vm compiles, and on exit what was loaded.
    const preload = join(dir, "chunks.cjs");
    writeFileSync(
      preload,
      `const vm = require("node:vm");
const scripts = [];
const Script = vm.Script;
vm.Script = class extends Script { constructor(source, options) { super(source, options); scripts.push([options.filename, this]); } };
const before = new Set(process.moduleLoadList);
process.on("exit", () => {
  const name = (f) => f.split("/").pop();
  const required = Object.keys(require.cache).filter((f) => /\\/pkg\\/objstate-[^/]*\\.cjs$/.test(f)).map(name);
  const rejected = Object.fromEntries(scripts.filter(([f]) => /objstate-[^/]*\\.cjs$/.test(f)).map(([f, s]) => [name(f), s.cachedDataRejected === true]));
  const builtins = process.moduleLoadList.filter((m) => !before.has(m) && m.startsWith("NativeModule ")).map((m) => m.slice(13));
  process.stderr.write("LOADED " + JSON.stringify({ required, rejected, fromNodeModules: Object.keys(require.cache).filter((f) => f.includes("/node_modules/")), builtins }) + "\\n");
});`,
    );
    const r = spawnSync(process.execPath, ["--require", preload, ...args], { encoding: "utf8", timeout: 30_000, env: { ...process.env, NO_COLOR: "1" } });
    assert.equal(r.status, 0, r.stderr);
    const line = /^LOADED (.*)$/m.exec(r.stderr)?.[1];
    assert.ok(line !== undefined, r.stderr);
    const seen = JSON.parse(line) as { required: string[]; rejected: Record<string, boolean>; fromNodeModules: string[]; builtins: string[] };
    return { stdout: r.stdout, ...seen, chunks: [...new Set([...seen.required, ...Object.keys(seen.rejected)])].sort(), childProcess: seen.builtins.includes("child_process") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("the published build", () => {
  it("is built", () => {
    assert.ok(existsSync(published(".")), "run npm run build");
  });

  for (const [subpath, source] of [
    [".", "index"],
    ["./config", "config-entry"],
    ["./state", "state-entry"],
  ] as const) {
    it(`${subpath} exports what src/${source}.ts exports, typed by its .d.ts`, async () => {
      const shipped = await load(published(subpath));
      const emitted = await load(join(repo, "dist", "src", `${source}.js`));
      assert.deepEqual(Object.keys(shipped).sort(), Object.keys(emitted).sort());
      for (const [k, v] of Object.entries(emitted)) assert.equal(typeof shipped[k], typeof v, k);
      const types = (pkg.exports[subpath] as { types: string }).types;
      assert.ok(existsSync(join(repo, types)), types);
    });
  }

  it("objstate and objstate/config share their classes", async () => {
    const main = await load(published("."));
    const config = await load(published("./config"));
    assert.equal(main["ObjstateError"], config["ObjstateError"]);
    assert.equal(main["DataRemoteStateObjectStoreConfig"], config["DataRemoteStateObjectStoreConfig"]);
    const From = config["DataRemoteStateObjectStoreConfig"] as { from(p: object): unknown };
    assert.throws(() => From.from({ bucket: "x" }), main["ObjstateError"] as new () => Error);
  });

  it("writes and reads a state on the embedded store, loading the drivers, the outputs reader and the MD5 worker on demand", async () => {
    const lib = (await load(published("."))) as {
      ObjectStoreBackend: { connect(c: unknown, o: object): Promise<{ writeState(w: string, s: string): Promise<unknown>; close(): void }> };
      ObjectStoreBackendConfig: { from(p: object): unknown };
      DataRemoteStateObjectStore: new (n: string, p: object) => { fetchOutputs(o: object): Promise<{ toJSON(): unknown }> };
    };
    const dir = mkdtempSync(join(tmpdir(), "objstate-bundle-"));
    try {
      const props = { bucket: "states", endpoint: `file://${dir}`, kvstoreEndpoint: `file://${dir}`, kvstoreTable: "locks" };
      const quiet = { onWarning: () => undefined };
      const w = await lib.ObjectStoreBackend.connect(lib.ObjectStoreBackendConfig.from(props), quiet);
      // Large enough (> 4 MiB) that its MD5 is computed in the worker thread.
      const filler = "x".repeat(5 * 1024 * 1024);
      await w.writeState("default", JSON.stringify({ version: 4, serial: 1, lineage: "l", outputs: { a: { value: 1, type: "number" } }, resources: [{ filler }] }));
      w.close();
      const outputs = await new lib.DataRemoteStateObjectStore("net", props).fetchOutputs(quiet);
      assert.deepEqual(outputs.toJSON(), { a: 1 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("every chunk is ASCII (V8 keeps it a one-byte string), escapes standing for the characters", async () => {
    const dir = join(repo, "dist", "pkg");
    for (const f of readdirSync(dir).filter((x) => /\.(c?js)$/.test(x))) assert.doesNotMatch(readFileSync(join(dir, f), "utf8"), /[^\t\n\r\x20-\x7e]/, f);
    const config = (await load(published("./config"))) as { synthesizeProps(input: unknown): unknown };
    assert.throws(() => config.synthesizeProps({ remoteStates: [] }), { message: "remoteStates must be an object of name \u2192 props" });
  });

  it("importing objstate and synthesizing loads neither the backend's runtime modules nor their chunk", () => {
    const program = `import { DataRemoteStateObjectStore, ObjectStoreBackend, mergeToolJson } from ${JSON.stringify(pathToFileURL(published(".")).href)};
mergeToolJson(new DataRemoteStateObjectStore("net", { bucket: "states" }).toToolJson());
console.log(typeof ObjectStoreBackend.connect);`;
    const r = chunksOf(["--input-type=module", "-e", program]);
    assert.equal(r.stdout.trim(), "function");
    assert.deepEqual(r.chunks, ["objstate-core.cjs"]);
    assert.ok(existsSync(join(repo, "dist", "pkg", "objstate-runtime.cjs")));
  });

  it("objstate --help compiles only the core chunk and the command's first chunk, commander included, not node:child_process", () => {
    const r = chunksOf([join(repo, pkg.bin.objstate), "--help"]);
    assert.match(r.stdout, /^Usage: objstate/);
    assert.match(r.stdout, /serve \[options\]/);
    assert.deepEqual(r.chunks, ["objstate-cli.cjs", "objstate-core.cjs"]);
    assert.deepEqual(r.fromNodeModules, []);
    assert.equal(r.childProcess, false);
  });

  it("objstate config loads no package from node_modules and neither node:crypto nor node:readline", () => {
    const r = chunksOf([join(repo, pkg.bin.objstate), "config", "--bucket", "state-bucket"]);
    assert.match(r.stdout, /^bucket\s+state-bucket\s+explicit, from --bucket$/m);
    assert.deepEqual(r.fromNodeModules, []);
    assert.deepEqual(r.builtins.filter((m) => /^(crypto|readline|child_process)/.test(m)), []);
  });

  it("compiles each chunk from the code cache the build made for this V8, or without one", () => {
    const caches = readdirSync(join(repo, "dist", "pkg")).filter((f) => f.endsWith(".cache"));
    assert.ok(caches.includes(`objstate-core.cjs.${process.versions.v8}.cache`) || caches.some((f) => f.startsWith("objstate-core.cjs.")), "the build made no code cache");
    const r = chunksOf([join(repo, pkg.bin.objstate), "config", "--bucket", "state-bucket"]);
    assert.deepEqual(r.chunks, ["objstate-cli-commands.cjs", "objstate-cli.cjs", "objstate-core.cjs", "objstate-runtime.cjs"]);
    if (caches.includes(`objstate-core.cjs.${process.versions.v8}.cache`)) {
      // The Node that built dist: every chunk from its cache, none through require.
      assert.deepEqual(r.rejected, { "objstate-cli-commands.cjs": false, "objstate-cli.cjs": false, "objstate-core.cjs": false, "objstate-runtime.cjs": false });
      assert.deepEqual(r.required, []);
    } else {
      // Another Node (CI's Node 24 runs the dist Node 20 built): no cache for its V8, so require.
      assert.deepEqual(r.rejected, {});
      assert.deepEqual([...r.required].sort(), r.chunks);
    }
  });

  it("a code cache that does not fit its chunk is rejected, and the chunk compiles from its source", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-bad-cache-"));
    try {
      cpSync(join(repo, "dist", "pkg"), join(dir, "pkg"), { recursive: true });
      const cache = (chunk: string): string => join(dir, "pkg", `${chunk}.${process.versions.v8}.cache`);
      // The cache of another chunk: V8's own check (its source hash) must refuse it.
      copyFileSync(join(repo, "dist", "pkg", readdirSync(join(repo, "dist", "pkg")).find((f) => f.startsWith("objstate-cli.cjs.") && f.endsWith(".cache")) ?? "missing"), cache("objstate-core.cjs"));
      const program = `import { mergeToolJson, DataRemoteStateObjectStore } from ${JSON.stringify(pathToFileURL(join(dir, "pkg", "index.js")).href)};
console.log(JSON.stringify(mergeToolJson(new DataRemoteStateObjectStore("net", { bucket: "states" }).toToolJson())));`;
      const r = chunksOf(["--input-type=module", "-e", program]);
      const lib = (await load(published("."))) as { mergeToolJson(...d: unknown[]): unknown; DataRemoteStateObjectStore: new (n: string, p: object) => { toToolJson(): unknown } };
      assert.deepEqual(JSON.parse(r.stdout), lib.mergeToolJson(new lib.DataRemoteStateObjectStore("net", { bucket: "states" }).toToolJson()));
      assert.deepEqual(r.rejected, { "objstate-core.cjs": true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("maps stack frames to src/*.ts with --enable-source-maps", () => {
    const program = `import { DataRemoteStateObjectStoreConfig } from ${JSON.stringify(pathToFileURL(published("./config")).href)};
try { DataRemoteStateObjectStoreConfig.from({ bucket: "x" }); } catch (e) { console.log(e.stack); }`;
    const r = spawnSync(process.execPath, ["--enable-source-maps", "--input-type=module", "-e", program], { encoding: "utf8", timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /src\/config\/validate\.ts:\d+:\d+/);
    assert.match(r.stdout, /src\/config\/base\.ts:\d+:\d+/);
  });

  it("the command is the bundled one, with a shebang, executable", () => {
    const bin = join(repo, pkg.bin.objstate);
    assert.match(readFileSync(bin, "utf8"), /^#!\/usr\/bin\/env node\n/);
    const r = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 30_000 });
    assert.equal(r.stdout.split("\n")[0], `objstate v${(JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string }).version}`);
  });
});
