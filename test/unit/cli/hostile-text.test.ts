/**
 * What other clients wrote, printed by the CLI: a lock whose ID, Who and Info carry escape
 * sequences, carriage returns, a forged table line and a bidi override (written straight to
 * the embedded table through the library) reaches the terminal escaped, in `objstate locks`,
 * the lock error, the wait notice and the force-unlock prompt; `--json` stays exact JSON.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { EXIT } from "../../../src/error-codes.js";
import { runCli } from "../../support/cli.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-cli-hostile-"));
const props = { bucket: "bkt", endpoint: `file:${dir}`, prefix: "p", key: "s.tfstate", kvstoreEndpoint: `file:${dir}`, kvstoreTable: "locks" };
const flags = [
  "--bucket",
  "bkt",
  "--endpoint",
  `file:${dir}`,
  "--prefix",
  "p",
  "--key",
  "s.tfstate",
  "--kvstore-endpoint",
  `file:${dir}`,
  "--kvstore-table",
  "locks",
];

const ID = "id\u001b[2J\u001b]0;pwned\u0007";
const WHO = "mallory\rroot@prod\u009b31m";
const INFO = "run\ndefault  table  fake-id  admin  apply  -  \u202etxt.exe";
/** What must never reach a terminal raw: ESC, BEL, CR, LF inside a field, CSI (C1), the bidi override. */
const RAW = ["\u001b", "\u0007", "\r", "\u009b", "\u202e"];

function assertEscaped(text: string, what: string): void {
  for (const c of RAW) assert.ok(!text.includes(c), `${what} carries U+${c.codePointAt(0)?.toString(16).padStart(4, "0")} raw: ${JSON.stringify(text)}`);
}

describe("untrusted lock fields on the terminal", () => {
  let backend: ObjectStoreBackend;
  before(async () => {
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    await backend.lock("default", { id: ID, who: WHO, info: INFO, operation: "apply" });
  });
  after(() => backend.close());

  it("objstate locks shows them escaped, one line per lock; --json keeps them exact", () => {
    const text = runCli(["locks", ...flags]);
    assert.equal(text.code, 0, text.stderr);
    assertEscaped(text.stdout, "locks");
    assert.equal(text.stdout.split("\n").length, 3, `a header, one lock line and the end: ${JSON.stringify(text.stdout)}`);
    assert.ok(text.stdout.includes("id\\x1b[2J\\x1b]0;pwned\\x07"), text.stdout);
    assert.ok(text.stdout.includes("mallory\\rroot@prod\\x9b31m"), text.stdout);
    assert.ok(text.stdout.includes("run\\ndefault  table  fake-id  admin  apply  -  \\u202etxt.exe"), text.stdout);
    const json = runCli(["locks", "--json", ...flags]);
    assert.equal(json.code, 0, json.stderr);
    const [listed] = JSON.parse(json.stdout) as { id: string; who: string; info: string }[];
    assert.deepEqual([listed?.id, listed?.who, listed?.info], [ID, WHO, INFO]);
  });

  it("a push that finds the lock held says so escaped, in its wait notice and its error", () => {
    const file = join(dir, "state.json");
    writeFileSync(file, JSON.stringify({ version: 4, serial: 1, lineage: "l", outputs: {}, resources: [] }));
    const push = runCli(["state", "push", file, "--lock-timeout", "300ms", ...flags]);
    assert.equal(push.code, EXIT.locked, push.stderr);
    assertEscaped(push.stderr, "the push's stderr");
    assert.match(push.stderr, /^objstate: .* is locked by /, JSON.stringify(push.stderr));
    assert.match(push.stderr, /is locked by mallory\\rroot@prod\\x9b31m \(since .*\); waiting/);
    assert.ok(push.stderr.includes("ID id\\x1b[2J\\x1b]0;pwned\\x07, held by mallory\\rroot@prod\\x9b31m"), push.stderr);
    // The error is one line: its line breaks fold to spaces (errorLine), so no line is forged.
    assert.ok(push.stderr.includes("(run default  table  fake-id  admin  apply  -  \\u202etxt.exe)"), push.stderr);
    assert.equal(push.stderr.split("\n").length, 3, `the wait notice, the error and the end: ${JSON.stringify(push.stderr)}`);
  });
});
