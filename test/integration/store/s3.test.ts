/**
 * The S3 driver's own behaviour on Ceph RGW: what goes on the wire (headers, multipart,
 * pages), shared-memory bodies, and its errors. What every driver does is asserted by the
 * conformance suite (test/behaviour/store-driver-suite.ts, driver-conformance.test.ts).
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { after, before, describe, it } from "node:test";
import { DeleteBucketCommand, DeleteObjectCommand, GetObjectAclCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { isObjstateError } from "../../../src/errors.js";
import { openStore } from "../../../src/store/index.js";
import { parseListPage, S3Driver } from "../../../src/store/s3.js";
import type { S3DriverOptions, WireRequest } from "../../../src/store/s3.js";
import type { Credentials } from "../../../src/credentials/types.js";
import type { ObjectStoreDriver } from "../../../src/store/types.js";
import { testServers } from "../../support/servers.js";
import { listenLow } from "../../support/port.js";

const servers = testServers();
const RUN = `${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
const BUCKET = `objstate-it-${RUN}`;
const MiB = 1024 * 1024;
const ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers";

const staticCredentials = async (): Promise<Credentials> => ({ accessKeyId: servers.accessKey, secretAccessKey: servers.secretKey });

/** Every request the drivers sent, as the request hook saw it. */
const wire: WireRequest[] = [];

function driver(extra: Partial<S3DriverOptions> = {}): S3Driver {
  return new S3Driver({ bucket: BUCKET, endpoint: servers.s3Endpoint, credentials: staticCredentials, onRequest: (r) => wire.push(r), ...extra });
}

/** A plain SDK client for looking behind the driver's back (ACLs, cleanup). */
const sdk = new S3Client({
  endpoint: servers.s3Endpoint,
  region: "us-east-1",
  forcePathStyle: true,
  credentials: { accessKeyId: servers.accessKey, secretAccessKey: servers.secretKey },
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED",
});

function md5(b: Buffer): string {
  return createHash("md5").update(b).digest("hex");
}

const seconds = (t: Date | undefined): number => Math.floor((t?.getTime() ?? Number.NaN) / 1000);

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const k of it) out.push(k);
  return out;
}

/** Requests for `key` sent since `mark` (an index into `wire`). */
function sentFor(key: string, mark: number): WireRequest[] {
  const p = `/${BUCKET}/${encodeURIComponent(key).replace(/%2F/g, "/")}`;
  return wire.slice(mark).filter((r) => r.path === p || r.path.startsWith(`${p}?`));
}

function isCreateMultipart(r: WireRequest): boolean {
  return r.method === "POST" && /[?&]uploads(=|&|$)/.test(r.path);
}

async function aClosedPort(): Promise<number> {
  const srv = createServer();
  await listenLow(srv);
  const address = srv.address();
  await new Promise<void>((r) => srv.close(() => r()));
  assert.ok(address !== null && typeof address === "object");
  return address.port;
}

let d: S3Driver;

before(async () => {
  d = driver();
  assert.equal(await d.bucketExists(), false, "a fresh bucket name must not exist yet");
  await d.createBucket();
});

after(async () => {
  const listed = await sdk.send(new ListObjectsV2Command({ Bucket: BUCKET }));
  for (const o of listed.Contents ?? []) await sdk.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: o.Key }));
  await sdk.send(new DeleteBucketCommand({ Bucket: BUCKET })).catch(() => undefined);
  d.close();
  sdk.destroy();
});

describe("S3Driver against Ceph RGW", () => {
  it("is what openStore gives for http endpoints", async () => {
    const s: ObjectStoreDriver = await openStore({ bucket: BUCKET, endpoint: servers.s3Endpoint, credentials: staticCredentials });
    assert.equal(s.kind, "s3");
    assert.equal(s.location, `${servers.s3Endpoint}/${BUCKET}`);
    assert.equal(await s.bucketExists(), true);
    s.close();
  });

  it("sends content type, canned ACL and AES256 on the wire, and the server keeps them", async () => {
    const mark = wire.length;
    await d.put("meta", Buffer.from("{}"), { contentType: "application/json", acl: "public-read", encrypt: true });
    const puts = sentFor("meta", mark).filter((r) => r.method === "PUT");
    assert.equal(puts.length, 1);
    const h = puts[0]?.headers ?? {};
    assert.equal(h["x-amz-server-side-encryption"], "AES256");
    assert.equal(h["x-amz-acl"], "public-read");
    assert.equal(h["content-type"], "application/json");
    // Seen after signing: the signature covers the headers we assert on.
    const signed = /SignedHeaders=([^,]+)/.exec(h["authorization"] ?? "")?.[1]?.split(";") ?? [];
    for (const name of ["x-amz-server-side-encryption", "x-amz-acl", "content-type"]) assert.ok(signed.includes(name), `${name} is signed`);

    const head = await d.head("meta");
    assert.ok(head);
    assert.equal(head.contentType, "application/json");
    assert.equal(head.size, 2);
    // RGW (Pacific) accepts AES256 but never echoes it; other stores do.
    assert.ok(head.serverSideEncryption === undefined || head.serverSideEncryption === "AES256");
    const got = await d.get("meta");
    assert.equal(got?.body.toString(), "{}");

    const acl = await sdk.send(new GetObjectAclCommand({ Bucket: BUCKET, Key: "meta" }));
    assert.ok(
      acl.Grants?.some((g) => g.Grantee?.URI === ALL_USERS && g.Permission === "READ"),
      "public-read grants AllUsers READ",
    );
    await d.put("private", Buffer.from("{}"), { acl: "private" });
    const acl2 = await sdk.send(new GetObjectAclCommand({ Bucket: BUCKET, Key: "private" }));
    assert.ok(!(acl2.Grants ?? []).some((g) => g.Grantee?.URI === ALL_USERS), "private grants nothing to AllUsers");
  });

  it("refuses create-if-absent on an existing key with PRECONDITION_FAILED (If-None-Match: *)", async () => {
    const mark = wire.length;
    await d.put("lock", Buffer.from("first"), { ifNoneMatch: true });
    assert.equal(sentFor("lock", mark)[0]?.headers["if-none-match"], "*");
    await assert.rejects(d.put("lock", Buffer.from("second"), { ifNoneMatch: true }), (e) => isObjstateError(e, "PRECONDITION_FAILED"));
    assert.equal((await d.get("lock"))?.body.toString(), "first");
    await d.delete("lock");
    await d.put("lock", Buffer.from("third"), { ifNoneMatch: true });
    assert.equal((await d.get("lock"))?.body.toString(), "third");
  });

  it("uploads 64 MiB in 8 MiB parts and reads it back byte-exact", async () => {
    const body = randomBytes(64 * MiB);
    const mark = wire.length;
    const multi = driver({ multipartThreshold: 16 * MiB });
    await multi.put("big", body, { contentType: "application/json", encrypt: true, acl: "private" });
    multi.close();
    const sent = sentFor("big", mark);
    const create = sent.filter(isCreateMultipart);
    assert.equal(create.length, 1, "one CreateMultipartUpload");
    assert.equal(create[0]?.headers["x-amz-server-side-encryption"], "AES256");
    assert.equal(create[0]?.headers["x-amz-acl"], "private");
    assert.equal(sent.filter((r) => r.method === "PUT" && /[?&]partNumber=/.test(r.path)).length, 8, "eight parts");

    const got = await d.get("big");
    assert.ok(got);
    assert.equal(got.body.length, body.length);
    assert.equal(md5(got.body), md5(body));
    assert.equal(got.meta.contentType, "application/json");
    assert.match(got.meta.etag ?? "", /^[0-9a-f]{32}-8$/);
    // A multipart ETag is no MD5: asked for one, the driver hashes the bytes.
    assert.equal((await d.get("big", { md5: true }))?.md5, md5(body));
  });

  it("a multipart upload records the MD5 it was given as metadata, and get({md5}) takes it from there", async () => {
    const multi = driver({ multipartThreshold: 8 * MiB });
    const body = randomBytes(20 * MiB);
    await multi.put("multi-md5", body, { md5: Promise.resolve(md5(body)) });
    const head = await sdk.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "multi-md5" }));
    assert.equal(head.Metadata?.["objstate-md5"], md5(body));
    assert.match(head.ETag ?? "", /-\d+"?$/, "a multipart ETag");
    assert.equal((await multi.get("multi-md5", { md5: true }))?.md5, md5(body));
    // The recorded value is what is returned (no second hashing): a wrong one shows through.
    await multi.put("multi-md5", body, { md5: Promise.resolve("f".repeat(32)) });
    assert.equal((await multi.get("multi-md5", { md5: true }))?.md5, "f".repeat(32));
    multi.close();
  });

  it("below the 100 MiB default, a large state goes up in one PutObject, checked by its ETag when the MD5 comes late", async () => {
    const body = randomBytes(20 * MiB);
    const mark = wire.length;
    await d.put("single", body, { md5: Promise.resolve(md5(body)) });
    const sent = sentFor("single", mark);
    assert.equal(sent.length, 1, "one request");
    assert.equal(sent[0]?.headers["content-md5"], undefined, "sent before the hash was known");
    // The MD5 comes straight from the plain ETag, and equals the bytes' MD5.
    const got = await d.get("single", { md5: true });
    assert.equal(got?.md5, md5(body));
    // A hash that does not match what the server stored is an integrity error.
    await assert.rejects(d.put("single", body, { md5: Promise.resolve("0".repeat(32)) }), (e) => isObjstateError(e, "STORE_INTEGRITY"));
    // A hash known up front goes out as Content-MD5, and a wrong one is refused by the server.
    const m2 = wire.length;
    await d.put("small", Buffer.from("{}"), { md5: md5(Buffer.from("{}")) });
    assert.equal(sentFor("small", m2)[0]?.headers["content-md5"], Buffer.from(md5(Buffer.from("{}")), "hex").toString("base64"));
    await assert.rejects(d.put("small", Buffer.from("{}"), { md5: "0".repeat(32) }));
  });

  it("makes a large create-if-absent one conditional PutObject, not a multipart upload", async () => {
    const small = driver({ multipartThreshold: 5 * MiB });
    // Above both the threshold and one 8 MiB part (a body that fits one part is never multipart).
    const body = randomBytes(9 * MiB);
    const mark = wire.length;
    await small.put("big-once", body, { ifNoneMatch: true });
    const sent = sentFor("big-once", mark);
    assert.deepEqual(
      sent.map((r) => [r.method, r.headers["if-none-match"]]),
      [["PUT", "*"]],
    );
    await assert.rejects(small.put("big-once", randomBytes(9 * MiB), { ifNoneMatch: true }), (e) => isObjstateError(e, "PRECONDITION_FAILED"));
    assert.equal(md5((await small.get("big-once"))?.body ?? Buffer.alloc(0)), md5(body));
    // Without the condition the same size goes multipart.
    const mark2 = wire.length;
    await small.put("big-twice", body);
    assert.ok(sentFor("big-twice", mark2).some(isCreateMultipart));
    small.close();
  });

  it("lists keys with a prefix over several pages, in order, a key beside keys below it", async () => {
    const keys = ["l/b", "l/a/c", "l/a", "l/ab", "l/a/b", "l/env:/w/tool.tfstate", "l/env:/tool.tfstate"];
    for (const k of keys) await d.put(k, Buffer.from(k));
    const mark = wire.length;
    assert.deepEqual(await collect(d.list("l/", { pageSize: 2 })), [...keys].sort());
    const pages = wire.slice(mark).filter((r) => r.method === "GET" && /^\/[^/?]+\/?\?list-type=2/.test(r.path));
    assert.equal(pages.length, 4, "7 keys in pages of 2");
    assert.ok(pages.every((p) => p.path.includes("max-keys=2")));
    assert.deepEqual(await collect(d.list("l/a")), ["l/a", "l/a/b", "l/a/c", "l/ab"]);
    assert.deepEqual(await collect(d.list("l/a/")), ["l/a/b", "l/a/c"]);
    assert.deepEqual(await collect(d.list("nothing-here/")), []);
    assert.equal((await d.get("l/a"))?.body.toString(), "l/a");
  });

  it("listDetailed: each key under a prefix over several pages, with the size, time and ETag head reports", async () => {
    for (const [k, body] of [
      ["ld/b", "bb"],
      ["ld/a", "a"],
      ["ld/c/d", "ccc"],
      ["ldx", "x"],
    ] as const)
      await d.put(k, Buffer.from(body));
    const mark = wire.length;
    const listed = await collect(d.listDetailed("ld/", { pageSize: 2 }));
    assert.equal(
      wire.slice(mark).filter((r) => r.method === "GET" && /^\/[^/?]+\/?\?list-type=2/.test(r.path)).length,
      2,
      "3 keys in pages of 2, no request per key",
    );
    assert.deepEqual(
      listed.map((o) => [o.key, o.size]),
      [
        ["ld/a", 1],
        ["ld/b", 2],
        ["ld/c/d", 3],
      ],
    );
    for (const o of listed) {
      const h = await d.head(o.key);
      // A listing gives milliseconds, a HEAD's Last-Modified header whole seconds.
      assert.deepEqual([o.etag, seconds(o.lastModified)], [h?.etag, seconds(h?.lastModified)]);
    }
    assert.equal(listed[1]?.etag, createHash("md5").update("bb").digest("hex"));
  });

  it("reads a list page as an XML parser does: entities once, line ends, astral characters; Owner and prefixes ignored; a token only when truncated", () => {
    const page = (body: string): string =>
      `<?xml version="1.0" encoding="UTF-8"?>\r\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p&amp;</Prefix>${body}</ListBucketResult>`;
    const obj = (key: string): string =>
      `<Contents><Key>${key}</Key><LastModified>2026-12-02T18:08:49.123Z</LastModified><ETag>&quot;0123&quot;</ETag><Size>97</Size><Owner><ID>u</ID><DisplayName>U &amp; V</DisplayName></Owner></Contents>`;
    const p = parseListPage(
      page(
        `<IsTruncated>true</IsTruncated>${obj("a&amp;lt;b")}${obj("&#x1F600;&#233;&lt;&gt;&quot;&apos;")}${obj("cr&#13;\r\nlf")}${obj("\u00e9\u{1F600} x")}<CommonPrefixes><Prefix>q/</Prefix></CommonPrefixes><NextContinuationToken>t&amp;1/+=</NextContinuationToken>`,
      ),
    );
    assert.deepEqual(
      p.objects.map((o) => o.key),
      ["a&lt;b", "\u{1F600}\u00e9<>\"'", "cr\r\nlf", "\u00e9\u{1F600} x"],
    );
    assert.deepEqual(p.objects[0], { key: "a&lt;b", size: 97, lastModified: new Date("2026-12-02T18:08:49.123Z"), etag: "0123" });
    assert.equal(p.next, "t&1/+=");
    assert.deepEqual(parseListPage(page("<KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>")), { objects: [], next: undefined });
    assert.equal(parseListPage(page(`<IsTruncated>false</IsTruncated>${obj("k")}<NextContinuationToken>t</NextContinuationToken>`)).next, undefined);
  });

  it("maps a missing bucket to BUCKET_NOT_FOUND", async () => {
    const none = new S3Driver({ bucket: `objstate-none-${RUN}`, endpoint: servers.s3Endpoint, credentials: staticCredentials });
    assert.equal(await none.bucketExists(), false);
    const isNotFound = (e: unknown): boolean => isObjstateError(e, "BUCKET_NOT_FOUND") && e.message.includes(`objstate-none-${RUN}`);
    await assert.rejects(none.get("k"), isNotFound);
    await assert.rejects(none.put("k", Buffer.from("x")), isNotFound);
    await assert.rejects(collect(none.list("")), isNotFound);
    none.close();
  });

  it("maps a wrong secret or unknown access key to ACCESS_DENIED without leaking secrets", async () => {
    const wrongSecret = "wrongSecretKey0123456789abcdefghijklmnopq";
    const cases: [string, Credentials][] = [
      ["wrong secret", { accessKeyId: servers.accessKey, secretAccessKey: wrongSecret }],
      ["unknown key", { accessKeyId: "UNKNOWNACCESSKEY0001", secretAccessKey: wrongSecret }],
    ];
    for (const [label, creds] of cases) {
      const bad = new S3Driver({ bucket: BUCKET, endpoint: servers.s3Endpoint, credentials: async () => creds });
      const denied = (e: unknown): boolean => {
        assert.ok(isObjstateError(e, "ACCESS_DENIED"), `${label}: ${String(e)}`);
        for (const secret of [wrongSecret, servers.secretKey, creds.accessKeyId])
          assert.ok(!e.message.includes(secret), `${label}: message leaks a credential: ${e.message}`);
        assert.match(e.message, /check the (access key|secret key)/);
        assert.ok(e.cause !== undefined);
        return true;
      };
      await assert.rejects(bad.get("env:/w/tool.tfstate"), denied);
      await assert.rejects(bad.put("x", Buffer.from("x")), denied);
      await assert.rejects(bad.bucketExists(), denied);
      bad.close();
    }
  });

  it("maps a closed port to ENDPOINT_UNREACHABLE", async () => {
    const endpoint = `http://127.0.0.1:${await aClosedPort()}`;
    const gone = new S3Driver({ bucket: BUCKET, endpoint, credentials: staticCredentials });
    await assert.rejects(gone.get("k"), (e) => isObjstateError(e, "ENDPOINT_UNREACHABLE") && e.message.includes(endpoint));
    await assert.rejects(gone.bucketExists(), (e) => isObjstateError(e, "ENDPOINT_UNREACHABLE"));
    gone.close();
  });

  it("asks the credentials provider again when temporary credentials near expiry", async () => {
    let calls = 0;
    const provider = async (): Promise<Credentials> => {
      calls += 1;
      // Inside the SDK's refresh window, so every request needs fresh credentials.
      return { accessKeyId: servers.accessKey, secretAccessKey: servers.secretKey, expiration: new Date(Date.now() + 60_000) };
    };
    const refreshing = new S3Driver({ bucket: BUCKET, endpoint: servers.s3Endpoint, credentials: provider });
    await refreshing.put("cred", Buffer.from("1"));
    await refreshing.get("cred");
    await refreshing.head("cred");
    assert.ok(calls >= 3, `provider called ${calls} times`);
    refreshing.close();
  });

  it("fails clearly without credentials instead of searching the environment", async () => {
    const anon = new S3Driver({ bucket: BUCKET, endpoint: servers.s3Endpoint });
    await assert.rejects(anon.get("k"), (e) => isObjstateError(e, "CREDENTIALS_MISSING"));
    anon.close();
  });
});
