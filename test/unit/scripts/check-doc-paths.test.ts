/**
 * The doc-path check run by `npm run lint` (scripts/check-doc-paths.mjs): on a small tree it
 * names exactly the dead citation and the dead links, by file and line; on the real tree it
 * finds nothing.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../../../../", import.meta.url));
const { checkDocPaths } = (await import(pathToFileURL(join(root, "scripts", "check-doc-paths.mjs")).href)) as {
  checkDocPaths: (root: string) => string[];
};

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "objstate-doc-paths-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

describe("the doc-path check", () => {
  it("reports exactly the dead citation, by file and line", () => {
    const dir = tree({
      "src/store/file.ts": "export const a = 1;\n",
      "README.md": "# Store\n\nThe embedded store (`src/store/file.ts`).\nIts disk errors (`src/store/local-fs.ts`).\n",
    });
    try {
      assert.deepEqual(checkDocPaths(dir), ["README.md:4: cites src/store/local-fs.ts, which is not in the tree"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("resolves folders, globs, short decision names and links; reports a dead link and a dead anchor", () => {
    const dir = tree({
      "src/lock/table.ts": "export const t = 1;\n",
      "docs/decisions/011-claims.md": "# 011: Claims\n",
      "docs/design.md": "## The locks\n\n`src/lock/`, `src/lock/*.ts` and decisions/011; [claims](decisions/011-claims.md#011-claims).\n",
      "README.md":
        "# Objstate\n\n[design](docs/design.md#the-locks), [top](#objstate), docs/decisions/011.\n[gone](docs/gone.md), [no such part](docs/design.md#the-keys).\n",
      "bench/RESULTS.md": "Measured with `bench/gone.mjs`.\n",
    });
    try {
      assert.deepEqual(checkDocPaths(dir), [
        "README.md:4: links to docs/gone.md, which does not resolve",
        "README.md:4: links to docs/design.md#the-keys, which does not resolve",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("finds the real tree's docs citing only what is there", () => {
    assert.deepEqual(checkDocPaths(root), []);
  });
});
