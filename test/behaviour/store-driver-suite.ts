/**
 * The object-store driver contract (`ObjectStoreDriver`, src/store/types.ts) as the backend
 * relies on it, run unchanged against every driver: the embedded store (unit tests) and S3
 * on Ceph RGW (integration tests). The shape of unstorage's `testDriver` and Terraform's
 * `remote.TestClient`: one suite, a factory of fresh drivers, and the few differences the
 * drivers have on purpose stated once, in {@link StoreDriverDifferences}, each asserted as
 * it is (never a test skipped silently).
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, describe, it } from "node:test";
import type { ErrorCode } from "../../src/error-codes.js";
import { isObjstateError } from "../../src/errors.js";
import type { ByteSource, ObjectStoreDriver, ObjectVersion } from "../../src/store/types.js";

/** A driver on a bucket of its own, not created yet. */
export interface FreshStore {
  readonly driver: ObjectStoreDriver;
  readonly bucket: string;
}

/** Options of the factory: what the suite needs to vary (ignored by drivers without it). */
export interface FreshStoreOptions {
  /** Bodies at or above this size go up in parts (S3); the embedded store has no parts. */
  readonly multipartThreshold?: number | undefined;
}

/** Where the drivers differ on purpose: each difference is asserted as it is, never skipped. */
export interface StoreDriverDifferences {
  /**
   * The bucket keeps versions from its first write (the embedded store: `versioning()` is
   * always `enabled`). False: a new bucket reports `off` until `enableVersioning()` (S3).
   */
  readonly alwaysVersioned: boolean;
  /**
   * A bucket that was never created: `empty` (reads find nothing, the first write makes it:
   * the embedded store's zero setup) or `BUCKET_NOT_FOUND` (every call says so: S3).
   */
  readonly missingBucket: "empty" | "BUCKET_NOT_FOUND";
  /**
   * A wrong `md5` given with bytes in memory is refused (`STORE_INTEGRITY`): S3 sends it as
   * Content-MD5 and the store checks it. False: the embedded store takes the caller's MD5
   * of bytes in memory as their ETag without hashing them again (the backend hashes the very
   * bytes it passes, in this process); a {@link ByteSource} is checked by both.
   */
  readonly checksMd5OfBuffers: boolean;
  /**
   * Conditional writes stay atomic once the bucket keeps versions. False for Ceph RGW,
   * which ignores `If-None-Match`/`If-Match` on a versioned bucket: the S3 driver checks
   * them with a HEAD right before the write, so of racing writers more than one may win
   * (the backend's commit point, not the store, decides then: docs/design.md §5).
   */
  readonly atomicConditionsWhenVersioned: boolean;
  /**
   * `setRetention` keeps `newerNoncurrentVersions`. False for Ceph RGW, which drops it: the
   * driver then puts the earlier rules back and throws `RETENTION_UNSUPPORTED`.
   */
  readonly retentionKeepsNewerNoncurrent: boolean;
  /**
   * `deleteIfMatch` honours its condition. False for Ceph RGW, which ignores `If-Match` on
   * DELETE: it deletes whatever is there and answers 204, for an absent key too. The
   * conformance probe (src/backend/probe.ts) finds that, and lockfile releases then read,
   * check the lock's ID and delete, as the tool's own S3 backend does.
   */
  readonly deleteIfMatchHonoured: boolean;
  /** Leave behind what a writer of `key` that died leaves (a temp file, an incomplete multipart upload). */
  leaveLeftover(store: FreshStore, key: string): Promise<void>;
}

const MiB = 1024 * 1024;
const md5 = (b: Uint8Array | string): string => createHash("md5").update(b).digest("hex");
const seconds = (t: Date | undefined): number => Math.floor((t?.getTime() ?? Number.NaN) / 1000);

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of items) out.push(x);
  return out;
}

/** A source over `bytes`, in chunks, read afresh on every open. */
function sourceOf(bytes: Buffer, chunk = 64 * 1024): ByteSource {
  return {
    size: bytes.length,
    async *open(): AsyncGenerator<Uint8Array> {
      for (let off = 0; off < bytes.length; off += chunk) yield bytes.subarray(off, off + chunk);
    },
  };
}

const refused =
  (code: ErrorCode) =>
  (e: unknown): boolean => {
    assert.ok(isObjstateError(e, code), `expected ${code}, got ${String(e)}`);
    return true;
  };

/** Run `call` and tell whether it won or lost a conditional race (anything else fails the test). */
async function outcome(call: Promise<void>): Promise<"won" | "lost"> {
  try {
    await call;
    return "won";
  } catch (e) {
    assert.ok(isObjstateError(e, "PRECONDITION_FAILED"), `a loser of a conditional race must get PRECONDITION_FAILED, got ${String(e)}`);
    return "lost";
  }
}

/**
 * The whole driver contract, against drivers made by `open` (a fresh driver on a fresh
 * bucket each call; the suite creates the bucket and closes the driver).
 */
export function storeDriverSuite(name: string, open: (options?: FreshStoreOptions) => Promise<FreshStore>, differences: StoreDriverDifferences): void {
  const opened: ObjectStoreDriver[] = [];
  after(() => {
    for (const d of opened) d.close();
  });
  const fresh = async (options?: FreshStoreOptions): Promise<FreshStore> => {
    const s = await open(options);
    opened.push(s.driver);
    return s;
  };
  /** A driver on a created bucket. */
  const ready = async (options?: FreshStoreOptions): Promise<ObjectStoreDriver> => {
    const { driver } = await fresh(options);
    await driver.createBucket();
    return driver;
  };
  /** A driver on a created bucket that keeps versions. */
  const versioned = async (): Promise<ObjectStoreDriver> => {
    const d = await ready();
    await d.enableVersioning();
    return d;
  };

  describe(`${name}: object store driver conformance`, () => {
    describe("bucket", () => {
      it("a bucket that was never created: bucketExists false; reads and writes as the driver's difference says", async () => {
        const { driver: d } = await fresh();
        assert.equal(await d.bucketExists(), false);
        if (differences.missingBucket === "empty") {
          assert.equal(await d.get("k"), null);
          assert.equal(await d.head("k"), null);
          assert.deepEqual(await collect(d.list("")), []);
          assert.deepEqual(await collect(d.listVersions("k")), []);
          await d.delete("k");
          assert.equal(await d.bucketExists(), false, "reads and deletes do not make the bucket");
          await d.put("k", Buffer.from("v"));
          assert.equal(await d.bucketExists(), true, "the first write makes it");
        } else {
          await assert.rejects(d.get("k"), refused("BUCKET_NOT_FOUND"));
          await assert.rejects(d.put("k", Buffer.from("v")), refused("BUCKET_NOT_FOUND"));
          await assert.rejects(collect(d.list("")), refused("BUCKET_NOT_FOUND"));
          assert.equal(await d.bucketExists(), false, "nothing made the bucket");
        }
      });

      it("createBucket makes an empty bucket and is idempotent", async () => {
        const { driver: d } = await fresh();
        await d.createBucket();
        await d.createBucket();
        assert.equal(await d.bucketExists(), true);
        assert.deepEqual(await collect(d.list("")), []);
        assert.deepEqual(await d.listLeftovers(""), []);
      });

      it(`versioning: ${differences.alwaysVersioned ? "always enabled" : "off until enableVersioning"}, then enabled; enableVersioning is idempotent`, async () => {
        const d = await ready();
        assert.equal(await d.versioning(), differences.alwaysVersioned ? "enabled" : "off");
        await d.put("k", Buffer.from("1"));
        await d.put("k", Buffer.from("22"));
        const before = await collect(d.listVersions("k"));
        if (differences.alwaysVersioned) {
          assert.deepEqual(
            before.map((v) => [v.isLatest, v.size]),
            [
              [true, 2],
              [false, 1],
            ],
          );
          assert.equal((await d.head("k"))?.versionId, before[0]?.versionId);
        } else {
          // A bucket that never kept versions lists its one current object, under ID "null".
          assert.deepEqual(
            before.map((v) => [v.versionId, v.isLatest, v.deleteMarker, v.size]),
            [["null", true, false, 2]],
          );
          assert.equal((await d.head("k"))?.versionId, undefined, "no version ID for an object of an unversioned bucket");
        }
        await d.enableVersioning();
        await d.enableVersioning();
        assert.equal(await d.versioning(), "enabled");
      });
    });

    describe("get, head, put", () => {
      it("round-trips bytes exactly (empty, binary, multi-MiB), with size, the bare MD5 as ETag, and the MD5 when asked", async () => {
        const d = await ready();
        const bodies: [string, Buffer][] = [
          ["empty", Buffer.alloc(0)],
          ["env:/w/tool.tfstate", Buffer.from('{"version":4}\n')],
          ["binary", Buffer.from([0, 255, 10, 13, 0])],
          ["random", randomBytes(3 * MiB + 5)],
        ];
        for (const [k, b] of bodies) await d.put(k, b);
        for (const [k, b] of bodies) {
          const got = await d.get(k, { md5: true });
          assert.ok(got !== null, k);
          assert.ok(got.body.equals(b), k);
          assert.equal(got.meta.size, b.length, k);
          assert.equal(got.meta.etag, md5(b), `${k}: the ETag of a single-part object is its bare MD5 (no quotes)`);
          assert.equal(got.md5, md5(b), k);
          assert.ok(got.meta.lastModified instanceof Date, k);
          const head = await d.head(k);
          assert.equal(head?.size, b.length, k);
          assert.equal(head?.etag, md5(b), k);
        }
      });

      it("a missing key is null for get and head, with or without options (not an error)", async () => {
        const d = await ready();
        await d.put("present", Buffer.from("x"));
        assert.equal(await d.get("missing"), null);
        assert.equal(await d.get("missing", { md5: true, maxBytes: 10 }), null);
        assert.equal(await d.head("missing"), null);
        assert.equal(await d.get("present/below"), null, "a key below an object is another key");
        assert.equal(await d.get("presen"), null, "a prefix of a key is another key");
      });

      it("content type and user metadata round-trip per version (metadata keys in lower case); head and get agree", async () => {
        const d = await ready();
        const metadata = { "objstate-serial": "7", "Objstate-Lineage": "abc-123", "objstate-md5": md5("{}") };
        await d.put("s", Buffer.from("{}"), { contentType: "application/json", metadata });
        const want = { "objstate-serial": "7", "objstate-lineage": "abc-123", "objstate-md5": md5("{}") };
        const head = await d.head("s");
        const got = await d.get("s");
        assert.deepEqual(head?.metadata, want);
        assert.deepEqual(got?.meta.metadata, want);
        assert.equal(head?.contentType, "application/json");
        assert.equal(got?.meta.contentType, "application/json");
        assert.deepEqual(
          [got?.meta.etag, got?.meta.size, got?.meta.versionId, seconds(got?.meta.lastModified)],
          [head?.etag, head?.size, head?.versionId, seconds(head?.lastModified)],
        );
        await d.put("s", Buffer.from("[]"));
        assert.deepEqual((await d.head("s"))?.metadata ?? {}, {}, "metadata belongs to one version: a write without it has none");
      });

      it("encrypt: the server-side encryption is AES256 where the store reports it", async () => {
        const d = await ready();
        await d.put("enc", Buffer.from("{}"), { encrypt: true, acl: "private" });
        const head = await d.head("enc");
        assert.ok(head?.serverSideEncryption === undefined || head.serverSideEncryption === "AES256", String(head?.serverSideEncryption));
        assert.equal((await d.get("enc"))?.body.toString(), "{}");
      });

      it("maxBytes reads only the first bytes: size is the whole object's and no MD5 is claimed; past the end or of an empty object, all there is", async () => {
        const d = await ready();
        const body = Buffer.from(`{"version":4,"serial":3,"lineage":"x","rest":"${"y".repeat(10_000)}"}`);
        await d.put("big", body);
        await d.put("empty", Buffer.alloc(0));
        const part = await d.get("big", { maxBytes: 20, md5: true });
        assert.equal(part?.body.toString(), body.subarray(0, 20).toString());
        assert.equal(part?.meta.size, body.length);
        assert.equal(part?.meta.etag, md5(body));
        assert.equal(part?.md5, undefined);
        const all = await d.get("big", { maxBytes: body.length + 5 });
        assert.ok(all?.body.equals(body));
        assert.equal(all?.meta.size, body.length);
        const empty = await d.get("empty", { maxBytes: 100 });
        assert.equal(empty?.body.length, 0);
        assert.equal(empty?.meta.size, 0);
      });

      it("getStream gives the metadata and the recorded MD5 (never a wrong one) before the bytes, then exactly the bytes; an absent key is null", async () => {
        const d = await ready();
        const body = randomBytes(2 * MiB + 3);
        await d.put("streamed", body, { metadata: { "objstate-serial": "7" } });
        const got = await d.getStream("streamed");
        assert.ok(got !== null);
        assert.equal(got.meta.size, body.length);
        assert.equal(got.meta.metadata?.["objstate-serial"], "7");
        assert.ok(got.recordedMd5 === undefined || got.recordedMd5 === md5(body), `recorded ${String(got.recordedMd5)}`);
        const chunks: Buffer[] = [];
        for await (const c of got.body) chunks.push(Buffer.from(c));
        assert.ok(Buffer.concat(chunks).equals(body), "every byte, in order");
        assert.ok(chunks.length > 1, "streamed in pieces, not held whole first");
        assert.equal(await d.getStream("absent"), null);
        // A reader that stops early stops the read; the next one starts again.
        const again = await d.getStream("streamed");
        for await (const c of again?.body ?? []) {
          assert.ok(c.length > 0);
          break;
        }
        assert.ok((await d.get("streamed"))?.body.equals(body));
      });

      it("a body above the multipart threshold reads back byte-exact; get({md5}) gives its true MD5, and getStream never a wrong one", async () => {
        const d = await ready({ multipartThreshold: 5 * MiB });
        // Above the threshold and one 8 MiB part (a body that fits in one part is never multipart).
        const body = randomBytes(9 * MiB);
        await d.put("multi", body, { md5: Promise.resolve(md5(body)) });
        await d.put("multi-no-md5", body);
        for (const k of ["multi", "multi-no-md5"]) {
          const recorded = (await d.getStream(k))?.recordedMd5;
          const got = await d.get(k, { md5: true });
          assert.ok(got !== null && md5(got.body) === md5(body), k);
          assert.equal(got.md5, md5(body), k);
          assert.ok(recorded === md5(body) || recorded === undefined, `${k}: getStream recorded ${String(recorded)}`);
          // The ETag is the MD5 or a multipart ETag ("<hex>-<parts>"): never another MD5.
          assert.ok(got.meta.etag === md5(body) || /^[0-9a-f]{32}-\d+$/.test(got.meta.etag ?? ""), `${k}: ${String(got.meta.etag)}`);
        }
      });

      it(`a wrong MD5 with bytes in memory: ${differences.checksMd5OfBuffers ? "refused with STORE_INTEGRITY, the old object stays" : "taken as given (the caller hashed these very bytes)"}`, async () => {
        const d = await ready();
        await d.put("k", Buffer.from("old"));
        if (differences.checksMd5OfBuffers) {
          await assert.rejects(d.put("k", Buffer.from("new"), { md5: "0".repeat(32) }), refused("STORE_INTEGRITY"));
          assert.equal((await d.get("k"))?.body.toString(), "old");
        } else {
          await d.put("k", Buffer.from("new"), { md5: "0".repeat(32) });
          assert.equal((await d.get("k"))?.body.toString(), "new");
        }
        // The right MD5 is accepted by both, and is the ETag.
        await d.put("k", Buffer.from("right"), { md5: md5("right") });
        assert.equal((await d.head("k"))?.etag, md5("right"));
      });
    });

    describe("ByteSource puts", () => {
      it("store exactly the source's bytes with their MD5 as ETag, conditionally too", async () => {
        const d = await ready();
        const bytes = randomBytes(MiB + 17);
        await d.put("s/one", sourceOf(bytes), { md5: md5(bytes), ifNoneMatch: true, metadata: { "objstate-serial": "1" } });
        const got = await d.get("s/one");
        assert.ok(got?.body.equals(bytes));
        assert.equal(got?.meta.etag, md5(bytes));
        assert.equal(got?.meta.metadata?.["objstate-serial"], "1");
        await assert.rejects(d.put("s/one", sourceOf(bytes), { ifNoneMatch: true }), refused("PRECONDITION_FAILED"));
        const next = randomBytes(1000);
        await assert.rejects(d.put("s/one", sourceOf(next), { ifMatch: md5("other") }), refused("PRECONDITION_FAILED"));
        await d.put("s/one", sourceOf(next), { ifMatch: md5(bytes) });
        assert.ok((await d.get("s/one"))?.body.equals(next));
      });

      it("a source whose bytes do not hash to the MD5 given is refused with STORE_INTEGRITY; one that changed size with INPUT_CHANGED; the old object stays", async () => {
        const d = await ready();
        await d.put("s/k", Buffer.from("old"));
        const bytes = Buffer.from("a".repeat(200_000));
        await assert.rejects(d.put("s/k", sourceOf(bytes), { md5: md5("something else") }), refused("STORE_INTEGRITY"));
        const shrunk: ByteSource = { size: bytes.length + 10, open: sourceOf(bytes).open };
        await assert.rejects(d.put("s/k", shrunk, {}), refused("INPUT_CHANGED"));
        assert.equal((await d.get("s/k"))?.body.toString(), "old");
      });
    });

    for (const mode of ["a new bucket", "a bucket that keeps versions"] as const) {
      const make = mode === "a new bucket" ? ready : versioned;
      const atomic = mode === "a new bucket" || differences.atomicConditionsWhenVersioned;
      describe(`conditional writes on ${mode}`, () => {
        it("If-None-Match: * creates only when absent; a present key is PRECONDITION_FAILED and keeps its bytes; after a delete it creates again", async () => {
          const d = await make();
          await d.put("lock", Buffer.from("first"), { ifNoneMatch: true, contentType: "application/json" });
          await assert.rejects(d.put("lock", Buffer.from("second"), { ifNoneMatch: true }), refused("PRECONDITION_FAILED"));
          const kept = await d.get("lock");
          assert.equal(kept?.body.toString(), "first");
          assert.equal(kept?.meta.contentType, "application/json", "the refused write's metadata was not kept");
          await d.delete("lock");
          await d.put("lock", Buffer.from("third"), { ifNoneMatch: true });
          assert.equal((await d.get("lock"))?.body.toString(), "third");
        });

        it("If-Match replaces only the version with that ETag (quoted or bare); absent or another ETag is PRECONDITION_FAILED and changes nothing", async () => {
          const d = await make();
          await assert.rejects(d.put("k", Buffer.from("x"), { ifMatch: md5("x") }), refused("PRECONDITION_FAILED"));
          assert.equal(await d.head("k"), null, "a refused write creates nothing");
          await d.put("k", Buffer.from("one"), { contentType: "text/one" });
          await assert.rejects(d.put("k", Buffer.from("two"), { ifMatch: md5("other") }), refused("PRECONDITION_FAILED"));
          const kept = await d.get("k");
          assert.equal(kept?.body.toString(), "one");
          assert.equal(kept?.meta.contentType, "text/one");
          await d.put("k", Buffer.from("two"), { ifMatch: md5("one") });
          assert.equal((await d.get("k"))?.body.toString(), "two");
          await d.put("k", Buffer.from("three"), { ifMatch: `"${md5("two")}"` });
          assert.equal((await d.get("k"))?.body.toString(), "three");
          await d.delete("k");
          await assert.rejects(d.put("k", Buffer.from("four"), { ifMatch: md5("three") }), refused("PRECONDITION_FAILED"));
          assert.equal(await d.head("k"), null, "a deleted key matches no ETag");
        });

        it(`racing creates with If-None-Match: ${atomic ? "exactly one wins" : "not atomic here (see atomicConditionsWhenVersioned): at least one wins"}, the others get PRECONDITION_FAILED`, async () => {
          const d = await make();
          for (let round = 0; round < 3; round++) {
            const key = `race-${round}`;
            const results = await Promise.all(Array.from({ length: 8 }, (_, i) => outcome(d.put(key, Buffer.from(`w${i}`), { ifNoneMatch: true }))));
            const won = results.flatMap((r, i) => (r === "won" ? [i] : []));
            if (atomic) assert.equal(won.length, 1, `round ${round}: winners ${won.join(",")}`);
            else assert.ok(won.length >= 1, `round ${round}: no winner`);
            const body = (await d.get(key))?.body.toString();
            assert.ok(won.map((i) => `w${i}`).includes(body ?? ""), `round ${round}: ${String(body)} is a winner's`);
          }
        });

        it(`racing replaces with the same If-Match: ${atomic ? "exactly one wins" : "not atomic here (see atomicConditionsWhenVersioned): at least one wins"}, the others get PRECONDITION_FAILED`, async () => {
          const d = await make();
          await d.put("cas", Buffer.from("start"));
          for (let round = 0; round < 3; round++) {
            const expected = (await d.head("cas"))?.etag ?? "";
            const results = await Promise.all(
              Array.from({ length: 8 }, (_, i) => outcome(d.put("cas", Buffer.from(`r${round}-w${i}`), { ifMatch: expected }))),
            );
            const won = results.flatMap((r, i) => (r === "won" ? [i] : []));
            if (atomic) assert.equal(won.length, 1, `round ${round}: winners ${won.join(",")}`);
            else assert.ok(won.length >= 1, `round ${round}: no winner`);
            const got = await d.get("cas");
            assert.ok(won.map((i) => `r${round}-w${i}`).includes(got?.body.toString() ?? ""));
            assert.equal(got?.meta.etag, md5(got?.body ?? ""));
          }
        });

        it(`deleteIfMatch ${differences.deleteIfMatchHonoured ? "deletes only the version with that ETag: true when deleted; false when absent or another version, which stays" : "is not honoured here (see deleteIfMatchHonoured): it deletes whatever version is there and answers true"}`, async () => {
          const d = await make();
          const honoured = differences.deleteIfMatchHonoured;
          assert.equal(await d.deleteIfMatch("lock", md5("x")), !honoured, "absent");
          assert.equal(await d.head("lock"), null);
          await d.put("lock", Buffer.from("mine"));
          assert.equal(await d.deleteIfMatch("lock", md5("theirs")), !honoured, "another version");
          assert.equal((await d.get("lock"))?.body.toString(), honoured ? "mine" : undefined);
          await d.put("lock", Buffer.from("mine"));
          assert.equal(await d.deleteIfMatch("lock", `"${md5("mine")}"`), true, "the version with that ETag (quoted or not)");
          assert.equal(await d.get("lock"), null);
        });
      });
    }

    describe("delete and list", () => {
      it("delete removes the key only (not keys below or beside it); deleting an absent key is fine", async () => {
        const d = await ready();
        await d.put("a", Buffer.from("1"));
        await d.put("a/b", Buffer.from("2"));
        await d.put("ab", Buffer.from("3"));
        await d.delete("a");
        assert.equal(await d.get("a"), null);
        assert.equal(await d.head("a"), null);
        assert.deepEqual(await collect(d.list("")), ["a/b", "ab"]);
        await d.delete("a");
        await d.delete("never-was");
        assert.equal((await d.get("a/b"))?.body.toString(), "2");
      });

      it("list: every key with a prefix, in UTF-8 byte order, all pages followed, a key beside keys below it", async () => {
        const d = await ready();
        const keys = ["l/b", "l/a/c", "l/a", "l/ab", "l/a/b", "l/a b", "l/env:/w/tool.tfstate", "l/env:/tool.tfstate", "l/\u{1F600}", "l/\uFF61", "lx"];
        for (const k of keys) await d.put(k, Buffer.from(k));
        const under = keys.filter((k) => k.startsWith("l/")).sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
        assert.deepEqual(under.slice(-2), ["l/\uFF61", "l/\u{1F600}"], "UTF-8 order differs from UTF-16 order here");
        assert.deepEqual(await collect(d.list("l/")), under);
        assert.deepEqual(await collect(d.list("l/", { pageSize: 2 })), under, "pages of 2");
        assert.deepEqual(await collect(d.list("l/a")), ["l/a", "l/a b", "l/a/b", "l/a/c", "l/ab"]);
        assert.deepEqual(await collect(d.list("l/a/")), ["l/a/b", "l/a/c"]);
        assert.deepEqual(await collect(d.list("nothing-here/")), []);
        assert.equal((await collect(d.list(""))).length, keys.length);
        // startAfter: only keys after it, on every page (the audit route lists from a day on).
        assert.deepEqual(await collect(d.list("l/", { startAfter: "l/a/b" })), under.slice(under.indexOf("l/a/b") + 1));
        assert.deepEqual(await collect(d.list("l/", { startAfter: "l/a/", pageSize: 2 })), under.slice(under.indexOf("l/a/b")));
      });

      it("list: keys with XML's special characters, entity-like text, astral characters and edge spaces come back exact, over pages", async () => {
        const d = await ready();
        const keys = ["x/a&b", "x/<t>", `x/"q" 'a'`, "x/&amp;", "x/&#38;", "x/ edge ", "x/\u00e9\u{1F600}"];
        for (const k of keys) await d.put(k, Buffer.from(k));
        const sorted = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
        assert.deepEqual(await collect(d.list("x/", { pageSize: 2 })), sorted);
        const listed = await collect(d.listDetailed("x/&", { pageSize: 1 }));
        assert.deepEqual(
          listed.map((o) => [o.key, o.size]),
          [
            ["x/&#38;", 7],
            ["x/&amp;", 7],
          ],
        );
      });

      it("listDetailed: each key under a prefix, in order, over pages, with the size, time and ETag head reports", async () => {
        const d = await ready();
        for (const [k, body] of [
          ["ld/b", "bb"],
          ["ld/a", "a"],
          ["ld/c/d", "ccc"],
          ["ldx", "x"],
        ] as const)
          await d.put(k, Buffer.from(body));
        await d.put("ld/b", Buffer.from("bbbb"));
        const listed = await collect(d.listDetailed("ld/", { pageSize: 2 }));
        assert.deepEqual(
          listed.map((o) => [o.key, o.size]),
          [
            ["ld/a", 1],
            ["ld/b", 4],
            ["ld/c/d", 3],
          ],
        );
        for (const o of listed) {
          const h = await d.head(o.key);
          // A listing may give milliseconds, a HEAD's Last-Modified header whole seconds.
          assert.deepEqual([o.etag, seconds(o.lastModified)], [h?.etag, seconds(h?.lastModified)], o.key);
        }
        assert.equal(listed[1]?.etag, md5("bbbb"));
        assert.deepEqual(await collect(d.listDetailed("none/")), []);
      });
    });

    describe("versions (with versioning on)", () => {
      it("listVersions: newest first, the current one latest, each readable by its ID with its own bytes and metadata; head and get name the current ID", async () => {
        const d = await versioned();
        for (const v of ["1", "2", "3"]) await d.put("k", Buffer.from(`v${v}`), { contentType: `text/v${v}`, metadata: { "objstate-serial": v } });
        await d.put("k.tflock", Buffer.from("another key it prefixes"));
        await d.put("j", Buffer.from("a key before it"));
        const versions = await collect(d.listVersions("k"));
        assert.deepEqual(
          versions.map((v) => [v.key, v.isLatest, v.deleteMarker, v.size]),
          [
            ["k", true, false, 2],
            ["k", false, false, 2],
            ["k", false, false, 2],
          ],
        );
        assert.deepEqual(
          versions.map((v) => v.etag),
          [md5("v3"), md5("v2"), md5("v1")],
        );
        assert.ok(versions.every((v) => v.lastModified instanceof Date));
        assert.equal(new Set(versions.map((v) => v.versionId)).size, 3, "distinct IDs");
        const read = await Promise.all(versions.map((v) => d.get("k", { versionId: v.versionId })));
        assert.deepEqual(
          read.map((g) => [g?.body.toString(), g?.meta.contentType, g?.meta.metadata?.["objstate-serial"], g?.meta.versionId]),
          [
            ["v3", "text/v3", "3", versions[0]?.versionId],
            ["v2", "text/v2", "2", versions[1]?.versionId],
            ["v1", "text/v1", "1", versions[2]?.versionId],
          ],
        );
        assert.equal((await d.head("k", { versionId: versions[2]?.versionId }))?.etag, md5("v1"));
        assert.equal((await d.head("k"))?.versionId, versions[0]?.versionId);
        assert.equal((await d.get("k"))?.meta.versionId, versions[0]?.versionId);
        const part = await d.get("k", { versionId: versions[1]?.versionId, maxBytes: 1 });
        assert.deepEqual([part?.body.toString(), part?.meta.size], ["v", 2], "a ranged read of an older version");
      });

      it("listVersions pages lazily: small pages give the same list, and stopping early is fine", async () => {
        const d = await versioned();
        for (let i = 0; i < 5; i++) await d.put("p", Buffer.from(`p${i}`));
        const all = await collect(d.listVersions("p"));
        const paged = await collect(d.listVersions("p", { pageSize: 2 }));
        assert.deepEqual(
          paged.map((v) => v.versionId),
          all.map((v) => v.versionId),
        );
        let taken = 0;
        for await (const v of d.listVersions("p", { pageSize: 2 })) {
          assert.equal(v.versionId, all[taken]?.versionId);
          if (++taken === 3) break;
        }
        assert.equal(taken, 3);
      });

      it("a delete leaves a delete marker as the latest version: no bytes, the older versions stay readable; a marker or unknown ID reads as null", async () => {
        const d = await versioned();
        await d.put("a", Buffer.from("1"), { contentType: "text/plain" });
        await d.put("a", Buffer.from("22"));
        await d.delete("a");
        assert.equal(await d.get("a"), null);
        const versions = await collect(d.listVersions("a"));
        assert.deepEqual(
          versions.map((v) => [v.deleteMarker, v.isLatest, v.size]),
          [
            [true, true, 0],
            [false, false, 2],
            [false, false, 1],
          ],
        );
        const marker = versions[0] as ObjectVersion;
        assert.equal(await d.get("a", { versionId: marker.versionId }), null, "a delete marker has no bytes");
        assert.equal(await d.head("a", { versionId: marker.versionId }), null);
        const oldest = await d.get("a", { versionId: versions[2]?.versionId });
        assert.deepEqual([oldest?.body.toString(), oldest?.meta.contentType], ["1", "text/plain"]);
        assert.equal(await d.get("a", { versionId: "00000000000000000000000000000000" }), null, "an unknown version");
        await d.put("a", Buffer.from("333"));
        assert.deepEqual(
          (await collect(d.listVersions("a"))).map((v) => [v.deleteMarker, v.isLatest]),
          [
            [false, true],
            [true, false],
            [false, false],
            [false, false],
          ],
        );
      });

      it("purge removes the key with every version and marker, and nothing else", async () => {
        const d = await versioned();
        await d.put("gone", Buffer.from("1"));
        await d.put("gone", Buffer.from("2"));
        await d.delete("gone");
        await d.put("gone", Buffer.from("3"));
        await d.put("gone/below", Buffer.from("b"));
        await d.put("gone2", Buffer.from("c"));
        await d.purge("gone");
        assert.deepEqual(await collect(d.listVersions("gone")), []);
        assert.equal(await d.get("gone"), null);
        assert.deepEqual(await collect(d.list("")), ["gone/below", "gone2"]);
        assert.equal((await collect(d.listVersions("gone2"))).length, 1);
        await d.purge("never-was");
      });

      it(`retention: none at first; a rule round-trips and is removed; newerNoncurrentVersions ${differences.retentionKeepsNewerNoncurrent ? "kept" : "refused with RETENTION_UNSUPPORTED, the earlier rule put back"}`, async () => {
        const d = await versioned();
        assert.equal(await d.getRetention(), null);
        await d.setRetention({ prefix: "env:/", noncurrentDays: 30 });
        assert.deepEqual(await d.getRetention(), { prefix: "env:/", noncurrentDays: 30, newerNoncurrentVersions: undefined });
        const both = { prefix: "env:/", noncurrentDays: 10, newerNoncurrentVersions: 5 };
        if (differences.retentionKeepsNewerNoncurrent) {
          await d.setRetention(both);
          assert.deepEqual(await d.getRetention(), both);
        } else {
          await assert.rejects(d.setRetention(both), refused("RETENTION_UNSUPPORTED"));
          assert.deepEqual(await d.getRetention(), { prefix: "env:/", noncurrentDays: 30, newerNoncurrentVersions: undefined }, "the earlier rule is back");
        }
        await d.setRetention({ prefix: "env:/" });
        assert.equal(await d.getRetention(), null);
      });
    });

    describe("leftovers", () => {
      it("a dead writer's leftover is listed under its key's prefix only, and removed (twice is fine); the objects stay", async () => {
        const s = await fresh();
        await s.driver.createBucket();
        await s.driver.put("team-a/tool.tfstate", Buffer.from("a"));
        await differences.leaveLeftover(s, "team-a/tool.tfstate");
        const listed = await s.driver.listLeftovers("team-a/");
        assert.equal(listed.length, 1, JSON.stringify(listed));
        const item = listed[0];
        assert.ok(item !== undefined);
        assert.equal(item.key, "team-a/tool.tfstate");
        assert.ok(item.since instanceof Date);
        assert.deepEqual(await s.driver.listLeftovers("team-b/"), []);
        await s.driver.removeLeftover(item);
        await s.driver.removeLeftover(item);
        assert.deepEqual(await s.driver.listLeftovers(""), []);
        assert.equal((await s.driver.get("team-a/tool.tfstate"))?.body.toString(), "a");
      });
    });
  });
}
