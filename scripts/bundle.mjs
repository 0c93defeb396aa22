// The published build: every module the package's entries can reach (statically or through
// `import()`), in one file, so that loading objstate costs one module resolution instead of
// forty-odd (each ESM module costs Node a resolve, a read and a compile; see notes/h14.md).
//
//   node scripts/bundle.mjs      (run by `npm run build`, after tsc)
//
// Writes dist/pkg/:
//   objstate.js           the loader (ESM): the module table, and a function that runs a chunk;
//   objstate-core.cjs (+ .map)  every module importing a library entry evaluates, each as a
//                         function run on first use, CommonJS style (TypeScript's own
//                         CommonJS transform of each src/*.ts file);
//   objstate-*.cjs (+ .map)  the chunks loaded on first use (runtime, state, the command's
//                         parts, drivers), bundled packages (commander) in the chunk of the
//                         module importing them;
//   *.cjs.<V8 version>.cache  V8's code cache of each chunk (scripts/code-cache.mjs);
//   index.js, config.js, state.js  the package's entries: ESM, each the named exports of
//                         one src entry, taken from the one shared module table (so
//                         `objstate` and `objstate/config` share their classes);
//   cli.js                the `objstate` command.
// The types stay those tsc emits (dist/src/**/*.d.ts). Each module sees `import.meta.url`
// as the URL of its file in dist/src (version.ts finds package.json from there; the MD5
// worker, dist/src/util/md5-worker.js, is a file of its own and ships as it is). Each
// chunk's source map is TypeScript's maps of its modules joined into one, with the sources'
// text included (the package ships no .ts files).
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, posix, relative, resolve } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const srcDir = join(root, "src");
const outDir = join(root, "dist", "pkg");
/** Entry module (under src, no extension) → file in dist/pkg. */
const ENTRIES = { index: "index.js", "config-entry": "config.js", "state-entry": "state.js" };
const CLI = "cli/main";
/** What the command loads before it knows which command runs (see program.ts). */
const CLI_ROOTS = [CLI, "cli/program", "cli/spellings", "cli/runtime", "cli/io"];

const tsconfig = ts.getParsedCommandLineOfConfigFile(join(root, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail(ts.flattenDiagnosticMessageText(d.messageText, "\n")) });
const compilerOptions = {
  ...tsconfig.options,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  verbatimModuleSyntax: false,
  declaration: false,
  sourceMap: true,
  inlineSourceMap: false,
  inlineSources: false,
  // One copy of TypeScript's module helpers, in the bundle's preamble.
  noEmitHelpers: true,
  removeComments: true,
  esModuleInterop: true,
};

function fail(message) {
  console.error(`bundle: ${message}`);
  process.exit(1);
}

/** Relative specifiers of the module's `import("…")` calls. */
function lazyImports(sf) {
  const found = [];
  const visit = (node) => {
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found.filter((x) => x.startsWith("."));
}

/** Whether a statement at the top level of the module awaits (then its function is async). */
function hasTopLevelAwait(sf) {
  let found = false;
  const visit = (node) => {
    if (found || ts.isFunctionLike(node) || ts.isClassLike(node)) return;
    if (ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier)) found = true;
    else ts.forEachChild(node, visit);
  };
  sf.statements.forEach(visit);
  return found;
}

/** `Object.defineProperty(exports, "x", { get: … })`: a re-export, read as soon as an entry's exports are. */
function isReexport(statement) {
  if (!ts.isExpressionStatement(statement) || !ts.isCallExpression(statement.expression)) return false;
  const { expression: callee, arguments: args } = statement.expression;
  return ts.isPropertyAccessExpression(callee) && callee.getText() === "Object.defineProperty" && args[0] !== undefined && ts.isIdentifier(args[0]) && args[0].text === "exports";
}

/** Whether `node` runs when the module body runs, rather than later inside a function. */
function runsAtLoad(node) {
  let top = node;
  while (!ts.isSourceFile(top.parent)) top = top.parent;
  if (isReexport(top)) return true;
  for (let n = node; n.parent !== undefined; n = n.parent) {
    const p = n.parent;
    // A method's computed name runs when its class is defined; its body does not.
    if (ts.isFunctionLike(p) && p.name !== n) return false;
    if (ts.isPropertyDeclaration(p) && p.initializer === n && !p.modifiers?.some((m) => m.kind === ts.SyntaxKind.StaticKeyword)) return false;
  }
  return true;
}

/**
 * The module's top-level `const x_1 = require("./…")` bindings (TypeScript's CommonJS form
 * of an import, possibly wrapped in `__importStar`/`__importDefault`), each with its
 * references and whether any of them runs while the module loads.
 */
function requireBindings(text, file) {
  const sf = ts.createSourceFile(`${file}.js`, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.JS);
  const found = new Map();
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st) || st.declarationList.declarations.length !== 1) continue;
    const d = st.declarationList.declarations[0];
    if (!ts.isIdentifier(d.name) || d.initializer === undefined) continue;
    let call = d.initializer;
    if (ts.isCallExpression(call) && ts.isIdentifier(call.expression) && /^__import(Star|Default)$/.test(call.expression.text) && call.arguments.length === 1) call = call.arguments[0];
    if (!ts.isCallExpression(call) || !ts.isIdentifier(call.expression) || call.expression.text !== "require") continue;
    const arg = call.arguments[0];
    if (arg === undefined || !ts.isStringLiteral(arg) || !arg.text.startsWith(".")) continue;
    found.set(d.name.text, { name: d.name.text, spec: arg.text, statement: st, init: d.initializer.getText(sf), refs: [], atLoad: false });
  }
  const visit = (node) => {
    if (ts.isIdentifier(node)) {
      const b = found.get(node.text);
      if (b !== undefined && !ts.isVariableDeclaration(node.parent)) {
        b.refs.push(node);
        if (runsAtLoad(node)) b.atLoad = true;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return [...found.values()];
}

const modules = new Map();
/** Modules some module loads with import(). */
const lazyTargets = new Set();
const target = (id, spec) => posix.normalize(posix.join(posix.dirname(id), spec)).replace(/\.js$/, "");
function collect(id) {
  if (modules.has(id)) return;
  const file = join(srcDir, `${id}.ts`);
  const text = readFileSync(file, "utf8");
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const out = ts.transpileModule(text, { compilerOptions, fileName: file, reportDiagnostics: true });
  // 1378/1343: top-level await and import.meta, which CommonJS output lacks; both handled below.
  const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error && d.code !== 1378 && d.code !== 1343);
  if (errors.length > 0) fail(`${id}: ${ts.flattenDiagnosticMessageText(errors[0].messageText, "\n")}`);
  // What the module requires when it runs (top-level lines), as opposed to import() calls.
  const requires = [...out.outputText.matchAll(/^(?!.*Promise\.resolve).*\brequire\("(\.[^"]+)"\)/gm)].map((m) => target(id, m[1]));
  modules.set(id, { id, file, text, out, code: out.outputText, async: hasTopLevelAwait(sf), requires, bindings: requireBindings(out.outputText, file), statics: requires, deferred: [] });
  for (const t of requires) collect(t);
  for (const spec of lazyImports(sf)) {
    const t = target(id, spec);
    lazyTargets.add(t);
    collect(t);
  }
}
for (const id of [...Object.keys(ENTRIES), CLI]) collect(id);

// Packages bundled into the chunk of the module that imports them: their code then comes
// from the code cache too. commander is most of what `objstate --help` and `config` compile
// (~4 ms of 127 KB, comments mostly), and its `node:child_process` (with net, dgram and
// streams: ~3 ms) is needed only by executable subcommands, which objstate has none of: it
// is required on first use. Its licence goes with it, in the chunk's header.
const VENDOR = {
  commander: {
    importer: "cli/program",
    edits: [["const childProcess = require('node:child_process');", "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };"]],
  },
};
const requireFromRoot = createRequire(join(root, "package.json"));
function collectVendor(name, { edits }) {
  const main = requireFromRoot.resolve(name);
  const dir = dirname(main);
  const licence = readFileSync(join(dir, "LICENSE"), "utf8").trim();
  const applied = new Set();
  const idOf = (file) => (file === main ? name : `${name}/${relative(dir, file).replace(/\\/g, "/").replace(/\.js$/, "")}`);
  const visit = (file) => {
    const id = idOf(file);
    if (modules.has(id)) return;
    let text = readFileSync(file, "utf8");
    for (const [from, to] of edits) {
      if (!text.includes(from)) continue;
      text = text.replace(from, to);
      applied.add(from);
    }
    const requires = [];
    const code = text.replace(/\brequire\((['"])(\.[^'"]+)\1\)/g, (_, q, spec) => {
      const f = requireFromRoot.resolve(join(dirname(file), spec));
      requires.push(f);
      return `require(${JSON.stringify(`#${idOf(f)}`)})`;
    });
    // Line for line: each line maps to its own start.
    const map = { version: 3, sources: [file], sourcesContent: [text], names: [], mappings: text.split("\n").map((_, i) => (i === 0 ? "AAAA" : "AACA")).join(";") };
    modules.set(id, { id, file, text, out: { sourceMapText: JSON.stringify(map) }, code, async: false, requires: [], bindings: [], statics: [], deferred: [], vendor: name, licence });
    requires.forEach(visit);
  };
  visit(main);
  for (const [from] of edits) if (!applied.has(from)) fail(`${name} (another version?): expected to find ${from}`);
}
for (const [name, v] of Object.entries(VENDOR)) collectVendor(name, v);

// Deferred requires: a module whose imports from another are used only inside functions
// requires it on first use (`(x_1 ??= require("./x.js")).f(…)`) instead of when it
// loads, so importing objstate for synthesis evaluates (and, with the chunks below, even
// parses) none of the backend's drivers, credentials, locking or state readers. Not for a
// module with top-level await (its require gives a promise).
for (const m of modules.values()) {
  const lazy = m.bindings.filter((b) => !b.atLoad && b.refs.length > 0 && !modules.get(target(m.id, b.spec)).async);
  if (lazy.length === 0) continue;
  const edits = [];
  for (const b of lazy) {
    edits.push([b.statement.getStart(), b.statement.getEnd(), `let ${b.name};`]);
    for (const r of b.refs) edits.push([r.getStart(), r.getEnd(), `(${b.name} ??= ${b.init})`]);
  }
  edits.sort((a, b) => b[0] - a[0]);
  let code = m.code;
  for (const [start, end, text] of edits) code = code.slice(0, start) + text + code.slice(end);
  m.code = code;
  const lazyIds = new Set(lazy.map((b) => target(m.id, b.spec)));
  // A module both required at load (a re-export, say) and deferred stays a static.
  const eager = [...code.matchAll(/^(?!.*Promise\.resolve)(?!.*\?\?= (?:__import\w+\()?require\().*\brequire\("(\.[^"]+)"\)/gm)].map((x) => target(m.id, x[1]));
  m.statics = eager;
  m.deferred = [...lazyIds].filter((t) => !eager.includes(t));
}

// Chunks: what importing a library entry loads (compiled at import), what the library
// needs only once it does I/O (the backend's drivers, credentials, locking, state readers:
// loaded on first use), what the command needs before it knows which command runs, and
// the rest (drivers, the outputs reader, the commands), each compiled only when a module in
// it is first needed.
function closure(roots, exclude, withDeferred = false) {
  const out = new Set();
  const visit = (id) => {
    if (out.has(id) || exclude.has(id)) return;
    out.add(id);
    for (const t of modules.get(id).statics) visit(t);
    if (withDeferred) for (const t of modules.get(id).deferred) visit(t);
  };
  roots.forEach(visit);
  return out;
}
// Two tiny modules the library loads only on first use but the command needs before it
// knows which command runs (`--version`'s text): in the main chunk, `objstate --help`
// compiles no runtime chunk (107 KB) for them.
const CORE_EXTRA = ["version", "util/builtins"];
const core = closure(["index", "config-entry", ...CORE_EXTRA], new Set());
const runtime = closure(["index", "config-entry"], core, true);
for (const id of core) for (const t of modules.get(id).deferred) if (!core.has(t)) closure([t], core, true).forEach((x) => runtime.add(x));
const state = closure(["state-entry"], new Set([...core, ...runtime]), true);
const cli = closure(CLI_ROOTS, new Set([...core, ...runtime, ...state]));
// Each bundled package goes where the module importing it is.
for (const m of modules.values()) {
  if (m.vendor === undefined) continue;
  const home = [core, runtime, state, cli].find((set) => set.has(VENDOR[m.vendor].importer));
  if (home === undefined) fail(`${m.vendor}: ${VENDOR[m.vendor].importer} is in none of the first chunks`);
  home.add(m.id);
}
const CHUNKS = [
  { file: "objstate-core.cjs", ids: core },
  { file: "objstate-runtime.cjs", ids: runtime },
  { file: "objstate-state.cjs", ids: state },
  { file: "objstate-cli.cjs", ids: cli },
];
// Then one chunk for each module loaded through import() (a command, a driver, the
// outputs reader) with what it alone needs: a command loads its own code, not every other.
const assigned = new Set([...core, ...runtime, ...state, ...cli]);
for (const id of [...modules.keys()].sort()) {
  if (assigned.has(id) || !lazyTargets.has(id)) continue;
  const ids = closure([id], assigned, true);
  ids.forEach((x) => assigned.add(x));
  CHUNKS.push({ file: `objstate-${id.replace(/\//g, "-")}.cjs`, ids });
}
// What only deferred requires of the command's modules reach.
const rest = new Set([...modules.keys()].filter((id) => !assigned.has(id)));
if (rest.size > 0) {
  CHUNKS.push({ file: "objstate-more.cjs", ids: rest });
  rest.forEach((x) => assigned.add(x));
}
const stray = [...modules.keys()].filter((id) => !assigned.has(id));
if (stray.length > 0) fail(`modules in no chunk: ${stray.join(", ")}`);

// The loader (dist/pkg/objstate.js, ESM: what the entries import). Each chunk is a script
// whose value is a function adding its modules to the table, and a CommonJS module
// exporting that function. Where the build made a V8 code cache for the V8 that runs
// (`<chunk>.<V8 version>.cache`, scripts/code-cache.mjs), the chunk is compiled from it with
// node:vm: a cold start then skips parsing and compiling what the cache holds (~5 ms of
// importing objstate). V8 rejects a cache that does not fit (another source, other flags)
// and compiles the chunk as it would without one. Without a cache, or with source maps on
// (Node maps stack frames only of code its module loaders compiled), require loads it.
const PREAMBLE = `// Generated by scripts/bundle.mjs from src/*.ts: do not edit.
import { createRequire } from "node:module";
const __external = createRequire(import.meta.url);
const __src = new URL("../src/", import.meta.url);
var __createBinding = (Object.create ? (function(o, m, k, k2) { if (k2 === undefined) k2 = k; var desc = Object.getOwnPropertyDescriptor(m, k); if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) { desc = { enumerable: true, get: function() { return m[k]; } }; } Object.defineProperty(o, k2, desc); }) : (function(o, m, k, k2) { if (k2 === undefined) k2 = k; o[k2] = m[k]; }));
var __setModuleDefault = (Object.create ? (function(o, v) { Object.defineProperty(o, "default", { enumerable: true, value: v }); }) : function(o, v) { o["default"] = v; });
var __importStar = function (mod) { if (mod && mod.__esModule) return mod; var result = {}; if (mod != null) for (var k of Object.getOwnPropertyNames(mod)) if (k !== "default") __createBinding(result, mod, k); __setModuleDefault(result, mod); return result; };
var __exportStar = function(m, exports) { for (var p in m) if (p !== "default" && !Object.prototype.hasOwnProperty.call(exports, p)) __createBinding(exports, m, p); };
var __importDefault = function (mod) { return (mod && mod.__esModule) ? mod : { "default": mod }; };
const __defs = new Map();
/** Module -> the chunk file that defines it, for those not in the core chunk. */
const __chunkOf = {};
const __cache = new Map();
/** The compiled chunks, by file: scripts/code-cache.mjs makes the code caches from them. */
export const __scripts = new Map();
/** Runs a chunk (a file next to this one): its modules join the table. */
function __chunk(file) {
  const path = __external("node:url").fileURLToPath(new URL(file, import.meta.url));
  let define;
  let cachedData;
  if (!(process.sourceMapsEnabled ?? process.execArgv.includes("--enable-source-maps"))) {
    try {
      cachedData = __external("node:fs").readFileSync(\`\${path}.\${process.versions.v8}.cache\`);
    } catch {
      // None for this V8 (Node 22+ may cache what require compiles: main.ts turns that on).
    }
  }
  if (cachedData === undefined) {
    define = __external(path);
  } else {
    const script = new (__external("node:vm").Script)(__external("node:fs").readFileSync(path, "utf8"), { filename: path, cachedData });
    __scripts.set(file, script);
    define = script.runInThisContext();
  }
  define(__defs, __createBinding, __setModuleDefault, __importStar, __exportStar, __importDefault);
}
/** The module \`id\` (its exports), run on first use; a module with top-level await gives a promise. */
export function load(id) {
  const cached = __cache.get(id);
  if (cached !== undefined) return cached.done ?? cached.module.exports;
  let def = __defs.get(id);
  if (def === undefined && __chunkOf[id] !== undefined) {
    __chunk(__chunkOf[id]);
    def = __defs.get(id);
  }
  if (def === undefined) throw new Error(\`objstate bundle: no module \${id}\`);
  const entry = { module: { exports: {} }, done: undefined };
  __cache.set(id, entry);
  // "#id": a module of the bundle (resolved when it was built); anything else is a package or a built-in.
  const require = (spec) => (spec.charCodeAt(0) === 35 ? load(spec.slice(1)) : __external(spec));
  const result = def.call(entry.module.exports, entry.module.exports, require, entry.module, new URL(\`\${id}.js\`, __src).href);
  if (result instanceof Promise) {
    entry.done = result.then(() => entry.module.exports);
    return entry.done;
  }
  return entry.module.exports;
}
__chunk("./CORE");
`;

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
function decodeVlq(text) {
  const out = [];
  let value = 0;
  let shift = 0;
  for (const ch of text) {
    const digit = B64.indexOf(ch);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
    } else {
      out.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return out;
}
function encodeVlq(n) {
  let v = n < 0 ? (-n << 1) | 1 : n << 1;
  let out = "";
  do {
    let digit = v & 31;
    v >>>= 5;
    if (v > 0) digit |= 32;
    out += B64[digit];
  } while (v > 0);
  return out;
}

/**
 * One flat source map from the modules' maps placed at line offsets (Node's stack traces
 * do not read index maps with sections): every segment decoded and encoded again against
 * the chunk's list of sources and names.
 */
function flatten(file, sections, lineCount) {
  const sources = [];
  const sourcesContent = [];
  const names = [];
  const lines = Array.from({ length: lineCount }, () => "");
  const prev = { source: 0, line: 0, column: 0, name: 0 };
  const decoded = new Array(lineCount);
  for (const { offset, map, shifts } of sections) {
    const sourceBase = sources.length;
    const nameBase = names.length;
    sources.push(...map.sources);
    sourcesContent.push(...map.sourcesContent);
    names.push(...(map.names ?? []));
    const state = { source: 0, line: 0, column: 0, name: 0 };
    map.mappings.split(";").forEach((lineText, i) => {
      const segments = [];
      let column = 0;
      // Each escaped character (one UTF-16 unit) became six: `\uXXXX`.
      const at = shifts?.get(i);
      const moved = (c) => (at === undefined ? c : c + 5 * at.filter((x) => x < c).length);
      for (const seg of lineText === "" ? [] : lineText.split(",")) {
        const f = decodeVlq(seg);
        column += f[0];
        if (f.length === 1) {
          segments.push([moved(column)]);
          continue;
        }
        state.source += f[1];
        state.line += f[2];
        state.column += f[3];
        const s = [moved(column), sourceBase + state.source, state.line, state.column];
        if (f.length === 5) {
          state.name += f[4];
          s.push(nameBase + state.name);
        }
        segments.push(s);
      }
      decoded[offset.line + i] = segments;
    });
  }
  for (let l = 0; l < lineCount; l++) {
    let column = 0;
    lines[l] = (decoded[l] ?? [])
      .map((s) => {
        let text = encodeVlq(s[0] - column);
        column = s[0];
        if (s.length > 1) {
          text += encodeVlq(s[1] - prev.source) + encodeVlq(s[2] - prev.line) + encodeVlq(s[3] - prev.column);
          prev.source = s[1];
          prev.line = s[2];
          prev.column = s[3];
          if (s.length === 5) {
            text += encodeVlq(s[4] - prev.name);
            prev.name = s[4];
          }
        }
        return text;
      })
      .join(",");
  }
  return { version: 3, file, sources, sourcesContent, names, mappings: lines.join(";") };
}

/** Adds a chunk's module definitions to `lines`; returns each module's map and the line it starts at. */
function emitModules(ids, lines) {
  const sections = [];
  for (const id of [...ids].sort()) {
    const m = modules.get(id);
    const code = m.code
      .replace(/^#!.*/, "//")
      .replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n")
      .replace(/\bimport\.meta\.url\b/g, "__url")
      // Relative specifiers resolved here, once: the loader then needs no path arithmetic.
      .replace(/\brequire\("(\.[^"]+)"\)/g, (_, spec) => `require(${JSON.stringify(`#${target(id, spec)}`)})`)
      .replace(/\brequire\("([^".][^"]*)"\)/g, (call, spec) => (spec in VENDOR ? `require("#${spec}")` : call));
    if (/\bimport\.meta\b/.test(code)) fail(`${id}: import.meta other than import.meta.url is not supported`);
    // Non-ASCII characters written as \u escapes (they are only in strings, templates and
    // regular expressions, where an escape means the same character): one such character
    // makes the whole chunk a two-byte string, which costs Node a UTF-8 decode and V8 a
    // slower scan of every byte at start-up (~2 ms of importing objstate). Columns in the
    // source map are moved to match (see `shifts`).
    const shifts = new Map();
    const lineTexts = code.split("\n").map((line, i) => {
      if (!/[^\t\n\r\x20-\x7e]/.test(line)) return line;
      const at = [];
      const text = line.replace(/[^\t\n\r\x20-\x7e]/g, (ch, col) => {
        at.push(col);
        return `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;
      });
      shifts.set(i, at);
      return text;
    });
    lines.push(`__defs.set(${JSON.stringify(id)}, ${m.async ? "async " : ""}function (exports, require, module, __url) {`);
    const map = JSON.parse(m.out.sourceMapText);
    map.sources = [relative(outDir, m.file).replace(/\\/g, "/")];
    map.sourcesContent = [m.text];
    delete map.file;
    delete map.sourceRoot;
    sections.push({ offset: { line: lines.length, column: 0 }, map, shifts });
    const body = lineTexts;
    if (body[body.length - 1] === "") body.pop();
    lines.push(...body, "});");
  }
  return sections;
}

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const chunkOf = {};
for (const c of CHUNKS.slice(1)) for (const id of c.ids) chunkOf[id] = `./${c.file}`;
writeFileSync(join(outDir, "objstate.js"), PREAMBLE.replace("const __chunkOf = {};", `const __chunkOf = ${JSON.stringify(chunkOf)};`).replace("./CORE", `./${CHUNKS[0].file}`));
for (const c of CHUNKS) {
  // A script whose value is the function that adds the chunk's modules to the table, and a
  // CommonJS module exporting that function (for the loader's require when source maps are on).
  const licences = [...new Set([...c.ids].map((id) => modules.get(id)).filter((m) => m.vendor !== undefined).map((m) => `${m.vendor}:\n${m.licence}`))];
  const lines = [
    `// Generated by scripts/bundle.mjs from src/*.ts${licences.length > 0 ? " and the packages below" : ""}: do not edit.`,
    ...licences.flatMap((l) => ["//", ...l.split("\n").map((x) => `// ${x}`.trimEnd())]),
    '(function (f) { if (typeof module === "object" && module !== null && typeof exports === "object" && module.exports === exports) module.exports = f; return f; })(function (__defs, __createBinding, __setModuleDefault, __importStar, __exportStar, __importDefault) {',
  ];
  const sections = emitModules(c.ids, lines);
  lines.push("})", `//# sourceMappingURL=${c.file}.map`, "");
  writeFileSync(join(outDir, c.file), lines.join("\n"));
  writeFileSync(join(outDir, `${c.file}.map`), JSON.stringify(flatten(c.file, sections, lines.length)));
}

// The entries' export names, from the modules tsc emitted (the same source).
for (const [id, file] of Object.entries(ENTRIES)) {
  const names = Object.keys(await import(pathToFileURL(join(root, "dist", "src", `${id}.js`)).href)).sort();
  const text = [
    `// Generated by scripts/bundle.mjs: the exports of src/${id}.ts. Types: dist/src/${id}.d.ts.`,
    `import { load } from "./objstate.js";`,
    `const m = load(${JSON.stringify(id)});`,
    ...names.map((n) => `export const ${n} = m.${n};`),
    "",
  ];
  writeFileSync(join(outDir, file), text.join("\n"));
}
writeFileSync(
  join(outDir, "cli.js"),
  [
    "#!/usr/bin/env node",
    `// Generated by scripts/bundle.mjs: the objstate command (src/${CLI}.ts).`,
    `import { load } from "./objstate.js";`,
    `await load(${JSON.stringify(CLI)});`,
    "",
  ].join("\n"),
  { mode: 0o755 },
);
// Code caches: every module of every chunk loaded once, but the command's entry (it runs
// the command) and modules with top-level await.
const warm = Object.fromEntries(CHUNKS.map((c) => [c.file, [...c.ids].filter((id) => id !== CLI && !modules.get(id).async).sort()]));
const cached = spawnSync(process.execPath, [join(root, "scripts", "code-cache.mjs"), JSON.stringify(warm)], { stdio: ["ignore", "inherit", "inherit"] });
if (cached.status !== 0) fail(`scripts/code-cache.mjs failed (${cached.status ?? cached.signal})`);
console.log(`bundle: ${modules.size} modules -> ${relative(root, outDir)}/: ${CHUNKS.map((c) => `${c.file} (${c.ids.size})`).join(", ")}; entries ${Object.values(ENTRIES).join(", ")}, cli.js; code caches for V8 ${process.versions.v8}`);
