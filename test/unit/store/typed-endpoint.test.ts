/**
 * The drivers take an endpoint parsed once where the settings are resolved (io/endpoint.ts's
 * ParsedEndpoint) and use it as given: no driver parses it again, and a `cwd` cannot move it.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { isObjstateError } from "../../../src/errors.js";
import type { ParsedEndpoint } from "../../../src/io/endpoint.js";
import { DynamoDbLockTable } from "../../../src/lock/dynamodb.js";
import { FileLockTable } from "../../../src/lock/file.js";
import { openLockTable } from "../../../src/lock/index.js";
import { FileDriver } from "../../../src/store/file.js";
import { openStore } from "../../../src/store/index.js";
import { S3Driver, type WireRequest } from "../../../src/store/s3.js";

let root: string;
before(async () => {
  // A `%20` in the directory's name: parsing it again as a file URL would make it a space.
  root = await fs.mkdtemp(path.join(os.tmpdir(), "objstate-typed %20 endpoint-"));
});
after(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe("drivers opened with a parsed endpoint", () => {
  it("the embedded store and table use the directory as given, whatever the cwd", async () => {
    const endpoint: ParsedEndpoint = { kind: "file", dir: root };
    const store = await openStore({ bucket: "typed", endpoint, cwd: "/elsewhere" });
    const table = await openLockTable({ table: "locks", endpoint, cwd: "/elsewhere" });
    try {
      assert.equal(store.kind, "file");
      assert.equal(store.location, `file:${path.join(root, "typed")}`);
      await store.put("k", Buffer.from("v"));
      assert.equal(await fs.readFile(path.join(root, "typed", "k"), "utf8"), "v");
      assert.equal(table.location, `embedded lock table "locks" in ${root}`);
      await table.createTable();
      assert.equal(await table.putIfAbsent("id", "Info", "x"), null);
      assert.equal(await table.get("id", "Info"), "x");
    } finally {
      store.close();
      table.close();
    }
  });

  it("the S3 and DynamoDB drivers use the URL as given, and sign with us-east-1 when no region is set", async () => {
    const endpoint: ParsedEndpoint = { kind: "http", url: "http://127.0.0.1:29901" };
    const wire: WireRequest[] = [];
    const credentials = async () => ({ accessKeyId: "AKIDTYPED", secretAccessKey: "typed-secret" });
    const s3 = new S3Driver({ bucket: "typed", endpoint, credentials, onRequest: (r) => wire.push(r), timeouts: { connectMs: 2000 } });
    const table = new DynamoDbLockTable({ table: "locks", endpoint, credentials });
    try {
      assert.equal(s3.location, "http://127.0.0.1:29901/typed");
      assert.equal(table.location, 'DynamoDB table "locks" at http://127.0.0.1:29901');
      // Nothing listens there: the request is refused, but it was signed and sent first.
      await assert.rejects(s3.head("k"));
      assert.ok(wire.length > 0);
      assert.match(wire[0]?.headers["authorization"] ?? "", /Credential=AKIDTYPED\/\d{8}\/us-east-1\/s3\/aws4_request/);
    } finally {
      s3.close();
      table.close();
    }
  });

  it("a parsed endpoint of the wrong kind is INVALID_ENDPOINT naming the driver and the endpoint", () => {
    const http: ParsedEndpoint = { kind: "http", url: "http://127.0.0.1:29901" };
    const file: ParsedEndpoint = { kind: "file", dir: "/var/lib/objstate" };
    const cases: [() => unknown, string][] = [
      [() => new FileDriver({ bucket: "typed", endpoint: http }), 'the embedded store needs a file: endpoint, got "http://127.0.0.1:29901"'],
      [() => new FileLockTable({ table: "locks", endpoint: http }), 'the embedded lock table needs a file: endpoint, got "http://127.0.0.1:29901"'],
      [() => new S3Driver({ bucket: "typed", endpoint: file }), 'the S3 driver needs an http(s) endpoint, got "file:///var/lib/objstate"'],
      [() => new DynamoDbLockTable({ table: "locks", endpoint: file }), 'the DynamoDB lock table needs an http(s) endpoint, got "file:///var/lib/objstate"'],
    ];
    for (const [open, message] of cases) {
      assert.throws(open, (e) => isObjstateError(e, "INVALID_ENDPOINT") && e.message === message, message);
    }
  });
});
