/**
 * The DynamoDB lock-table driver's own behaviour against a real dynalite server (docs/design.md
 * §8): the table it creates, credentials, and error mapping. What every lock driver does is
 * asserted by the conformance suite (test/behaviour/lock-driver-suite.ts). The endpoint
 * comes from `scripts/with-servers.sh`; without it these tests fail, never skip.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand, DynamoDBClient, type CreateTableCommandInput } from "@aws-sdk/client-dynamodb";
import { isObjstateError, ObjstateError } from "../../../src/errors.js";
import { DynamoDbLockTable, toObjstateError } from "../../../src/lock/dynamodb.js";
import { openLockTable } from "../../../src/lock/index.js";
import type { LockTableDriver } from "../../../src/lock/types.js";
import type { Credentials, CredentialsProvider } from "../../../src/credentials/types.js";
import { testServers } from "../../support/servers.js";
import { listenLow } from "../../support/port.js";
import { startFaultProxy } from "../../support/fault-proxy.js";

const LOCK_ID = "my-bucket/env:/dev/tool.tfstate";
const SECRET = "secret-never-in-messages-9f3b";
/** Unique per run, so reruns against a long-lived server never collide. */
const RUN = `objstate-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

let endpoint: string;
let admin: DynamoDBClient;
let tableCount = 0;
const created: string[] = [];
const drivers: LockTableDriver[] = [];

const credentials: CredentialsProvider = async () => ({ accessKeyId: testServers().accessKey, secretAccessKey: SECRET });
const newTableName = (): string => `${RUN}-${++tableCount}`;

function open(table: string, extra: Partial<{ credentials: CredentialsProvider | undefined; endpoint: string }> = {}): DynamoDbLockTable {
  const d = new DynamoDbLockTable({ table, endpoint: extra.endpoint ?? endpoint, credentials: "credentials" in extra ? extra.credentials : credentials });
  drivers.push(d);
  return d;
}

/** Make a table the driver would never make, to see how it is described and refused. */
async function rawTable(keySchema: CreateTableCommandInput["KeySchema"], defs: CreateTableCommandInput["AttributeDefinitions"]): Promise<string> {
  const name = newTableName();
  await admin.send(new CreateTableCommand({ TableName: name, KeySchema: keySchema, AttributeDefinitions: defs, BillingMode: "PAY_PER_REQUEST" }));
  created.push(name);
  for (;;) {
    const out = await admin.send(new DescribeTableCommand({ TableName: name }));
    if (out.Table?.TableStatus === "ACTIVE") return name;
    await sleep(50);
  }
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await listenLow(server);
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  assert.ok(address !== null && typeof address === "object");
  return address.port;
}

before(() => {
  endpoint = testServers().dynamoEndpoint;
  admin = new DynamoDBClient({ endpoint, region: "us-east-1", credentials });
});

after(async () => {
  for (const d of drivers) d.close();
  for (const name of created) await admin.send(new DeleteTableCommand({ TableName: name })).catch(() => undefined);
  admin.destroy();
});

describe("opening", () => {
  test("openLockTable picks the DynamoDB driver for an http endpoint", async () => {
    const t = await openLockTable({ table: "locks", endpoint, credentials });
    assert.equal(t.kind, "dynamodb");
    assert.ok(t instanceof DynamoDbLockTable);
    assert.equal(t.location, `DynamoDB table "locks" at ${endpoint}`);
    t.close();
  });

  test("the location never shows credentials embedded in the endpoint URL", () => {
    const url = new URL(endpoint);
    url.username = "user";
    url.password = SECRET;
    const t = open("locks", { endpoint: url.toString() });
    assert.ok(!t.location.includes(SECRET));
    assert.ok(!t.location.includes("user"));
  });

  test("refuses a file: endpoint", () => {
    assert.throws(
      () => new DynamoDbLockTable({ table: "locks", endpoint: "file:./x" }),
      (e) => isObjstateError(e, "INVALID_ENDPOINT"),
    );
  });
});

describe("key schema", () => {
  test("absent table → null; createTable → LockID S HASH, on demand, ACTIVE", async () => {
    const name = newTableName();
    const t = open(name);
    assert.equal(await t.describeKeySchema(), null);
    await t.createTable();
    created.push(name);
    assert.deepEqual(await t.describeKeySchema(), [{ name: "LockID", type: "S", keyType: "HASH" }]);
    const table = (await admin.send(new DescribeTableCommand({ TableName: name }))).Table;
    assert.equal(table?.TableStatus, "ACTIVE");
    assert.equal(table?.BillingModeSummary?.BillingMode, "PAY_PER_REQUEST");
  });

  test("a composite key is described element by element", async () => {
    const name = await rawTable(
      [
        { AttributeName: "LockID", KeyType: "HASH" },
        { AttributeName: "Sort", KeyType: "RANGE" },
      ],
      [
        { AttributeName: "LockID", AttributeType: "S" },
        { AttributeName: "Sort", AttributeType: "N" },
      ],
    );
    assert.deepEqual(await open(name).describeKeySchema(), [
      { name: "LockID", type: "S", keyType: "HASH" },
      { name: "Sort", type: "N", keyType: "RANGE" },
    ]);
  });

  test("item calls on a wrongly keyed table are LOCK_TABLE_ERROR", async () => {
    const name = await rawTable([{ AttributeName: "Key", KeyType: "HASH" }], [{ AttributeName: "Key", AttributeType: "S" }]);
    const t = open(name);
    await assert.rejects(
      () => t.putIfAbsent(LOCK_ID, "Info", "x"),
      (e) => isObjstateError(e, "LOCK_TABLE_ERROR") && e.message.includes(name),
    );
    await assert.rejects(
      () => t.get(LOCK_ID, "Info"),
      (e) => isObjstateError(e, "LOCK_TABLE_ERROR"),
    );
  });
});

describe("items", () => {
  test("every item call on an absent table is TABLE_NOT_FOUND", async () => {
    const t = open(newTableName());
    const calls: (() => Promise<unknown>)[] = [
      () => t.putIfAbsent(LOCK_ID, "Info", "x"),
      () => t.get(LOCK_ID, "Info"),
      () => t.put(LOCK_ID, "Info", "x"),
      () => t.deleteIf(LOCK_ID, "Info", "x"),
      () => t.delete(LOCK_ID),
    ];
    for (const call of calls) {
      await assert.rejects(call, (e) => isObjstateError(e, "TABLE_NOT_FOUND") && e.message.includes(t.location) && !e.message.includes(SECRET));
    }
  });
});

describe("concurrency", () => {
  test("6 clients × 20 lock/unlock cycles guarding a read-modify-write counter", async () => {
    const name = newTableName();
    const setup = open(name);
    await setup.createTable();
    created.push(name);
    let counter = 0;
    const worker = async (t: LockTableDriver, tag: string): Promise<void> => {
      for (let c = 0; c < 20; c++) {
        const me = `${tag}-${c}`;
        for (;;) {
          assert.equal(await t.deleteIf(LOCK_ID, "Info", `${tag}-stale`), false, "a stale unlock released a lock");
          if ((await t.putIfAbsent(LOCK_ID, "Info", me)) === null) break;
          await sleep(2 + Math.random() * 6); // back off: spinning only loads the server
        }
        assert.equal(await t.get(LOCK_ID, "Info"), me);
        const value = counter;
        await sleep(1);
        counter = value + 1;
        assert.equal(await t.deleteIf(LOCK_ID, "Info", me), true);
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, i) => worker(open(name), `w${i}`)));
    assert.equal(counter, 120);
    assert.equal(await setup.get(LOCK_ID, "Info"), null);
  });

  test("reads asked for in one turn go out as one BatchGetItem; a lone read is a GetItem", async () => {
    const name = newTableName();
    const proxy = await startFaultProxy(endpoint);
    try {
      const t = open(name, { endpoint: proxy.url });
      await t.createTable();
      created.push(name);
      await t.put("a", "Info", "A");
      const mark = proxy.log.length;
      assert.deepEqual(await Promise.all([t.get("a", "Info"), t.get("b", "Info"), t.getLease("a")]), ["A", null, { info: "A", expires: undefined }]);
      assert.equal(await t.get("a", "Info"), "A");
      assert.deepEqual(
        proxy.log.slice(mark).map((e) => e.target),
        ["DynamoDB_20120810.BatchGetItem", "DynamoDB_20120810.GetItem"],
      );
    } finally {
      await proxy.close();
    }
  });
});

describe("credentials and errors", () => {
  test("the credentials provider is called again when its credentials near expiry", async () => {
    let calls = 0;
    const refreshing: CredentialsProvider = async (): Promise<Credentials> => {
      calls++;
      return { accessKeyId: `key-${calls}`, secretAccessKey: SECRET, sessionToken: `token-${calls}`, expiration: new Date(Date.now() + 60_000) };
    };
    const name = newTableName();
    const t = open(name, { credentials: refreshing });
    await t.createTable();
    created.push(name);
    const before = calls;
    await t.put(LOCK_ID, "Info", "a");
    await t.get(LOCK_ID, "Info");
    assert.ok(calls >= before + 2, `provider called ${calls - before} times for two requests`);
  });

  test("no credentials at all is ACCESS_DENIED, before anything is sent", async () => {
    const t = open(newTableName(), { credentials: undefined });
    await assert.rejects(
      () => t.get(LOCK_ID, "Info"),
      (e) => isObjstateError(e, "ACCESS_DENIED") && /no credentials/.test(e.message),
    );
  });

  test("a failing credentials provider is ACCESS_DENIED, without its message", async () => {
    const failing: CredentialsProvider = () => Promise.reject(new Error(`bad key ${SECRET}`));
    const t = open(newTableName(), { credentials: failing });
    await assert.rejects(
      () => t.describeKeySchema(),
      (e) => isObjstateError(e, "ACCESS_DENIED") && !e.message.includes(SECRET) && e.cause instanceof Error,
    );
  });

  test("an ObjstateError from the credentials chain passes through unchanged", async () => {
    const own = new ObjstateError("ASSUME_ROLE_FAILED", "assume role failed");
    const t = open(newTableName(), { credentials: () => Promise.reject(own) });
    await assert.rejects(
      () => t.get(LOCK_ID, "Info"),
      (e) => e === own,
    );
  });

  test("nothing listening is ENDPOINT_UNREACHABLE", async () => {
    const t = open("locks", { endpoint: `http://127.0.0.1:${await closedPort()}` });
    await assert.rejects(
      () => t.describeKeySchema(),
      (e) => isObjstateError(e, "ENDPOINT_UNREACHABLE") && e.cause !== undefined,
    );
  });

  test("error mapping: signature errors never echo the server's message", () => {
    const sig = Object.assign(
      new Error(
        `Authorization header requires 'Signature'. Authorization=AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=${SECRET}`,
      ),
      {
        name: "IncompleteSignatureException",
        $metadata: { httpStatusCode: 400 },
      },
    );
    const mapped = toObjstateError(sig, "read", 'DynamoDB table "t"');
    assert.equal(mapped.code, "ACCESS_DENIED");
    assert.ok(!mapped.message.includes(SECRET) && !mapped.message.includes("AKIDEXAMPLE"));
    // The cause is a sanitized copy (src/util/redact.ts): same name, no signature.
    assert.ok(mapped.cause instanceof Error && mapped.cause.name === sig.name && !mapped.cause.message.includes(SECRET));
  });

  test("error mapping: 403, not found, sockets and the rest", () => {
    const loc = 'DynamoDB table "t"';
    const forbidden = Object.assign(new Error("nope"), { name: "SomethingNew", $metadata: { httpStatusCode: 403 } });
    assert.equal(toObjstateError(forbidden, "read", loc).code, "ACCESS_DENIED");
    assert.equal(toObjstateError(Object.assign(new Error("x"), { name: "UnrecognizedClientException" }), "read", loc).code, "ACCESS_DENIED");
    assert.equal(toObjstateError(Object.assign(new Error("x"), { name: "ResourceNotFoundException" }), "read", loc).code, "TABLE_NOT_FOUND");
    const dual = new AggregateError([Object.assign(new Error("refused"), { code: "ECONNREFUSED" })], "connect failed");
    assert.equal(toObjstateError(dual, "read", loc).code, "ENDPOINT_UNREACHABLE");
    assert.equal(toObjstateError(Object.assign(new Error("slow"), { name: "TimeoutError" }), "read", loc).code, "ENDPOINT_UNREACHABLE");
    const other = toObjstateError(Object.assign(new Error(`bad thing Signature=${SECRET}`), { name: "ValidationException" }), "read", loc);
    assert.equal(other.code, "LOCK_TABLE_ERROR");
    assert.match(other.message, /ValidationException: bad thing/);
    assert.ok(!other.message.includes(SECRET));
  });
});
