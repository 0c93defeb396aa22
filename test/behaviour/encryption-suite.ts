/**
 * State encryption wired into the backend's state I/O (issue 26), run unchanged on the
 * embedded store and on Ceph RGW + dynalite: round trip, rotation with rekey, migrating in
 * and out, enforced, each undecryptable case refused with nothing written, history, diff and
 * rollback across a rekey, and the stored bytes (every version, read raw) never holding a
 * test secret.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { it } from "node:test";
import {
  ObjectStoreBackend,
  ObjectStoreBackendConfig,
  isEnvelope,
  isObjstateError,
  parseEncryptionConfig,
  type ConnectOptions,
  type ObjectStoreBackendConfigProps,
} from "../../src/index.js";
import { checkEncryptionConfig } from "../../src/encryption/index.js";
import type { ErrorCode } from "../../src/errors.js";
import { chainConfig, largeState, OLD_PASSPHRASE, PASSPHRASE } from "../unit/encryption/support.js";
import { suiteTarget, type Target } from "../support/targets.js";

const FAST_DIGEST = { timeoutMs: 400, intervalMs: 100 };
const LINEAGE = "9d1e0c55-enc-suite-lineage";
const SECRET = "TOPSECRET-7c1f-db-password-e0a9";

/** A state whose only output is a secret (changing with the serial, so every version has its own). */
export function secretState(serial: number, lineage = LINEAGE): string {
  return `${JSON.stringify(
    {
      version: 4,
      terraform_version: "1.9.0",
      serial,
      lineage,
      outputs: { db_password: { value: `${SECRET}-${serial}`, type: "string", sensitive: true } },
      resources: [
        { mode: "managed", type: "null_resource", name: `r${serial}`, provider: 'provider["x/y"]', instances: [{ attributes: { id: String(serial) } }] },
      ],
      check_results: null,
    },
    null,
    2,
  )}\n`;
}

function config(chain: readonly (string | "unencrypted")[], opts: { enforced?: boolean } = {}) {
  return checkEncryptionConfig(parseEncryptionConfig(chainConfig(chain, opts), { source: "TF_ENCRYPTION", literalSecrets: true }), "TF_ENCRYPTION");
}

async function rejectsWith(p: Promise<unknown>, code: ErrorCode, re?: RegExp): Promise<Error> {
  let caught: unknown;
  await p.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => (caught = e),
  );
  assert.ok(isObjstateError(caught, code), `expected ${code}, got ${String(caught)}`);
  if (re !== undefined) assert.match((caught as Error).message, re);
  return caught as Error;
}

export function encryptionSuite(makeTarget: () => Target): void {
  const suite = suiteTarget(makeTarget);

  async function connect(props: ObjectStoreBackendConfigProps, options: ConnectOptions = {}): Promise<ObjectStoreBackend> {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
      env: {},
      who: "tester@encryption",
      digestRetry: FAST_DIGEST,
      onWarning: () => undefined,
      ...options,
    });
    suite.open.push(b);
    return b;
  }

  async function setup(): Promise<ObjectStoreBackendConfigProps> {
    const props = await suite.target.setup({ locks: true });
    const raw = await suite.target.raw(props.bucket);
    // Ceph buckets start unversioned; history needs versions.
    if ((await raw.versioning()) !== "enabled") await raw.enableVersioning();
    raw.close();
    return props;
  }

  /** Every stored version of the workspace's state, raw through the store (not the backend). */
  async function storedVersions(props: ObjectStoreBackendConfigProps, key: string): Promise<Buffer[]> {
    const raw = await suite.target.raw(props.bucket);
    const out: Buffer[] = [];
    for await (const v of raw.listVersions(key)) {
      if (v.deleteMarker) continue;
      const got = await raw.get(key, { versionId: v.versionId });
      if (got !== null) out.push(got.body);
    }
    raw.close();
    return out;
  }

  async function versionIds(b: ObjectStoreBackend, workspace = "default"): Promise<string[]> {
    const ids: string[] = [];
    for await (const v of b.history(workspace)) ids.push(v.versionId);
    return ids;
  }

  it("round trip: writes store an envelope, reads give the state back; the stored bytes never hold the secret", async () => {
    const props = await setup();
    const b = await connect(props, { encryption: config([PASSPHRASE]) });
    assert.equal(b.encrypts, true);
    await b.writeState("default", secretState(1));
    await b.writeState("default", secretState(2));
    assert.equal((await b.readState("default"))?.toString(), secretState(2));
    const read = await b.readStateVersion("default");
    assert.deepEqual(read?.encryption, { encrypted: true, method: "method.aes_gcm.new", migration: false });
    const stored = await b.readState("default", { stored: true });
    assert.ok(stored !== null && isEnvelope(stored));
    const versions = await storedVersions(props, b.statePath("default"));
    assert.equal(versions.length, 2);
    for (const v of versions) {
      assert.ok(isEnvelope(v));
      assert.equal(v.indexOf(SECRET), -1, "a stored version holds the secret in clear");
      assert.equal(v.indexOf(PASSPHRASE), -1);
    }
    // The clear serial and lineage are what history shows.
    const history = [];
    for await (const v of b.history("default")) history.push(v);
    assert.deepEqual(
      history.map((v) => [v.serial, v.lineage]),
      [
        [2, LINEAGE],
        [1, LINEAGE],
      ],
    );
    // The guard works on the clear fields: an older serial is refused.
    await rejectsWith(b.writeState("default", secretState(1)), "STATE_CONFLICT");
  });

  it("a large state (hashed in the worker thread) round-trips: the envelope is encrypted while it is written and its MD5 is the digest committed; a read that finds other bytes stored follows the digest, never decrypting them as the state", async () => {
    const props = await setup();
    const b = await connect(props, { encryption: config([PASSPHRASE]) });
    const state = largeState(6 * 1024 * 1024, 3, LINEAGE);
    const result = await b.writeState("default", state);
    assert.ok(result.written);
    const stored = await b.readState("default", { stored: true });
    assert.ok(stored !== null && isEnvelope(stored) && stored.length > state.length);
    assert.equal(result.md5, createHash("md5").update(stored).digest("hex"), "the digest committed is the MD5 of the envelope stored");
    assert.equal((await b.digestStatus("default")).status, "match");
    assert.ok((await b.readState("default"))?.equals(state));
    // Another envelope of the same key put over it behind objstate's back (never committed).
    await b.writeState("other", largeState(6 * 1024 * 1024, 4, LINEAGE));
    const intruder = await b.readState("other", { stored: true });
    assert.ok(intruder !== null && isEnvelope(intruder));
    const raw = await suite.target.raw(props.bucket);
    try {
      await raw.put(b.statePath("default"), intruder);
      await rejectsWith(b.readState("default"), "DIGEST_MISMATCH");
      // The committed bytes put back: the read decrypts them again.
      await raw.put(b.statePath("default"), stored);
      assert.ok((await b.readState("default"))?.equals(state));
    } finally {
      raw.close();
    }
  });

  it("the same state written again writes nothing, as without encryption (its envelope would differ: a fresh nonce), from this connection or another; another state with the same serial is refused", async () => {
    const props = await setup();
    const b = await connect(props, { encryption: config([PASSPHRASE]) });
    const first = await b.writeState("default", secretState(7));
    assert.ok(first.written);
    const again = await b.writeState("default", secretState(7));
    assert.deepEqual(again, { written: false, md5: first.md5, serial: 7 });
    // A connection that did not write it opens the stored envelope to compare.
    const other = await connect(props, { encryption: config([PASSPHRASE]) });
    assert.equal((await other.writeState("default", Buffer.from(secretState(7)))).written, false);
    assert.equal((await versionIds(b)).length, 1, "one version");
    await rejectsWith(other.writeState("default", secretState(7).replace("r7", "r7-changed")), "STATE_CONFLICT");
  });

  it("a new workspace's encrypted empty state is written over by any state, as a plain empty one is", async () => {
    const props = await setup();
    const b = await connect(props, { encryption: config([PASSPHRASE]) });
    await b.createWorkspace("fresh");
    const stored = await b.readState("fresh", { stored: true });
    assert.ok(stored !== null && isEnvelope(stored));
    assert.equal((await b.writeState("fresh", secretState(3, "another-lineage"))).written, true);
    assert.equal((await b.readState("fresh"))?.toString(), secretState(3, "another-lineage"));
    // Not empty any more: another lineage is refused.
    await rejectsWith(b.writeState("fresh", secretState(4)), "STATE_CONFLICT");
  });

  it("rotation: the old key as a fallback reads, rekey writes under the new key with serial + 1, then the old key is not needed", async () => {
    const props = await setup();
    const old = await connect(props, { encryption: config([OLD_PASSPHRASE]) });
    await old.writeState("default", secretState(5));
    const rotating = await connect(props, { encryption: config([PASSPHRASE, OLD_PASSPHRASE]) });
    assert.deepEqual((await rotating.readStateVersion("default"))?.encryption, { encrypted: true, method: "method.aes_gcm.old", migration: true });
    const result = await rotating.rekey("default");
    assert.deepEqual(
      { ...result, md5: undefined },
      { workspace: "default", rekeyed: true, from: "method.aes_gcm.old", to: "method.aes_gcm.new", serial: 6, md5: undefined },
    );
    const onlyNew = await connect(props, { encryption: config([PASSPHRASE]) });
    assert.equal((await onlyNew.readState("default"))?.toString(), secretState(5).replace('"serial": 5', '"serial": 6'));
    // The version before the rekey still needs the old key: a clear error, naming the workspace and what was tried.
    const [, before] = await versionIds(onlyNew);
    await rejectsWith(
      onlyNew.readVersion("default", before as string),
      "ENCRYPTION_WRONG_KEY",
      /workspace "default".*method\.aes_gcm\.new.*key_provider\.pbkdf2\.old/s,
    );
    assert.equal((await rotating.readVersion("default", before as string)).toString(), secretState(5));
    // A workspace without a state has nothing to rekey.
    assert.equal((await rotating.rekey("empty-ws")).rekeyed, false);
  });

  it("migrating in: a plain state is read through an unencrypted fallback and rekeyed into an envelope; without the fallback it is refused", async () => {
    const props = await setup();
    const plain = await connect(props);
    await plain.writeState("default", secretState(3));
    const strict = await connect(props, { encryption: config([PASSPHRASE]) });
    const before = await versionIds(strict);
    await rejectsWith(strict.readState("default"), "ENCRYPTION_PLAIN_STATE", /workspace "default".*unencrypted/);
    await rejectsWith(strict.writeState("default", secretState(4)), "ENCRYPTION_PLAIN_STATE");
    assert.deepEqual(await versionIds(strict), before, "nothing was written over the plain state");
    const migrating = await connect(props, { encryption: config([PASSPHRASE, "unencrypted"]) });
    assert.deepEqual((await migrating.readStateVersion("default"))?.encryption, { encrypted: false, method: "method.unencrypted.u1", migration: true });
    assert.equal((await migrating.rekey("default")).serial, 4);
    const stored = await migrating.readState("default", { stored: true });
    assert.ok(stored !== null && isEnvelope(stored) && stored.indexOf(SECRET) === -1);
    assert.equal((await strict.readState("default"))?.toString(), secretState(3).replace('"serial": 3', '"serial": 4'));
  });

  it("migrating out: unencrypted as the primary writes plain, the old method as fallback reads the envelope", async () => {
    const props = await setup();
    const enc = await connect(props, { encryption: config([PASSPHRASE]) });
    await enc.writeState("default", secretState(1));
    const out = await connect(props, { encryption: config(["unencrypted", PASSPHRASE]) });
    assert.equal((await out.readState("default"))?.toString(), secretState(1));
    await out.rekey("default");
    const plain = await connect(props);
    assert.equal((await plain.readState("default"))?.toString(), secretState(1).replace('"serial": 1', '"serial": 2'));
  });

  it("enforced: no unencrypted method may be configured, and a plain state is refused", async () => {
    assert.throws(
      () => config([PASSPHRASE, "unencrypted"], { enforced: true }),
      (e: unknown) => isObjstateError(e, "ENCRYPTION_CONFIG_INVALID"),
    );
    const props = await setup();
    await (await connect(props)).writeState("default", secretState(1));
    const enforced = await connect(props, { encryption: config([PASSPHRASE], { enforced: true }) });
    await rejectsWith(enforced.readState("default"), "ENCRYPTION_PLAIN_STATE");
  });

  for (const [name, alter, code] of [
    ["tampered", (e: Buffer) => flipInData(e), "ENCRYPTION_TAMPERED"],
    ["truncated", (e: Buffer) => e.subarray(0, e.length - 40), "ENCRYPTION_TAMPERED"],
    ["written under another key", undefined, "ENCRYPTION_WRONG_KEY"],
    [
      "of an unknown encryption_version",
      (e: Buffer) => Buffer.from(e.toString().replace('"encryption_version":"v0"', '"encryption_version":"v9"')),
      "ENCRYPTION_UNKNOWN_VERSION",
    ],
  ] as const) {
    it(`an envelope ${name} is ${code} on read, and a write, a rollback or a rekey writes nothing over it`, async () => {
      const props = await setup();
      const writer = await connect(props, { encryption: config([name === "written under another key" ? OLD_PASSPHRASE : PASSPHRASE]) });
      await writer.writeState("default", secretState(1));
      const first = (await versionIds(writer))[0] as string;
      if (alter !== undefined) {
        const envelope = (await writer.readState("default", { stored: true })) as Buffer;
        const altered = alter(envelope);
        // Stored as it is (pass-through), as a broken client or an attacker with bucket access would leave it.
        if (name !== "truncated") await writer.writeState("default", altered, { stored: true, force: true });
        else {
          // Not even JSON: no writer of objstate stores it (decision 089); put there by hand, its digest recorded.
          const raw = await suite.target.raw(props.bucket);
          await raw.put(writer.statePath("default"), altered);
          raw.close();
          await writer.repairState("default", { force: true });
        }
      }
      const b = await connect(props, { encryption: config([PASSPHRASE]) });
      const before = await versionIds(b);
      await rejectsWith(b.readState("default"), code, /workspace "default"/);
      await rejectsWith(b.writeState("default", secretState(9)), code);
      await rejectsWith(b.rekey("default"), code);
      if (alter !== undefined) await rejectsWith(b.rollback("default", first), code);
      assert.deepEqual(await versionIds(b), before, "nothing was written");
    });
  }

  it("a large stored state (past the guard's first 64 KiB) under another key, or plain, is not written over either", async () => {
    const props = await setup();
    const big = largeState(300 * 1024, 5, LINEAGE);
    await (await connect(props, { encryption: config([OLD_PASSPHRASE]) })).writeState("default", big);
    await (await connect(props)).writeState("plain", big);
    const b = await connect(props, { encryption: config([PASSPHRASE]) });
    const next = largeState(300 * 1024, 6, LINEAGE);
    for (const [w, code] of [
      ["default", "ENCRYPTION_WRONG_KEY"],
      ["plain", "ENCRYPTION_PLAIN_STATE"],
    ] as const) {
      const before = await versionIds(b, w);
      await rejectsWith(b.writeState(w, next), code, new RegExp(`workspace "${w}"`));
      assert.deepEqual(await versionIds(b, w), before, `nothing was written to ${w}`);
    }
    // Readable through a fallback: written over as usual.
    const rotating = await connect(props, { encryption: config([PASSPHRASE, OLD_PASSPHRASE]) });
    assert.equal((await rotating.writeState("default", next)).written, true);
    assert.ok((await b.readState("default"))?.equals(next));
  });

  it("history, diff and rollback across a rekey work on the decrypted states", async () => {
    const props = await setup();
    const old = await connect(props, { encryption: config([OLD_PASSPHRASE]) });
    await old.writeState("default", secretState(1));
    await old.writeState("default", secretState(2));
    const b = await connect(props, { encryption: config([PASSPHRASE, OLD_PASSPHRASE]) });
    await b.rekey("default");
    const [v3, v2, v1] = (await versionIds(b)) as [string, string, string];
    const d = await b.diff("default", { from: v1, to: v3 });
    assert.equal(d.from, v1);
    assert.ok(JSON.stringify(d.diff).includes("null_resource.r2"), "the diff compares decrypted resources");
    const rolled = await b.rollback("default", v1);
    assert.equal(rolled.serial, 4);
    assert.equal((await b.readState("default"))?.toString(), secretState(1).replace('"serial": 1', '"serial": 4'));
    assert.equal((await b.readVersion("default", v2)).toString(), secretState(2));
    const newest = await b.readState("default", { stored: true });
    assert.ok(newest !== null && isEnvelope(newest));
    for (const v of await storedVersions(props, b.statePath("default"))) assert.equal(v.indexOf(SECRET), -1);
  });

  it("pass-through: without a key, an envelope is stored and read byte for byte, guarded on its clear serial and lineage", async () => {
    const props = await setup();
    const enc = await connect(props, { encryption: config([PASSPHRASE]) });
    await enc.writeState("scratch", secretState(7));
    const envelope = (await enc.readState("scratch", { stored: true })) as Buffer;
    const server = await connect(props);
    assert.equal(server.encrypts, false);
    await server.writeState("default", envelope);
    assert.deepEqual(await server.readState("default"), envelope);
    // Its clear serial 7 guards: a plain state with serial 6 of the same lineage is older.
    await rejectsWith(server.writeState("default", secretState(6)), "STATE_CONFLICT");
    // With a key, a server may still pass a client's envelope through as it is.
    await enc.writeState("default", envelope, { stored: true });
    assert.equal((await enc.readState("default"))?.toString(), secretState(7));
  });
}

/** One base64 character of the ciphertext changed, past the probe block: the tag fails. */
function flipInData(e: Buffer): Buffer {
  const s = e.toString();
  const at = s.indexOf('"encrypted_data":"') + '"encrypted_data":"'.length + 200;
  const c = s[at] === "A" ? "B" : "A";
  return Buffer.from(s.slice(0, at) + c + s.slice(at + 1));
}
