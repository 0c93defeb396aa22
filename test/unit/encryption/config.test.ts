/**
 * The `encryption` configuration in OpenTofu's JSON shape and from `TF_ENCRYPTION`:
 * references, fallbacks, the pbkdf2 limits, passphrases from a file or a variable (never
 * written in a settings file), and errors that name the JSON path and never a secret.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { inspect } from "node:util";
import {
  checkEncryptionConfig,
  type EncryptionConfig,
  encryptionConfigFromEnv,
  mergeEncryptionConfigs,
  parseEncryptionConfig,
  type Pbkdf2ProviderConfig,
  StateEncryption,
} from "../../../src/encryption/index.js";
import { ObjstateError } from "../../../src/errors.js";
import { PASSPHRASE } from "./support.js";

const SETTINGS = { source: "the encryption setting", literalSecrets: false } as const;

function body(passphrase: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    key_provider: { pbkdf2: { main: { passphrase, ...extra } } },
    method: { aes_gcm: { main: { keys: "${key_provider.pbkdf2.main}" } } },
    state: { method: "${method.aes_gcm.main}" },
  };
}

function rejects(f: () => unknown, code: string, path: RegExp): ObjstateError {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof ObjstateError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, path);
    assert.ok(!e.message.includes(PASSPHRASE) && !inspect(e, { showHidden: true }).includes(PASSPHRASE), `a message shows the passphrase: ${e.message}`);
    return e;
  }
  assert.fail("expected a failure");
}

describe("the encryption configuration", () => {
  it("reads TF_ENCRYPTION's JSON form, with OpenTofu's defaults for pbkdf2", () => {
    const cfg = encryptionConfigFromEnv({ TF_ENCRYPTION: ` ${JSON.stringify(body(PASSPHRASE))} ` });
    assert.ok(cfg !== undefined);
    const kp = cfg.keyProviders.get("key_provider.pbkdf2.main") as Pbkdf2ProviderConfig;
    assert.deepEqual([kp.iterations, kp.hashFunction, kp.keyLength, kp.saltLength, kp.metaKey], [600_000, "sha512", 32, 32, "key_provider.pbkdf2.main"]);
    assert.deepEqual(cfg.state?.methods, ["method.aes_gcm.main"]);
    assert.ok(Object.isFrozen(cfg) && Object.isFrozen(kp) && Object.isFrozen(cfg.state));
    assert.equal(encryptionConfigFromEnv({ TF_ENCRYPTION: "  " }), undefined);
    assert.equal(encryptionConfigFromEnv({}), undefined);
  });

  it("refuses TF_ENCRYPTION in HCL with a message saying to write JSON", () => {
    const e = rejects(
      () => encryptionConfigFromEnv({ TF_ENCRYPTION: `key_provider "pbkdf2" "main" {\n passphrase = "${PASSPHRASE}"\n}` }),
      "ENCRYPTION_CONFIG_INVALID",
      /HCL/,
    );
    assert.match(e.message, /JSON/);
    rejects(
      () => encryptionConfigFromEnv({ TF_ENCRYPTION: `{"key_provider": {"pbkdf2": {"main": {"passphrase": "${PASSPHRASE}"` }),
      "ENCRYPTION_CONFIG_INVALID",
      /not valid JSON/,
    );
  });

  it("takes a passphrase from a file or a variable in a settings file, never written in it", () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-enc-config-"));
    const file = join(dir, "passphrase");
    writeFileSync(file, `${PASSPHRASE}\n`, { mode: 0o600 });
    const fromFile = parseEncryptionConfig(body({ file }), SETTINGS);
    const fromEnv = parseEncryptionConfig(body({ env: "STATE_PASSPHRASE" }), { ...SETTINGS, env: { STATE_PASSPHRASE: PASSPHRASE } });
    for (const cfg of [fromFile, fromEnv]) {
      const kp = cfg.keyProviders.get("key_provider.pbkdf2.main") as Pbkdf2ProviderConfig;
      assert.equal(kp.passphrase.bytes().toString(), PASSPHRASE, "the file's trailing newline is not part of it");
      for (const shown of [
        inspect(cfg, { showHidden: true, depth: Infinity }),
        JSON.stringify(kp),
        String(kp.passphrase),
        inspect(kp.passphrase, { showHidden: true }),
      ]) {
        assert.ok(!shown.includes(PASSPHRASE), `the passphrase is shown: ${shown}`);
      }
    }
    rejects(
      () => parseEncryptionConfig(body(PASSPHRASE), SETTINGS),
      "ENCRYPTION_CONFIG_INVALID",
      /key_provider\.pbkdf2\.main\.passphrase: must not be written in the setting itself/,
    );
    rejects(
      () => parseEncryptionConfig(body({ env: "UNSET_VAR" }), { ...SETTINGS, env: {} }),
      "ENCRYPTION_CONFIG_INVALID",
      /passphrase\.env: environment variable UNSET_VAR/,
    );
    rejects(
      () => parseEncryptionConfig(body({ file: join(dir, "missing") }), SETTINGS),
      "ENCRYPTION_CONFIG_INVALID",
      /passphrase\.file: cannot read .* does not exist/,
    );
  });

  it("refuses a weak KDF: a passphrase under 16 characters, fewer than 200,000 iterations", () => {
    rejects(
      () => parseEncryptionConfig(body("short-pass"), { source: "TF_ENCRYPTION", literalSecrets: true }),
      "ENCRYPTION_KDF_TOO_WEAK",
      /passphrase: is too short/,
    );
    rejects(
      () => parseEncryptionConfig(body(PASSPHRASE, { iterations: 199_999 }), { source: "TF_ENCRYPTION", literalSecrets: true }),
      "ENCRYPTION_KDF_TOO_WEAK",
      /key_provider\.pbkdf2\.main\.iterations: 199999 is dangerously low/,
    );
    rejects(
      () => parseEncryptionConfig(body(PASSPHRASE, { hash_function: "sha1" }), { source: "TF_ENCRYPTION", literalSecrets: true }),
      "ENCRYPTION_CONFIG_INVALID",
      /hash_function/,
    );
  });

  it("names the JSON path of a bad reference, an unknown field or type, and a missing method", () => {
    const lit = { source: "TF_ENCRYPTION", literalSecrets: true } as const;
    const b = body(PASSPHRASE);
    rejects(
      () => parseEncryptionConfig({ ...b, state: { method: "method.aes_gcm.nope" } }, lit),
      "ENCRYPTION_CONFIG_INVALID",
      /^TF_ENCRYPTION: state\.method: references method\.aes_gcm\.nope/,
    );
    rejects(
      () => parseEncryptionConfig({ ...b, state: { method: "method.aes_gcm.main", fallback: { method: "aes_gcm.old" } } }, lit),
      "ENCRYPTION_CONFIG_INVALID",
      /state\.fallback\.method: must reference method\.TYPE\.NAME/,
    );
    rejects(
      () => parseEncryptionConfig({ ...b, method: { aes_gcm: { main: { keys: "key_provider.pbkdf2.other" } } } }, lit),
      "ENCRYPTION_CONFIG_INVALID",
      /method\.aes_gcm\.main\.keys: references key_provider\.pbkdf2\.other/,
    );
    rejects(
      () => parseEncryptionConfig({ ...b, method: { aes_gcm: { main: { keys: "key_provider.pbkdf2.main", aad: "text" } } } }, lit),
      "ENCRYPTION_CONFIG_INVALID",
      /method\.aes_gcm\.main\.aad: must be a list of bytes/,
    );
    rejects(
      () => parseEncryptionConfig({ ...b, key_provider: { aws_kms: { k: {} } } }, lit),
      "ENCRYPTION_CONFIG_INVALID",
      /key_provider\.aws_kms\.k: .*through external/,
    );
    rejects(
      () => parseEncryptionConfig({ ...b, state: { method: "method.aes_gcm.main", bogus: 1 } }, lit),
      "ENCRYPTION_CONFIG_INVALID",
      /state\.bogus: is not a known field/,
    );
    rejects(() => parseEncryptionConfig({ ...b, state: {} }, lit), "ENCRYPTION_CONFIG_INVALID", /state\.method: is required/);
  });

  it("merges the setting with TF_ENCRYPTION as OpenTofu merges code and environment: env's blocks and chains win, enforced from either holds", () => {
    // The setting: a guard only, and the old key provider; TF_ENCRYPTION: the method and a new provider using the old one as fallback.
    const setting = parseEncryptionConfig(
      { key_provider: { pbkdf2: { old: { passphrase: { env: "OLD_PASS" }, iterations: 200_000 } } }, state: { enforced: true } },
      { ...SETTINGS, env: { OLD_PASS: `${PASSPHRASE}-old` }, partial: true },
    );
    const env = encryptionConfigFromEnv(
      {
        TF_ENCRYPTION: JSON.stringify({
          key_provider: { pbkdf2: { new: { passphrase: PASSPHRASE, iterations: 200_000 } } },
          method: { aes_gcm: { new: { keys: "key_provider.pbkdf2.new" }, old: { keys: "key_provider.pbkdf2.old" } }, unencrypted: { u: {} } },
          state: { method: "method.aes_gcm.new", fallback: { method: "method.aes_gcm.old" } },
        }),
      },
      true,
    );
    const merged = checkEncryptionConfig(mergeEncryptionConfigs(setting, env) as EncryptionConfig, "the encryption setting and TF_ENCRYPTION");
    assert.deepEqual(merged.state, { methods: ["method.aes_gcm.new", "method.aes_gcm.old"], enforced: true });
    assert.deepEqual([...merged.keyProviders.keys()].sort(), ["key_provider.pbkdf2.new", "key_provider.pbkdf2.old"]);
    // Alone, TF_ENCRYPTION references a key provider it does not declare; the guard alone has no method.
    rejects(
      () => checkEncryptionConfig(env as EncryptionConfig, "TF_ENCRYPTION"),
      "ENCRYPTION_CONFIG_INVALID",
      /method\.aes_gcm\.old\.keys: references key_provider\.pbkdf2\.old/,
    );
    rejects(() => checkEncryptionConfig(setting, "the encryption setting"), "ENCRYPTION_CONFIG_INVALID", /state\.method: is required.*enforced is set/);
    // enforced from the setting forbids an unencrypted fallback from the environment.
    const unenc = encryptionConfigFromEnv(
      { TF_ENCRYPTION: JSON.stringify({ method: { unencrypted: { u: {} } }, state: { method: "method.unencrypted.u" } }) },
      true,
    );
    rejects(() => checkEncryptionConfig(mergeEncryptionConfigs(setting, unenc) as EncryptionConfig, "merged"), "ENCRYPTION_CONFIG_INVALID", /enforced forbids/);
  });

  it("reads HCL JSON's array form of blocks, and refuses two methods storing their metadata under one alias", () => {
    const cfg = parseEncryptionConfig(
      {
        key_provider: [
          { pbkdf2: { a: { passphrase: PASSPHRASE, iterations: 200_000 } } },
          { pbkdf2: [{ b: { passphrase: `${PASSPHRASE}-b`, iterations: 200_000, encrypted_metadata_alias: "key_provider.pbkdf2.a" } }] },
        ],
        method: { aes_gcm: { a: { keys: "key_provider.pbkdf2.a" }, b: { keys: "key_provider.pbkdf2.b" } } },
        state: { method: "method.aes_gcm.a", fallback: { method: "method.aes_gcm.b" } },
      },
      { source: "TF_ENCRYPTION", literalSecrets: true },
    );
    assert.equal(cfg.keyProviders.size, 2);
    assert.throws(
      () => StateEncryption.for(cfg),
      (e: unknown) => e instanceof ObjstateError && e.code === "ENCRYPTION_CONFIG_INVALID" && /encrypted_metadata_alias/.test(e.message),
    );
  });
});
