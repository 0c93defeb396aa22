// The doc-path check (run by `npm run lint`): every `src/`, `test/`, `scripts/`, `bench/`,
// `docs/` and `decisions/` path that README.md or docs/**/*.md cites exists in the tree, and
// every relative markdown link (and `#anchor`) resolves. bench/RESULTS.md is history and may
// cite what was deleted, so it is not checked (docs/decisions/092-docs-cite-real-paths.md).
//
//   node scripts/check-doc-paths.mjs [--root DIR]
//
// Prints `file:line: ...` for each dead citation or link; exits 1 when any is found.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const SKIP = new Set(["node_modules", "dist", ".git"]);
const CITATION = /(?<![\w./@-])(?:src|test|scripts|bench|docs|decisions)\/[\w./*{},-]*/g;
const LINK = /\[[^\]]*\]\(([^)\s]+)\)/g;

function listFiles(root, dir = root) {
  const out = [];
  if (!existsSync(dir)) return out;
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(d.name)) continue;
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...listFiles(root, p));
    else out.push(relative(root, p).split(sep).join("/"));
  }
  return out;
}

/** A glob (`*`, `{a,b}`) or plain path as a regex over tree paths; a folder matches what is under it. */
function pathPattern(cited) {
  const body = cited
    .replace(/\/$/, "")
    .replace(/[.+?^$()|[\]\\]/g, "\\$&")
    .replace(/\*/g, "[^/]*")
    .replace(/\{([^}]*)\}/g, (_, alts) => `(?:${alts.split(",").join("|")})`);
  // `docs/decisions/011` is the short form of `docs/decisions/011-....md`.
  const short = /^docs\/decisions\/\d{3}$/.test(cited) ? "-[^/]*" : "";
  return new RegExp(`^${body}${short}(?:/.*)?$`);
}

/** GitHub's anchors of a markdown file's headings. */
function anchors(text) {
  const seen = new Map();
  const out = new Set();
  for (const m of text.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = m[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

function deadLink(root, doc, target) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return false;
  const [path, anchor] = target.split("#");
  const file = path === "" ? doc : posix.normalize(posix.join(posix.dirname(doc), path));
  if (!existsSync(join(root, file))) return true;
  return anchor !== undefined && file.endsWith(".md") && !anchors(readFileSync(join(root, file), "utf8")).has(anchor);
}

/** Every dead citation and link in the docs of the tree at `root`, as `file:line: ...` lines. */
export function checkDocPaths(root) {
  const files = listFiles(root);
  const docs = files.filter((f) => f === "README.md" || (f.startsWith("docs/") && f.endsWith(".md"))).sort();
  const problems = [];
  for (const doc of docs) {
    readFileSync(join(root, doc), "utf8")
      .split("\n")
      .forEach((line, i) => {
        // A link's target is checked as a link, not again as a citation.
        for (const [raw] of line.replace(/\]\([^)\s]+\)/g, "]").matchAll(CITATION)) {
          const cited = raw.replace(/[.,]+$/, "");
          const pattern = pathPattern(cited.startsWith("decisions/") ? `docs/${cited}` : cited);
          if (!files.some((f) => pattern.test(f))) problems.push(`${doc}:${i + 1}: cites ${cited}, which is not in the tree`);
        }
        for (const [, target] of line.matchAll(LINK))
          if (deadLink(root, doc, target)) problems.push(`${doc}:${i + 1}: links to ${target}, which does not resolve`);
      });
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf("--root");
  const root = at === -1 ? join(dirname(fileURLToPath(import.meta.url)), "..") : process.argv[at + 1];
  const problems = checkDocPaths(root);
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(`check-doc-paths: ${problems.length} dead citation${problems.length === 1 ? "" : "s"} or link${problems.length === 1 ? "" : "s"}`);
    process.exit(1);
  }
}
