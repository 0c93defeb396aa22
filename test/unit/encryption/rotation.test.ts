/**
 * Reading through fallback chains (rotation, migrating in and out with `unencrypted`,
 * `enforced`), and each way a stored state can fail to decrypt giving its own code, with
 * no secret in any message.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { inspect } from "node:util";
import { type EncryptionConfig, parseEncryptionConfig, StateEncryption } from "../../../src/encryption/index.js";
import { ObjstateError } from "../../../src/errors.js";
import { chainConfig, independentSeal, ITERATIONS, OLD_PASSPHRASE, PASSPHRASE, sampleState } from "./support.js";

const HEADER = { serial: 7, lineage: "0f5e8c1d-lineage" };
const SECRETS = [PASSPHRASE, OLD_PASSPHRASE, "S3CR3T-db-password-91b2"];

function config(chain: (string | "unencrypted")[], opts: { enforced?: boolean } = {}): EncryptionConfig {
  return parseEncryptionConfig(chainConfig(chain, opts), { source: "test", literalSecrets: true });
}

function enc(chain: (string | "unencrypted")[]): StateEncryption {
  return StateEncryption.for(config(chain)) as StateEncryption;
}

/** Rejects with `code`, naming the workspace, and with no secret anywhere in the error. */
async function rejectsWith(p: Promise<unknown>, code: string, mentions: RegExp[] = []): Promise<ObjstateError> {
  let caught: unknown;
  try {
    await p;
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof ObjstateError, `expected ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  const shown = `${caught.message}\n${inspect(caught, { showHidden: true, depth: 8 })}\n${JSON.stringify(caught.details)}`;
  for (const s of SECRETS) assert.ok(!shown.includes(s), `the error shows a secret: ${shown}`);
  for (const m of mentions) assert.match(caught.message, m);
  return caught;
}

describe("fallback chains", () => {
  it("rotation: a state written under the old key is read through the fallback, marked for rewriting; the rewrite is read by the new key alone", async () => {
    const state = sampleState();
    const old = await enc([OLD_PASSPHRASE]).encrypt(state, HEADER);
    const rotating = enc([PASSPHRASE, OLD_PASSPHRASE]);
    const d = await rotating.decrypt(old, { workspace: "prod" });
    assert.deepEqual(d.state, state);
    assert.equal(d.method, "method.aes_gcm.old");
    assert.equal(d.migration, true);
    const rewritten = await rotating.encrypt(d.state, HEADER);
    const after = await enc([PASSPHRASE]).decrypt(rewritten);
    assert.deepEqual(after.state, state);
    assert.equal(after.migration, false);
    // The old key alone no longer opens the rewrite, and the new key alone never opened the old version.
    await rejectsWith(enc([OLD_PASSPHRASE]).decrypt(rewritten, { workspace: "prod" }), "ENCRYPTION_WRONG_KEY", [/workspace "prod"/, /method\.aes_gcm\.old/]);
    await rejectsWith(enc([PASSPHRASE]).decrypt(old, { workspace: "prod" }), "ENCRYPTION_WRONG_KEY");
  });

  it("migrating in: a plain state is read through an unencrypted fallback and then written encrypted; without the fallback it is refused", async () => {
    const state = sampleState();
    const migrating = enc([PASSPHRASE, "unencrypted"]);
    const d = await migrating.decrypt(state, { workspace: "dev" });
    assert.equal(d.encrypted, false);
    assert.equal(d.migration, true);
    assert.equal(d.method, "method.unencrypted.u1");
    assert.deepEqual(d.state, state);
    const written = await migrating.encrypt(state, HEADER);
    assert.ok(!written.includes("S3CR3T-db-password-91b2"), "the envelope holds no secret in clear");
    await rejectsWith(enc([PASSPHRASE]).decrypt(state, { workspace: "dev" }), "ENCRYPTION_PLAIN_STATE", [
      /workspace "dev"/,
      /unencrypted/,
      /method\.aes_gcm\.new/,
    ]);
  });

  it("migrating out: unencrypted as the primary writes plain and still reads envelopes through the fallback", async () => {
    const state = sampleState();
    const envelope = await enc([PASSPHRASE]).encrypt(state, HEADER);
    const out = enc(["unencrypted", PASSPHRASE]);
    assert.equal(out.writesPlain, true);
    const d = await out.decrypt(envelope);
    assert.deepEqual(d.state, state);
    assert.equal(d.migration, true);
    assert.deepEqual(await out.encrypt(state, HEADER), state);
    const plain = await out.decrypt(state);
    assert.equal(plain.migration, false);
  });

  it("enforced refuses any unencrypted method in the chain, naming its place", () => {
    assert.throws(
      () => config([PASSPHRASE, "unencrypted"], { enforced: true }),
      (e: unknown) =>
        e instanceof ObjstateError && e.code === "ENCRYPTION_CONFIG_INVALID" && /state\.fallback\.method/.test(e.message) && /enforced/.test(e.message),
    );
  });

  it("remote state data sources pick their own chain by name, else the default", async () => {
    const raw = chainConfig([PASSPHRASE, OLD_PASSPHRASE]);
    raw["remote_state_data_sources"] = { default: { method: "method.aes_gcm.new" }, remote_state_data_source: { network: { method: "method.aes_gcm.old" } } };
    const cfg = parseEncryptionConfig(raw, { source: "test", literalSecrets: true });
    assert.deepEqual(
      (StateEncryption.for(cfg, { kind: "remote", name: "network" }) as StateEncryption).methods.map((m) => m.address),
      ["method.aes_gcm.old"],
    );
    assert.deepEqual(
      (StateEncryption.for(cfg, { kind: "remote", name: "other" }) as StateEncryption).methods.map((m) => m.address),
      ["method.aes_gcm.new"],
    );
    assert.equal(StateEncryption.for(parseEncryptionConfig({}, { source: "test", literalSecrets: true })), undefined);
  });
});

describe("states that cannot be decrypted", () => {
  const state = sampleState();
  const make = async (): Promise<Buffer> => await enc([PASSPHRASE]).encrypt(state, HEADER);

  it("a flipped bit in the data is TAMPERED (the key opens it, the GCM tag fails)", async () => {
    const good = await make();
    const env = JSON.parse(good.toString()) as Record<string, string>;
    const data = Buffer.from(env["encrypted_data"] as string, "base64");
    data[data.length - 30] = (data[data.length - 30] as number) ^ 0x01;
    env["encrypted_data"] = data.toString("base64");
    await rejectsWith(enc([PASSPHRASE]).decrypt(Buffer.from(JSON.stringify(env)), { workspace: "prod" }), "ENCRYPTION_TAMPERED", [
      /workspace "prod"/,
      /authentication tag/,
      /method\.aes_gcm\.new/,
    ]);
  });

  it("a flipped tag byte is TAMPERED", async () => {
    const good = await make();
    const env = JSON.parse(good.toString()) as Record<string, string>;
    const data = Buffer.from(env["encrypted_data"] as string, "base64");
    data[data.length - 1] = (data[data.length - 1] as number) ^ 0x80;
    env["encrypted_data"] = data.toString("base64");
    await rejectsWith(enc([PASSPHRASE]).decrypt(Buffer.from(JSON.stringify(env))), "ENCRYPTION_TAMPERED");
  });

  it("truncated: the envelope cut short, or its data cut short inside valid JSON, is TAMPERED", async () => {
    const good = await make();
    await rejectsWith(enc([PASSPHRASE]).decrypt(good.subarray(0, good.length - 40)), "ENCRYPTION_TAMPERED");
    await rejectsWith(enc([PASSPHRASE]).decrypt(good.subarray(0, Math.floor(good.length / 2))), "ENCRYPTION_TAMPERED");
    const env = JSON.parse(good.toString()) as Record<string, string>;
    const data = Buffer.from(env["encrypted_data"] as string, "base64");
    for (const keep of [data.length - 16, 30, 20]) {
      env["encrypted_data"] = data.subarray(0, keep).toString("base64");
      await rejectsWith(enc([PASSPHRASE]).decrypt(Buffer.from(JSON.stringify(env))), "ENCRYPTION_TAMPERED");
    }
  });

  it("a wrong passphrase is WRONG_KEY, naming the methods tried and what wrote the state", async () => {
    // The same key provider name as the writer's, with another passphrase.
    const raw = {
      key_provider: { pbkdf2: { new: { passphrase: OLD_PASSPHRASE, iterations: ITERATIONS } } },
      method: { aes_gcm: { new: { keys: "key_provider.pbkdf2.new" } } },
      state: { method: "method.aes_gcm.new" },
    };
    const wrong = StateEncryption.for(parseEncryptionConfig(raw, { source: "test", literalSecrets: true })) as StateEncryption;
    const e = await rejectsWith(wrong.decrypt(await make(), { workspace: "prod" }), "ENCRYPTION_WRONG_KEY", [
      /workspace "prod"/,
      /method\.aes_gcm\.new: its key \(key_provider\.pbkdf2\.new\) does not open/,
    ]);
    assert.equal(e.details?.["workspace"], "prod");
  });

  it("an envelope without metadata for the configured key provider is WRONG_KEY, naming the one that wrote it", async () => {
    const other = StateEncryption.for(
      parseEncryptionConfig(chainConfig([PASSPHRASE], { alias: "renamed" }), { source: "test", literalSecrets: true }),
    ) as StateEncryption;
    await rejectsWith(other.decrypt(await make()), "ENCRYPTION_WRONG_KEY", [/no metadata for renamed/, /written with key_provider\.pbkdf2\.new/]);
  });

  it("an unknown encryption_version is UNKNOWN_VERSION", async () => {
    const good = (await make()).toString();
    await rejectsWith(
      enc([PASSPHRASE]).decrypt(Buffer.from(good.replace('"encryption_version":"v0"', '"encryption_version":"v1"'))),
      "ENCRYPTION_UNKNOWN_VERSION",
      [/"v1"/],
    );
    const first = good.replace('{"serial"', '{"encryption_version":"v9","serial"').replace(',"encryption_version":"v0"', "");
    await rejectsWith(enc([PASSPHRASE]).decrypt(Buffer.from(first)), "ENCRYPTION_UNKNOWN_VERSION", [/"v9"/]);
  });

  it("clear serial or lineage that differ from the encrypted state's are TAMPERED (OpenTofu's check)", async () => {
    const good = (await make()).toString();
    await rejectsWith(enc([PASSPHRASE]).decrypt(Buffer.from(good.replace('"serial":7', '"serial":8'))), "ENCRYPTION_TAMPERED", [/serial 8/]);
    await rejectsWith(enc([PASSPHRASE]).decrypt(Buffer.from(good.replace('"lineage":"0f5e8c1d-lineage"', '"lineage":"other"'))), "ENCRYPTION_TAMPERED", [
      /lineage/,
    ]);
  });

  it("anything but whitespace after the envelope's closing brace is TAMPERED", async () => {
    const good = await make();
    assert.deepEqual((await enc([PASSPHRASE]).decrypt(Buffer.concat([good, Buffer.from("\n  ")]))).state, state);
    await rejectsWith(enc([PASSPHRASE]).decrypt(Buffer.concat([good, Buffer.from("{}")])), "ENCRYPTION_TAMPERED", [/follows its closing brace/]);
  });

  it("bytes that are neither a state nor an envelope are STATE_INVALID", async () => {
    await rejectsWith(enc([PASSPHRASE, "unencrypted"]).decrypt(Buffer.from('{"hello": 1}')), "STATE_INVALID");
    await rejectsWith(enc([PASSPHRASE, "unencrypted"]).decrypt(Buffer.from("not json")), "STATE_INVALID");
    await rejectsWith(enc([PASSPHRASE, "unencrypted"]).decrypt(Buffer.concat([state, Buffer.from("]")])), "STATE_INVALID");
  });

  it("an independently made envelope under the old passphrase opens through the fallback", async () => {
    const salt = Buffer.alloc(32, 9);
    const nonce = Buffer.alloc(12, 3);
    const text = independentSeal(state, { passphrase: OLD_PASSPHRASE, salt, nonce, iterations: ITERATIONS, metaKey: "key_provider.pbkdf2.old", ...HEADER });
    const d = await enc([PASSPHRASE, OLD_PASSPHRASE]).decrypt(Buffer.from(text));
    assert.deepEqual(d.state, state);
    assert.equal(d.method, "method.aes_gcm.old");
  });
});
