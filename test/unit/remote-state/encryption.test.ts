/**
 * fetchOutputs with state encryption (issue 26): the data source's own
 * remote_state_data_sources block, chosen by the data source's name, else its default; the
 * `state` target's key does not apply to a data source (as in OpenTofu).
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { DataRemoteStateObjectStore, ObjectStoreBackend, ObjectStoreBackendConfig, isObjstateError, parseEncryptionConfig } from "../../../src/index.js";
import { secretState } from "../../behaviour/encryption-suite.js";
import { chainConfig, OLD_PASSPHRASE, PASSPHRASE } from "../encryption/support.js";

it("fetchOutputs decrypts with the data source's remote_state_data_source block by name, else the default", async () => {
  const dir = mkdtempSync(join(tmpdir(), "objstate-remote-enc-"));
  const props = { bucket: "remote-enc", endpoint: `file:${dir}` };
  const writerCfg = parseEncryptionConfig(chainConfig([PASSPHRASE]), { source: "test", literalSecrets: true });
  const writer = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, encryption: writerCfg, onWarning: () => undefined });
  await writer.writeState("default", secretState(1));
  writer.close();

  // `state` uses the old key; the data source "net" has its own block with the key that wrote the state.
  const both = chainConfig([OLD_PASSPHRASE]) as Record<string, Record<string, unknown>>;
  const own = chainConfig([PASSPHRASE]) as Record<string, Record<string, unknown>>;
  const cfg = parseEncryptionConfig(
    {
      key_provider: { pbkdf2: { ...(both["key_provider"]?.["pbkdf2"] as object), ...(own["key_provider"]?.["pbkdf2"] as object) } },
      method: { aes_gcm: { ...(both["method"]?.["aes_gcm"] as object), ...(own["method"]?.["aes_gcm"] as object) } },
      state: { method: "method.aes_gcm.old" },
      remote_state_data_sources: { remote_state_data_source: { net: { method: "method.aes_gcm.new" } }, default: { method: "method.aes_gcm.old" } },
    },
    { source: "test", literalSecrets: true },
  );
  const opts = { env: {}, encryption: cfg, onWarning: () => undefined };
  const net = await new DataRemoteStateObjectStore("net", props).fetchOutputs(opts);
  assert.equal(net.string("db_password"), "TOPSECRET-7c1f-db-password-e0a9-1");
  // Another data source falls to the default block, whose key does not open it.
  await assert.rejects(new DataRemoteStateObjectStore("other", props).fetchOutputs(opts), (e: unknown) => isObjstateError(e, "ENCRYPTION_WRONG_KEY"));
  // The state target chosen explicitly (what `objstate output` does): the old key, refused too.
  await assert.rejects(new DataRemoteStateObjectStore("net", props).fetchOutputs({ ...opts, encryptionTarget: { kind: "state" } }), (e: unknown) =>
    isObjstateError(e, "ENCRYPTION_WRONG_KEY"),
  );
});
