/**
 * The comment check run by `npm run lint` (scripts/check-comments.mjs): on a small tree it
 * names exactly the comments citing a measurement or V8, by file and line, and not the same
 * words in code or an exact bound; on the real tree it finds nothing.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../../../../", import.meta.url));
const { checkComments } = (await import(pathToFileURL(join(root, "scripts", "check-comments.mjs")).href)) as {
  checkComments: (root: string) => string[];
};

describe("the comment check", () => {
  it("names the comments with a measured figure or a V8 internal, and nothing else", () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-comments-"));
    const files: Record<string, string> = {
      "src/a.ts": [
        "/**",
        " * Reused buffers: fresh ones made V8 collect fully.",
        " * The deadline allows 1 MiB/s.",
        " */",
        'export const a = "~5 ms";',
        "export const b = 1; // a worker starts in ~5 ms",
        'import { getHeapStatistics } from "node:v8";',
      ].join("\n"),
      "src/b/c.ts": "// Measured on 1,000 cold objects.\nexport const c = 1;\n",
    };
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    try {
      assert.deepEqual(
        checkComments(dir).map((p) => p.split(": comment cites ")[0]),
        ["src/a.ts:2", "src/a.ts:6", "src/b/c.ts:1"],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("finds the real src's comments free of measurements and V8 internals", () => {
    assert.deepEqual(checkComments(root), []);
  });
});
