/** The lock-table driver conformance suite on DynamoDB (dynalite), the same suite as the embedded table's. */
import { setTimeout as sleep } from "node:timers/promises";
import { after } from "node:test";
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { openLockTable } from "../../../src/lock/index.js";
import { lockDriverSuite } from "../../behaviour/lock-driver-suite.js";
import { testServers } from "../../support/servers.js";
import { uniqueName } from "../../support/targets.js";

const s = testServers();
const credentials = (): Promise<{ accessKeyId: string; secretAccessKey: string }> =>
  Promise.resolve({ accessKeyId: s.accessKey, secretAccessKey: s.secretKey });
/** A plain SDK client, for tables the driver would never make. */
const admin = new DynamoDBClient({ endpoint: s.dynamoEndpoint, region: "us-east-1", credentials: { accessKeyId: s.accessKey, secretAccessKey: s.secretKey } });
after(() => admin.destroy());

lockDriverSuite("DynamoDB on dynalite", () => openLockTable({ table: uniqueName("locks"), endpoint: s.dynamoEndpoint, credentials }), {
  absentTable: "TABLE_NOT_FOUND",
  badTable: async (schema) => {
    const table = uniqueName("bad");
    const key = schema === "other-key" ? { AttributeName: "Key", AttributeType: "S" as const } : { AttributeName: "LockID", AttributeType: "N" as const };
    await admin.send(
      new CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [key],
        KeySchema: [{ AttributeName: key.AttributeName, KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
    while ((await admin.send(new DescribeTableCommand({ TableName: table }))).Table?.TableStatus !== "ACTIVE") await sleep(50);
    return openLockTable({ table, endpoint: s.dynamoEndpoint, credentials });
  },
});
