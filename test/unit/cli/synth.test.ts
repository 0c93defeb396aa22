/** `objstate synth`, `--version` and `--help`, run as a subprocess of the built CLI. */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../../support/cli.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-synth-"));
function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe("objstate synth", () => {
  it("prints the merged tool JSON with a trailing newline, same bytes as the golden file", () => {
    const props = {
      backend: { bucket: "state-bucket" },
      remoteStates: {
        net: { bucket: "state-bucket", key: "network.tfstate", kvstoreTable: "state-locks", defaults: { vpc_id: "vpc-none", SubnetIDs: ["a", "b"], nested: { Keep_Case: 1 } }, workspace: "staging" },
        dns: { bucket: "state-bucket", key: "dns.tfstate" },
      },
    };
    const r = runCli(["synth", file("props.json", JSON.stringify(props))]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, readFileSync(new URL("../../../../test/golden/remote-state.json", import.meta.url), "utf8"));
    assert.equal(r.stderr, "");
  });

  it("reads standard input with -", () => {
    const r = runCli(["synth", "-"], { input: '{"backend":{"bucket":"state-bucket","encrypt":true}}' });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { tool: { backend: { objectstore: { bucket: "state-bucket", encrypt: true } } } });
  });

  it("warns on stderr about secrets in the file, without the value", () => {
    const r = runCli(["synth", "-"], { input: '{"backend":{"bucket":"state-bucket","secretKey":"VERY-SECRET"}}' });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /warning: backend: secretKey .* PROVIDER_SECRET_KEY/);
    assert.ok(!r.stderr.includes("VERY-SECRET"));
  });

  for (const [name, text, pattern] of [
    ["missing bucket", '{"backend":{"key":"a"}}', /^objstate: error: backend: bucket is required\n$/],
    ["bad value in a remote state", '{"remoteStates":{"net":{"bucket":"state-bucket","assumeRoleSessionExpiration":3601}}}', /^objstate: error: remoteStates\.net: assumeRoleSessionExpiration must be an integer from 900 to 3600 \(seconds\), got 3601\n$/],
    ["unknown field", '{"backend":{"bucket":"state-bucket","kvstore_table":"x"}}', /^objstate: error: backend: kvstore_table is not a field of ObjectStoreBackendConfig; did you mean kvstoreTable\?\n$/],
    ["unknown top-level key", '{"backends":{}}', /did you mean "backend"\?/],
    ["broken JSON names file and line", '{\n  "backend": {\n    "bucket": "state-bucket",\n  }\n}', /is not valid JSON at line 4, column 3/],
  ] as const) {
    it(`bad input: ${name} → one line on stderr, exit 2, nothing on stdout`, () => {
      const p = file(`${name.replace(/\W+/g, "-")}.json`, text);
      const r = runCli(["synth", p]);
      assert.equal(r.code, 2);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, pattern);
      assert.equal(r.stderr.trim().split("\n").length, 1);
    });
  }

  it("missing file names the file", () => {
    const r = runCli(["synth", join(dir, "nope.json")]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /cannot read .*nope\.json: no such file/);
  });
});

describe("objstate --version / --help", () => {
  it("--version prints the package version", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { version: string };
    const r = runCli(["--version"]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.trim(), pkg.version);
  });
  it("--help lists synth; unknown commands suggest the nearest and exit 2", () => {
    const h = runCli(["--help"]);
    assert.equal(h.code, 0);
    assert.match(h.stdout, /synth \[options\] \[file\]/);
    const u = runCli(["synht"]);
    assert.equal(u.code, 2);
    assert.match(u.stderr, /Did you mean synth\?/);
  });
});
