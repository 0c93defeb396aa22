/**
 * Key provider `external` through a small program speaking OpenTofu 1.10's protocol: the
 * header, `null` or the stored metadata on standard input, keys on standard output; its
 * timeout; and its keys never in an error.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { inspect } from "node:util";
import { parseEncryptionConfig, StateEncryption } from "../../../src/encryption/index.js";
import { ObjstateError } from "../../../src/errors.js";
import { sampleState } from "./support.js";

const KEY = Buffer.from("e1f2a3b4c5d6e7f8091a2b3c4d5e6f70112233445566778899aabbccddeeff00", "hex");
const KEY_B64 = KEY.toString("base64");

const dir = mkdtempSync(join(tmpdir(), "objstate-external-"));
const program = join(dir, "provider.mjs");
const inputs = join(dir, "inputs.log");
writeFileSync(
  program,
  `import { appendFileSync } from "node:fs";
const mode = process.argv[2];
const key = ${JSON.stringify(KEY_B64)};
if (mode === "bad-header") { process.stdout.write('{"magic":"Something-Else","version":1}\\n'); process.exit(0); }
process.stdout.write(JSON.stringify({ magic: "OpenTofu-External-Key-Provider", version: 1 }) + "\\n");
if (mode === "sleep") { setTimeout(() => {}, 600000); }
else {
  let input = "";
  process.stdin.on("data", (c) => (input += c));
  process.stdin.on("end", () => {
    appendFileSync(${JSON.stringify(inputs)}, input + "\\n");
    if (mode === "fail") { process.stdout.write(key); process.stderr.write("access denied by the KMS"); process.exit(3); }
    if (mode === "garbage") { process.stdout.write("{ not json " + key); return; }
    const parsed = JSON.parse(input);
    const keys = { encryption_key: key };
    if (parsed !== null && parsed.external_data.kid === "kid-1") keys.decryption_key = key;
    process.stdout.write(JSON.stringify({ keys, meta: { external_data: { kid: "kid-1", alg: "test" } } }));
  });
}
`,
);

function encFor(mode: string, timeoutMs?: number): StateEncryption {
  const cfg = parseEncryptionConfig(
    {
      key_provider: { external: { kms: { command: [process.execPath, program, mode] } } },
      method: { aes_gcm: { main: { keys: "key_provider.external.kms" } } },
      state: { method: "method.aes_gcm.main" },
    },
    { source: "test", literalSecrets: false },
  );
  return StateEncryption.for(cfg, { kind: "state" }, timeoutMs === undefined ? {} : { timeoutMs }) as StateEncryption;
}

async function failure(p: Promise<unknown>): Promise<ObjstateError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ObjstateError, String(e));
    const shown = `${e.message}\n${inspect(e, { showHidden: true, depth: 8 })}`;
    for (const secret of [KEY_B64, KEY.toString("hex")]) assert.ok(!shown.includes(secret), `the error shows the key: ${shown}`);
    return e;
  }
  assert.fail("expected a failure");
}

describe("the external key provider", () => {
  it("encrypts with the program's key, stores its metadata, and decrypts by sending that metadata back", async () => {
    const state = sampleState();
    const enc = encFor("ok");
    const envelope = await enc.encrypt(state, { serial: 7, lineage: "0f5e8c1d-lineage" });
    const env = JSON.parse(envelope.toString()) as { meta: Record<string, string>; encrypted_data: string };
    // OpenTofu's Go encoding of the stored metadata: keys sorted.
    assert.equal(Buffer.from(env.meta["key_provider.external.kms"] as string, "base64").toString(), '{"external_data":{"alg":"test","kid":"kid-1"}}');
    // The data opens with the program's key, independently of the product.
    const data = Buffer.from(env.encrypted_data, "base64");
    const { createDecipheriv } = await import("node:crypto");
    const d = createDecipheriv("aes-256-gcm", KEY, data.subarray(0, 12));
    d.setAuthTag(data.subarray(data.length - 16));
    assert.deepEqual(Buffer.concat([d.update(data.subarray(12, data.length - 16)), d.final()]), state);
    const read = await encFor("ok").decrypt(envelope);
    assert.deepEqual(read.state, state);
    const { readFileSync } = await import("node:fs");
    const sent = readFileSync(inputs, "utf8").trim().split("\n");
    assert.equal(sent[0], "null", "encrypting sends null");
    assert.deepEqual(JSON.parse(sent[sent.length - 1] as string), { external_data: { alg: "test", kid: "kid-1" } }, "decrypting sends the stored metadata");
  });

  it("stops a program that does not answer within the timeout (1 minute by default; shortened here)", async () => {
    const e = await failure(encFor("sleep", 300).encrypt(sampleState(), { serial: 7, lineage: "0f5e8c1d-lineage" }));
    assert.equal(e.code, "ENCRYPTION_KEY_PROVIDER_FAILED");
    assert.match(e.message, /did not answer within/);
    assert.match(e.message, /key_provider\.external\.kms/);
  });

  it("names the program and its standard error when it fails, never what it printed as keys", async () => {
    const e = await failure(encFor("fail").encrypt(sampleState(), { serial: 7, lineage: "0f5e8c1d-lineage" }));
    assert.equal(e.code, "ENCRYPTION_KEY_PROVIDER_FAILED");
    assert.match(e.message, /exited with code 3/);
    assert.match(e.message, /access denied by the KMS/);
    assert.ok(e.message.includes(process.execPath));
    const g = await failure(encFor("garbage").encrypt(sampleState(), { serial: 7, lineage: "0f5e8c1d-lineage" }));
    assert.match(g.message, /not JSON/);
  });

  it("refuses a program without the protocol's header", async () => {
    const e = await failure(encFor("bad-header").encrypt(sampleState(), { serial: 7, lineage: "0f5e8c1d-lineage" }));
    assert.equal(e.code, "ENCRYPTION_KEY_PROVIDER_FAILED");
    assert.match(e.message, /magic/);
  });

  it("names a program that does not exist", async () => {
    const cfg = parseEncryptionConfig(
      {
        key_provider: { external: { kms: { command: [join(dir, "missing-program")] } } },
        method: { aes_gcm: { main: { keys: "key_provider.external.kms" } } },
        state: { method: "method.aes_gcm.main" },
      },
      { source: "test", literalSecrets: false },
    );
    const e = await failure((StateEncryption.for(cfg) as StateEncryption).encrypt(sampleState(), { serial: 7, lineage: "0f5e8c1d-lineage" }));
    assert.match(e.message, /was not found/);
  });
});
