/**
 * Settings on the command line, run as subprocesses of the built CLI: flags generated from
 * the field table, --config files (props, tool JSON, synth document), precedence
 * flag > file > env > default, errors naming the flag / file / variable, and --help on
 * every command.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { COMMON_FIELDS } from "../../../src/config/fields.js";
import { flagOf } from "../../../src/cli/settings.js";
import { runCli } from "../../support/cli.js";
import { assertOneLineError } from "./suite.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-cli-settings-"));
let n = 0;
function file(text: string, name = `c${++n}.json`): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

type Shown = { value: unknown; source: string; via?: string; from?: string };
function configJson(args: string[], env: Record<string, string> = {}): { settings: Record<string, Shown>; workspace: string; credentials: string } {
  const r = runCli(["config", "--json", ...args], { env });
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as { settings: Record<string, Shown>; workspace: string; credentials: string };
}

describe("settings flags are generated from the field table", () => {
  it("every backend field but the deprecated block has a flag in --help; booleans have --no-", () => {
    const help = runCli(["state", "push", "--help"]);
    assert.equal(help.code, 0);
    for (const f of COMMON_FIELDS) {
      if (f.kind === "assumeRole") {
        assert.ok(!help.stdout.includes("--assume-role "), "the deprecated block must not be a flag");
        continue;
      }
      assert.ok(help.stdout.includes(flagOf(f.name)), `no ${flagOf(f.name)} in help`);
    }
    assert.match(help.stdout, /--encrypt +Server-side encryption/);
    assert.match(help.stdout, /--no-encrypt +set encrypt to false/);
    assert.match(help.stdout, /--assume-role-session-expiration <integer>/);
    assert.match(help.stdout, /Settings \(precedence: flag > --config file > environment > default\):/);
    assert.match(help.stdout, /--secret-key <key> .*Prefer the environment variable.*\[env: PROVIDER_SECRET_KEY, PROVIDER_ACCESS_KEY_SECRET\]/);
  });

  it("precedence: flag > --config file > environment > default", () => {
    const cfg = file(JSON.stringify({ bucket: "file-bucket", region: "eu-west-1", key: "file.tfstate", encrypt: true }));
    const env = { PROVIDER_REGION: "us-west-2", PROVIDER_OBJECT_STORE_ENDPOINT: "file:./from-env" };
    const j = configJson(["--config", cfg, "--bucket", "flag-bucket", "--no-encrypt"], env);
    assert.deepEqual(j.settings["bucket"], { value: "flag-bucket", source: "explicit", from: "--bucket" });
    assert.deepEqual(j.settings["encrypt"], { value: false, source: "explicit", from: "--no-encrypt" });
    assert.deepEqual(j.settings["region"], { value: "eu-west-1", source: "explicit", from: `${cfg} (region)` });
    assert.deepEqual(j.settings["key"], { value: "file.tfstate", source: "explicit", from: `${cfg} (key)` });
    assert.deepEqual(j.settings["endpoint"], { value: "file:./from-env", source: "env:PROVIDER_OBJECT_STORE_ENDPOINT" });
    assert.deepEqual(j.settings["prefix"], { value: "env:", source: "default" });
    assert.deepEqual(j.settings["acl"], { value: null, source: "unset" });
    const flagWins = configJson(["--config", cfg, "--region", "ap-south-1"], env);
    assert.equal(flagWins.settings["region"]?.value, "ap-south-1");
    const envWins = configJson(["--bucket", "b-only"], env);
    assert.deepEqual(envWins.settings["region"], { value: "us-west-2", source: "env:PROVIDER_REGION" });
  });

  it("a tool JSON file maps snake_case keys back to fields, including the deprecated block (one warning line)", () => {
    const cfg = file(
      JSON.stringify({
        tool: {
          backend: {
            objectstore: {
              bucket: "tool-bucket",
              kvstore_table: "state-locks",
              assume_role_session_name: "ci",
              assume_role: { role_arn: "arn:old", session_expiration: 900 },
            },
          },
        },
      }),
    );
    const r = runCli(["config", "--json", "--config", cfg]);
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout) as { settings: Record<string, Shown> };
    assert.deepEqual(j.settings["kvstoreTable"], { value: "state-locks", source: "explicit", from: `${cfg} (tool.backend.objectstore.kvstore_table)` });
    assert.deepEqual(j.settings["assumeRole"]?.value, { roleArn: "arn:old", sessionExpiration: 900 });
    assert.deepEqual(j.settings["assumeRoleRoleArn"], {
      value: "arn:old",
      source: "explicit",
      via: "assumeRole.roleArn",
      from: `${cfg} (tool.backend.objectstore.assume_role)`,
    });
    assert.match(r.stderr, /^objstate: warning: The assumeRole block is deprecated/);
    assert.equal(r.stderr.trim().split("\n").length, 1);
  });

  it("a synth props document uses its backend; --config - reads standard input", () => {
    const j = configJson(["--config", file(JSON.stringify({ backend: { bucket: "doc-bucket", prefix: "states" }, remoteStates: {} }))]);
    assert.deepEqual(j.settings["prefix"]?.value, "states");
    const r = runCli(["config", "--json", "--config", "-"], { input: '{"bucket": "stdin-bucket", "workspace": "prod"}' });
    assert.equal(r.code, 0, r.stderr);
    const s = JSON.parse(r.stdout) as { settings: Record<string, Shown>; workspace: string };
    assert.equal(s.settings["bucket"]?.value, "stdin-bucket");
    assert.equal(s.workspace, "prod");
  });

  it("synth without a file synthesizes the backend of --config and flags; with a file it refuses settings", () => {
    const cfg = file(JSON.stringify({ bucket: "synth-bucket", kvstoreTable: "locks" }));
    const r = runCli(["synth", "--config", cfg, "--encrypt", "--key", "app.tfstate"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      `${JSON.stringify({ tool: { backend: { objectstore: { bucket: "synth-bucket", encrypt: true, key: "app.tfstate", kvstore_table: "locks" } } } }, null, 2)}\n`,
    );
    const secret = runCli(["synth", "--bucket", "synth-bucket", "--secret-key", "VERY-SECRET"]);
    assert.equal(secret.code, 0);
    assert.match(secret.stderr, /warning: secretKey .*PROVIDER_SECRET_KEY/);
    assert.ok(!secret.stderr.includes("VERY-SECRET"));
    const both = runCli(["synth", file("{}"), "--bucket", "x-bucket"]);
    assert.equal(both.code, 2);
    assertOneLineError(both, /either a props file or settings/);
  });
});

describe("settings errors name the flag, file or variable: one line, exit 2", () => {
  const cases: [string, string[], Record<string, string>, RegExp][] = [
    ["bad flag value", ["--bucket", "Bad_Bucket"], {}, /^objstate: error: --bucket must be a bucket name of 3 to 63 characters/],
    [
      "number flag not a number",
      ["--bucket", "b-1", "--assume-role-session-expiration", "1h"],
      {},
      /--assume-role-session-expiration must be an integer from 900 to 3600 \(seconds\), got "1h"/,
    ],
    [
      "bad value in a props file",
      ["--config", 'FILE:{"bucket": "b-1", "acl": "secret"}'],
      {},
      /c\d+\.json: acl must be one of private, public-read, public-read-write, got "secret"/,
    ],
    [
      "unknown key in a props file",
      ["--config", 'FILE:{"bucket": "b-1", "kvstoreTabel": "x"}'],
      {},
      /c\d+\.json: kvstoreTabel is not a field of ObjectStoreBackendConfig; did you mean kvstoreTable\?/,
    ],
    [
      "unknown key in tool JSON",
      ["--config", 'FILE:{"tool": {"backend": {"objectstore": {"bucket": "b-1", "kvstore_tabel": "x"}}}}'],
      {},
      /tool\.backend\.objectstore\.kvstore_tabel is not a setting of the objectstore backend; did you mean kvstore_table\?/,
    ],
    [
      "bad value in tool JSON",
      ["--config", 'FILE:{"tool": {"backend": {"objectstore": {"bucket": "b-1", "assume_role": {"role_arn": "r", "session_expiration": 5}}}}}'],
      {},
      /tool\.backend\.objectstore\.assume_role\.session_expiration must be an integer from 900 to 3600/,
    ],
    ["a file that is not an object", ["--config", "FILE:[1]"], {}, /c\d+\.json: expected a JSON object/],
    ["missing config file", ["--config", "/nonexistent/objstate.json"], {}, /cannot read \/nonexistent\/objstate\.json: no such file/],
    [
      "bad environment variable",
      ["--bucket", "b-1"],
      { PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION: "abc" },
      /PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION \(for assumeRoleSessionExpiration\) must be an integer/,
    ],
    ["missing bucket with a file", ["--config", 'FILE:{"key": "a.tfstate"}'], {}, /bucket is required: pass --bucket NAME or set bucket in .*c\d+\.json/],
    ["bad workspace", ["--bucket", "b-1", "-w", "a/b"], {}, /--workspace must be a non-empty workspace name/],
  ];
  for (const [name, rawArgs, env, pattern] of cases) {
    it(name, () => {
      const args = rawArgs.map((a) => (a.startsWith("FILE:") ? file(a.slice(5)) : a));
      const r = runCli(["config", ...args], { env });
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.equal(r.stdout, "");
      assertOneLineError(r, pattern);
    });
  }
});

describe("--help on every command", () => {
  const commands = [
    ["synth"],
    ["config"],
    ["workspace"],
    ["workspace", "list"],
    ["workspace", "new"],
    ["workspace", "delete"],
    ["state"],
    ["state", "pull"],
    ["state", "push"],
    ["lock"],
    ["unlock"],
    ["force-unlock"],
    ["output"],
    ["doctor"],
    ["init"],
  ];
  for (const cmd of commands) {
    it(`objstate ${cmd.join(" ")} --help`, () => {
      const r = runCli([...cmd, "--help"]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^Usage: objstate ${cmd.join(" ")} `));
      if (cmd.length > 1 || !["workspace", "state"].includes(cmd[0] as string)) assert.match(r.stdout, /--bucket <bucket>/);
    });
  }
  it("the top-level help lists the exit codes", () => {
    const r = runCli(["--help"]);
    assert.match(
      r.stdout,
      /Exit codes: 0 ok, 1 error, 2 usage or bad input \(nothing was written\), 3 state locked\s+by another holder, 4 state does not match its digest \(or its last write is torn: run\s+objstate state repair\), 5 state conflict \(lineage guard or a concurrent write: nothing\s+was written\), 6 the lock is no longer held by this writer \(released or force-unlocked\),\s+7 its lease was lost \(LOCK_LOST; nothing more was written\);\s+129 \/ 130 \/ 143 interrupted by SIGHUP \/ SIGINT \/ SIGTERM, 141 output closed\./,
    );
  });
});
