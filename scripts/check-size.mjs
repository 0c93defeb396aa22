// The size check (run by `npm run lint`): a src file stays under 600 lines (the two store
// drivers under 800) and a function under 80, so that each reads at a glance (issue 38).
//
//   node scripts/check-size.mjs [--root DIR]
//
// Prints `file:line: ...` for each file or function over its limit; exits 1 when any is found.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const FILE_LIMIT = 600;
const DRIVER_LIMIT = 800;
const DRIVERS = new Set(["src/store/s3.ts", "src/store/file.ts"]);
const FUNCTION_LIMIT = 80;

function listTs(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? listTs(join(dir, d.name)) : d.name.endsWith(".ts") ? [join(dir, d.name)] : [],
  );
}

function isFunction(node) {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

/** Every file and function under `root`/src over its limit, as `file:line: ...` lines. */
export function checkSize(root) {
  const problems = [];
  for (const path of listTs(join(root, "src")).sort()) {
    const file = relative(root, path).split(sep).join("/");
    const text = readFileSync(path, "utf8");
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    const limit = DRIVERS.has(file) ? DRIVER_LIMIT : FILE_LIMIT;
    if (lines > limit) problems.push(`${file}:1: ${lines} lines, over ${limit}: split it by flow or delete what repeats`);
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (isFunction(node)) {
        const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const count = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
        if (count > FUNCTION_LIMIT) {
          const name = node.name?.getText(source) ?? "(anonymous)";
          problems.push(`${file}:${first + 1}: function ${name} is ${count} lines, over ${FUNCTION_LIMIT}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf("--root");
  const root = at === -1 ? join(dirname(fileURLToPath(import.meta.url)), "..") : process.argv[at + 1];
  const problems = checkSize(root);
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(`check-size: ${problems.length} file${problems.length === 1 ? "" : "s"} or function${problems.length === 1 ? "" : "s"} over the limits`);
    process.exit(1);
  }
}
