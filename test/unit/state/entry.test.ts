/**
 * `objstate/state` is its own entry point: the package's main entry does not load the state
 * parsers and comparers (start-up cost for every importer), the subpath does.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";

const MAIN = new URL("../../../src/index.js", import.meta.url).href;
const STATE = new URL("../../../src/state-entry.js", import.meta.url).href;

/** A resolve hook that lists every module under src/state/ that gets loaded. */
const WATCH = `export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (r.url.includes("/src/state/")) process.stdout.write("loaded " + r.url.slice(r.url.indexOf("/src/state/")) + "\\n");
  return r;
}`;

function loads(entry: string): string {
  const code = `import { register } from "node:module";
    register("data:text/javascript," + encodeURIComponent(${JSON.stringify(WATCH)}));
    const m = await import(${JSON.stringify(entry)});
    console.log("diffStates:", typeof m.diffStates);`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

describe("objstate/state entry point", () => {
  it("the main entry does not load the state diff; objstate/state does", () => {
    const main = loads(MAIN);
    // The backend holds writes to the state rule (state/check.js); the diff is objstate/state's alone.
    assert.doesNotMatch(main, /loaded \/src\/state\/(diff|compare)\.js/);
    assert.match(main, /^diffStates: undefined$/m);
    const state = loads(STATE);
    assert.match(state, /loaded \/src\/state\/diff\.js/);
    assert.match(state, /^diffStates: function$/m);
  });
});
