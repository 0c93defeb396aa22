/**
 * `objstate serve` with encrypted states (issue 26, item 4), in process over the embedded
 * store. Pass-through: a client that encrypts itself (OpenTofu with `encryption`) POSTs
 * envelopes, which are stored and served byte for byte, guarded on their clear serial and
 * lineage; without a key, the console and /api/v1 say "encrypted" where they would show
 * content. At rest (the server connected with `encryption`): a client's envelope is kept
 * only when the server's key opens it; plain clients' states are stored as envelopes and
 * served decrypted, with history, diffs, rollback and outputs working with the key.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { parseEncryptionConfig, StateEncryption } from "../../../src/encryption/index.js";
import type { ObjstateServer } from "../../../src/server/server.js";
import { HttpBackendClient, rawRequest, toolState } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { startServer } from "../../support/server-fixture.js";
import { connectAtRest, filesUnder } from "../../support/at-rest.js";
import { chainConfig, largeState, OLD_PASSPHRASE, PASSPHRASE } from "../encryption/support.js";

const SECRET = "S3CR3T-pass-through-4e1d";

/** `path` as JSON (an /api/v1 route), asserting 200. */
const json = async (base: string, method: string, path: string, body?: Buffer): Promise<Record<string, unknown>> => {
  const r = await rawRequest(base, method, path, body);
  assert.equal(r.status, 200, `${method} ${path}: ${r.body.toString()}`);
  return JSON.parse(r.body.toString()) as Record<string, unknown>;
};

/** OpenTofu's encryption as a client configures it (a pbkdf2 passphrase, aes_gcm). */
function clientEncryption(): StateEncryption {
  const cfg = parseEncryptionConfig(chainConfig([PASSPHRASE]), { source: "TF_ENCRYPTION", literalSecrets: true });
  return StateEncryption.for(cfg) as StateEncryption;
}

describe("objstate serve: pass-through of envelopes (server without encryption)", () => {
  let backend: ObjectStoreBackend;
  const servers: ObjstateServer[] = [];
  let enc: StateEncryption;

  before(async () => {
    const props = await embeddedTarget().setup({ locks: true });
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    enc = clientEncryption();
  });
  after(async () => {
    for (const s of servers) await s.close(500);
    backend.close();
  });

  const seal = async (serial: number, lineage: string): Promise<Buffer> =>
    await enc.encrypt(
      toolState(serial, lineage, { db_password: { value: SECRET, type: "string", sensitive: true }, region: { value: "eu-west-1", type: "string" } }),
      { serial, lineage },
    );

  it("OpenTofu's requests (lock, POST an envelope, unlock, GET): the envelope comes back byte for byte; the guard reads its clear lineage and serial", async () => {
    const s = await startServer(backend, {}, servers);
    const ws = uniqueName("ws");
    const tofu = new HttpBackendClient({ bases: [s.url], workspace: ws, flavour: "opentofu", retries: 0 });
    const one = await seal(1, "lin-a");
    const two = await seal(2, "lin-a");
    assert.ok((await tofu.lock("OperationTypeApply")).ok);
    assert.equal((await tofu.put(one)).status, 200);
    assert.equal((await tofu.put(two)).status, 200);
    // Another lineage, and an older serial of this one: refused on the envelope's clear fields
    // (an envelope shows no resources, yet it is never taken for an empty state).
    const other = await tofu.put(await seal(9, "lin-b"));
    assert.equal(other.status, 409, other.body.toString());
    assert.match(other.body.toString(), /another lineage/);
    const older = await tofu.put(await seal(1, "lin-a"));
    assert.equal(older.status, 409, older.body.toString());
    assert.match(older.body.toString(), /older state/);
    assert.equal((await tofu.unlock()).status, 200);
    const got = await tofu.get();
    assert.ok(got !== null && got.equals(two), "GET returns the envelope POSTed, byte for byte");
    assert.ok((await backend.readState(ws))?.equals(two), "stored byte for byte");
    // It is OpenTofu's envelope still: the client's key opens it.
    assert.ok((await enc.decrypt(got)).state.includes(SECRET));
  });

  it("a large envelope (streamed both ways, past 256 KiB) comes back byte for byte, and its clear fields guard it", async () => {
    const s = await startServer(backend, {}, servers);
    const ws = uniqueName("ws");
    const tofu = new HttpBackendClient({ bases: [s.url], workspace: ws, flavour: "opentofu", retries: 0 });
    const big = await enc.encrypt(largeState(2 * 1024 * 1024, 4, "lin-big"), { serial: 4, lineage: "lin-big" });
    assert.ok((await tofu.lock("OperationTypeApply")).ok);
    assert.equal((await tofu.put(big)).status, 200);
    const older = await tofu.put(await seal(3, "lin-big"));
    assert.equal(older.status, 409, older.body.toString());
    assert.equal((await tofu.unlock()).status, 200);
    const got = await tofu.get();
    assert.ok(got !== null && got.equals(big));
  });

  it("/api/v1 says encrypted where it would show content: outputs, diffs; history lists the versions; rollback restores an envelope byte for byte", async () => {
    const s = await startServer(backend, { allowUnlockedWrites: true }, servers);
    const ws = uniqueName("ws");
    const tofu = new HttpBackendClient({ bases: [s.url], workspace: ws, flavour: "opentofu", retries: 0 });
    const one = await seal(1, "lin-c");
    const two = await seal(2, "lin-c");
    assert.equal((await tofu.put(one)).status, 200);
    assert.equal((await tofu.put(two)).status, 200);
    const api = `/api/v1/workspaces/${ws}`;

    const outputs = await json(s.url, "GET", `${api}/outputs`);
    assert.equal(outputs["encrypted"], true);
    assert.equal(outputs["outputs"], null);
    const history = (await json(s.url, "GET", `${api}/history`))["versions"] as { versionId: string; serial: number; lineage: string }[];
    assert.deepEqual(
      history.map((v) => [v.serial, v.lineage]),
      [
        [2, "lin-c"],
        [1, "lin-c"],
      ],
    );
    const [v2, v1] = history.map((v) => v.versionId) as [string, string];
    const diff = await json(s.url, "GET", `${api}/diff?from=${v1}&to=${v2}`);
    assert.deepEqual([diff["encrypted"], diff["from"], diff["to"]], [true, v1, v2]);
    assert.equal((await json(s.url, "POST", `${api}/diff`, toolState(3, "lin-c")))["encrypted"], true);
    // The version's bytes as stored.
    assert.ok((await rawRequest(s.url, "GET", `${api}/versions/${v1}`, undefined)).body.equals(one));

    const rolled = await json(s.url, "POST", `${api}/rollback`, Buffer.from(JSON.stringify({ to: v1 })));
    assert.equal(rolled["serial"], 1, "an envelope keeps its serial (the clear one must stay the encrypted one's)");
    const now = await tofu.get();
    assert.ok(now !== null && now.equals(one), "the version's envelope is current again, byte for byte");
    assert.equal((await enc.decrypt(now)).header?.serial, 1, "and it still opens (clear and encrypted serials agree)");
    // The client writes on from it.
    assert.equal((await tofu.put(await seal(2, "lin-c"))).status, 200);
  });

  it("the console says encrypted on the Workspace, History and Diff pages (200, not an error page); no secret is shown", async () => {
    const s = await startServer(backend, { allowUnlockedWrites: true }, servers);
    const ws = uniqueName("ws");
    const tofu = new HttpBackendClient({ bases: [s.url], workspace: ws, flavour: "opentofu", retries: 0 });
    const one = await seal(1, "lin-d");
    assert.equal((await tofu.put(one)).status, 200);
    assert.equal((await tofu.put(await seal(2, "lin-d"))).status, 200);
    const page = async (path: string): Promise<string> => {
      const r = await rawRequest(s.url, "GET", path, undefined);
      assert.equal(r.status, 200, `${path}: ${r.body.toString()}`);
      const html = r.body.toString();
      assert.doesNotMatch(html, /Could not do that/);
      assert.ok(!html.includes(SECRET));
      return html;
    };
    const workspace = await page(`/workspaces/${ws}`);
    assert.match(workspace, /<p class="notice" data-encrypted>Encrypted: /);
    assert.match(workspace, /unknown \(encrypted\)/);
    const history = await page(`/workspaces/${ws}/history`);
    assert.match(history, /<p class="notice" data-encrypted>/);
    assert.equal(history.match(/\(encrypted\)/g)?.length, 2, "each version is marked");
    const [to, from] = [...history.matchAll(/data-version="([^"]+)"/g)].map((m) => m[1]);
    const diff = await page(`/workspaces/${ws}/diff?from=${from}&to=${to}`);
    assert.match(diff, /<p class="notice" data-encrypted>Encrypted: /);

    // Rollback from the console: its confirmation says what it can, and the envelope comes back.
    const confirm = await page(`/workspaces/${ws}/rollback?to=${from}`);
    assert.match(confirm, /data-encrypted/);
    assert.match(confirm, /<strong data-new-serial>1<\/strong>/, "an envelope keeps its serial");
    const csrf = /name="csrf" value="([^"]+)"/.exec(confirm)?.[1] as string;
    const posted = await rawRequest(
      s.url,
      "POST",
      `/workspaces/${ws}/rollback`,
      Buffer.from(new URLSearchParams({ csrf, to: from as string, current: to as string }).toString()),
      {},
      { "Content-Type": "application/x-www-form-urlencoded", Origin: s.url },
    );
    assert.equal(posted.status, 303, posted.body.toString());
    assert.ok((await tofu.get())?.equals(one), "the first envelope is current again, byte for byte");
  });
});

describe("objstate serve with encryption (at rest): a client's envelope", () => {
  let backend: ObjectStoreBackend;
  let bucketDir: string;
  const servers: ObjstateServer[] = [];
  let enc: StateEncryption;
  let s: ObjstateServer;

  before(async () => {
    const target = embeddedTarget();
    const props = await target.setup({ locks: true });
    bucketDir = (target.bucketDir as (b: string) => string)(props.bucket);
    enc = clientEncryption();
    // The server and its backend share one configuration, as serve sets them up.
    backend = await connectAtRest(props, enc.config);
    s = await startServer(backend, { encryption: enc.config }, servers);
  });
  after(async () => {
    for (const x of servers) await x.close(500);
    backend.close();
  });

  const rawFiles = (): Buffer[] => filesUnder(bucketDir);
  const state = (serial: number, lineage: string): Buffer => toolState(serial, lineage, { db_password: { value: SECRET, type: "string", sensitive: true } });
  const other = (): StateEncryption =>
    StateEncryption.for(parseEncryptionConfig(chainConfig([OLD_PASSPHRASE]), { source: "TF_ENCRYPTION", literalSecrets: true })) as StateEncryption;
  const client = (ws: string): HttpBackendClient => new HttpBackendClient({ bases: [s.url], workspace: ws, flavour: "opentofu", retries: 0 });

  it("an envelope the server's key opens is stored as it is (not encrypted again)", async () => {
    const ws = uniqueName("ws");
    const envelope = await enc.encrypt(state(1, "lin-e"), { serial: 1, lineage: "lin-e" });
    const tofu = client(ws);
    assert.ok((await tofu.lock("OperationTypeApply")).ok);
    const put = await tofu.put(envelope);
    assert.equal(put.status, 200, put.body.toString());
    assert.equal((await tofu.unlock()).status, 200);
    assert.ok(
      rawFiles().some((f) => f.equals(envelope)),
      "the client's envelope is in the bucket byte for byte",
    );
  });

  for (const [what, code, make] of [
    ["another key's envelope", "ENCRYPTION_WRONG_KEY", async (): Promise<Buffer> => await other().encrypt(state(1, "lin-x"), { serial: 1, lineage: "lin-x" })],
    [
      "a tampered envelope",
      "ENCRYPTION_TAMPERED",
      async (): Promise<Buffer> => {
        const b = await enc.encrypt(state(1, "lin-x"), { serial: 1, lineage: "lin-x" });
        // One base64 character of the ciphertext changed, past the probed first block: the tag fails.
        const at = b.indexOf('","encryption_version"') - 30;
        b[at] = b[at] === 0x41 ? 0x42 : 0x41;
        return b;
      },
    ],
    [
      "a large envelope of another key (streamed)",
      "ENCRYPTION_WRONG_KEY",
      async (): Promise<Buffer> => await other().encrypt(largeState(1024 * 1024, 1, "lin-x"), { serial: 1, lineage: "lin-x" }),
    ],
  ] as const) {
    it(`${what} is refused (409 ${code}) and nothing is written`, async () => {
      const ws = uniqueName("ws");
      const tofu = client(ws);
      assert.ok((await tofu.lock("OperationTypeApply")).ok);
      const refused = await tofu.put(await make());
      assert.equal(refused.status, 409, refused.body.toString());
      const body = JSON.parse(refused.body.toString()) as { code: string; message: string };
      assert.equal(body.code, code);
      assert.match(body.message, /this server encrypts states at rest/);
      assert.equal((await tofu.unlock()).status, 200);
      assert.equal(await backend.lastWrite(ws), null, "nothing was written");
    });
  }
});

const SERVER_KEY = parseEncryptionConfig(chainConfig([PASSPHRASE]), { source: "TF_ENCRYPTION", literalSecrets: true });

describe("objstate serve with encryption (at rest): plain clients (Terraform), ciphertext in the bucket", () => {
  let backend: ObjectStoreBackend;
  let bucketDir: string;
  const servers: ObjstateServer[] = [];
  let s: ObjstateServer;
  let props: Awaited<ReturnType<ReturnType<typeof embeddedTarget>["setup"]>>;

  before(async () => {
    const target = embeddedTarget();
    props = await target.setup({ locks: true });
    bucketDir = (target.bucketDir as (b: string) => string)(props.bucket);
    backend = await connectAtRest(props, SERVER_KEY);
    s = await startServer(backend, { encryption: SERVER_KEY, allowUnlockedWrites: true }, servers);
  });
  after(async () => {
    for (const x of servers) await x.close(500);
    backend.close();
  });

  const plain = (serial: number, lineage: string, region: string): Buffer =>
    toolState(serial, lineage, { db_password: { value: SECRET, type: "string", sensitive: true }, region: { value: region, type: "string" } });
  const noSecretStored = (): void => {
    const files = filesUnder(bucketDir);
    assert.ok(files.length > 0);
    for (const f of files) {
      assert.equal(f.indexOf(SECRET), -1, "no stored file holds the secret's bytes");
      assert.equal(f.indexOf("eu-west-"), -1, "nor an output's value");
    }
  };

  it("Terraform's requests: GET answers the state POSTed; every stored object is an envelope; the same POST again writes nothing", async () => {
    const ws = uniqueName("ws");
    const tf = new HttpBackendClient({ bases: [s.url], workspace: ws, retries: 0 });
    assert.ok((await tf.lock("OperationTypeApply")).ok);
    assert.equal((await tf.put(plain(1, "lin-r", "eu-west-1"))).status, 200);
    assert.equal((await tf.put(plain(2, "lin-r", "eu-west-2"))).status, 200);
    const retry = await tf.put(plain(2, "lin-r", "eu-west-2"));
    assert.equal(retry.status, 200, `a retry of the same body is a no-op: ${retry.body.toString()}`);
    assert.equal((await tf.unlock()).status, 200);
    const got = await tf.get();
    assert.ok(got !== null && got.equals(plain(2, "lin-r", "eu-west-2")), "GET decrypts to the very bytes POSTed");
    noSecretStored();
    const versions = (await json(s.url, "GET", `/api/v1/workspaces/${ws}/history`))["versions"] as unknown[];
    assert.equal(versions.length, 2, "the retry wrote nothing");
    const stored = filesUnder(bucketDir).filter((f) => f.includes('"encrypted_data"'));
    assert.ok(stored.length >= 2, "the versions are envelopes");
    const opened = await clientEncryption().decrypt(stored[0] as Buffer);
    assert.ok(opened.encrypted && opened.state.includes("eu-west-"), "OpenTofu's format: the same key opens it");
  });

  it("GET answers with the Content-MD5 of the state it sends: from the write that made the envelope, and from a replica that did not (hashed once)", async () => {
    const ws = uniqueName("ws");
    const state = largeState(2 * 1024 * 1024, 1, "lin-md5");
    const tf = new HttpBackendClient({ bases: [s.url], workspace: ws, retries: 0 });
    assert.ok((await tf.lock("OperationTypeApply")).ok);
    assert.equal((await tf.put(state)).status, 200);
    assert.equal((await tf.unlock()).status, 200);
    const other = await connectAtRest(props, SERVER_KEY);
    const mine: ObjstateServer[] = [];
    const replica = await startServer(other, { encryption: SERVER_KEY }, mine);
    try {
      const want = createHash("md5").update(state).digest("base64");
      for (const base of [s.url, replica.url, replica.url]) {
        const got = await rawRequest(base, "GET", `/state/${ws}`, undefined);
        assert.equal(got.status, 200);
        assert.ok(got.body.equals(state), "the state POSTed");
        assert.equal(got.headers["content-md5"], want, `${base}: the MD5 of the decrypted state`);
      }
    } finally {
      for (const x of mine) await x.close(500);
      other.close();
    }
  });

  it("outputs, diffs, history and rollback work with the key, in /api/v1 and the console", async () => {
    const ws = uniqueName("ws");
    const tf = new HttpBackendClient({ bases: [s.url], workspace: ws, retries: 0 });
    assert.equal((await tf.put(plain(1, "lin-s", "eu-west-1"))).status, 200);
    assert.equal((await tf.put(plain(2, "lin-s", "eu-west-2"))).status, 200);
    const api = `/api/v1/workspaces/${ws}`;
    const outputs = (await json(s.url, "GET", `${api}/outputs`))["outputs"] as Record<string, { value: unknown }>;
    assert.equal(outputs["region"]?.value, "eu-west-2");
    assert.equal(outputs["db_password"]?.value, "<sensitive>");
    const [v2, v1] = ((await json(s.url, "GET", `${api}/history`))["versions"] as { versionId: string }[]).map((v) => v.versionId) as [string, string];
    const diff = await json(s.url, "GET", `${api}/diff?from=${v1}&to=${v2}`);
    assert.equal(diff["encrypted"], undefined);
    assert.match(JSON.stringify(diff), /region/);
    const page = (await rawRequest(s.url, "GET", `/workspaces/${ws}`, undefined)).body.toString();
    assert.match(page, /eu-west-2/);
    assert.doesNotMatch(page, /data-encrypted/);
    assert.doesNotMatch((await rawRequest(s.url, "GET", `/workspaces/${ws}/history`, undefined)).body.toString(), /data-encrypted/);

    const rolled = await json(s.url, "POST", `${api}/rollback`, Buffer.from(JSON.stringify({ to: v1 })));
    assert.equal(rolled["serial"], 3);
    const now = JSON.parse(((await tf.get()) as Buffer).toString()) as { serial: number; outputs: { region: { value: string } } };
    assert.deepEqual([now.serial, now.outputs.region.value], [3, "eu-west-1"]);
    noSecretStored();
  });
});
