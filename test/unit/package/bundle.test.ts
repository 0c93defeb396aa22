/**
 * The published build (dist/pkg, made by scripts/bundle.mjs from src): the entries that
 * package.json exports export what the source entries export, share one set of classes,
 * load their lazy parts (drivers, the outputs reader, the MD5 worker) and map stack
 * frames back to src/*.ts. Needs `npm run build` (the suites of the CLI run the bundled
 * command as well: test/support/cli.ts).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
    const program = `import { createRequire } from "node:module";
import { DataRemoteStateObjectStore, ObjectStoreBackend, mergeToolJson } from ${JSON.stringify(pathToFileURL(published(".")).href)};
mergeToolJson(new DataRemoteStateObjectStore("net", { bucket: "states" }).toToolJson());
console.log(typeof ObjectStoreBackend.connect, Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes("objstate-")).join(",") || "none");`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8", timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), "function none");
    assert.ok(existsSync(join(repo, "dist", "pkg", "objstate-runtime.cjs")));
  });

  it("objstate --help compiles only the command's first chunk (no runtime, no commands' chunk)", () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-help-chunks-"));
    try {
      // Loaded before the command: on exit, the bundle's CommonJS chunks that were required.
      const preload = join(dir, "chunks.cjs");
      writeFileSync(preload, `process.on("exit", () => process.stderr.write("chunks: " + Object.keys(require.cache).filter((f) => f.includes("/dist/pkg/objstate-")).map((f) => f.split("/").pop()).join(",") + "\\n"));`);
      const r = spawnSync(process.execPath, ["--require", preload, join(repo, pkg.bin.objstate), "--help"], { encoding: "utf8", timeout: 30_000 });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^Usage: objstate/);
      assert.match(r.stdout, /serve \[options\]/);
      assert.equal(/chunks: (.*)/.exec(r.stderr)?.[1], "objstate-cli.cjs");
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
    assert.equal(r.stdout.trim(), (JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string }).version);
  });
});
