/**
 * The CLI's locks that heal, as subprocesses of the built `objstate` on the embedded store:
 * --lock-ttl, --lockfile, the --config file's objstate section, `objstate locks [--json]`,
 * `objstate lock -- COMMAND` (held and renewed while the command runs), and LOCK_LOST's exit code.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { EXIT } from "../../../src/error-codes.js";
import { runCli } from "../../support/cli.js";
import { assertOneLineError } from "./suite.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-cli-leases-"));
let n = 0;
function settings(table: boolean): string[] {
  n++;
  return [
    "--bucket",
    `bkt-${n}`,
    "--endpoint",
    `file:${dir}`,
    "--prefix",
    "p",
    "--key",
    "s.tfstate",
    ...(table ? ["--kvstore-endpoint", `file:${dir}`, "--kvstore-table", `locks-${n}`] : []),
  ];
}
interface Listed {
  source: string;
  path: string;
  workspace: string | null;
  id: string;
  who: string;
  operation: string;
  info: string;
  since: string;
  version: string;
  owner: string | null;
  expires: string | null;
  expired: boolean;
}
const list = (s: string[]): Listed[] => {
  const r = runCli(["locks", "--json", ...s]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Listed[];
};

describe("objstate leases, lockfiles and the lock list", () => {
  it("lock --lock-ttl stores a lease; locks lists it (JSON and text); the lock error says when it expires", () => {
    const s = settings(true);
    const lock = runCli(["lock", "--json", "--lock-ttl", "1m", "--operation", "apply", ...s]);
    assert.equal(lock.code, 0, lock.stderr);
    const info = JSON.parse(lock.stdout) as { id: string; expires: string; since: string };
    assert.ok(Date.parse(info.expires) > Date.now() + 50_000);
    const listed = list(s);
    assert.deepEqual(listed, [
      {
        source: "table",
        path: listed[0]?.path,
        workspace: "default",
        id: info.id,
        who: listed[0]?.who,
        operation: "apply",
        info: "",
        version: listed[0]?.version,
        owner: null,
        since: info.since,
        expires: info.expires,
        expired: false,
      },
    ]);
    assert.deepEqual(listed, [info], "lock --json prints the lock as locks --json lists it");
    const text = runCli(["locks", ...s]);
    assert.match(text.stdout, /^WORKSPACE\s+SOURCE\s+ID\s+WHO\s+OPERATION\s+INFO\s+SINCE\s+LEASE\n/);
    assert.match(
      text.stdout,
      new RegExp(`default\\s+table\\s+${info.id}\\s+\\S+\\s+apply\\s+-\\s+${info.since} \\(\\d+ (s|min) ago\\)\\s+expires \\d{4}-[^ ]+ \\(in \\d+ (s|min)\\)`),
    );
    const withInfo = runCli(["lock", "-w", "staging", "--info", "CI run 42", ...s]);
    assert.equal(withInfo.code, 0, withInfo.stderr);
    assert.match(runCli(["locks", ...s]).stdout, /^staging\s+table\s+\S+\s+\S+\s+objstate lock\s+CI run 42\s+/m);
    assert.equal(runCli(["unlock", "-w", "staging", withInfo.stdout.trim(), ...s]).code, 0);
    const refused = runCli(["lock", ...s]);
    assert.equal(refused.code, EXIT.locked);
    assertOneLineError(refused, /its lease expires at \d{4}-/);
    assert.equal(runCli(["unlock", info.id, ...s]).code, 0);
    assert.equal(runCli(["locks", ...s]).stdout, "no locks\n");
  });

  it("--lockfile locks without a table (and the --config file's objstate section does the same)", () => {
    const s = settings(false);
    const lock = runCli(["lock", "--lockfile", ...s]);
    assert.equal(lock.code, 0, lock.stderr);
    const id = lock.stdout.trim();
    assert.deepEqual(
      list([...s, "--lockfile"]).map((l) => [l.source, l.id, l.expires]),
      [["lockfile", id, null]],
    );
    const cfg = join(dir, `c${n}.json`);
    writeFileSync(cfg, JSON.stringify({ objstate: { lockfile: true, lockTtl: "30s" } }));
    assert.equal(runCli(["lock", "--config", cfg, ...s]).code, EXIT.locked);
    assert.equal(runCli(["unlock", id, "--config", cfg, ...s]).code, 0);
    // Without a table or a lockfile there is nothing to lock with.
    assertOneLineError(runCli(["locks", ...s]), /--lockfile/);
  });

  it("doctor shows the conformance probe's verdict on every condition objstate relies on", () => {
    const s = settings(false);
    assert.equal(runCli(["init", "--create-bucket", ...s]).code, 0);
    const r = runCli(["doctor", "--lockfile", ...s]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^ok\s+If-None-Match: a second create-if-absent of the same key is refused$/m);
    assert.match(r.stdout, /^ok\s+If-Match: a write conditional on another version is refused$/m);
    assert.match(r.stdout, /^ok\s+conditional delete: a delete conditional on another version is refused$/m);
    assert.match(r.stdout, /^ok\s+lock table: no lock table: state is locked with lockfiles/m);
  });

  it("refuses a bad --lock-ttl and a bad objstate section, naming them", () => {
    const s = settings(true);
    const short = runCli(["lock", "--lock-ttl", "500ms", ...s]);
    assert.equal(short.code, EXIT.usage);
    assertOneLineError(short, /--lock-ttl must be at least 1s/);
    const cfg = join(dir, `bad${n}.json`);
    writeFileSync(cfg, JSON.stringify({ objstate: { lockTTL: "1m" } }));
    const bad = runCli(["lock", "--config", cfg, ...s]);
    assert.equal(bad.code, EXIT.usage);
    assertOneLineError(bad, /objstate\.lockTTL is not an objstate setting; did you mean lockTtl\?/);
  });

  it("lock -- COMMAND holds and renews a 1 s lease while the command runs, and releases; a failed command is exit 8 naming its own code", () => {
    const s = settings(true);
    const script = "console.log(process.env.OBJSTATE_LOCK_ID); setTimeout(() => process.exit(9), 3500)";
    const r = runCli(["lock", "--lock-ttl", "1s", ...s, "--", process.execPath, "-e", script]);
    // Not 9 passed through: a command's 3-7 would read as objstate's own (locked, conflict…).
    assert.equal(r.code, EXIT.commandFailed, r.stderr);
    assert.match(r.stdout, /^[0-9a-f-]{36}\n$/);
    assertOneLineError(r, /exited with code 9; the lock was released/);
    assert.deepEqual(list(s), []);
  });

  it("lock -- COMMAND: a lease lost while the command runs stops it and exits 7 (LOCK_LOST, its own code)", () => {
    const s = settings(true);
    // The command force-unlocks its own lock: the next renewal finds it gone.
    const script = `require("node:child_process").execFileSync(process.execPath, [process.env.OBJSTATE_CLI, "force-unlock", "--force", process.env.OBJSTATE_LOCK_ID, ...JSON.parse(process.env.S)], { stdio: "ignore" }); setTimeout(() => {}, 20000)`;
    const r = runCli(["lock", "--lock-ttl", "1s", ...s, "--", process.execPath, "-e", script], {
      env: { S: JSON.stringify(s), OBJSTATE_CLI: join(import.meta.dirname, "../../../src/cli/main.js") },
    });
    assert.equal(r.code, 7, r.stderr);
    assert.equal(EXIT.lockLost, 7);
    assertOneLineError(r, /lost the lock .*the command was stopped/);
  });
});
