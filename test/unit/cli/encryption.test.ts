/**
 * The CLI's state encryption (issue 26): TF_ENCRYPTION and the --config file's
 * objstate.encryption reach every connection; pull decrypts, --raw-envelope prints the stored
 * envelope; state rekey [--all] (JSON through src/wire/shapes.ts); an HCL TF_ENCRYPTION is
 * refused saying to use JSON; a passphrase never appears in output or errors.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { isEnvelope } from "../../../src/index.js";
import { EXIT } from "../../../src/error-codes.js";
import { runCli } from "../../support/cli.js";
import { secretState } from "../../behaviour/encryption-suite.js";
import { chainConfig, OLD_PASSPHRASE, PASSPHRASE } from "../encryption/support.js";

function place(): { dir: string; args: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "objstate-cli-enc-"));
  return { dir, args: ["--bucket", "enc-bucket", "--endpoint", `file:${dir}`, "--kvstore-endpoint", `file:${dir}`, "--kvstore-table", "locks"] };
}
const TF = (chain: readonly string[]): string => JSON.stringify(chainConfig(chain));

/** Every file under `dir` (the embedded store's objects and versions), read raw. */
function allBytes(dir: string): Buffer {
  const parts: Buffer[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else parts.push(readFileSync(join(d, e.name)));
    }
  };
  walk(dir);
  return Buffer.concat(parts);
}

describe("objstate with state encryption", () => {
  it("push encrypts, pull decrypts, --raw-envelope prints the stored envelope; the store never holds the secret", () => {
    const { dir, args } = place();
    const env = { TF_ENCRYPTION: TF([PASSPHRASE]) };
    const push = runCli(["state", "push", "-", ...args], { input: secretState(1), env });
    assert.equal(push.code, 0, push.stderr);
    const pull = runCli(["state", "pull", ...args], { env });
    assert.equal(pull.code, 0, pull.stderr);
    assert.equal(pull.stdout, secretState(1));
    const raw = runCli(["state", "pull", "--raw-envelope", ...args], { env });
    assert.equal(raw.code, 0, raw.stderr);
    assert.ok(isEnvelope(Buffer.from(raw.stdout)));
    assert.equal(allBytes(dir).indexOf("TOPSECRET"), -1, "a stored file holds the secret");
    // Without the key the stored bytes are the envelope: pull prints it as it is.
    assert.equal(runCli(["state", "pull", ...args]).stdout, raw.stdout);
    // output reads through the same configuration.
    const out = runCli(["output", "db_password", "--raw", ...args], { env });
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, "TOPSECRET-7c1f-db-password-e0a9-1");
  });

  it("state rekey moves a state to the new key (serial + 1), --all every workspace, --json in the wire shape", () => {
    const { args } = place();
    const oldEnv = { TF_ENCRYPTION: TF([OLD_PASSPHRASE]) };
    assert.equal(runCli(["state", "push", "-", ...args], { input: secretState(1), env: oldEnv }).code, 0);
    assert.equal(runCli(["state", "push", "-", "-w", "dev", ...args], { input: secretState(3), env: oldEnv }).code, 0);
    const rotating = { TF_ENCRYPTION: TF([PASSPHRASE, OLD_PASSPHRASE]) };
    const one = runCli(["state", "rekey", ...args], { env: rotating });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stderr + one.stdout, /rekeyed workspace default: serial 2, read with method\.aes_gcm\.old, written with method\.aes_gcm\.new/);
    const all = runCli(["state", "rekey", "--all", "--json", ...args], { env: rotating });
    assert.equal(all.code, 0, all.stderr);
    const json = JSON.parse(all.stdout) as { workspaces: { workspace: string; serial: number; from: string; to: string }[] };
    assert.deepEqual(
      json.workspaces.map((w) => [w.workspace, w.serial, w.from, w.to]),
      [
        ["default", 3, "method.aes_gcm.new", "method.aes_gcm.new"],
        ["dev", 4, "method.aes_gcm.old", "method.aes_gcm.new"],
      ],
    );
    const onlyNew = runCli(["state", "pull", "-w", "dev", ...args], { env: { TF_ENCRYPTION: TF([PASSPHRASE]) } });
    assert.equal(onlyNew.code, 0, onlyNew.stderr);
    assert.match(onlyNew.stdout, /"serial": 4/);
    // Without any configuration there is nothing to rekey under.
    const none = runCli(["state", "rekey", ...args]);
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /rekey needs an encryption configuration/);
  });

  it("the --config file's objstate.encryption takes the passphrase by reference; a wrong key is a clear error that never shows a passphrase", () => {
    const { dir, args } = place();
    const passFile = join(dir, "pass");
    writeFileSync(passFile, `${PASSPHRASE}\n`);
    const cfg = join(dir, "c.json");
    const section = chainConfig([PASSPHRASE]) as { key_provider: { pbkdf2: Record<string, Record<string, unknown>> } };
    for (const kp of Object.values(section.key_provider.pbkdf2)) kp["passphrase"] = { file: passFile };
    writeFileSync(cfg, JSON.stringify({ objstate: { encryption: section } }));
    assert.equal(runCli(["state", "push", "-", "--config", cfg, ...args], { input: secretState(1) }).code, 0);
    assert.equal(runCli(["state", "pull", "--config", cfg, ...args]).stdout, secretState(1));
    const wrong = runCli(["state", "pull", ...args], { env: { TF_ENCRYPTION: TF([OLD_PASSPHRASE]) } });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /cannot decrypt the state of workspace "default": no configured method's key opens it/);
    const push = runCli(["state", "push", "-", ...args], { input: secretState(2), env: { TF_ENCRYPTION: TF([OLD_PASSPHRASE]) } });
    assert.notEqual(push.code, 0);
    for (const r of [wrong, push]) {
      assert.ok(!r.stderr.includes(PASSPHRASE) && !r.stderr.includes(OLD_PASSPHRASE), r.stderr);
      assert.ok(!r.stdout.includes(PASSPHRASE) && !r.stdout.includes(OLD_PASSPHRASE));
    }
    // A passphrase written into the file itself is refused (it must be a reference).
    const literal = join(dir, "lit.json");
    writeFileSync(literal, JSON.stringify({ objstate: { encryption: chainConfig([PASSPHRASE]) } }));
    const lit = runCli(["state", "pull", "--config", literal, ...args]);
    assert.equal(lit.code, EXIT.usage, lit.stderr);
    assert.match(lit.stderr, /objstate\.encryption/);
    assert.ok(!lit.stderr.includes(PASSPHRASE), lit.stderr);
  });

  it("objstate config shows the methods and where the passphrase comes from, redacted; --json too", () => {
    const { args } = place();
    const env = { TF_ENCRYPTION: TF([PASSPHRASE, "unencrypted"]) };
    const text = runCli(["config", ...args], { env });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /encryption: state: method\.aes_gcm\.new, then method\.unencrypted\.u1; key_provider\.pbkdf2\.new passphrase <redacted>/);
    const json = runCli(["config", "--json", ...args], { env });
    assert.match(json.stdout, /"encryption": "state: method\.aes_gcm\.new/);
    for (const r of [text, json]) assert.ok(!r.stdout.includes(PASSPHRASE) && !r.stderr.includes(PASSPHRASE));
    assert.match(runCli(["config", ...args]).stdout, /encryption: off/);
  });

  it("doctor checks the state decrypts (warn after a rotation until rekey, fail on a wrong key), never printing a passphrase", () => {
    const { args } = place();
    assert.equal(runCli(["state", "push", "-", ...args], { input: secretState(1), env: { TF_ENCRYPTION: TF([OLD_PASSPHRASE]) } }).code, 0);
    const line = (chain: readonly string[]): { code: number | null; line: string; all: string } => {
      const r = runCli(["doctor", ...args], { env: { TF_ENCRYPTION: TF(chain) } });
      return { code: r.code, line: r.stdout.split("\n").find((l) => l.includes(" encryption: ")) ?? "", all: r.stdout + r.stderr };
    };
    const rotating = line([PASSPHRASE, OLD_PASSPHRASE]);
    assert.match(rotating.line, /^warn {2}encryption: the state of workspace default was read with method\.aes_gcm\.old.*objstate state rekey/);
    const wrong = line([PASSPHRASE]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.line, /^FAIL {2}encryption: cannot decrypt the state of workspace "default"/);
    assert.match(line([OLD_PASSPHRASE]).line, /^ok {4}encryption: the state of workspace default decrypts with method\.aes_gcm\.old/);
    for (const r of [rotating, wrong]) assert.ok(!r.all.includes(PASSPHRASE) && !r.all.includes(OLD_PASSPHRASE));
  });

  it("an HCL TF_ENCRYPTION is refused with exit 2, saying to write it as JSON", () => {
    const { args } = place();
    const r = runCli(["state", "pull", ...args], { env: { TF_ENCRYPTION: `key_provider "pbkdf2" "k" { passphrase = "${PASSPHRASE}" }` } });
    assert.equal(r.code, EXIT.usage, r.stderr);
    assert.match(r.stderr, /TF_ENCRYPTION holds HCL, which objstate does not read: write it in OpenTofu's JSON form/);
    assert.ok(!r.stderr.includes(PASSPHRASE));
  });
});
