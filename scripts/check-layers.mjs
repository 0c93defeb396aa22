// The layer check (run by `npm run lint`): every import in src/ points down the layer table
// below, never up, and no module imports itself back through others. Type-only imports and
// `import()` count like any other: a type names the module it comes from, and a cycle of
// types is a cycle of meaning (docs/decisions/052-layers-checked-by-lint.md).
//
//   node scripts/check-layers.mjs [--root DIR]
//
// Prints each upward import (file -> file, with their layers), each cycle, each file outside
// the table, and whether docs/design.md §2 shows the same table; exits 1 when any is found.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/**
 * The layers, lowest first: folders of src/ (ending in `/`) and single files. A module may
 * import its own layer and those below. The entries (ENTRIES) sit on top of them all.
 * docs/design.md §2 shows this same table; the check below keeps the two in step.
 */
export const LAYERS = [
  ["util/", "json/", "errors.ts", "error-codes.ts", "version.ts"],
  ["io/", "encryption/"],
  ["config/"],
  ["synth/"],
  ["resolve/"],
  ["credentials/", "store/", "lock/"],
  ["state/"],
  ["fast/"],
  ["backend/"],
  ["remote-state/", "wire/", "admin/"],
  ["console/"],
  ["server/"],
  ["cli/"],
];
/** The published entry points: above every layer. */
export const ENTRIES = ["index.ts", "config-entry.ts", "state-entry.ts"];

/** The layer of a file (path relative to src/, `/`-separated), or undefined when the table has no place for it. */
function layerOf(file) {
  if (ENTRIES.includes(file)) return LAYERS.length;
  const i = LAYERS.findIndex((row) => row.some((p) => (p.endsWith("/") ? file.startsWith(p) : file === p)));
  return i === -1 ? undefined : i;
}

function layerName(n) {
  return n === LAYERS.length ? "entries" : `${n} ${LAYERS[n].join(" ")}`;
}

function listTs(dir, base = dir) {
  const out = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...listTs(p, base));
    else if (d.name.endsWith(".ts") && !d.name.endsWith(".d.ts")) out.push(relative(base, p).split(sep).join("/"));
  }
  return out.sort();
}

/** Module graph of src/: file -> the src files it imports (relative specifiers; `.js` names its `.ts`). */
export function importGraph(srcDir) {
  const files = listTs(srcDir);
  const known = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(join(srcDir, file), "utf8"), true, true);
    const targets = [];
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith(".")) continue;
      const target = posix.normalize(posix.join(posix.dirname(file), fileName)).replace(/\.js$/, ".ts");
      if (known.has(target) && !targets.includes(target)) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/**
 * Strongly connected components of more than one module (or a module importing itself):
 * each as one cycle through it and all its members (more when cycles share modules).
 */
function cycles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || graph.get(v).includes(v)) found.push({ path: cycleThrough(graph, new Set(scc)), members: scc.sort() });
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** One cycle inside a strongly connected component, from its first module (by name) back to it. */
function cycleThrough(graph, scc) {
  const start = [...scc].sort()[0];
  const seen = new Set();
  const path = [start];
  const walk = (v) => {
    for (const w of graph.get(v)) {
      if (w === start) return true;
      if (!scc.has(w) || seen.has(w)) continue;
      seen.add(w);
      path.push(w);
      if (walk(w)) return true;
      path.pop();
    }
    return false;
  };
  walk(start);
  return [...path, start];
}

/** The layer rows docs/design.md §2 shows: rank -> the backticked folders and files of its row. */
function designRows(text) {
  const section = text.split(/^## /m).find((s) => s.startsWith("2. "));
  if (section === undefined) return undefined;
  const rows = new Map();
  for (const m of section.matchAll(/^\| (\d+) \| ([^|]*) \|/gm))
    rows.set(
      Number(m[1]),
      [...m[2].matchAll(/`([^`]+)`/g)].map((x) => x[1]),
    );
  return rows;
}

/** Every problem found in the tree at `root` (src/ and, when present, docs/design.md), as lines to print. */
export function checkLayers(root) {
  const problems = [];
  const graph = importGraph(join(root, "src"));
  for (const [file, targets] of graph) {
    const from = layerOf(file);
    if (from === undefined) {
      problems.push(`not in the layer table: src/${file} (add its folder to LAYERS in scripts/check-layers.mjs and to docs/design.md §2)`);
      continue;
    }
    for (const target of targets) {
      const to = layerOf(target);
      if (to !== undefined && to > from) problems.push(`upward import: src/${file} (layer ${layerName(from)}) -> src/${target} (layer ${layerName(to)})`);
    }
  }
  for (const { path, members } of cycles(graph)) {
    const more = members.length > path.length - 1 ? ` (modules tied by cycles: ${members.map((f) => `src/${f}`).join(", ")})` : "";
    problems.push(`cycle: ${path.map((f) => `src/${f}`).join(" -> ")}${more}`);
  }
  const design = join(root, "docs", "design.md");
  if (existsSync(design)) {
    const rows = designRows(readFileSync(design, "utf8"));
    const same =
      rows !== undefined && rows.size === LAYERS.length && LAYERS.every((row, i) => [...row].sort().join() === [...(rows.get(i) ?? [])].sort().join());
    if (!same)
      problems.push(
        `docs/design.md §2 does not show the layer table of scripts/check-layers.mjs: ${LAYERS.map((row, i) => `${i} ${row.join(" ")}`).join("; ")}`,
      );
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf("--root");
  const root = at === -1 ? join(dirname(fileURLToPath(import.meta.url)), "..") : process.argv[at + 1];
  const problems = checkLayers(root);
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(`check-layers: ${problems.length} problem${problems.length === 1 ? "" : "s"}; the layer table is docs/design.md §2`);
    process.exit(1);
  }
}
