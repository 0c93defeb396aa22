/**
 * Shared pieces of the encryption tests, including an implementation of OpenTofu's v0
 * envelope written from the format's description with node:crypto alone (it imports no
 * product code), to check the product against.
 */
import assert from "node:assert/strict";
import { createCipheriv, createDecipheriv, pbkdf2Sync } from "node:crypto";

/** A passphrase distinctive enough to search for in messages. */
export const PASSPHRASE = "P4SS-correct-horse-battery-staple-7f3a";
export const OLD_PASSPHRASE = "OLD-P4SS-tr0ub4dor-and-3-more-words";
/** The fewest iterations allowed: keeps the tests quick. */
export const ITERATIONS = 200_000;

/** A small state with a secret in it. */
export function sampleState(serial = 7, lineage = "0f5e8c1d-lineage", secret = "S3CR3T-db-password-91b2"): Buffer {
  return Buffer.from(
    JSON.stringify(
      {
        version: 4,
        terraform_version: "1.9.0",
        serial,
        lineage,
        outputs: { db_password: { value: secret, type: "string", sensitive: true } },
        resources: [],
        check_results: null,
      },
      null,
      2,
    ) + "\n",
  );
}

/** A state of about `bytes` bytes (many resources), for streaming tests. */
export function largeState(bytes: number, serial = 1, lineage = "large-lineage"): Buffer {
  const resources: unknown[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const r = {
      mode: "managed",
      type: "null_resource",
      name: `r${i}`,
      provider: 'provider["registry.terraform.io/hashicorp/null"]',
      instances: [{ schema_version: 0, attributes: { id: String(1e12 + i), triggers: { k: `value-${i}-${"x".repeat(200)}` } } }],
    };
    size += JSON.stringify(r).length + 8;
    resources.push(r);
  }
  return Buffer.from(JSON.stringify({ version: 4, terraform_version: "1.9.0", serial, lineage, outputs: {}, resources }, null, 2));
}

/** The pbkdf2 metadata JSON as OpenTofu's Go structs encode it (field order salt, iterations, hash_function, key_length). */
export function pbkdf2MetaJson(salt: Buffer, iterations: number, hash = "sha512", keyLength = 32): string {
  return `{"salt":"${salt.toString("base64")}","iterations":${iterations},"hash_function":"${hash}","key_length":${keyLength}}`;
}

/**
 * An envelope made from the description: key = PBKDF2(passphrase, salt), data = nonce ‖
 * AES-256-GCM(state) ‖ tag, base64; meta maps the key provider's address to base64(meta
 * JSON); fields in the order of OpenTofu's Go structs, compact.
 */
export function independentSeal(
  state: Buffer,
  o: { passphrase: string; salt: Buffer; nonce: Buffer; iterations: number; metaKey: string; serial: number; lineage: string; aad?: Buffer },
): string {
  const key = pbkdf2Sync(o.passphrase, o.salt, o.iterations, 32, "sha512");
  const c = createCipheriv("aes-256-gcm", key, o.nonce);
  if (o.aad !== undefined) c.setAAD(o.aad);
  const data = Buffer.concat([o.nonce, c.update(state), c.final(), c.getAuthTag()]);
  const meta = Buffer.from(pbkdf2MetaJson(o.salt, o.iterations)).toString("base64");
  return `{"serial":${o.serial},"lineage":${JSON.stringify(o.lineage)},"meta":{${JSON.stringify(o.metaKey)}:"${meta}"},"encrypted_data":"${data.toString("base64")}","encryption_version":"v0"}`;
}

/** Open an envelope from the description alone. */
export function independentOpen(
  envelope: Buffer | string,
  passphrase: string,
  aad?: Buffer,
): { state: Buffer; metaKey: string; salt: Buffer; nonce: Buffer; env: Record<string, unknown> } {
  const env = JSON.parse(envelope.toString()) as { meta: Record<string, string>; encrypted_data: string; encryption_version: string };
  assert.equal(env.encryption_version, "v0");
  const [metaKey, metaB64] = Object.entries(env.meta)[0] as [string, string];
  const meta = JSON.parse(Buffer.from(metaB64, "base64").toString()) as { salt: string; iterations: number; hash_function: string; key_length: number };
  const salt = Buffer.from(meta.salt, "base64");
  const key = pbkdf2Sync(passphrase, salt, meta.iterations, meta.key_length, meta.hash_function);
  const data = Buffer.from(env.encrypted_data, "base64");
  const nonce = data.subarray(0, 12);
  const d = createDecipheriv(`aes-${key.length * 8}-gcm` as "aes-256-gcm", key, nonce);
  if (aad !== undefined) d.setAAD(aad);
  d.setAuthTag(data.subarray(data.length - 16));
  return {
    state: Buffer.concat([d.update(data.subarray(12, data.length - 16)), d.final()]),
    metaKey,
    salt,
    nonce,
    env: env as unknown as Record<string, unknown>,
  };
}

/** Names of the test passphrases' key providers (`key_provider.pbkdf2.NAME`) and methods (`method.aes_gcm.NAME`): stable across configurations, as a real rotation keeps the old provider's name. */
export function nameOf(passphrase: string): string {
  return passphrase === PASSPHRASE ? "new" : passphrase === OLD_PASSPHRASE ? "old" : `p${passphrase.length}`;
}

/** Configuration with one pbkdf2 key provider and aes_gcm method per passphrase, the first primary, the rest fallbacks in order. */
export function chainConfig(passphrases: readonly (string | "unencrypted")[], opts: { enforced?: boolean; alias?: string } = {}): Record<string, unknown> {
  const keyProvider: Record<string, unknown> = {};
  const method: Record<string, Record<string, unknown>> = { aes_gcm: {}, unencrypted: {} };
  const refs: string[] = [];
  passphrases.forEach((p, i) => {
    if (p === "unencrypted") {
      (method["unencrypted"] as Record<string, unknown>)[`u${i}`] = {};
      refs.push(`method.unencrypted.u${i}`);
      return;
    }
    keyProvider[nameOf(p)] = {
      passphrase: p,
      iterations: ITERATIONS,
      ...(opts.alias !== undefined && i === 0 ? { encrypted_metadata_alias: opts.alias } : {}),
    };
    (method["aes_gcm"] as Record<string, unknown>)[nameOf(p)] = { keys: `key_provider.pbkdf2.${nameOf(p)}` };
    refs.push(`method.aes_gcm.${nameOf(p)}`);
  });
  let state: Record<string, unknown> | undefined;
  for (const r of [...refs].reverse()) state = state === undefined ? { method: r } : { method: r, fallback: state };
  return { key_provider: { pbkdf2: keyProvider }, method, state: { ...state, ...(opts.enforced === true ? { enforced: true } : {}) } };
}

/** Random bytes from a fixed list, in order (salt, then nonce). */
export function fixedRandom(...parts: Buffer[]): (n: number) => Buffer {
  const queue = [...parts];
  return (n) => {
    const next = queue.shift();
    assert.ok(next !== undefined && next.length === n, `fixedRandom: asked for ${n} bytes`);
    return Buffer.from(next);
  };
}
