// The published build (run by `npm run build`, after tsc): esbuild bundles src/ into
// dist/pkg/. Why this shape: docs/decisions/050-esbuild-commonjs-bundles.md.
//
//   objstate.cjs            the library: src/index.ts and src/state-entry.ts in one CommonJS
//                           bundle. The drivers, the outputs reader and objstate/state are in
//                           it but run on first use (esbuild's lazy module wrappers); the AWS
//                           SDK (a dependency, not bundled) is required on first use.
//   index|config|state.cjs  the package's `require` entries, and .js its `import` entries:
//                           each the named exports of one src entry, taken from objstate.cjs,
//                           so `import` and `require` share one copy of every class.
//   cli.cjs, cli-*.cjs      the `objstate` command: esbuild splits it at each `import()` (a
//                           command, a driver, the outputs reader) as ES modules, then each
//                           chunk is turned into CommonJS (a chunk loads with require; node:*
//                           built-ins too, which an ES-module import would load whole).
//                           commander is bundled, its licence at the top of its chunk.
//   *-worker.js             the worker threads, loaded by path: an ES module each.
// Every file has a source map back to src/*.ts (relative paths, sources included).
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const out = join(root, "dist", "pkg");
/** Package entry (file in dist/pkg) -> source entry (src/<name>.ts). */
const ENTRIES = { index: "index", config: "config-entry", state: "state-entry" };
const COMMANDER_LICENCE = join(root, "node_modules", "commander", "LICENSE");

const common = {
  absWorkingDir: root,
  bundle: true,
  platform: "node",
  target: "node20",
  external: ["@aws-sdk/*"],
  logLevel: "warning",
  // Paths as the project sees them (node_modules may be a link): source maps stay relative.
  preserveSymlinks: true,
  // import() of a chunk or a package becomes require(): one module system, one copy of the SDK.
  supported: { "dynamic-import": false },
};
/** CommonJS has no import.meta: each file's own URL (version.ts and the workers resolve paths from it). */
const cjsUrl = {
  define: { "import.meta.url": "__objstateUrl" },
  banner: 'var __objstateUrl = require("node:url").pathToFileURL(__filename).href;',
};

// commander requires node:child_process (with net, dgram and streams: ~4 ms on Node 24) for
// executable subcommands, which objstate has none of: required on first use instead.
const LAZY_CHILD_PROCESS = [
  "const childProcess = require('node:child_process');",
  "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };",
];
const commanderPatch = {
  name: "commander-lazy-child-process",
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]commander[\\/]lib[\\/]command\.js$/ }, ({ path }) => {
      const text = readFileSync(path, "utf8");
      if (!text.includes(LAZY_CHILD_PROCESS[0])) throw new Error(`${path} (another commander version?): expected ${LAZY_CHILD_PROCESS[0]}`);
      return { contents: text.replace(...LAZY_CHILD_PROCESS), loader: "js" };
    });
  },
};

/**
 * Writes a file of the build. esbuild writes every non-ASCII character of the code as an
 * escape (`charset: "ascii"`) but keeps the comments it keeps as they are: one such
 * character makes V8 hold the whole file as a two-byte string (a slower scan at every
 * start-up), so those, in comments only, become `\uXXXX` text.
 */
function save({ path, text }) {
  writeFileSync(path, path.endsWith(".map") ? text : text.replace(/[^\t\n\r\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`));
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// The library.
const lib = await esbuild.build({
  ...common,
  format: "cjs",
  stdin: {
    contents: 'export * from "./src/index.ts";\nexport const __state = () => require("./src/state-entry.ts");\n',
    resolveDir: root,
    sourcefile: "objstate.ts",
    loader: "ts",
  },
  outfile: join(out, "objstate.cjs"),
  define: cjsUrl.define,
  banner: { js: cjsUrl.banner },
  sourcemap: "linked",
  write: false,
});
lib.outputFiles.forEach(save);

// The command: split as ES modules, then each chunk made CommonJS, its map chained.
const cli = await esbuild.build({
  ...common,
  format: "esm",
  splitting: true,
  entryPoints: { cli: "src/cli/main.ts" },
  outdir: out,
  outExtension: { ".js": ".cjs" },
  chunkNames: "cli-[name]-[hash]",
  sourcemap: "inline",
  metafile: true,
  write: false,
  plugins: [commanderPatch],
});
const licence = readFileSync(COMMANDER_LICENCE, "utf8")
  .trim()
  .split("\n")
  .map((l) => `// ${l}`.trimEnd())
  .join("\n");
for (const file of cli.outputFiles) {
  const name = basename(file.path);
  const inputs = Object.keys(cli.metafile.outputs[`dist/pkg/${name}`]?.inputs ?? {});
  const banner = inputs.some((i) => i.includes("node_modules/commander/")) ? `// commander:\n${licence}\n${cjsUrl.banner}` : cjsUrl.banner;
  const r = await esbuild.transform(file.text, {
    platform: common.platform,
    target: common.target,
    supported: common.supported,
    logLevel: common.logLevel,
    format: "cjs",
    define: cjsUrl.define,
    banner,
    sourcemap: "external",
    sourcefile: name,
  });
  save({ path: file.path, text: `${r.code}//# sourceMappingURL=${name}.map\n` });
  save({ path: `${file.path}.map`, text: r.map });
}
chmodSync(join(out, "cli.cjs"), 0o755);

// The worker threads (each a file of its own: `new Worker(new URL("./…-worker.js", import.meta.url))`).
const workers = await esbuild.build({
  ...common,
  format: "esm",
  entryPoints: { "md5-worker": "src/util/md5-worker.ts", "diff-worker": "src/server/diff-worker.ts" },
  outdir: out,
  sourcemap: "linked",
  write: false,
});
workers.outputFiles.forEach(save);

// The package's entries: the export names of each source entry, read from what tsc emitted.
for (const [file, source] of Object.entries(ENTRIES)) {
  const names = Object.keys(await import(pathToFileURL(join(root, "dist", "src", `${source}.js`)).href)).sort();
  const from = source === "state-entry" ? 'require("./objstate.cjs").__state()' : 'require("./objstate.cjs")';
  const head = `// Generated by scripts/build.mjs: the exports of src/${source}.ts (types: dist/src/${source}.d.ts).`;
  writeFileSync(
    join(out, `${file}.cjs`),
    `${head}\n"use strict";\nconst m = ${from};\nmodule.exports = {\n${names.map((n) => `  ${n}: m.${n},\n`).join("")}};\n`,
  );
  writeFileSync(
    join(out, `${file}.js`),
    `${head}\nimport { createRequire } from "node:module";\nexport const {\n${names.map((n) => `  ${n},\n`).join("")}} = createRequire(import.meta.url)("./${file}.cjs");\n`,
  );
}
console.log(
  `build: dist/pkg/: objstate.cjs, ${Object.keys(ENTRIES)
    .map((e) => `${e}.{js,cjs}`)
    .join(", ")}, ${cli.outputFiles.length} command chunks, 3 workers`,
);
