/**
 * The published package as a user gets it: `npm pack` of the built tree, installed into an
 * empty directory with npm (its dependencies from the npm cache, else the configured
 * registry), then the command through `npx`, and a strict TypeScript consumer of both
 * entries compiled with `moduleResolution` node16 and bundler, and run.
 * Needs `npm run build` first (the bundle in dist/pkg is what is packed).
 */
import assert from "node:assert/strict";
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
const tsc = join(repo, "node_modules", "typescript", "bin", "tsc");
const version = (JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string }).version;
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const npx = process.platform === "win32" ? "npx.cmd" : "npx";

const KEPT_NPM = new Set(["npm_config_registry", "npm_config_cache", "npm_config_userconfig", "npm_config_globalconfig", "npm_config_cafile", "npm_config_proxy", "npm_config_https_proxy", "npm_config_noproxy", "npm_config_strict_ssl"]);

function run(cmd: string, args: string[], cwd: string, timeout = 120_000): SpawnSyncReturns<string> {
  // Run under `npm test`, the environment carries the outer npm's settings (its local
  // prefix is this repository): only those that say where packages come from are kept.
  const env: Record<string, string | undefined> = { NO_COLOR: "1", npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) || KEPT_NPM.has(k.toLowerCase())) env[k] ??= v;
  const r = spawnSync(cmd, args, { cwd, env, encoding: "utf8", timeout });
  assert.equal(r.status, 0, `${cmd} ${args.join(" ")} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r;
}

const CONSUMER = `
import { DataRemoteStateObjectStore, ObjectStoreBackend, ObjectStoreBackendConfig, formatToolJson, isObjstateError, mergeToolJson, type ToolJson } from "objstate";
import { DataRemoteStateObjectStoreConfig, ConfigError } from "objstate/config";
import { diffStates } from "objstate/state";

const backend = ObjectStoreBackendConfig.builder().bucket("state-bucket").key("app.tfstate").kvstoreTable("locks").encrypt(true).build();
const net = new DataRemoteStateObjectStore("net", DataRemoteStateObjectStoreConfig.builder().bucket("state-bucket").key("net.tfstate").defaults({ vpc_id: "none" }).build());
const vpc: string = net.getString("vpc_id");
const doc: ToolJson = mergeToolJson(backend.toToolJson(), net.toToolJson());
let code: string | undefined;
try {
  DataRemoteStateObjectStoreConfig.from({ bucket: "x" });
} catch (e) {
  if (e instanceof ConfigError && isObjstateError(e)) code = e.code;
}
const connect: typeof ObjectStoreBackend.connect = ObjectStoreBackend.connect;
const diff = diffStates(null, null);
process.stdout.write(JSON.stringify({ vpc, code, connect: typeof connect, diff: typeof diff, doc: JSON.parse(formatToolJson(doc)) as unknown }));
`;

function tsconfig(moduleKind: string, resolution: string, outDir: string): string {
  return JSON.stringify({
    compilerOptions: {
      target: "ES2022",
      module: moduleKind,
      moduleResolution: resolution,
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      // The published .d.ts files are checked too.
      skipLibCheck: false,
      outDir,
      typeRoots: [join(repo, "node_modules", "@types")],
      types: ["node"],
    },
    files: ["consumer.ts"],
  });
}

describe("the packed package, installed into an empty directory", () => {
  let work = "";
  let app = "";
  before(() => {
    assert.ok(existsSync(join(repo, "dist", "pkg", "index.js")), "build the package first: npm run build");
    work = mkdtempSync(join(tmpdir(), "objstate-pack-"));
    const packed = run(npm, ["pack", "--json", "--ignore-scripts", "--pack-destination", work], repo);
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    assert.ok(info !== undefined);
    const paths = info.files.map((f) => f.path);
    // Only what a user needs: the bundle and its maps, the types, the MD5 worker, the outputs
    // scan worker and the three modules it imports, the server's diff worker and the modules
    // it imports, and the field reference the README links (decision records and bench figures
    // stay in the repository).
    const stray = paths.filter((p) => !/^(dist\/pkg\/[^/]+|dist\/src\/.+\.d\.ts|dist\/src\/util\/(md5-worker|json-bytes|json-validate|json-error|redact)\.js|dist\/src\/remote-state\/(scan-worker|stream-scan|extract-outputs|exact-json)\.js|dist\/src\/server\/diff-worker\.js|dist\/src\/state\/(diff|document|address|compare)\.js|dist\/src\/errors\.js|README\.md|LICENSE|package\.json|docs\/fields\.md)$/.test(p));
    assert.deepEqual(stray, []);
    for (const p of ["LICENSE", "README.md", "dist/pkg/index.js", "dist/pkg/objstate-core.cjs.map", "dist/src/index.d.ts", "dist/src/remote-state/scan-worker.js", "dist/src/util/json-validate.js", "docs/fields.md"]) assert.ok(paths.includes(p), `${p} missing from the package`);
    app = join(work, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    run(npm, ["install", "--prefer-offline", "--ignore-scripts", "--no-package-lock", join(work, info.filename)], app, 300_000);
  });
  after(() => {
    if (work !== "") rmSync(work, { recursive: true, force: true });
  });

  it("npx objstate --version prints the package's version", () => {
    assert.equal(run(npx, ["--no", "--", "objstate", "--version"], app).stdout.split("\n")[0], `objstate v${version}`);
  });

  it("objstate config shows the settings and where each came from", () => {
    const out = run(npx, ["--no", "--", "objstate", "config", "--bucket", "state-bucket", "--key", "app.tfstate"], app).stdout;
    assert.match(out, /^bucket +state-bucket +explicit, from --bucket$/m);
    assert.match(out, /^credentials: /m);
    // commander is bundled into the command's chunk (with its licence), not installed.
    assert.equal(existsSync(join(app, "node_modules", "commander")), false);
    assert.match(readFileSync(join(app, "node_modules", "objstate", "dist", "pkg", "objstate-cli.cjs"), "utf8"), /^\/\/ commander:\n\/\/ \(The MIT License\)$/m);
  });

  it("the outputs scan worker loads from the installed package and answers a job", () => {
    // A worker that failed to load would only send reads to the main thread's scan (same
    // answer, slower): prove the shipped file and the three modules it imports are there.
    const script = `
      import { Worker } from "node:worker_threads";
      const w = new Worker(new URL("./node_modules/objstate/dist/src/remote-state/scan-worker.js", import.meta.url));
      const text = Buffer.from('{"version": 4, "resources": [{"a": "}"}], "outputs": {"x": {"value": 1}}}');
      const body = new SharedArrayBuffer(text.length);
      Buffer.from(body).set(text);
      const control = new SharedArrayBuffer(4);
      new Int32Array(control)[0] = text.length;
      w.on("message", (r) => { process.stdout.write(JSON.stringify(r)); w.terminate(); });
      w.postMessage({ id: 7, body, control, names: ["version", "outputs"] });
    `;
    writeFileSync(join(app, "scan-worker-check.mjs"), script);
    const reply = JSON.parse(run(process.execPath, [join(app, "scan-worker-check.mjs")], app).stdout) as unknown;
    assert.deepEqual(reply, { id: 7, spans: [["version", [12, 13]], ["outputs", [53, 72]]], cancelled: false });
  });

  it("the server's diff worker loads from the installed package and answers a job", () => {
    // A module missing from the package would fail every large POST …/diff of objstate serve.
    const script = `
      import { Worker } from "node:worker_threads";
      const state = (serial) => new TextEncoder().encode(JSON.stringify({ version: 4, serial, lineage: "l", outputs: { a: { value: serial, type: "number" } }, resources: [] }));
      const w = new Worker(new URL("./node_modules/objstate/dist/src/server/diff-worker.js", import.meta.url), { workerData: { from: state(1), to: state(2) } });
      w.on("message", (r) => { process.stdout.write(new TextDecoder().decode(r.json)); w.terminate(); });
    `;
    writeFileSync(join(app, "diff-worker-check.mjs"), script);
    const reply = JSON.parse(run(process.execPath, [join(app, "diff-worker-check.mjs")], app).stdout) as { outputs: { changed: unknown[] }; serial: unknown };
    assert.deepEqual(reply.outputs.changed, [{ name: "a", before: 1, after: 2, sensitive: false }]);
    assert.deepEqual(reply.serial, { before: 1, after: 2 });
  });

  for (const [moduleKind, resolution] of [
    ["node16", "node16"],
    ["esnext", "bundler"],
  ] as const) {
    it(`a strict TypeScript consumer of objstate and objstate/config compiles (moduleResolution ${resolution}) and runs`, () => {
      const dir = join(app, `ts-${resolution}`);
      mkdirSync(dir);
      writeFileSync(join(dir, "consumer.ts"), CONSUMER);
      writeFileSync(join(dir, "tsconfig.json"), tsconfig(moduleKind, resolution, "out"));
      // The consumer's package.json (type: module) is one level up: the output is ESM.
      run(process.execPath, [tsc, "-p", join(dir, "tsconfig.json")], dir);
      const out = JSON.parse(run(process.execPath, [join(dir, "out", "consumer.js")], dir).stdout) as Record<string, unknown>;
      assert.deepEqual(out, {
        vpc: "${data.tool_remote_state.net.outputs.vpc_id}",
        code: "INVALID_VALUE",
        connect: "function",
        diff: "object",
        doc: {
          tool: { backend: { objectstore: { bucket: "state-bucket", encrypt: true, key: "app.tfstate", kvstore_table: "locks" } } },
          data: { tool_remote_state: { net: { backend: "objectstore", config: { bucket: "state-bucket", key: "net.tfstate" }, defaults: { vpc_id: "none" } } } },
        },
      });
    });
  }
});
