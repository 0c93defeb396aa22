/**
 * Writes staged ahead of their put (the server's request bodies, which reach the embedded
 * store's disk while the lock and the guard are seen to): taken by their put without a
 * second read, timed by the put, and gone without a trace when no put takes them.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ObjectStoreBackend } from "../../../src/backend/backend.js";
import { ObjectStoreBackendConfig } from "../../../src/config/backend-config.js";
import { isObjstateError } from "../../../src/errors.js";
import { FileDriver } from "../../../src/store/file.js";
import type { ByteSource } from "../../../src/store/types.js";

const CHUNK = 64 * 1024;
let root: string;
let n = 0;

before(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), "objstate-staging-"));
});
after(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

const md5 = (b: Buffer): string => createHash("md5").update(b).digest("hex");

/**
 * A self-checking source (as the server's request body) whose last chunk arrives only when
 * `finish()` is called; counts its reads.
 */
function arriving(body: Buffer): { source: ByteSource; finish(): void; opens(): number } {
  let opens = 0;
  let finish = (): void => undefined;
  const last = new Promise<void>((resolve) => (finish = resolve));
  return {
    finish: () => finish(),
    opens: () => opens,
    source: {
      size: body.length,
      verifiedMd5: md5(body),
      async *open() {
        opens += 1;
        for (let at = 0; at < body.length; at += CHUNK) {
          if (at + CHUNK >= body.length) await last;
          yield body.subarray(at, at + CHUNK);
        }
      },
    },
  };
}

async function temps(dir: string): Promise<string[]> {
  return (await fs.readdir(dir).catch(() => [] as string[])).filter((f) => f.startsWith(".tmp-"));
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting until ${what}`);
}

describe("FileDriver.stage", () => {
  it("a staged body reaches the disk before its put; the put takes it without reading the source again, and the version is timed by the put", async () => {
    const d = new FileDriver({ bucket: `staged-${++n}`, endpoint: `file://${root}` });
    const body = randomBytes(6 * 1024 * 1024);
    const src = arriving(body);
    const staged = d.stage("k", src.source, md5(body));
    assert.ok(staged !== undefined);
    // All but the last chunk (which has not arrived) is written ahead, and nothing is visible.
    await until("the temp file holds all but the last chunk", async () => {
      const [t] = await temps(d.bucketDir);
      return t !== undefined && (await fs.stat(path.join(d.bucketDir, t))).size >= body.length - CHUNK;
    });
    assert.equal(await d.get("k"), null);
    const stagedAt = Date.now();
    await sleep(60);
    src.finish();
    const putAt = Date.now();
    await d.put("k", src.source, { md5: md5(body) });
    staged.release();
    assert.equal(src.opens(), 1, "the put read the source again");
    const got = await d.get("k", { md5: true });
    assert.deepEqual(got?.body, body);
    assert.equal(got?.md5, md5(body));
    // The file's time (its version's) is the put's, not the staging's (kernel clocks are coarse).
    assert.ok((got?.meta.lastModified?.getTime() ?? 0) >= putAt - 10, `version timed ${got?.meta.lastModified?.toISOString() ?? "?"}, staged at ${new Date(stagedAt).toISOString()}`);
    assert.deepEqual(await temps(d.bucketDir), []);
  });

  it("a staged body no put takes is abandoned once released: nothing stored, its temp file removed", async () => {
    const d = new FileDriver({ bucket: `staged-${++n}`, endpoint: `file://${root}` });
    const body = randomBytes(1024 * 1024);
    const src = arriving(body);
    const staged = d.stage("k", src.source, md5(body));
    assert.ok(staged !== undefined);
    await until("the temp file exists", async () => (await temps(d.bucketDir)).length === 1);
    staged.release();
    src.finish();
    await until("the temp file is removed", async () => (await temps(d.bucketDir)).length === 0);
    assert.equal(await d.get("k"), null);
  });

  it("only a self-checking source with the same MD5 is staged; a put of another key does not take it", async () => {
    const d = new FileDriver({ bucket: `staged-${++n}`, endpoint: `file://${root}` });
    const body = randomBytes(512 * 1024);
    const src = arriving(body);
    assert.equal(d.stage("k", { size: body.length, open: src.source.open }, md5(body)), undefined);
    assert.equal(d.stage("k", src.source, md5(Buffer.from("other"))), undefined);
    const staged = d.stage("k", src.source, md5(body));
    assert.ok(staged !== undefined);
    src.finish();
    await d.put("other-key", src.source, { md5: md5(body) });
    staged.release();
    assert.equal(src.opens(), 2, "the put of another key must read the source itself");
    assert.deepEqual((await d.get("other-key"))?.body, body);
    assert.equal(await d.get("k"), null);
    await until("the abandoned temp file is removed", async () => (await temps(d.bucketDir)).length === 0);
  });
});

describe("writeState of a self-checking source (embedded store)", () => {
  it("a write the guard refuses leaves no temp file of the body it staged", async () => {
    const dir = path.join(root, `backend-${++n}`);
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ bucket: "staging", endpoint: `file://${dir}`, kvstoreTable: "locks", kvstoreEndpoint: `file://${dir}` }), { env: {}, onWarning: () => undefined });
    try {
      const state = (serial: number): Buffer => Buffer.from(JSON.stringify({ version: 4, serial, lineage: "l", pad: "x".repeat(600 * 1024) }));
      await b.writeState("default", state(5));
      const older = state(4);
      const src = arriving(older);
      src.finish();
      await assert.rejects(b.writeState("default", src.source, { md5: md5(older) }), (e: unknown) => isObjstateError(e, "STATE_CONFLICT"));
      await until("the staged temp file is removed", async () => (await temps(path.join(dir, "staging"))).length === 0);
      assert.equal(JSON.parse((await b.readState("default"))?.toString() ?? "{}").serial, 5);
      // And one it lets through is stored from what was staged.
      const newer = state(6);
      const ok = arriving(newer);
      ok.finish();
      await b.writeState("default", ok.source, { md5: md5(newer) });
      assert.deepEqual(await b.readState("default"), newer);
      assert.deepEqual(await temps(path.join(dir, "staging")), []);
    } finally {
      b.close();
    }
  });
});
