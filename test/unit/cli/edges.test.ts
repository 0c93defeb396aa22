/**
 * The CLI on configuration edges (embedded store, no server): `.`/`..` workspaces and
 * prefix segments, endpoints with a path, and credentials inside endpoint URLs.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli, type CliResult } from "../../support/cli.js";
import { freeLowPort } from "../../support/port.js";

const work = mkdtempSync(join(tmpdir(), "objstate-cli-edges-"));
const store = join(work, "store");
const base = ["--bucket", "state-bucket", "--endpoint", `file://${store}`];

function usage(r: CliResult, pattern: RegExp): void {
  assert.equal(r.code, 2, `exit code; stderr: ${r.stderr}`);
  assert.match(r.stderr, /^objstate: error: /);
  assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
  assert.match(r.stderr, pattern);
}

const closedPort = (): Promise<number> => freeLowPort();

describe("CLI: workspaces . and .. are refused with exit 2, before anything is written", () => {
  for (const name of [".", ".."]) {
    it(`workspace new/delete ${name}, -w ${name}, a config file's workspace ${name}`, () => {
      usage(runCli(["workspace", "new", name, ...base]), /workspace must be .*not '\.' or '\.\.'/);
      usage(runCli(["workspace", "delete", name, ...base]), /workspace must be/);
      usage(runCli(["state", "pull", "-w", name, ...base]), /--workspace must be/);
      usage(runCli(["state", "push", "-", "--workspace", name, ...base], { input: "{}" }), /--workspace must be/);
      const file = join(work, `ws${name.length}.json`);
      writeFileSync(file, JSON.stringify({ bucket: "state-bucket", endpoint: `file://${store}`, workspace: name }));
      usage(runCli(["state", "pull", "-c", file]), /workspace must be/);
    });
  }

  it("a prefix with a . or .. segment", () => {
    for (const prefix of ["..", "env:/..", "a/./b"])
      usage(runCli(["state", "push", "-", ...base, "--prefix", prefix], { input: "{}" }), /prefix must be .*no '\.' or '\.\.' segment/);
  });

  it("nothing was created in the store", () => {
    let entries: string[] = [];
    try {
      entries = readdirSync(store, { recursive: true }) as string[];
    } catch {
      // never created: fine
    }
    assert.deepEqual(entries, []);
  });
});

describe("CLI: a workspace name over the limit is refused with exit 2, naming the limit", () => {
  it("-w, --workspace and workspace new with 129 and 300 characters, never quoting the store's key", () => {
    const own = [
      "--bucket",
      "long-names",
      "--endpoint",
      `file://${join(work, "long-names")}`,
      "--kvstore-endpoint",
      `file://${join(work, "long-names")}`,
      "--kvstore-table",
      "locks",
    ];
    assert.equal(runCli(["workspace", "new", "short", ...own]).code, 0);
    for (const name of ["w".repeat(129), "w".repeat(300)]) {
      for (const r of [
        runCli(["state", "pull", "-w", name, ...own]),
        runCli(["state", "push", "-", "--workspace", name, ...own], { input: '{"version": 4, "serial": 1, "lineage": "l", "outputs": {}, "resources": []}' }),
        runCli(["workspace", "new", name, ...own]),
      ]) {
        usage(r, /workspace names may have at most 128 characters/);
        assert.doesNotMatch(r.stderr, /tool\.tfstate|object key/);
      }
    }
    assert.deepEqual(
      runCli(["workspace", "list", ...own])
        .stdout.split("\n")
        .map((l) => l.replace(/^\*?\s*/, ""))
        .filter((l) => l !== ""),
      ["default", "short"],
    );
  });
});

describe("CLI: endpoints with a path are refused with exit 2", () => {
  it("from a flag, naming the flag", () => {
    usage(
      runCli(["state", "pull", "--bucket", "state-bucket", "--endpoint", "http://127.0.0.1:1/other-bucket"]),
      /--endpoint must be .*no path, query or fragment/,
    );
    usage(runCli(["state", "pull", ...base, "--kvstore-table", "locks", "--kvstore-endpoint", "http://127.0.0.1:1/x?y"]), /--kvstore-endpoint must be/);
    usage(runCli(["state", "pull", ...base, "--sts-endpoint", "http://127.0.0.1:1/#x"]), /--sts-endpoint must be/);
  });

  it("from an environment variable, naming the variable", () => {
    usage(
      runCli(["state", "pull", "--bucket", "state-bucket"], { env: { PROVIDER_OBJECT_STORE_ENDPOINT: "http://127.0.0.1:1/other-bucket" } }),
      /PROVIDER_OBJECT_STORE_ENDPOINT \(for endpoint\) must be/,
    );
    usage(runCli(["config", ...base], { env: { PROVIDER_STS_ENDPOINT: "http://127.0.0.1:1/p" } }), /PROVIDER_STS_ENDPOINT \(for stsEndpoint\) must be/);
  });
});

describe("CLI: credentials inside an endpoint URL are never printed", () => {
  const password = "url-pass-4b1d";

  it("objstate config (text and --json)", () => {
    const args = ["--bucket", "state-bucket", "--endpoint", `http://user:${password}@127.0.0.1:1`, "--kvstore-endpoint", `http://user:${password}@127.0.0.1:2`];
    for (const extra of [[], ["--json"]]) {
      const r = runCli(["config", ...args, ...extra]);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(!(r.stdout + r.stderr).includes(password), r.stdout);
      assert.match(r.stdout, /http:\/\/<redacted>@127\.0\.0\.1:1/);
    }
  });

  it("objstate doctor", async () => {
    const port = await closedPort();
    const r = runCli(["doctor", "--bucket", "state-bucket", "--endpoint", `http://user:${password}@127.0.0.1:${port}`], {
      env: { PROVIDER_ACCESS_KEY: "AK", PROVIDER_SECRET_KEY: "SK" },
    });
    assert.notEqual(r.code, 0);
    assert.ok(!(r.stdout + r.stderr).includes(password), r.stdout + r.stderr);
    assert.match(r.stdout + r.stderr, /<redacted>@127\.0\.0\.1/);
  });

  it("a refused endpoint's message", () => {
    const r = runCli(["state", "pull", "--bucket", "state-bucket", "--endpoint", `http://user:${password}@127.0.0.1:1/path`]);
    usage(r, /http:\/\/<redacted>@127\.0\.0\.1:1\/path/);
    assert.ok(!r.stderr.includes(password));
  });
});
