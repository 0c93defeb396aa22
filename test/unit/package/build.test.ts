/**
 * The published build (dist/pkg, made by scripts/build.mjs from src): the package's entries
 * export what the source entries export, through `import` and `require`, sharing one copy
 * of every class; the drivers, the outputs reader, the command's commands and the worker
 * threads load on first use from their own files; no shipped file names the machine that
 * built it. Needs `npm run build` (the suites of the CLI run the built command as well:
 * test/support/cli.ts).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
const out = join(repo, "dist", "pkg");
interface Conditions {
  readonly types: string;
  readonly import: string;
  readonly require: string;
  readonly default: string;
}
const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
  exports: Record<string, Conditions | string>;
  bin: { objstate: string };
  files: string[];
};
const entry = (subpath: string, condition: keyof Conditions): string => {
  const e = pkg.exports[subpath];
  assert.ok(e !== undefined && typeof e !== "string", `package.json exports ${subpath}`);
  return join(repo, e[condition]);
};
const load = async (file: string): Promise<Record<string, unknown>> => (await import(pathToFileURL(file).href)) as Record<string, unknown>;
const requireFile = createRequire(import.meta.url);
/** The modules of the command loaded only when a command runs, by chunk name (esbuild names a chunk after its entry). */
const COMMAND_CHUNKS = /^cli-(commands|history|output|doctor|init|serve|file|s3|dynamodb|fetch-outputs)-/;

/** What a process loaded: files of dist/pkg (in load order), packages from node_modules, and built-ins. */
interface Loaded {
  readonly stdout: string;
  readonly files: string[];
  readonly fromNodeModules: string[];
  readonly builtins: string[];
}
function loadedBy(args: string[]): Loaded {
  const dir = mkdtempSync(join(tmpdir(), "objstate-loaded-"));
  try {
    // Loaded before the program: on exit, what the program loaded.
    const preload = join(dir, "loaded.cjs");
    writeFileSync(
      preload,
      `const before = new Set(process.moduleLoadList);
process.on("exit", () => {
  const files = Object.keys(require.cache);
  const builtins = process.moduleLoadList.filter((m) => !before.has(m) && m.startsWith("NativeModule ")).map((m) => m.slice(13));
  process.stderr.write("LOADED " + JSON.stringify({ files: files.filter((f) => f.startsWith(${JSON.stringify(out)})).map((f) => f.slice(${out.length + 1})), fromNodeModules: files.filter((f) => f.includes("/node_modules/")), builtins }) + "\\n");
});`,
    );
    const r = spawnSync(process.execPath, ["--require", preload, ...args], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, NO_COLOR: "1", NODE_DISABLE_COMPILE_CACHE: "1" },
    });
    assert.equal(r.status, 0, r.stderr);
    const line = /^LOADED (.*)$/m.exec(r.stderr)?.[1];
    assert.ok(line !== undefined, r.stderr);
    return { stdout: r.stdout, ...(JSON.parse(line) as Omit<Loaded, "stdout">) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
/** Whether any of the files holds the backend class (the runtime: backend, locking, credentials). */
const holdsBackend = (files: string[]): boolean => files.some((f) => /\bObjectStoreBackend = class\b/.test(readFileSync(join(out, f), "utf8")));

/** Every file npm would pack from dist (package.json `files`). */
function shippedFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.startsWith(out) || path.endsWith(".d.ts")) found.push(path);
    }
  };
  walk(join(repo, "dist", "pkg"));
  walk(join(repo, "dist", "src"));
  return found;
}

describe("the published build", () => {
  it("is built", () => {
    assert.ok(existsSync(entry(".", "require")), "run npm run build");
  });

  for (const [subpath, source] of [
    [".", "index"],
    ["./config", "config-entry"],
    ["./state", "state-entry"],
  ] as const) {
    it(`${subpath} exports what src/${source}.ts exports, through import and require alike, typed by its .d.ts`, async () => {
      const emitted = await load(join(repo, "dist", "src", `${source}.js`));
      const imported = await load(entry(subpath, "import"));
      const required = requireFile(entry(subpath, "require")) as Record<string, unknown>;
      assert.deepEqual(Object.keys(imported).sort(), Object.keys(emitted).sort());
      assert.deepEqual(Object.keys(required).sort(), Object.keys(emitted).sort());
      for (const [k, v] of Object.entries(emitted)) {
        assert.equal(typeof imported[k], typeof v, k);
        assert.equal(imported[k], required[k], `${k}: import and require give the same value`);
      }
      assert.equal(entry(subpath, "default"), entry(subpath, "require"));
      assert.ok(existsSync(entry(subpath, "types")));
    });
  }

  it("objstate and objstate/config share their classes", async () => {
    const main = await load(entry(".", "import"));
    const config = await load(entry("./config", "import"));
    assert.equal(main["ObjstateError"], config["ObjstateError"]);
    assert.equal(main["DataRemoteStateObjectStoreConfig"], config["DataRemoteStateObjectStoreConfig"]);
    const From = config["DataRemoteStateObjectStoreConfig"] as { from(p: object): unknown };
    assert.throws(() => From.from({ bucket: "x" }), main["ObjstateError"] as new () => Error);
  });

  it("writes and reads a state on the embedded store, loading the drivers, the outputs reader and the MD5 worker on demand", async () => {
    const lib = (await load(entry(".", "import"))) as {
      ObjectStoreBackend: { connect(c: unknown, o: object): Promise<{ writeState(w: string, s: string): Promise<unknown>; close(): void }> };
      ObjectStoreBackendConfig: { from(p: object): unknown };
      DataRemoteStateObjectStore: new (n: string, p: object) => { fetchOutputs(o: object): Promise<{ toJSON(): unknown }> };
    };
    const dir = mkdtempSync(join(tmpdir(), "objstate-build-"));
    try {
      const props = { bucket: "states", endpoint: pathToFileURL(dir).href, kvstoreEndpoint: pathToFileURL(dir).href, kvstoreTable: "locks" };
      const quiet = { onWarning: () => undefined };
      const w = await lib.ObjectStoreBackend.connect(lib.ObjectStoreBackendConfig.from(props), quiet);
      // Large enough (> 4 MiB) that its MD5 is computed in the worker thread.
      const filler = "x".repeat(5 * 1024 * 1024);
      await w.writeState(
        "default",
        JSON.stringify({ version: 4, serial: 1, lineage: "l", outputs: { a: { value: 1, type: "number" } }, resources: [{ filler }] }),
      );
      w.close();
      const outputs = await new lib.DataRemoteStateObjectStore("net", props).fetchOutputs(quiet);
      assert.deepEqual(outputs.toJSON(), { a: 1 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the CommonJS files load with require only, and every file they load by path (workers, package.json) is where they look for it", () => {
    let found = 0;
    for (const f of readdirSync(out).filter((x) => /\.c?js$/.test(x))) {
      const text = readFileSync(join(out, f), "utf8");
      if (f.endsWith(".cjs")) {
        assert.doesNotMatch(text, /\bimport\.meta\b/, `${f}: import.meta in CommonJS`);
        // import() of a package would load its ES-module build beside the CommonJS one that
        // require loads (two copies of the AWS SDK): every load is a require.
        assert.doesNotMatch(text, /\bimport\(/, `${f}: import() in CommonJS`);
      }
      for (const m of text.matchAll(/new URL\("(\.{1,2}\/[^"]+)", __objstateUrl\)/g)) {
        found++;
        assert.ok(existsSync(fileURLToPath(new URL(m[1] as string, pathToFileURL(join(out, f))))), `${f}: ${m[1]} does not exist`);
      }
    }
    assert.ok(found >= 4, "the bundles name their workers and package.json");
  });

  it("every shipped file is ASCII (V8 keeps it a one-byte string), escapes standing for the characters", async () => {
    for (const f of readdirSync(out).filter((x) => /\.c?js$/.test(x))) assert.doesNotMatch(readFileSync(join(out, f), "utf8"), /[^\t\n\r\x20-\x7e]/, f);
    const config = (await load(entry("./config", "import"))) as { synthesizeProps(input: unknown): unknown };
    assert.throws(() => config.synthesizeProps({ remoteStates: [] }), { message: "remoteStates must be an object of name \u2192 props" });
  });

  it("no shipped file names the machine that built it: no absolute path of the checkout or its node_modules", () => {
    const places = new Set([repo.replace(/\/$/, ""), dirname(realpathSync(join(repo, "node_modules")))]);
    for (const file of shippedFiles()) {
      const text = readFileSync(file, "utf8");
      for (const place of places) assert.ok(!text.includes(place), `${file.slice(repo.length)} names ${place}`);
    }
    const map = JSON.parse(readFileSync(join(out, "objstate.cjs.map"), "utf8")) as { sources: string[]; sourcesContent: string[] };
    assert.ok(map.sources.includes("../../src/errors.ts"), "source maps name src/*.ts relative to dist/pkg");
    assert.equal(map.sourcesContent.length, map.sources.length);
  });

  it("importing objstate and synthesizing loads the one library file, no package from node_modules and not node:crypto", () => {
    const program = `import { DataRemoteStateObjectStore, ObjectStoreBackend, mergeToolJson } from ${JSON.stringify(pathToFileURL(entry(".", "import")).href)};
mergeToolJson(new DataRemoteStateObjectStore("net", { bucket: "states" }).toToolJson());
console.log(typeof ObjectStoreBackend.connect);`;
    const r = loadedBy(["--input-type=module", "-e", program]);
    assert.equal(r.stdout.trim(), "function");
    assert.deepEqual(r.files.sort(), ["index.cjs", "objstate.cjs"]);
    assert.deepEqual(r.fromNodeModules, []);
    assert.deepEqual(
      r.builtins.filter((m) => /^(crypto|worker_threads|child_process)$/.test(m)),
      [],
    );
  });

  it("objstate --help loads no command's module and not the backend, nothing from node_modules, not node:child_process", () => {
    const r = loadedBy([join(repo, pkg.bin.objstate), "--help"]);
    assert.match(r.stdout, /^Usage: objstate/);
    assert.match(r.stdout, /serve \[options\]/);
    assert.ok(r.files.includes("cli.cjs"));
    assert.deepEqual(
      r.files.filter((f) => COMMAND_CHUNKS.test(f)),
      [],
    );
    assert.equal(holdsBackend(r.files), false, "--help loaded the backend");
    assert.deepEqual(r.fromNodeModules, []);
    assert.deepEqual(
      r.builtins.filter((m) => /^(crypto|readline|child_process)/.test(m)),
      [],
    );
  });

  for (const args of [
    ["config", "--bucket", "state-bucket"],
    ["synth", "--bucket", "state-bucket", "--key", "root.tfstate"],
  ]) {
    it(`objstate ${args[0]} loads its commands' module and no other, nothing from node_modules, neither node:crypto nor node:readline nor node:child_process`, () => {
      const r = loadedBy([join(repo, pkg.bin.objstate), ...args]);
      assert.notEqual(r.stdout, "");
      assert.deepEqual(
        r.files.filter((f) => COMMAND_CHUNKS.test(f)).map((f) => f.replace(/-[A-Z0-9]+\.cjs$/, "")),
        ["cli-commands"],
      );
      assert.deepEqual(r.fromNodeModules, []);
      assert.deepEqual(
        r.builtins.filter((m) => /^(crypto|readline|child_process)/.test(m)),
        [],
      );
    });
  }

  it("stack traces name the package's files, and src/*.ts with --enable-source-maps", () => {
    const program = `import { DataRemoteStateObjectStoreConfig } from ${JSON.stringify(pathToFileURL(entry("./config", "import")).href)};
try { DataRemoteStateObjectStoreConfig.from({ bucket: "x" }); } catch (e) { console.log(e.stack); }`;
    const plain = spawnSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8", timeout: 30_000 });
    assert.equal(plain.status, 0, plain.stderr);
    assert.match(plain.stdout, /dist\/pkg\/objstate\.cjs:\d+:\d+/);
    const mapped = spawnSync(process.execPath, ["--enable-source-maps", "--input-type=module", "-e", program], { encoding: "utf8", timeout: 30_000 });
    assert.equal(mapped.status, 0, mapped.stderr);
    assert.match(mapped.stdout, /src\/config\/validate\.ts:\d+:\d+/);
    assert.match(mapped.stdout, /src\/config\/base\.ts:\d+:\d+/);
  });

  it("the command is the built one, with a shebang, executable", () => {
    const bin = join(repo, pkg.bin.objstate);
    assert.match(readFileSync(bin, "utf8"), /^#!\/usr\/bin\/env node\n/);
    const r = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^objstate v\d+\.\d+\.\d+/);
  });
});
