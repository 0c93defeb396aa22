/** `objstate synth`, `--version` and `--help`, run as a subprocess of the built CLI. */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../../support/cli.js";
import { DataRemoteStateObjectStore, ObjectStoreBackendConfig, formatToolJson, mergeToolJson } from "../../../src/index.js";

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
        net: {
          bucket: "state-bucket",
          key: "network.tfstate",
          kvstoreTable: "state-locks",
          defaults: { vpc_id: "vpc-none", SubnetIDs: ["a", "b"], nested: { Keep_Case: 1 } },
          workspace: "staging",
        },
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
    [
      "bad value in a remote state",
      '{"remoteStates":{"net":{"bucket":"state-bucket","assumeRoleSessionExpiration":3601}}}',
      /^objstate: error: remoteStates\.net: assumeRoleSessionExpiration must be an integer from 900 to 3600 \(seconds\), got 3601\n$/,
    ],
    [
      "unknown field",
      '{"backend":{"bucket":"state-bucket","kvstore_table":"x"}}',
      /^objstate: error: backend: kvstore_table is not a field of ObjectStoreBackendConfig; did you mean kvstoreTable\?\n$/,
    ],
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

describe("objstate synth --for", () => {
  const FLAGS = [
    "--bucket",
    "state-bucket",
    "--endpoint",
    "http://127.0.0.1:9000",
    "--kvstore-table",
    "state-locks",
    "--kvstore-endpoint",
    "http://127.0.0.1:9001",
    "--prefix",
    "",
  ];

  it("--for s3 and --for oss print the library's toTerraformJson of the settings, nothing else", () => {
    const config = ObjectStoreBackendConfig.from({
      bucket: "state-bucket",
      endpoint: "http://127.0.0.1:9000",
      kvstoreTable: "state-locks",
      kvstoreEndpoint: "http://127.0.0.1:9001",
      prefix: "",
    });
    for (const backend of ["s3", "oss"] as const) {
      const r = runCli(["synth", "--for", backend, ...FLAGS]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, formatToolJson(config.toTerraformJson({ backend })));
      assert.equal(r.stderr, "");
    }
  });

  it("--lockfile, or objstate.lockfile in the --config file, is the s3 backend's use_lockfile", () => {
    const flag = runCli(["synth", "--for", "s3", "--lockfile", ...FLAGS]);
    assert.equal(flag.code, 0, flag.stderr);
    assert.equal((JSON.parse(flag.stdout) as { terraform: { backend: { s3: Record<string, unknown> } } }).terraform.backend.s3["use_lockfile"], true);
    const cfg = file("lockfile.json", JSON.stringify({ bucket: "state-bucket", prefix: "", objstate: { lockfile: true } }));
    const fromFile = runCli(["synth", "--for", "s3", "--config", cfg]);
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.equal((JSON.parse(fromFile.stdout) as { terraform: { backend: { s3: Record<string, unknown> } } }).terraform.backend.s3["use_lockfile"], true);
    const without = runCli(["synth", "--for", "s3", ...FLAGS]);
    assert.equal((JSON.parse(without.stdout) as { terraform: { backend: { s3: Record<string, unknown> } } }).terraform.backend.s3["use_lockfile"], undefined);
  });

  it("--for http with a props file: the address of -w's workspace, each remote state's own, the user, no store field", () => {
    const props = {
      backend: { bucket: "state-bucket", secretKey: "VERY-SECRET" },
      remoteStates: { net: { bucket: "state-bucket", workspace: "staging", defaults: { vpc_id: "none" } } },
    };
    const r = runCli([
      "synth",
      "--for",
      "http",
      "--serve-url",
      "http://127.0.0.1:8080",
      "--username",
      "ci",
      "-w",
      "prod",
      file("http-props.json", JSON.stringify(props)),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const serve = { serveUrl: "http://127.0.0.1:8080", username: "ci" };
    const expected = mergeToolJson(
      ObjectStoreBackendConfig.from(props.backend).toTerraformJson({ backend: "http", ...serve, workspace: "prod" }),
      new DataRemoteStateObjectStore("net", props.remoteStates.net).toTerraformJson({ backend: "http", ...serve }),
    );
    assert.equal(r.stdout, formatToolJson(expected));
    assert.ok(!r.stdout.includes("VERY-SECRET") && !r.stderr.includes("VERY-SECRET"));
    assert.match(r.stdout, /"address": "http:\/\/127\.0\.0\.1:8080\/state\/prod"/);
    assert.match(r.stdout, /"address": "http:\/\/127\.0\.0\.1:8080\/state\/staging"/);
  });

  it("--for http needs no settings: the server holds them", () => {
    const r = runCli(["synth", "--for", "http", "--serve-url", "http://127.0.0.1:8080", "-w", "prod"]);
    assert.equal(r.code, 0, r.stderr);
    const address = "http://127.0.0.1:8080/state/prod";
    assert.deepEqual(JSON.parse(r.stdout), { terraform: { backend: { http: { address, lock_address: address, unlock_address: address } } } });
    assert.equal(r.stderr, "");
  });

  it("warns about secrets naming the tool's variable, and about s3's other default-workspace object", () => {
    const r = runCli(["synth", "--for", "s3", "--bucket", "state-bucket", "--secret-key", "VERY-SECRET"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^objstate: warning: secretKey is written in plain text .* set AWS_SECRET_ACCESS_KEY instead$/m);
    assert.match(r.stderr, /^objstate: warning: the tool's s3 backend keeps the default workspace's state at tool\.tfstate, objstate at env:\/tool\.tfstate/m);
    assert.ok(!r.stderr.includes("VERY-SECRET"));
  });

  for (const [what, args, pattern] of [
    [
      "a field the backend has no argument for",
      ["--for", "s3", "--bucket", "state-bucket", "--compute-role-name", "r"],
      /^objstate: error: --compute-role-name is set, but the tool's s3 backend has no argument for it/,
    ],
    ["the same in a props file", ["--for", "s3", "PROPS"], /^objstate: error: backend: computeRoleName is set, but the tool's s3 backend/],
    [
      "a file: endpoint",
      ["--for", "s3", "--bucket", "state-bucket", "--endpoint", "file:./states"],
      /^objstate: error: --endpoint "file:\.\/states" is objstate's embedded store/,
    ],
    ["--for http without --serve-url", ["--for", "http", "--bucket", "state-bucket"], /^objstate: error: --for http needs --serve-url URL/],
    [
      "--serve-url without --for http",
      ["--for", "s3", "--bucket", "state-bucket", "--serve-url", "http://127.0.0.1:8080"],
      /^objstate: error: --serve-url goes with --for http/,
    ],
    ["-w without --for http", ["--bucket", "state-bucket", "-w", "prod"], /^objstate: error: --workspace goes with --for http/],
    ["--lockfile without --for", ["--bucket", "state-bucket", "--lockfile"], /^objstate: error: --lockfile goes with --for s3/],
    [
      "--lockfile with oss",
      ["--for", "oss", "--bucket", "state-bucket", "--lockfile"],
      /^objstate: error: --lockfile is set, but the tool's oss backend has no argument for it/,
    ],
    [
      "credentials in --serve-url",
      ["--for", "http", "--bucket", "state-bucket", "--serve-url", "http://ci:pw@127.0.0.1:8080"],
      /^objstate: error: --serve-url must not carry credentials/,
    ],
    ["an unknown backend", ["--for", "gcs", "--bucket", "state-bucket"], /argument 'gcs' is invalid. Allowed choices are s3, oss, http/],
  ] as const) {
    it(`refuses ${what}: one line on stderr, exit 2, nothing on stdout`, () => {
      const props = file("unsupported.json", JSON.stringify({ backend: { bucket: "state-bucket", computeRoleName: "r" } }));
      const r = runCli(["synth", ...args.map((a) => (a === "PROPS" ? props : a))]);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, pattern);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    });
  }
});

describe("objstate --version / --help", () => {
  it("--version prints the package version", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { version: string };
    const r = runCli(["--version"]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.split("\n")[0], `objstate v${pkg.version}`);
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
