/**
 * `--layout seed|s3` and the `--config` file's `objstate.layout`, as subprocesses of the
 * built CLI on the embedded store: where the default workspace's state goes, `objstate
 * config` showing the layout and its source, and `synth --for`'s layout warning following it.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../../support/cli.js";
import { assertOneLineError } from "./suite.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-cli-layout-"));
let n = 0;
function file(name: string, doc: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, typeof doc === "string" ? doc : JSON.stringify(doc));
  return p;
}
function settings(): { bucket: string; args: string[] } {
  n++;
  const bucket = `bkt-${n}`;
  return { bucket, args: ["--bucket", bucket, "--endpoint", `file:${dir}`, "--kvstore-endpoint", `file:${dir}`, "--kvstore-table", `locks-${n}`] };
}
const STATE = JSON.stringify({
  version: 4,
  serial: 1,
  lineage: "3f0c1a52-0000-4000-8000-000000000001",
  outputs: { y: { value: "v", type: "string" } },
  resources: [],
});

describe("--layout and objstate.layout", () => {
  it("--layout s3 keeps the default workspace at {key}, named ones at {prefix}/NAME/{key}; the seed layout does not see that default", () => {
    const s = settings();
    const state = file(`state-${n}.json`, STATE);
    const pushed = runCli(["state", "push", state, "--layout", "s3", ...s.args]);
    assert.equal(pushed.code, 0, pushed.stderr);
    assert.match(pushed.stdout, new RegExp(`to ${s.bucket}/tool\\.tfstate$`, "m"));
    assert.ok(existsSync(join(dir, s.bucket, "tool.tfstate")));
    assert.equal(runCli(["state", "push", state, "-w", "prod", "--layout", "s3", ...s.args]).code, 0);
    assert.ok(existsSync(join(dir, s.bucket, encodeURIComponent("env:/prod/tool.tfstate"))));
    assert.deepEqual(
      (JSON.parse(runCli(["workspace", "list", "--json", "--layout", "s3", ...s.args]).stdout) as { name: string }[]).map((w) => w.name),
      ["default", "prod"],
    );
    assert.equal(runCli(["state", "pull", "--layout", "s3", ...s.args]).stdout, STATE);
    assert.equal(runCli(["output", "y", "--raw", "--layout", "s3", ...s.args]).stdout, "v");
    // The seed layout reads its default workspace at env:/tool.tfstate: there is none.
    assertOneLineError(runCli(["state", "pull", ...s.args]), /no stored state for workspace default at bkt-\d+\/env:\/tool\.tfstate/);
    assert.equal(runCli(["state", "pull", "-w", "prod", ...s.args]).stdout, STATE);
    // The --config file's objstate section does what the flag does.
    const cfg = file(`layout-${n}.json`, { objstate: { layout: "s3" } });
    assert.equal(runCli(["state", "pull", "--config", cfg, ...s.args]).stdout, STATE);
  });

  it("objstate config shows the layout and where it came from (flag over file over default)", () => {
    type Shown = { value: string; source: string; from?: string };
    const shown = (args: string[]): Shown => {
      const r = runCli(["config", "--json", "--bucket", "state-bucket", ...args]);
      assert.equal(r.code, 0, r.stderr);
      return (JSON.parse(r.stdout) as { layout: Shown }).layout;
    };
    const cfg = file("config-layout.json", { bucket: "state-bucket", objstate: { layout: "s3" } });
    assert.deepEqual(shown([]), { value: "seed", source: "default" });
    assert.deepEqual(shown(["--layout", "s3"]), { value: "s3", source: "explicit", from: "--layout" });
    assert.deepEqual(shown(["--config", cfg]), { value: "s3", source: "explicit", from: `${cfg} (objstate.layout)` });
    assert.deepEqual(shown(["--config", cfg, "--layout", "seed"]), { value: "seed", source: "explicit", from: "--layout" });
    const text = runCli(["config", "--bucket", "state-bucket", "--layout", "s3"]);
    assert.match(text.stdout, /^layout\s+s3\s+explicit, from --layout$/m);
    assert.match(runCli(["config", "--bucket", "state-bucket"]).stdout, /^layout\s+seed\s+default$/m);
  });

  it("a wrong layout is refused by name: the flag, the file's objstate.layout, an unknown objstate key", () => {
    const bad = runCli(["config", "--bucket", "state-bucket", "--layout", "oss"]);
    assert.equal(bad.code, 2);
    assertOneLineError(bad, /argument 'oss' is invalid\. Allowed choices are seed, s3/);
    const cfg = file("bad-layout.json", { bucket: "state-bucket", objstate: { layout: "S3" } });
    const fromFile = runCli(["config", "--config", cfg]);
    assert.equal(fromFile.code, 2);
    assertOneLineError(fromFile, new RegExp(`${cfg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: objstate\\.layout must be "seed" .* or "s3" .*, got "S3"`));
    const typo = runCli(["config", "--config", file("typo-layout.json", { bucket: "state-bucket", objstate: { layuot: "s3" } })]);
    assertOneLineError(typo, /objstate\.layuot is not an objstate setting; did you mean layout\?/);
  });

  it("synth --for s3 warns about the default workspace with the seed layout only; --for oss with the s3 layout only", () => {
    const flags = ["--bucket", "state-bucket", "--endpoint", "https://s3.example.com"];
    const seed = runCli(["synth", "--for", "s3", ...flags]);
    assert.equal(seed.code, 0, seed.stderr);
    assert.match(
      seed.stderr,
      /^objstate: warning: the tool's s3 backend keeps the default workspace's state at tool\.tfstate, objstate at env:\/tool\.tfstate \(its seed layout\).*--layout s3/m,
    );
    const s3 = runCli(["synth", "--for", "s3", "--layout", "s3", ...flags]);
    assert.equal(s3.code, 0, s3.stderr);
    assert.equal(s3.stderr, "");
    assert.equal(s3.stdout, seed.stdout);
    const cfg = file("synth-layout.json", { bucket: "state-bucket", endpoint: "https://s3.example.com", objstate: { layout: "s3" } });
    assert.equal(runCli(["synth", "--for", "s3", "--config", cfg]).stderr, "");
    const props = file("synth-props.json", { backend: { bucket: "state-bucket" }, remoteStates: { net: { bucket: "state-bucket" } } });
    assert.equal(runCli(["synth", "--for", "s3", "--layout", "s3", props]).stderr, "");
    assert.equal(runCli(["synth", "--for", "s3", props]).stderr.trim().split("\n").length, 2);
    assert.match(
      runCli(["synth", "--for", "oss", "--layout", "s3", ...flags]).stderr,
      /the tool's oss backend keeps the default workspace's state at env:\/tool\.tfstate, objstate at tool\.tfstate \(its s3 layout\)/,
    );
    assert.equal(runCli(["synth", "--for", "oss", ...flags]).stderr, "");
  });

  it("synth refuses --layout without --for s3 or oss: the seed's JSON has no layout, and serve has its own", () => {
    for (const [args, why] of [
      [["--bucket", "state-bucket", "--layout", "s3"], /the seed's tool JSON has no layout/],
      [["--for", "http", "--serve-url", "http://127.0.0.1:8080", "--layout", "s3"], /for http the server's own --layout applies/],
    ] as const) {
      const r = runCli(["synth", ...args]);
      assert.equal(r.code, 2, r.stderr);
      assertOneLineError(r, new RegExp(`^objstate: error: --layout goes with --for s3 or --for oss.*${why.source}`));
    }
  });
});
