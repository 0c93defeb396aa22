/**
 * The driver pairs the behaviour suite runs against: (Ceph RGW + dynalite) and
 * (embedded + embedded). A target makes unique buckets and tables and can inspect what
 * landed on the server independently of the backend under test.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import type { ObjectStoreBackend, ObjectStoreBackendConfigProps } from "../../src/index.js";
import { openLockTable } from "../../src/lock/index.js";
import { openStore } from "../../src/store/index.js";
import type { WireRequest } from "../../src/store/s3.js";
import type { ObjectStoreDriver } from "../../src/store/types.js";
import { testServers } from "./servers.js";

export interface Target {
  readonly name: string;
  /** Props for a fresh bucket (and lock table when `locks`), both created where the server needs it. */
  setup(options: { locks: boolean; extra?: Partial<ObjectStoreBackendConfigProps> }): Promise<ObjectStoreBackendConfigProps>;
  /** A driver on the same bucket, opened independently of the backend. */
  raw(bucket: string): Promise<ObjectStoreDriver>;
  /** A table with the given wrong key schema; returns its name. */
  badTable(schema: "other-key" | "number-key"): Promise<string>;
  /** Grants on an object as the server reports them (S3 only). */
  grants?(bucket: string, key: string): Promise<string[]>;
  /** Directory of a bucket on disk (embedded only). */
  bucketDir?(bucket: string): string;
  /** Requests captured by the S3 request hook (S3 only). */
  readonly wire?: WireRequest[];
}

let counter = 0;
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${randomBytes(3).toString("hex")}`;
}

export function embeddedTarget(): Target {
  const dir = mkdtempSync(join(tmpdir(), "objstate-embedded-"));
  const endpoint = `file://${dir}`;
  return {
    name: "embedded + embedded",
    setup: ({ locks, extra }) =>
      Promise.resolve({ bucket: uniqueName("b"), endpoint, ...(locks ? { kvstoreEndpoint: endpoint, kvstoreTable: uniqueName("locks") } : {}), ...extra }),
    raw: (bucket) => openStore({ bucket, endpoint }),
    bucketDir: (bucket) => join(dir, bucket),
    badTable: async (schema) => {
      const name = uniqueName("bad");
      const tableDir = join(dir, ".kvstore", name);
      mkdirSync(tableDir, { recursive: true });
      const keys = schema === "other-key" ? [{ name: "Key", type: "S", keyType: "HASH" }] : [{ name: "LockID", type: "N", keyType: "HASH" }];
      writeFileSync(join(tableDir, ".schema.json"), JSON.stringify(keys));
      return name;
    },
  };
}

export function cephTarget(): Target {
  const s = testServers();
  const wire: WireRequest[] = [];
  const creds = { accessKey: s.accessKey, secretKey: s.secretKey };
  const staticCreds = (): Promise<{ accessKeyId: string; secretAccessKey: string }> =>
    Promise.resolve({ accessKeyId: s.accessKey, secretAccessKey: s.secretKey });
  const client = async () => {
    const { S3Client } = await import("@aws-sdk/client-s3");
    return new S3Client({
      endpoint: s.s3Endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: { accessKeyId: s.accessKey, secretAccessKey: s.secretKey },
    });
  };
  return {
    name: "Ceph RGW + dynalite",
    wire,
    setup: async ({ locks, extra }) => {
      const props: ObjectStoreBackendConfigProps = {
        bucket: uniqueName("b"),
        endpoint: s.s3Endpoint,
        ...creds,
        ...(locks ? { kvstoreEndpoint: s.dynamoEndpoint, kvstoreTable: uniqueName("locks") } : {}),
        ...extra,
      };
      const store = await openStore({ bucket: props.bucket, endpoint: s.s3Endpoint, credentials: staticCreds });
      await store.createBucket();
      store.close();
      if (locks) {
        const t = await openLockTable({ table: props.kvstoreTable as string, endpoint: s.dynamoEndpoint, credentials: staticCreds });
        await t.createTable();
        t.close();
      }
      return props;
    },
    raw: async (bucket) => {
      return openStore({ bucket, endpoint: s.s3Endpoint, credentials: staticCreds });
    },
    badTable: async (schema) => {
      const { DynamoDBClient, CreateTableCommand } = await import("@aws-sdk/client-dynamodb");
      const ddb = new DynamoDBClient({
        endpoint: s.dynamoEndpoint,
        region: "us-east-1",
        credentials: { accessKeyId: s.accessKey, secretAccessKey: s.secretKey },
      });
      const name = uniqueName("bad");
      const key = schema === "other-key" ? { AttributeName: "Key", AttributeType: "S" as const } : { AttributeName: "LockID", AttributeType: "N" as const };
      await ddb.send(
        new CreateTableCommand({
          TableName: name,
          AttributeDefinitions: [key],
          KeySchema: [{ AttributeName: key.AttributeName, KeyType: "HASH" }],
          BillingMode: "PAY_PER_REQUEST",
        }),
      );
      ddb.destroy();
      return name;
    },
    grants: async (bucket, key) => {
      const { GetObjectAclCommand } = await import("@aws-sdk/client-s3");
      const c = await client();
      const acl = await c.send(new GetObjectAclCommand({ Bucket: bucket, Key: key }));
      c.destroy();
      return (acl.Grants ?? []).map((g) => `${g.Grantee?.URI ?? g.Grantee?.ID ?? "?"}:${g.Permission ?? "?"}`);
    },
  };
}

/**
 * A behaviour suite's target, made in `before` (so the servers it needs are read only when the
 * suite runs), and the backends it opened, closed in `after`.
 */
export function suiteTarget(makeTarget: () => Target): { readonly target: Target; readonly open: ObjectStoreBackend[] } {
  const open: ObjectStoreBackend[] = [];
  let made: Target | undefined;
  before(() => {
    made = makeTarget();
  });
  after(() => {
    for (const b of open) b.close();
  });
  return {
    get target(): Target {
      if (made === undefined) throw new Error("the suite's target is made in before(): use it inside a test");
      return made;
    },
    open,
  };
}
