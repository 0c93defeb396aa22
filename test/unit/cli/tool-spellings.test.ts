/**
 * The command line as the tool writes it (issue 24): single-dash long options (`-force`,
 * `-json`, `-raw`, `-lock=false`, `-lock-timeout=5m`, `-no-color`) where the command has the
 * option, and `objstate version` / `-v` / `--version`. On the embedded store, through the
 * built CLI. (`output -raw` and `-json`: output.test.ts; colours: terminal.test.ts.)
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli, startCli } from "../../support/cli.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-spellings-"));
const settings = ["--bucket", "spellings", "--endpoint", `file://${dir}`, "--kvstore-endpoint", `file://${dir}`, "--kvstore-table", "spellings-locks"];

/** A state file of this lineage and serial (not empty: the lineage guard protects it). */
function stateFile(name: string, lineage: string, serial: number): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ version: 4, serial, lineage, outputs: { name: { value: name, type: "string" } }, resources: [] }));
  return file;
}

const LOCK_FALSE = /objstate: warning: -lock=false: objstate takes the workspace's lock for this write all the same/;

describe("the tool's single-dash spellings", () => {
  it("state push -force -json FILE: -force overrides the lineage guard as --force does, -json prints JSON", () => {
    const ws = ["-w", "force"];
    assert.equal(runCli(["state", "push", stateFile("a", "lineage-a", 1), ...ws, ...settings]).code, 0);
    const other = stateFile("b", "lineage-b", 1);
    const refused = runCli(["state", "push", other, ...ws, ...settings]);
    assert.equal(refused.code, 5, "another lineage is refused without -force");
    const forced = runCli(["state", "push", "-force", "-json", other, ...ws, ...settings]);
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((JSON.parse(forced.stdout) as { written: boolean }).written, true);
    assert.equal(JSON.parse(runCli(["state", "pull", ...ws, ...settings]).stdout).lineage, "lineage-b");
  });

  it("-lock-timeout=5m waits for the lock as --lock-timeout 5m does; -lock-timeout 0s (two words) fails at once", async () => {
    const ws = ["-w", "timeout"];
    const id = runCli(["lock", ...ws, ...settings]).stdout.trim();
    const now = runCli(["state", "push", "-lock-timeout", "0s", stateFile("t0", "lineage-t", 1), ...ws, ...settings]);
    assert.equal(now.code, 3, now.stderr);
    assert.doesNotMatch(now.stderr, /waiting/);
    const waiting = startCli(["state", "push", "-lock-timeout=5m", stateFile("t1", "lineage-t", 1), ...ws, ...settings]);
    await waiting.stderrMatches(/is locked by .*; waiting up to 5m/);
    assert.equal(runCli(["unlock", id, ...ws, ...settings]).code, 0);
    const done = await waiting.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /^pushed /);
  });

  it("-lock=false is accepted where the command writes under the lock: it warns, and the lock is taken all the same", () => {
    const ws = ["-w", "nolock"];
    const free = runCli(["state", "push", "-lock=false", stateFile("n1", "lineage-n", 1), ...ws, ...settings]);
    assert.equal(free.code, 0, free.stderr);
    assert.match(free.stderr, LOCK_FALSE);
    const id = runCli(["lock", ...ws, ...settings]).stdout.trim();
    const held = runCli(["state", "push", "-lock=false", stateFile("n2", "lineage-n", 2), ...ws, ...settings]);
    assert.equal(held.code, 3, "someone else's lock still stops the write");
    assert.match(held.stderr, LOCK_FALSE);
    assert.equal(JSON.parse(runCli(["state", "pull", ...ws, ...settings]).stdout).serial, 1, "nothing was written");
    // `-lock` alone is the tool's -lock=true: the default, no warning.
    const withLock = runCli(["state", "push", "-lock", "--lock-id", id, stateFile("n3", "lineage-n", 3), ...ws, ...settings]);
    assert.equal(withLock.code, 0, withLock.stderr);
    assert.doesNotMatch(withLock.stderr, /-lock=false/);
    assert.equal(runCli(["unlock", id, ...ws, ...settings]).code, 0);
    const bad = runCli(["state", "push", "-lock=no", stateFile("n4", "lineage-n", 4), ...ws, ...settings]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /argument 'no' is invalid\. Allowed choices are true, false/);
    for (const cmd of [
      ["workspace", "new", "ws-nolock"],
      ["workspace", "delete", "ws-nolock"],
    ]) {
      const r = runCli([...cmd, "-lock=false", "-json", ...settings]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, LOCK_FALSE);
    }
  });

  it("only where the command has the option: elsewhere the word is commander's to refuse; short options stay short", () => {
    const list = runCli(["workspace", "list", "-raw", ...settings]);
    assert.equal(list.code, 2);
    assert.match(list.stderr, /unknown option '-raw'/);
    const lock = runCli(["lock", "-lock=false", ...settings]);
    assert.equal(lock.code, 2, "lock has no --lock: -lock=false is not mapped");
    assert.match(lock.stderr, /unknown option '-lock=false'/);
    const json = runCli(["workspace", "list", "-json", "-w", "force", ...settings]);
    assert.equal(json.code, 0, json.stderr);
    assert.ok((JSON.parse(json.stdout) as { name: string }[]).some((w) => w.name === "force"));
  });

  it("never as an option's value, nor after -- (the command lock runs)", () => {
    const ws = ["-w", "values"];
    const taken = runCli(["lock", "--info", "-json", "-json", ...ws, ...settings]);
    assert.equal(taken.code, 0, taken.stderr);
    const info = JSON.parse(taken.stdout) as { id: string; info: string };
    assert.equal(info.info, "-json", "the value of --info is kept as given");
    assert.equal(runCli(["force-unlock", "-force", info.id, ...ws, ...settings]).code, 0, "force-unlock -force is --force");
    const script = join(dir, "args.mjs");
    writeFileSync(script, "console.log(JSON.stringify(process.argv.slice(2)));");
    const run = runCli(["lock", ...ws, ...settings, "--", process.execPath, script, "-json", "-force", "-lock=false"]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), ["-json", "-force", "-lock=false"]);
  });
});

describe("objstate version", () => {
  const version = (JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { version: string }).version;
  const expected = `objstate v${version}\non Node.js ${process.version} (${process.platform} ${process.arch})\n`;

  it("version, -v and --version (and -V, as before) print objstate's version, and the Node.js and platform it runs on", () => {
    for (const args of [["version"], ["-v"], ["--version"], ["-V"]]) {
      const r = runCli(args);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, expected, args.join(" "));
      assert.equal(r.stderr, "");
    }
  });

  it("version --json (and -json) for scripts", () => {
    for (const flag of ["--json", "-json"]) {
      const r = runCli(["version", flag]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { version, node: process.versions.node, platform: process.platform, arch: process.arch });
    }
  });

  it("a subcommand's --version is its own: state pull --version ID is not the program's", () => {
    const r = runCli(["state", "pull", "--version", "no-such-version", "-w", "force", ...settings]);
    assert.notEqual(r.code, 0);
    assert.doesNotMatch(r.stdout, /^objstate v/);
  });
});
