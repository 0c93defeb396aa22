/**
 * The size check run by `npm run lint` (scripts/check-size.mjs): on a small tree it names
 * exactly the file over 600 lines, the driver over 800 and the function over 80, by file and
 * line, and not those at their limits; on the real tree it finds nothing.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../../../../", import.meta.url));
const { checkSize } = (await import(pathToFileURL(join(root, "scripts", "check-size.mjs")).href)) as {
  checkSize: (root: string) => string[];
};

const lines = (n: number): string => Array.from({ length: n }, (_, i) => `export const v${i} = ${i};`).join("\n") + "\n";
const fn = (name: string, bodyLines: number): string =>
  `export function ${name}(): number {\n${Array.from({ length: bodyLines }, (_, i) => `  const x${i} = ${i};`).join("\n")}\n  return 0;\n}\n`;

describe("the size check", () => {
  it("names the files and functions over their limits, and none at them", () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-size-"));
    const files: Record<string, string> = {
      "src/at-limit.ts": lines(600),
      "src/over.ts": lines(601),
      "src/store/s3.ts": lines(800),
      "src/store/file.ts": lines(801),
      // 3 lines of frame around the body: 77 + 3 = 80 lines, 78 + 3 = 81.
      "src/fns.ts": fn("fits", 77) + fn("tooLong", 78),
    };
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    try {
      assert.deepEqual(
        checkSize(dir).map((p) => p.split(": ")[0] + " " + (/function (\w+)/.exec(p)?.[1] ?? "")),
        ["src/fns.ts:81 tooLong", "src/over.ts:1 ", "src/store/file.ts:1 "],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("finds the real src within the limits", () => {
    assert.deepEqual(checkSize(root), []);
  });
});
