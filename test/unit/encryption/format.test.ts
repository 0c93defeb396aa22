/**
 * OpenTofu's v0 envelope: the repository's own pbkdf2 vector, envelopes with a known salt and
 * nonce compared byte for byte with (and opened by) an implementation written from the
 * format's description, and envelopes made by that implementation read by the product.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseEncryptionConfig, pbkdf2Derivations, StateEncryption } from "../../../src/encryption/index.js";
import { derivePbkdf2 } from "../../../src/encryption/pbkdf2.js";
import { chainConfig, fixedRandom, independentOpen, independentSeal, ITERATIONS, largeState, PASSPHRASE, pbkdf2MetaJson, sampleState } from "./support.js";

const SALT = Buffer.from("10ec3d3fe02ad2bee6f1f5540f8e6bbe3b8b29445cf502d27d47ad554aa8971f", "hex");
const NONCE = Buffer.from("000102030405060708090a0b", "hex");

function encryption(passphrases: string[], random?: (n: number) => Buffer, extra: { aad?: number[]; alias?: string } = {}): StateEncryption {
  const raw = chainConfig(passphrases, extra.alias === undefined ? {} : { alias: extra.alias });
  if (extra.aad !== undefined)
    ((raw["method"] as Record<string, Record<string, Record<string, unknown>>>)["aes_gcm"] as Record<string, Record<string, unknown>>)["new"] = {
      keys: "key_provider.pbkdf2.new",
      aad: extra.aad,
    };
  const cfg = parseEncryptionConfig(raw, { source: "test", literalSecrets: true });
  return StateEncryption.for(cfg, { kind: "state" }, random === undefined ? {} : { randomBytes: random }) as StateEncryption;
}

describe("the pbkdf2 key provider", () => {
  it("derives the key of OpenTofu's example_decrypt_test.go from its passphrase and stored metadata", async () => {
    const key = await derivePbkdf2(Buffer.from("correct-horse-battery-staple"), { salt: SALT, iterations: 600_000, hashFunction: "sha512", keyLength: 32 });
    assert.equal(key.toString("hex"), "225872367198760137e0a18580433447bbf578fbe2b87ff36aef3c175fe5709c");
  });

  it("derives once per (passphrase, salt, parameters) in a process: a second read of the same envelope does not run pbkdf2", async () => {
    // A salt no writer of this process used (a writer's own key is cached too).
    const salt = Buffer.from("5a17".repeat(16), "hex");
    const envelope = Buffer.from(
      independentSeal(sampleState(), {
        passphrase: PASSPHRASE,
        salt,
        nonce: NONCE,
        iterations: ITERATIONS,
        metaKey: "key_provider.pbkdf2.new",
        serial: 7,
        lineage: "0f5e8c1d-lineage",
      }),
    );
    const reader = encryption([PASSPHRASE]);
    const before = pbkdf2Derivations();
    await reader.decrypt(envelope);
    assert.equal(pbkdf2Derivations(), before + 1);
    await reader.decrypt(envelope);
    await encryption([PASSPHRASE]).decrypt(envelope);
    assert.equal(pbkdf2Derivations(), before + 1, "the key for this salt is cached for the process");
  });
});

describe("the v0 envelope", () => {
  it("with a known salt and nonce is byte for byte the envelope made from the format's description, and opens with it", async () => {
    const state = sampleState();
    const enc = encryption([PASSPHRASE], fixedRandom(SALT, NONCE));
    const envelope = await enc.encrypt(state, { serial: 7, lineage: "0f5e8c1d-lineage" });
    const bytes = envelope;
    assert.equal(bytes.length, envelope.byteLength);
    const expected = independentSeal(state, {
      passphrase: PASSPHRASE,
      salt: SALT,
      nonce: NONCE,
      iterations: ITERATIONS,
      metaKey: "key_provider.pbkdf2.new",
      serial: 7,
      lineage: "0f5e8c1d-lineage",
    });
    assert.equal(bytes.toString(), expected);
    const opened = independentOpen(bytes, PASSPHRASE);
    assert.deepEqual(opened.state, state);
    assert.deepEqual(opened.salt, SALT);
    assert.deepEqual(opened.nonce, NONCE);
    // The metadata is base64 of OpenTofu's JSON of its Go struct.
    assert.equal(
      Buffer.from((opened.env["meta"] as Record<string, string>)["key_provider.pbkdf2.new"] as string, "base64").toString(),
      pbkdf2MetaJson(SALT, ITERATIONS),
    );
  });

  it("a multi-MiB envelope, sealed in many pieces, is the same bytes for the same nonce and opens independently", async () => {
    const state = largeState(3 * 1024 * 1024 + 17);
    const a = await encryption([PASSPHRASE], fixedRandom(SALT, NONCE)).encrypt(state, { serial: 1, lineage: "large-lineage" });
    const joined = a;
    assert.equal(joined.length, a.byteLength);
    const b = await encryption([PASSPHRASE], fixedRandom(SALT, NONCE)).encrypt(state, { serial: 1, lineage: "large-lineage" });
    assert.deepEqual(joined, b);
    assert.deepEqual(independentOpen(joined, PASSPHRASE).state, state);
  });

  it("names the key provider's metadata by encrypted_metadata_alias when set", async () => {
    const envelope = await encryption([PASSPHRASE], undefined, { alias: "shared-key" }).encrypt(sampleState(), { serial: 7, lineage: "0f5e8c1d-lineage" });
    assert.deepEqual(Object.keys((JSON.parse(envelope.toString()) as { meta: object }).meta), ["shared-key"]);
    assert.equal(independentOpen(envelope, PASSPHRASE).metaKey, "shared-key");
  });

  it("binds the aad: an envelope sealed with it opens independently only with the same aad", async () => {
    const state = sampleState();
    const envelope = await encryption([PASSPHRASE], undefined, { aad: [1, 2, 3, 4] }).encrypt(state, { serial: 7, lineage: "0f5e8c1d-lineage" });
    assert.deepEqual(independentOpen(envelope, PASSPHRASE, Buffer.from([1, 2, 3, 4])).state, state);
    assert.throws(() => independentOpen(envelope, PASSPHRASE));
  });

  it("an envelope made from the description is read, in OpenTofu's order, pretty-printed, and with meta after the data", async () => {
    const state = sampleState();
    const compact = independentSeal(state, {
      passphrase: PASSPHRASE,
      salt: SALT,
      nonce: NONCE,
      iterations: ITERATIONS,
      metaKey: "key_provider.pbkdf2.new",
      serial: 7,
      lineage: "0f5e8c1d-lineage",
    });
    const parsed = JSON.parse(compact) as Record<string, unknown>;
    const reordered = JSON.stringify(
      { encryption_version: "v0", encrypted_data: parsed["encrypted_data"], lineage: parsed["lineage"], meta: parsed["meta"], serial: parsed["serial"] },
      null,
      2,
    );
    const enc = encryption([PASSPHRASE]);
    for (const text of [compact, JSON.stringify(parsed, null, 4), reordered]) {
      const d = await enc.decrypt(Buffer.from(text), { workspace: "dev" });
      assert.deepEqual(d.state, state);
      assert.equal(d.encrypted, true);
      assert.equal(d.method, "method.aes_gcm.new");
      assert.equal(d.migration, false);
      assert.deepEqual(d.header, { serial: 7, lineage: "0f5e8c1d-lineage" });
    }
  });

  it("a reader fed the envelope in small pieces gives the same state as one fed all of it", async () => {
    const state = largeState(100 * 1024);
    const enc = encryption([PASSPHRASE]);
    const envelope = await enc.encrypt(state, { serial: 1, lineage: "large-lineage" });
    for (const size of [3, 4093, 65536]) {
      const r = enc.decryptor({ workspace: "dev" });
      // One byte at a time for the head and tail (where the scanner works), bigger pieces after.
      for (let at = 0; at < envelope.length;) {
        const n = at < 600 || envelope.length - at < 600 ? 1 : size;
        await r.push(envelope.subarray(at, at + n));
        at += n;
      }
      assert.deepEqual((await r.end()).state, state, `pieces of ${size}`);
    }
  });
});
