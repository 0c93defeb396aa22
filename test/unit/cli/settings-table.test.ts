/**
 * The settings table (src/config/settings-table.ts): each row's flag on exactly the commands
 * it names, bad values refused with a typed error naming the flag / file key / variable, a
 * file key and a flag giving the same frozen value, `objstate help settings`, and no
 * module-level settings nor untyped `opts["x"]` reads left in src/cli.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { Command } from "commander";
import { program } from "../../../src/cli/program.js";
import { gatherSettings } from "../../../src/cli/settings.js";
import type { Opts } from "../../../src/cli/options.js";
import { settingsReferenceMarkdown } from "../../../src/config/settings-docs.js";
import { parseSettings, SETTINGS_COMMANDS, SETTINGS_TABLE, type SettingName, type SettingSpec } from "../../../src/config/settings-table.js";
import { ObjstateError } from "../../../src/errors.js";
import { EXIT } from "../../../src/error-codes.js";
import { runCli } from "../../support/cli.js";

const ROWS = SETTINGS_TABLE as readonly SettingSpec[];
/** Rows with a flag (the encryption setting has none: it may hold a secret reference, and flags show in the process list). */
const FLAGGED = ROWS.filter((r) => r.flag !== undefined);

const passphraseFile = join(mkdtempSync(join(tmpdir(), "objstate-settings-pass-")), "pass");
writeFileSync(passphraseFile, "settings-table-passphrase-0123456789\n");
/** OpenTofu's JSON form with the passphrase by reference, as a --config file must give it. */
const ENCRYPTION_SAMPLE = {
  key_provider: { pbkdf2: { k: { passphrase: { file: passphraseFile }, iterations: 200_000 } } },
  method: { aes_gcm: { m: { keys: "key_provider.pbkdf2.k" } } },
  state: { method: "method.aes_gcm.m" },
};

/** Every command with its words (`state push`), the program's own tree completed. */
function commandsByPath(): Map<string, Command> {
  const out = new Map<string, Command>();
  const visit = (c: Command, path: string[]): void => {
    for (const sub of c.commands) {
      const words = [...path, sub.name()];
      out.set(words.join(" "), sub);
      visit(sub, words);
    }
  };
  visit(program(), []);
  return out;
}

/** A good value of each row, as a flag gives it and as a --config file gives it. */
const SAMPLES: Record<SettingName, { flag: unknown; file: unknown }> = {
  timeout: { flag: "45s", file: "45s" },
  lockTimeout: { flag: "5m", file: "5m" },
  lockTtl: { flag: "1m", file: "1m" },
  lockfile: { flag: true, file: true },
  layout: { flag: "s3", file: "s3" },
  digestRetry: { flag: "3s", file: "3s" },
  listen: { flag: "0.0.0.0:9000", file: "0.0.0.0:9000" },
  publicUrl: { flag: ["https://a.example", "https://b.example"], file: ["https://a.example", "https://b.example"] },
  users: { flag: "users.json", file: "users.json" },
  insecureNoAuth: { flag: true, file: true },
  tlsCert: { flag: "c.pem", file: "c.pem" },
  tlsKey: { flag: "k.pem", file: "k.pem" },
  tlsClientCa: { flag: "ca.pem", file: "ca.pem" },
  maxStateSize: { flag: "64KiB", file: "64KiB" },
  clientTimeout: { flag: "10s", file: "10s" },
  maxConnections: { flag: "10", file: 10 },
  maxConnectionsPerClient: { flag: "5", file: "5" },
  shutdownGrace: { flag: "5s", file: "5s" },
  allowUnlockedWrites: { flag: true, file: true },
  console: { flag: false, file: false },
  secretFile: { flag: "secret", file: "secret" },
  logLevel: { flag: "warn", file: "warn" },
  encryption: { flag: undefined, file: ENCRYPTION_SAMPLE },
};

/** Rows whose parser takes any text (a path, a URL checked by serve): a bad flag value cannot be text. */
const ANY_TEXT = new Set(["publicUrl", "users", "tlsCert", "tlsKey", "tlsClientCa", "secretFile"]);
/** Rows whose errors come from their own parser's wording (tested on their own). */
const OWN_WORDING = new Set(["encryption"]);

function thrown(f: () => unknown): ObjstateError {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof ObjstateError, `expected an ObjstateError, got ${String(e)}`);
    return e;
  }
  assert.fail("expected an error");
}

describe("the settings table", () => {
  it("each row's flag is on exactly the commands the row names (hidden where it is only refused), and nowhere else", () => {
    const all = commandsByPath();
    for (const path of SETTINGS_COMMANDS) assert.ok(all.has(path), `no command ${path}`);
    for (const r of FLAGGED) {
      for (const [path, cmd] of all) {
        const o = cmd.options.find((x) => x.long === r.flag);
        // hash-password's and the token commands' --users is their own option: the users file they edit.
        if ((path === "serve hash-password" || path.startsWith("serve token ")) && r.flag === "--users") continue;
        const listed = (r.commands as readonly string[]).includes(path);
        const hidden = (r.hiddenOn ?? ([] as readonly string[])).includes(path);
        assert.equal(o !== undefined, listed || hidden, `${r.flag} on ${path}`);
        if (o !== undefined) assert.equal(o.hidden, hidden && !listed, `${r.flag} hidden on ${path}`);
      }
    }
  });

  it("output, state diff and workspace list offer neither --lock-ttl nor --lockfile; serve takes --lock-ttl only to refuse it", () => {
    const all = commandsByPath();
    for (const path of ["output", "state diff", "workspace list"]) {
      const longs = all.get(path)?.options.map((o) => o.long);
      assert.ok(!longs?.includes("--lock-ttl") && !longs?.includes("--lockfile"), path);
    }
    assert.equal(all.get("serve")?.options.find((o) => o.long === "--lock-ttl")?.hidden, true);
  });

  it("every row has a sample here and a parser; defaults are written one way", () => {
    assert.deepEqual(ROWS.map((r) => r.name).sort(), Object.keys(SAMPLES).sort());
    // --help gets the default from the row, not from commander (which would print it a second way).
    for (const [path, cmd] of commandsByPath())
      for (const o of cmd.options) assert.equal(o.defaultValue, undefined, `${path} ${o.flags}: write the default as [default: …] in its help`);
  });

  it("a --config file key and a flag give the same frozen value; flag > file > environment > default", () => {
    for (const r of ROWS) {
      const s = SAMPLES[r.name as SettingName];
      const byFlag =
        r.flag === undefined
          ? parseSettings({}, { file: "other.json", section: { [r.name]: s.file } }, {})
          : parseSettings({ [r.name]: s.flag }, undefined, {});
      const byFile = parseSettings({}, { file: "c.json", section: { [r.name]: s.file } }, {});
      assert.deepEqual(byFlag.values[r.name as SettingName], byFile.values[r.name as SettingName], r.name);
      assert.notDeepEqual(byFlag.values[r.name as SettingName], r.default, `${r.name}: the sample must differ from the default`);
      assert.deepEqual(byFile.origins[r.name as SettingName], { kind: "file", file: "c.json", key: `objstate.${r.name}` });
      assert.ok(Object.isFrozen(byFlag) && Object.isFrozen(byFlag.values) && Object.isFrozen(byFlag.origins));
    }
    const env = { OBJSTATE_TIMEOUT: "2m" };
    assert.equal(parseSettings({}, undefined, {}).values.timeout, undefined);
    assert.equal(parseSettings({}, undefined, env).values.timeout, 120_000);
    assert.equal(parseSettings({}, { file: "c.json", section: { timeout: "30s" } }, env).values.timeout, 30_000);
    assert.equal(parseSettings({ timeout: "5s" }, { file: "c.json", section: { timeout: "30s" } }, env).values.timeout, 5_000);
    assert.deepEqual(parseSettings({}, undefined, env).origins.timeout, { kind: "env", variable: "OBJSTATE_TIMEOUT" });
  });

  it("the CLI reads the same value from --config FILE's objstate section as from the flag", () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-settings-table-"));
    const cfg = join(dir, "c.json");
    const section = Object.fromEntries(ROWS.map((r) => [r.name, SAMPLES[r.name as SettingName].file]));
    writeFileSync(cfg, JSON.stringify({ bucket: "b", objstate: section }));
    const flags = Object.fromEntries(FLAGGED.map((r) => [r.name, SAMPLES[r.name as SettingName].flag])) as Opts;
    const { encryption, ...fromFile } = gatherSettings({ config: cfg }, {}).settings.values;
    assert.ok(encryption !== undefined, "the encryption setting is read from the file");
    const { encryption: none, ...fromFlags } = gatherSettings(flags, {}).settings.values;
    assert.equal(none, undefined);
    assert.deepEqual(fromFile, fromFlags);
  });

  it("a bad value is a typed error naming the flag, the file and key, or the variable", () => {
    for (const r of ROWS.filter((x) => !OWN_WORDING.has(x.name))) {
      const inFile = thrown(() => parseSettings({}, { file: "c.json", section: { [r.name]: { bad: 1 } } }, {}));
      assert.match(inFile.message, new RegExp(`^c\\.json: objstate\\.${r.name} must be `), r.name);
      assert.deepEqual(inFile.details, { file: "c.json", key: `objstate.${r.name}` });
      if (r.arg !== undefined && !ANY_TEXT.has(r.name)) {
        const byFlag = thrown(() => parseSettings({ [r.name]: "bogus!" }, undefined, {}));
        assert.match(byFlag.message, new RegExp(`^${r.flag} must be `), r.name);
        assert.deepEqual(byFlag.details, { flag: r.flag });
      }
      if (r.env !== undefined) {
        const byEnv = thrown(() => parseSettings({}, undefined, { [r.env as string]: "bogus!" }));
        assert.match(byEnv.message, new RegExp(`^${r.env} must be `), r.name);
        assert.deepEqual(byEnv.details, { variable: r.env });
      }
    }
    assert.equal(thrown(() => parseSettings({ timeout: "0s" }, undefined, {})).code, "INVALID_DURATION");
    assert.equal(thrown(() => parseSettings({ lockTtl: "500ms" }, undefined, {})).code, "INVALID_LOCK_TTL");
    assert.equal(thrown(() => parseSettings({ listen: "8080" }, undefined, {})).code, "INVALID_LISTEN");
    assert.equal(thrown(() => parseSettings({ maxStateSize: "lots" }, undefined, {})).code, "INVALID_SIZE");
    assert.equal(thrown(() => parseSettings({ maxConnections: "0" }, undefined, {})).code, "INVALID_COUNT");
    const typo = thrown(() => parseSettings({}, { file: "c.json", section: { lockTimout: "1m" } }, {}));
    assert.equal(typo.code, "INVALID_CONFIG_FILE");
    assert.match(typo.message, /^c\.json: objstate\.lockTimout is not an objstate setting; did you mean lockTimeout\?/);
  });

  it("a bad variable stops the command with exit 2, naming it", () => {
    const r = runCli(["state", "pull", "--bucket", "b", "--endpoint", "file:./nowhere"], { env: { OBJSTATE_TIMEOUT: "soon" } });
    assert.equal(r.code, EXIT.usage, r.stderr);
    assert.match(r.stderr, /^objstate: error: OBJSTATE_TIMEOUT must be a duration such as 0s, 30s, 5m or 1h30m, got "soon"\n$/);
  });

  it("objstate help settings lists every setting once, with its file key, variable and default", () => {
    const r = runCli(["help", "settings"]);
    assert.equal(r.code, 0, r.stderr);
    for (const row of FLAGGED) {
      assert.equal(r.stdout.split("\n").filter((l) => l.trim() === row.flag || l.trim().startsWith(`${row.flag} `)).length, 1, row.flag);
      assert.ok(r.stdout.includes(`file: objstate.${row.name}`), row.name);
      if (row.env !== undefined) assert.ok(r.stdout.includes(`env: ${row.env}`), row.name);
      if (row.defaultText !== undefined) assert.ok(r.stdout.includes(`default: ${row.defaultText}`), row.name);
    }
    assert.match(runCli(["state", "push", "--help"]).stdout, /objstate help settings/);
    assert.match(runCli(["--help"]).stdout, /objstate help settings/);
  });

  it("docs/settings.md is generated from the current settings table (run `npm run docs`)", () => {
    const text = readFileSync(new URL("../../../../docs/settings.md", import.meta.url), "utf8");
    assert.equal(text, settingsReferenceMarkdown());
    for (const r of FLAGGED) assert.ok(text.includes(`| \`${r.name}\` | \`${r.flag}`), r.name);
  });
});

describe("src/cli keeps no settings of its own", () => {
  const cliDir = new URL("../../../../src/cli/", import.meta.url);
  const sources = readdirSync(cliDir)
    .filter((f) => f.endsWith(".ts"))
    .map((f) => ({ f, text: readFileSync(new URL(f, cliDir), "utf8") }));

  it('no untyped opts["x"] reads: options are read as opts.x, typed from the tables', () => {
    for (const { f, text } of sources) assert.doesNotMatch(text, /opts(\(\))?\[["'`]/, f);
  });

  it("no module-level let but the process's signal state (runtime.ts) and the colour switch (term.ts)", () => {
    const allowed: Record<string, readonly string[]> = { "runtime.ts": ["phase", "interrupted", "stored", "handlerInstalled"], "term.ts": ["noColorFlag"] };
    for (const { f, text } of sources) {
      const lets = [...text.matchAll(/^let (\w+)/gm)].map((m) => m[1]);
      assert.deepEqual(lets, allowed[f] ?? [], f);
    }
  });
});
