/**
 * The published package as a user gets it: `npm pack` of the built tree, installed into an
 * empty directory with npm offline (its dependencies from the npm cache that the project's
 * own `npm ci` filled: nothing is fetched), then the command through `npx`, every export
 * path through both `import` and `require`, the worker threads from their shipped files,
 * and a strict TypeScript consumer compiled under TypeScript 5 and 7 without "node" in its
 * `types`, and run. Needs `npm run build` first (dist/pkg is what is packed).
 */
import assert from "node:assert/strict";
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
const TSC = {
  "TypeScript 5": join(repo, "node_modules", "typescript", "bin", "tsc"),
  "TypeScript 7": join(repo, "node_modules", "typescript7", "bin", "tsc"),
};
const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string; exports: Record<string, unknown> };
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const npx = process.platform === "win32" ? "npx.cmd" : "npx";
/** Export path -> the source entry whose exports it carries. */
const SUBPATHS = { ".": "index", "./config": "config-entry", "./state": "state-entry" } as const;

const KEPT_NPM = new Set(["npm_config_cache", "npm_config_userconfig", "npm_config_globalconfig"]);

function run(cmd: string, args: string[], cwd: string, timeout = 120_000): SpawnSyncReturns<string> {
  // Run under `npm test`, the environment carries the outer npm's settings (its local
  // prefix is this repository): only those that say where the npm cache is are kept.
  const env: Record<string, string | undefined> = { NO_COLOR: "1", npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) || KEPT_NPM.has(k.toLowerCase())) env[k] ??= v;
  const r = spawnSync(cmd, args, { cwd, env, encoding: "utf8", timeout });
  assert.equal(r.status, 0, `${cmd} ${args.join(" ")} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r;
}

// No Node global in the consumer's own code: what it needs of Node's types, objstate's
// declarations must bring themselves (the consumer lists no "node" in `types`).
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
const read: ObjectStoreBackend["readState"] = ObjectStoreBackend.prototype.readState;
const diff = diffStates(null, null);
const out = { vpc, code, connect: typeof connect, read: typeof read, diff: typeof diff, doc: JSON.parse(formatToolJson(doc)) as unknown };
(globalThis as unknown as { console: { log(text: string): void } }).console.log(JSON.stringify(out));
`;

function tsconfig(moduleKind: string, resolution: string, compiler: keyof typeof TSC): string {
  return JSON.stringify({
    compilerOptions: {
      target: "ES2022",
      // No DOM either: Buffer, AbortSignal and the like come from Node's types or nowhere.
      lib: ["ES2022"],
      module: moduleKind,
      moduleResolution: resolution,
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      // The published .d.ts files are checked too.
      skipLibCheck: false,
      outDir: "out",
      // TypeScript 7 includes no @types package unless `types` names it; TypeScript 5
      // includes them all unless `types` is given: [] makes it behave as 7 does.
      ...(compiler === "TypeScript 5" ? { types: [] } : {}),
    },
    files: ["consumer.ts"],
  });
}

describe("the packed package, installed into an empty directory", () => {
  let work = "";
  let app = "";
  let installed = "";
  before(() => {
    assert.ok(existsSync(join(repo, "dist", "pkg", "index.cjs")), "build the package first: npm run build");
    work = mkdtempSync(join(tmpdir(), "objstate-pack-"));
    const packed = run(npm, ["pack", "--json", "--ignore-scripts", "--pack-destination", work], repo);
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    assert.ok(info !== undefined);
    const paths = info.files.map((f) => f.path);
    // Only what a user needs: the build, the types, the field reference the README links (decision records and bench figures stay in the repository).
    const stray = paths.filter((p) => !/^(dist\/pkg\/[^/]+|dist\/src\/.+\.d\.ts|README\.md|LICENSE|package\.json|docs\/fields\.md)$/.test(p));
    assert.deepEqual(stray, []);
    const needed = [
      "LICENSE",
      "README.md",
      "docs/fields.md",
      "dist/src/index.d.ts",
      "dist/pkg/objstate.cjs",
      "dist/pkg/cli.cjs",
      "dist/pkg/md5-worker.js",
      "dist/pkg/diff-worker.js",
    ];
    for (const file of ["index", "config", "state"]) needed.push(`dist/pkg/${file}.js`, `dist/pkg/${file}.cjs`);
    for (const p of needed) assert.ok(paths.includes(p), `${p} missing from the package`);
    app = join(work, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    run(npm, ["install", "--offline", "--ignore-scripts", "--no-package-lock", join(work, info.filename)], app, 300_000);
    installed = join(app, "node_modules", "objstate");
    // A TypeScript consumer on Node has Node's types installed (not listed in `types`).
    mkdirSync(join(app, "node_modules", "@types"), { recursive: true });
    symlinkSync(join(repo, "node_modules", "@types", "node"), join(app, "node_modules", "@types", "node"), "dir");
  });
  after(() => {
    if (work !== "") rmSync(work, { recursive: true, force: true });
  });

  it("npx objstate --version prints the package's version", () => {
    assert.equal(run(npx, ["--no", "--", "objstate", "--version"], app).stdout.split("\n")[0], `objstate v${pkg.version}`);
  });

  it("objstate config shows the settings and where each came from; commander is bundled with its licence", () => {
    const out = run(npx, ["--no", "--", "objstate", "config", "--bucket", "state-bucket", "--key", "app.tfstate"], app).stdout;
    assert.match(out, /^bucket +state-bucket +explicit, from --bucket$/m);
    assert.match(out, /^credentials: /m);
    assert.equal(existsSync(join(app, "node_modules", "commander")), false);
    // commander's code (its `_optionValueSources`) ships in chunks that carry its licence.
    const dir = join(installed, "dist", "pkg");
    const withCommander = readdirSync(dir).filter((f) => f.endsWith(".cjs") && readFileSync(join(dir, f), "utf8").includes("_optionValueSources"));
    assert.ok(withCommander.length > 0, "no chunk holds commander");
    for (const f of withCommander) assert.match(readFileSync(join(dir, f), "utf8"), /^\/\/ commander:\n\/\/ \(The MIT License\)$/m, f);
  });

  it("every export path gives the same names through import and require, and one copy of each class", async () => {
    const expected: Record<string, string[]> = {};
    for (const [subpath, source] of Object.entries(SUBPATHS)) {
      expected[subpath] = Object.keys((await import(pathToFileURL(join(repo, "dist", "src", `${source}.js`)).href)) as object).sort();
    }
    assert.deepEqual(
      Object.keys(pkg.exports)
        .filter((k) => k !== "./package.json")
        .sort(),
      Object.keys(SUBPATHS).sort(),
    );
    const spec = (subpath: string): string => (subpath === "." ? "objstate" : `objstate/${subpath.slice(2)}`);
    const specs = JSON.stringify(Object.keys(SUBPATHS).map(spec));
    writeFileSync(
      join(app, "require-check.cjs"),
      `const out = {}; for (const s of ${specs}) out[s] = Object.keys(require(s)).sort(); console.log(JSON.stringify(out));`,
    );
    writeFileSync(
      join(app, "import-check.mjs"),
      `const out = {}; for (const s of ${specs}) out[s] = Object.keys(await import(s)).sort(); console.log(JSON.stringify(out));`,
    );
    for (const file of ["require-check.cjs", "import-check.mjs"]) {
      const got = JSON.parse(run(process.execPath, [file], app).stdout) as Record<string, string[]>;
      for (const subpath of Object.keys(SUBPATHS)) assert.deepEqual(got[spec(subpath)], expected[subpath], `${file}: ${spec(subpath)}`);
    }
    // A program (or its dependencies) using both: the same classes, so instanceof holds.
    writeFileSync(
      join(app, "both-check.mjs"),
      `import { createRequire } from "node:module";
      import * as imported from "objstate";
      import * as config from "objstate/config";
      const required = createRequire(import.meta.url)("objstate");
      let caught;
      try { required.DataRemoteStateObjectStoreConfig.from({ bucket: "x" }); } catch (e) { caught = e; }
      console.log(JSON.stringify([imported.ObjstateError === required.ObjstateError, config.ObjstateError === imported.ObjstateError, caught instanceof imported.ObjstateError]));`,
    );
    assert.deepEqual(JSON.parse(run(process.execPath, ["both-check.mjs"], app).stdout), [true, true, true]);
  });

  it("the library hashes a state over 4 MiB in the MD5 worker loaded from the installed package", () => {
    // Over PARALLEL_MD5_MIN the digest comes from the worker thread; a worker that cannot
    // load fails the write ("md5 worker failed").
    mkdirSync(join(work, "store"));
    const store = pathToFileURL(join(work, "store")).href;
    writeFileSync(
      join(app, "md5-check.mjs"),
      `import { ObjectStoreBackend, ObjectStoreBackendConfig, DataRemoteStateObjectStore } from "objstate";
      const props = { bucket: "states", endpoint: ${JSON.stringify(store)}, kvstoreEndpoint: ${JSON.stringify(store)}, kvstoreTable: "locks" };
      const quiet = { onWarning: () => undefined };
      const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), quiet);
      await b.writeState("default", JSON.stringify({ version: 4, serial: 1, lineage: "l", outputs: { a: { value: 1, type: "number" } }, resources: [{ filler: "x".repeat(5 * 1024 * 1024) }] }));
      b.close();
      const outputs = await new DataRemoteStateObjectStore("net", props).fetchOutputs(quiet);
      console.log(JSON.stringify(outputs.toJSON()));`,
    );
    assert.deepEqual(JSON.parse(run(process.execPath, ["md5-check.mjs"], app).stdout), { a: 1 });
  });

  it("the server's diff worker loads from the installed package and answers a job", () => {
    // A file missing from the package would fail every large POST …/diff of objstate serve.
    const script = `
      import { Worker } from "node:worker_threads";
      const state = (serial) => new TextEncoder().encode(JSON.stringify({ version: 4, serial, lineage: "l", outputs: { a: { value: serial, type: "number" } }, resources: [] }));
      const w = new Worker(new URL("./node_modules/objstate/dist/pkg/diff-worker.js", import.meta.url), { workerData: { from: state(1), to: state(2) } });
      w.on("message", (r) => { process.stdout.write(new TextDecoder().decode(r.json)); w.terminate(); });
    `;
    writeFileSync(join(app, "diff-worker-check.mjs"), script);
    const reply = JSON.parse(run(process.execPath, [join(app, "diff-worker-check.mjs")], app).stdout) as { outputs: { changed: unknown[] }; serial: unknown };
    assert.deepEqual(reply.outputs.changed, [{ name: "a", before: 1, after: 2, sensitive: false }]);
    assert.deepEqual(reply.serial, { before: 1, after: 2 });
  });

  for (const compiler of Object.keys(TSC) as (keyof typeof TSC)[]) {
    for (const [moduleKind, resolution, format] of [
      ["node16", "node16", "module"],
      ["esnext", "bundler", "module"],
      // TypeScript 5.8+ types a require of an ES module under nodenext.
      ["nodenext", "nodenext", "commonjs"],
    ] as const) {
      it(`a strict ${format === "module" ? "ES-module" : "CommonJS"} consumer without "node" in its types compiles under ${compiler} (moduleResolution ${resolution}) and runs`, () => {
        const dir = join(app, `ts-${compiler.replace(/\W/g, "")}-${resolution}-${format}`);
        mkdirSync(dir);
        writeFileSync(join(dir, "consumer.ts"), CONSUMER);
        writeFileSync(join(dir, "tsconfig.json"), tsconfig(moduleKind, resolution, compiler));
        // The output is what this package.json says: import()s objstate, or require()s it.
        writeFileSync(join(dir, "package.json"), JSON.stringify({ type: format }));
        run(process.execPath, [TSC[compiler], "-p", join(dir, "tsconfig.json")], dir);
        const emitted = readFileSync(join(dir, "out", "consumer.js"), "utf8");
        assert.match(emitted, format === "module" ? /^import .* from "objstate";$/m : /require\("objstate"\)/);
        const out = JSON.parse(run(process.execPath, [join(dir, "out", "consumer.js")], dir).stdout) as Record<string, unknown>;
        assert.deepEqual(out, {
          vpc: "${data.tool_remote_state.net.outputs.vpc_id}",
          code: "INVALID_VALUE",
          connect: "function",
          read: "function",
          diff: "object",
          doc: {
            tool: { backend: { objectstore: { bucket: "state-bucket", encrypt: true, key: "app.tfstate", kvstore_table: "locks" } } },
            data: {
              tool_remote_state: { net: { backend: "objectstore", config: { bucket: "state-bucket", key: "net.tfstate" }, defaults: { vpc_id: "none" } } },
            },
          },
        });
      });
    }
  }
});
