/**
 * `objstate output` on the embedded store (a subprocess of the built CLI): sensitive values,
 * exact numbers in every format, `--raw` of each JSON type, legacy state formats, deep values.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { openStore } from "../../../src/store/index.js";
import { runCli, type CliResult } from "../../support/cli.js";

const STATE = JSON.stringify({
  version: 4,
  serial: 1,
  lineage: "l-1",
  outputs: {
    pw: { value: "s3cret", type: "string", sensitive: true },
    ip: { value: "10.0.0.1", type: "string", sensitive: false },
    on: { value: true, type: "bool" },
    nothing: { value: null, type: "string" },
    ids: { value: ["a", "b"], type: ["list", "string"] },
    tags: { value: { k: "v" }, type: ["map", "string"] },
  },
  resources: [],
});
/** Numbers JSON.stringify cannot write, spliced in as text. */
const NUMBERS = STATE.replace(
  '"outputs":{',
  '"outputs":{"big":{"value":12345678901234567890,"type":"number"},"huge":{"value":1e400,"type":"number"},"tiny":{"value":1e-400,"type":"number"},"neg":{"value":-1.50E+2,"type":"number"},',
);

describe("objstate output", () => {
  const dir = mkdtempSync(join(tmpdir(), "objstate-output-cli-"));
  const endpoint = `file://${dir}`;
  let backend: ObjectStoreBackend;
  const cli = (workspace: string, ...args: string[]): CliResult => runCli(["output", ...args, "-w", workspace, "--bucket", "states", "--endpoint", endpoint]);

  before(async () => {
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ bucket: "states", endpoint }), { env: {}, onWarning: () => undefined });
    await backend.writeState("plain", STATE);
    await backend.writeState("numbers", NUMBERS);
  });
  after(() => backend.close());

  it("hides sensitive values in the listing and in --json unless --show-sensitive; one asked for by name is shown", () => {
    const list = cli("plain");
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stdout, 'ids = ["a","b"]\nip = "10.0.0.1"\nnothing = null\non = true\npw = <sensitive>\ntags = {"k":"v"}\n');
    assert.ok(!list.stdout.includes("s3cret"));
    const json = cli("plain", "--json");
    // The tool's `output -json` shape: each output's sensitivity, type and value.
    assert.deepEqual(JSON.parse(json.stdout), {
      ids: { sensitive: false, type: ["list", "string"], value: ["a", "b"] },
      ip: { sensitive: false, type: "string", value: "10.0.0.1" },
      nothing: { sensitive: false, type: "string", value: null },
      on: { sensitive: false, type: "bool", value: true },
      pw: { sensitive: true, type: "string", value: "<sensitive>" },
      tags: { sensitive: false, type: ["map", "string"], value: { k: "v" } },
    });
    assert.equal(json.stdout, `${JSON.stringify(JSON.parse(json.stdout), null, 2)}\n`, "indented by two, as the tool's");
    assert.ok(!json.stdout.includes("s3cret"));
    assert.ok(cli("plain", "--show-sensitive").stdout.includes('pw = "s3cret"\n'));
    assert.deepEqual(JSON.parse(cli("plain", "--json", "--show-sensitive").stdout).pw, { sensitive: true, type: "string", value: "s3cret" });
    assert.equal(cli("plain", "pw").stdout, '"s3cret"\n');
    assert.equal(cli("plain", "pw", "--json").stdout, '"s3cret"\n');
    assert.equal(cli("plain", "pw", "--raw").stdout, "s3cret");
  });

  it("takes the tool's spellings -json and -raw; NAME --json is the value on one line, with Go's escapes of <, > and &, as the tool's", async () => {
    assert.deepEqual(JSON.parse(cli("plain", "-json").stdout), JSON.parse(cli("plain", "--json").stdout));
    assert.equal(cli("plain", "-raw", "ip").stdout, "10.0.0.1");
    assert.equal(cli("plain", "ip", "-raw").stdout, "10.0.0.1");
    assert.equal(cli("plain", "tags", "-json").stdout, '{"k":"v"}\n');
    await backend.writeState("markup", JSON.stringify({ version: 4, outputs: { html: { value: { "<b>": "a & b" }, type: ["map", "string"] } } }));
    assert.equal(cli("markup", "html", "--json").stdout, '{"\\u003cb\\u003e":"a \\u0026 b"}\n');
    assert.equal(
      cli("markup", "--json").stdout,
      '{\n  "html": {\n    "sensitive": false,\n    "type": [\n      "map",\n      "string"\n    ],\n    "value": {\n      "\\u003cb\\u003e": "a \\u0026 b"\n    }\n  }\n}\n',
    );
    assert.equal(cli("markup", "html").stdout, '{"<b>":"a & b"}\n', "not in the human form");
    const unknown = cli("plain", "-lock=false");
    assert.equal(unknown.code, 2, "output has no -lock, so it is not mapped");
    assert.match(unknown.stderr, /unknown option '-lock=false'/);
  });

  it("prints numbers exactly as the state has them: listing, --json and NAME", () => {
    const list = cli("numbers");
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^big = 12345678901234567890$/m);
    assert.match(list.stdout, /^huge = 1e400$/m);
    assert.match(list.stdout, /^tiny = 1e-400$/m);
    assert.match(list.stdout, /^neg = -1\.50E\+2$/m);
    const json = cli("numbers", "--json").stdout;
    assert.match(json, /\n {2}"big": \{\n {4}"sensitive": false,\n {4}"type": "number",\n {4}"value": 12345678901234567890\n {2}\},\n/);
    assert.match(json, /\n {4}"value": 1e400\n/);
    assert.match(json, /\n {2}"tiny": \{\n {4}"sensitive": false,\n {4}"type": "number",\n {4}"value": 1e-400\n {2}\}\n\}\n$/);
    assert.equal(cli("numbers", "big", "--json").stdout, "12345678901234567890\n");
    assert.equal(cli("numbers", "huge").stdout, "1e400\n");
  });

  it("--raw prints strings, numbers and booleans as the tool's output -raw does; refuses null, lists and objects", () => {
    assert.equal(cli("plain", "ip", "--raw").stdout, "10.0.0.1");
    assert.equal(cli("plain", "on", "--raw").stdout, "true");
    assert.equal(cli("numbers", "big", "--raw").stdout, "12345678901234567890");
    assert.equal(cli("numbers", "huge", "--raw").stdout, `1${"0".repeat(400)}`, "plain decimal notation, exactly");
    assert.equal(cli("numbers", "tiny", "--raw").stdout, `0.${"0".repeat(399)}1`);
    assert.equal(cli("numbers", "neg", "--raw").stdout, "-150");
    for (const [name, pattern] of [
      ["ids", /^objstate: error: output "ids" is a list, not a string: --raw prints only strings, numbers and booleans \(use --json\)\n$/],
      ["tags", /^objstate: error: output "tags" is an object, not a string: --raw prints only strings, numbers and booleans \(use --json\)\n$/],
      ["nothing", /^objstate: error: output "nothing" is null, so --raw cannot print it \(use --json\)\n$/],
    ] as const) {
      const r = cli("plain", name, "--raw");
      assert.equal(r.code, 1);
      assert.equal(r.stdout, "");
      // Only the error: a reader is not warned about unlocked writers (there is no lock table here).
      assert.match(r.stderr, pattern);
    }
    const noName = cli("plain", "--raw");
    assert.equal(noName.code, 2);
    assert.match(noName.stderr, /--raw prints one output: give its NAME/);
  });

  it("reads a format-3 state's root outputs, bare values and sensitive flags included", async () => {
    const v3 = {
      version: 3,
      serial: 2,
      lineage: "l-3",
      modules: [
        {
          path: ["root"],
          outputs: { ip: { sensitive: false, type: "string", value: "10.0.0.9" }, pw: { sensitive: true, type: "string", value: "old" }, bare: "b" },
        },
        { path: ["root", "child"], outputs: { inner: { sensitive: false, type: "string", value: "no" } } },
      ],
    };
    await backend.writeState("legacy", JSON.stringify(v3));
    assert.equal(cli("legacy").stdout, 'bare = "b"\nip = "10.0.0.9"\npw = <sensitive>\n');
  });

  it("prints a value nested 10,000 levels deep (the tool's limit) without overflowing the stack", async () => {
    const levels = 10_000 - 3;
    await backend.writeState("deep", `{"version": 4, "outputs": {"deep": {"type": "dynamic", "value": ${"[".repeat(levels)}1${"]".repeat(levels)}}}}`);
    const r = cli("deep", "deep");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${"[".repeat(levels)}1${"]".repeat(levels)}\n`);
    const j = cli("deep", "--json");
    assert.equal(j.code, 0, j.stderr);
    assert.ok(j.stdout.startsWith('{\n  "deep": {\n    "sensitive": false,\n    "type": "dynamic",\n    "value": [\n      [\n'));
  });

  it("an empty state object is no state; invalid JSON is placed at line and column", async () => {
    // Bytes objstate refuses to write (decision 089), stored as another tool could.
    const raw = await openStore({ bucket: "states", endpoint });
    await raw.put(backend.statePath("empty"), Buffer.alloc(0));
    const empty = cli("empty");
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /no stored state for workspace empty at states\/env:\/empty\/tool\.tfstate \(the object is empty\)/);
    await raw.put(backend.statePath("broken"), Buffer.from('{"version": 4,\n"outputs": {"a": {"value": [1,]}}}'));
    const broken = cli("broken");
    assert.equal(broken.code, 2);
    assert.match(broken.stderr, /is not valid JSON: unexpected character at line 2, column 31\n$/);
  });
});
