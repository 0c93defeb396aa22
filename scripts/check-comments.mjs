// The comment check (run by `npm run lint`): src comments say why, and leave measurements
// (approximate figures, A/B runs, "measured on …") and engine internals (V8, its tiers and
// caches) to bench/RESULTS.md, where they stay dated (docs/decisions/092-docs-cite-real-paths.md).
//
//   node scripts/check-comments.mjs [--root DIR]
//
// Prints `file:line: ...` for each such comment; exits 1 when any is found.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const FIGURE = /(?:~|≈|\babout )\s?\d[\d.,]*\s?(?:ns|µs|us|ms|s|[KMG]i?B(?:\/s)?)\b|\bA\/B\b|\b[Mm]easured (?:on|in|at)\b|RESULTS\.md/;
const ENGINE = /\bV8\b|TurboFan|Maglev|Sparkplug|[Mm]egamorphic|[Ii]nline cache|[Hh]idden class/;

function listTs(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? listTs(join(dir, d.name)) : d.name.endsWith(".ts") ? [join(dir, d.name)] : [],
  );
}

/** The comment on a line: all of it inside a block comment or after `//` at its start, else what follows ` // `. */
function commentOf(line) {
  if (/^\s*(?:\/\/|\/\*|\*)/.test(line)) return line;
  const at = line.search(/\s\/\/\s/);
  return at === -1 ? "" : line.slice(at);
}

/** Every comment line under `root`/src that cites a measurement or an engine internal, as `file:line: ...` lines. */
export function checkComments(root) {
  const problems = [];
  for (const path of listTs(join(root, "src")).sort()) {
    const file = relative(root, path).split(sep).join("/");
    readFileSync(path, "utf8")
      .split("\n")
      .forEach((line, i) => {
        const m = FIGURE.exec(commentOf(line)) ?? ENGINE.exec(commentOf(line));
        if (m !== null) problems.push(`${file}:${i + 1}: comment cites "${m[0]}": say why here, and put the figure in bench/RESULTS.md`);
      });
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf("--root");
  const root = at === -1 ? join(dirname(fileURLToPath(import.meta.url)), "..") : process.argv[at + 1];
  const problems = checkComments(root);
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(`check-comments: ${problems.length} comment${problems.length === 1 ? "" : "s"} with measurements or engine internals`);
    process.exit(1);
  }
}
