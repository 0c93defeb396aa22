/**
 * `objstate serve` at rest (a real process over the embedded store) opens a client's envelope
 * with the parameters the envelope names (docs/decisions/071, 084): pbkdf2 parameters it
 * would not write are refused before any derivation, the lock is checked before the
 * envelope is opened, and derivations never take the whole thread pool, so the store's
 * reads go on while they run.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startServeProcess } from "../../support/cli.js";
import { HttpBackendClient, rawRequest, toolState, type Reply } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { chainConfig, independentSeal, ITERATIONS, largeState, nameOf, PASSPHRASE, pbkdf2MetaJson } from "../encryption/support.js";

const META_KEY = `key_provider.pbkdf2.${nameOf(PASSPHRASE)}`;
/** The most iterations the server runs: 4 × its configured ones. */
const MAX_ITERATIONS = 4 * ITERATIONS;

/** An envelope whose meta names these pbkdf2 parameters and whose data opens under no key (random bytes). */
function envelopeNaming(iterations: number, keyLength: number, serial = 1, lineage = "kdf"): Buffer {
  const meta = Buffer.from(pbkdf2MetaJson(randomBytes(32), iterations, "sha512", keyLength)).toString("base64");
  const data = randomBytes(12 + 200 + 16).toString("base64");
  return Buffer.from(`{"serial":${serial},"lineage":"${lineage}","meta":{"${META_KEY}":"${meta}"},"encrypted_data":"${data}","encryption_version":"v0"}`);
}

/** Each answer's name, in the order the answers came. */
function inOrder(requests: Record<string, Promise<Reply>>): { order: string[]; replies: Promise<Record<string, Reply>> } {
  const order: string[] = [];
  const replies = Promise.all(
    Object.entries(requests).map(async ([name, p]) => {
      const r = await p;
      order.push(name);
      return [name, r] as const;
    }),
  ).then((all) => Object.fromEntries(all));
  return { order, replies };
}

const code = (r: Reply): string => (JSON.parse(r.body.toString()) as { code: string }).code;

describe("objstate serve at rest: the pbkdf2 parameters of a client's envelope", () => {
  let url: string;
  let child: ChildProcess;
  const other = uniqueName("other");
  // Past the embedded store's synchronous reads (64 KiB): its read goes through the thread pool.
  const plain = largeState(1024 * 1024, 3, "other-lineage");

  before(async () => {
    const props = await embeddedTarget().setup({ locks: true });
    const configFile = join(mkdtempSync(join(tmpdir(), "objstate-kdf-")), "backend.json");
    writeFileSync(configFile, JSON.stringify(props));
    const serve = await startServeProcess(["--config", configFile, "--log-level", "off", "--allow-unlocked-writes"], {
      TF_ENCRYPTION: JSON.stringify(chainConfig([PASSPHRASE])),
    });
    url = serve.url;
    child = serve.child;
    // A plain state the server encrypts: reading it back needs the store, not a derivation (its key is cached).
    assert.equal((await rawRequest(url, "POST", `/state/${other}`, plain)).status, 200);
  });
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });

  it(
    "50,000,000 iterations or a 1,024-byte key: 409 naming the parameter and its bound, answered before a lawful envelope's derivation ends; /healthz and another workspace answer meanwhile",
    { timeout: 120_000 },
    async () => {
      const ws = uniqueName("hostile");
      const client = new HttpBackendClient({ bases: [url], workspace: ws, flavour: "opentofu", retries: 0 });
      const lock = await client.lock("OperationTypeApply");
      assert.ok(lock.ok);
      const post = (body: Buffer): Promise<Reply> => rawRequest(url, "POST", `/state/${ws}?ID=${lock.id}`, body);
      // Within the bounds, so derived (and then not opened: its data is random).
      const lawful = post(envelopeNaming(MAX_ITERATIONS, 32));
      const { order, replies } = inOrder({
        iterations1: post(envelopeNaming(50_000_000, 32)),
        iterations2: post(envelopeNaming(50_000_000, 32)),
        keyLength1: post(envelopeNaming(ITERATIONS, 1024)),
        keyLength2: post(envelopeNaming(ITERATIONS, 1024)),
        tooFew: post(envelopeNaming(1000, 32)),
        healthz: rawRequest(url, "GET", "/healthz", undefined),
        other: rawRequest(url, "GET", `/state/${other}`, undefined),
        lawful,
      });
      const r = await replies;
      assert.equal(order.at(-1), "lawful", `every refusal and read came before the lawful envelope's derivation ended: ${order.join(", ")}`);
      assert.equal(r["lawful"]?.status, 409);
      assert.equal(code(r["lawful"] as Reply), "ENCRYPTION_WRONG_KEY");
      assert.equal(r["healthz"]?.status, 200);
      assert.equal(r["other"]?.status, 200);
      assert.ok(r["other"]?.body.equals(plain), "the other workspace's state, decrypted");
      for (const name of ["iterations1", "iterations2", "tooFew"]) {
        const reply = r[name] as Reply;
        assert.equal(reply.status, 409, reply.body.toString());
        assert.equal(code(reply), "ENCRYPTION_KDF_OUT_OF_BOUNDS");
        assert.match(reply.body.toString(), new RegExp(`iterations, outside what this configuration runs: at least 200000 and at most ${MAX_ITERATIONS}`));
      }
      for (const name of ["keyLength1", "keyLength2"]) {
        const reply = r[name] as Reply;
        assert.equal(reply.status, 409, reply.body.toString());
        assert.equal(code(reply), "ENCRYPTION_KDF_OUT_OF_BOUNDS");
        assert.match(reply.body.toString(), /a 1024-byte key, and AES-GCM takes only 16, 24 or 32 bytes/);
      }
      assert.equal((await client.unlock()).status, 200);
    },
  );

  it("a POST that does not name the held lock's ID is refused (423, the holder) before its envelope is opened", { timeout: 120_000 }, async () => {
    const ws = uniqueName("locked");
    const client = new HttpBackendClient({ bases: [url], workspace: ws, flavour: "opentofu", retries: 0 });
    const lock = await client.lock("OperationTypeApply");
    assert.ok(lock.ok);
    // Both envelopes need a derivation to be opened; the one under another ID must not get one.
    const { order, replies } = inOrder({
      held: rawRequest(url, "POST", `/state/${ws}?ID=${lock.id}`, envelopeNaming(MAX_ITERATIONS, 32)),
      otherId: rawRequest(url, "POST", `/state/${ws}?ID=not-the-holder`, envelopeNaming(MAX_ITERATIONS, 32)),
    });
    const r = await replies;
    const refused = r["otherId"] as Reply;
    assert.equal(refused.status, 423, refused.body.toString());
    assert.equal((JSON.parse(refused.body.toString()) as { ID: string }).ID, lock.id, "the body is the holder's lock info");
    assert.equal(r["held"]?.status, 409);
    assert.deepEqual(order, ["otherId", "held"]);
    assert.equal((await client.unlock()).status, 200);
  });

  it("lawful envelopes posted at once are derived a few at a time: a read of another workspace answers before any of them", { timeout: 120_000 }, async () => {
    const posts: Record<string, Promise<Reply>> = {};
    // Each a salt of its own, so a derivation each; without ?ID (unlocked writes): nothing but the derivation before the answer.
    for (let i = 0; i < 8; i++) posts[`envelope${i}`] = rawRequest(url, "POST", `/state/${uniqueName("many")}`, envelopeNaming(MAX_ITERATIONS, 32));
    const { order, replies } = inOrder({ ...posts, other: rawRequest(url, "GET", `/state/${other}`, undefined) });
    const r = await replies;
    assert.equal(order[0], "other", `the read came first: ${order.join(", ")}`);
    assert.ok(r["other"]?.body.equals(plain));
    for (let i = 0; i < 8; i++) assert.equal(code(r[`envelope${i}`] as Reply), "ENCRYPTION_WRONG_KEY");
  });

  it("an envelope within the bounds, under the server's passphrase, is stored and read back", async () => {
    const ws = uniqueName("ok");
    const state = toolState(1, "ok-lineage");
    const sealed = independentSeal(state, {
      passphrase: PASSPHRASE,
      salt: randomBytes(32),
      nonce: randomBytes(12),
      iterations: MAX_ITERATIONS,
      metaKey: META_KEY,
      serial: 1,
      lineage: "ok-lineage",
    });
    assert.equal((await rawRequest(url, "POST", `/state/${ws}`, Buffer.from(sealed))).status, 200);
    const got = await rawRequest(url, "GET", `/state/${ws}`, undefined);
    assert.ok(got.body.equals(state));
  });
});
