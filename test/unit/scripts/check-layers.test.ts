/**
 * The layer check run by `npm run lint` (scripts/check-layers.mjs): on a small tree it names
 * an upward import and a cycle; on the real tree it finds nothing.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../../../../", import.meta.url));
const { checkLayers } = (await import(pathToFileURL(join(root, "scripts", "check-layers.mjs")).href)) as {
  checkLayers: (root: string) => string[];
};

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "objstate-layers-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, "src", name)), { recursive: true });
    writeFileSync(join(dir, "src", name), text);
  }
  return dir;
}

describe("the layer check", () => {
  it("names an upward import (type-only too), a cycle, and a file outside the table", () => {
    const dir = tree({
      "util/a.ts": 'import type { B } from "../config/b.js";\nexport type A = B;\n',
      "config/b.ts": "export type B = number;\n",
      "store/c.ts": 'import { d } from "./d.js";\nexport const c = 1;\n',
      "store/d.ts": 'export { c as d } from "./c.js";\n',
      "nowhere/e.ts": "export const e = 1;\n",
    });
    try {
      const problems = checkLayers(dir);
      assert.ok(
        problems.some((p) => p.startsWith("upward import: src/util/a.ts") && p.includes("-> src/config/b.ts")),
        problems.join("\n"),
      );
      assert.ok(
        problems.some((p) => p === "cycle: src/store/c.ts -> src/store/d.ts -> src/store/c.ts"),
        problems.join("\n"),
      );
      assert.ok(
        problems.some((p) => p.startsWith("not in the layer table: src/nowhere/e.ts")),
        problems.join("\n"),
      );
      assert.equal(problems.length, 3, problems.join("\n"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("passes a tree whose imports point down", () => {
    const dir = tree({
      "util/a.ts": "export const a = 1;\n",
      "config/b.ts": 'import { a } from "../util/a.js";\nexport const b = a;\n',
      "cli/c.ts": 'const m = await import("../config/b.js");\nexport const c = m.b;\n',
    });
    try {
      assert.deepEqual(checkLayers(dir), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("finds the real tree clean, and design.md §2 showing the same table", () => {
    assert.deepEqual(checkLayers(root), []);
  });
});
