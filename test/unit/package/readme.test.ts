/**
 * Every ```ts example in README.md typechecks against the package's published types (the
 * `objstate` self-reference: package.json's exports → dist/src/*.d.ts, so it needs
 * `npm run build`). Each block is a module of its own: a block without imports gets every
 * export of `objstate`; names the README leaves to the reader (`backend` of the first
 * example, an ID, a state) are declared when a block uses them without declaring them.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));

/** Names the README's examples use without declaring, and their types. */
const GIVEN: Readonly<Record<string, string>> = {
  backend: "ObjectStoreBackendConfig",
  nextStateJson: "string",
  id: "string",
  versionId: "string",
};

interface Block {
  readonly line: number;
  readonly text: string;
}

function tsBlocks(markdown: string): Block[] {
  const out: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== "```ts") continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end]?.trim() !== "```") end++;
    out.push({ line: start + 1, text: lines.slice(start, end).join("\n") });
    i = end;
  }
  return out;
}

/** The block as a module: imports first, then the declarations it needs, then its code. */
function moduleOf(block: Block, exportNames: readonly string[]): string {
  const hasImports = /^import\s/m.test(block.text);
  const head = hasImports ? "" : `import { ${exportNames.join(", ")} } from "objstate";\n`;
  const given = Object.entries(GIVEN)
    .filter(([name]) => new RegExp(`\\b${name}\\b`).test(block.text) && !new RegExp(`\\b(const|let|var)\\s+${name}\\b`).test(block.text))
    .map(([name, type]) => `declare const ${name}: ${type};\n`)
    .join("");
  return `${head}${given}${block.text}\nexport {};\n`;
}

it("every ts example in README.md typechecks against the published types", () => {
  const blocks = tsBlocks(readFileSync(join(repo, "README.md"), "utf8"));
  assert.ok(blocks.length >= 4, "README has its ts examples");
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ["node"],
    // The examples show calls whose results they do not use.
    noUnusedLocals: false,
  };
  // What `import … from "objstate"` offers, read from the built declarations.
  const entry = join(repo, "dist", "src", "index.d.ts");
  const probe = ts.createProgram([entry], options);
  const checker = probe.getTypeChecker();
  const entrySymbol = checker.getSymbolAtLocation(probe.getSourceFile(entry) as ts.SourceFile);
  const exportNames = checker.getExportsOfModule(entrySymbol as ts.Symbol).map((s) => s.name);
  assert.ok(exportNames.includes("ObjectStoreBackendConfig"), "run npm run build first: dist/src/index.d.ts");

  const files = new Map(blocks.map((b, i) => [join(repo, `README.example-${i + 1}.mts`), moduleOf(b, exportNames)]));
  const host = ts.createCompilerHost(options);
  const base = { getSourceFile: host.getSourceFile.bind(host), fileExists: host.fileExists.bind(host), readFile: host.readFile.bind(host) };
  host.getSourceFile = (name, version, onError) =>
    files.has(name) ? ts.createSourceFile(name, files.get(name) as string, version) : base.getSourceFile(name, version, onError);
  host.fileExists = (name) => files.has(name) || base.fileExists(name);
  host.readFile = (name) => files.get(name) ?? base.readFile(name);
  const program = ts.createProgram([...files.keys()], options, host);
  const problems = ts.getPreEmitDiagnostics(program).map((d) => {
    const i = [...files.keys()].indexOf(d.file?.fileName ?? "");
    const where = d.file !== undefined && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    const block = blocks[i];
    return `${block === undefined ? (d.file?.fileName ?? "?") : `README.md block at line ${block.line}`}${where === undefined ? "" : ` (module line ${where.line + 1})`}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
  assert.deepEqual(problems, []);
});
