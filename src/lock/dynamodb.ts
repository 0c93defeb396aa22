/**
 * The lock table over the DynamoDB API (docs/design.md §5), for `http(s)://` and bare-host
 * `kvstoreEndpoint`s. Loaded lazily by `index.ts` so that importing objstate does not
 * load the AWS SDK.
 */
import {
  CreateTableCommand,
  DeleteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type AttributeValue,
  type ConditionalCheckFailedException,
  type TableDescription,
} from "@aws-sdk/client-dynamodb";
import { sdkCredentials } from "../io/sdk-credentials.js";
import { ObjstateError } from "../errors.js";
import { endpointOfKind, plainHttpAdvice } from "../io/endpoint.js";
import { armClient, displayUrl, resolveTimeouts, sdkClientConfig, withoutNodeVersionWarning } from "../io/sdk-client.js";
import { isAccessDenied, isForeignAnswer, isTlsToPlainHttp, networkFailure, sdkErrorMessage, sdkErrorName, sdkHttpStatus } from "../io/sdk-errors.js";
import type { CredentialsProvider } from "../credentials/types.js";
import type { DigestCommit, DigestItem, KeyAttribute, LeaseItem, LockDriverOptions, LockTableDriver, ScannedItem } from "./types.js";

const KEY = "LockID";
/** How long createTable waits for the table to become ACTIVE. */
const ACTIVE_TIMEOUT_MS = 5 * 60_000;
/** How long a connect waits for a table that someone else is still creating. */
const CREATING_WAIT_MS = 30_000;
/**
 * putIfAbsent re-tries when the blocking item vanishes before it can be read; more than
 * a handful of rounds means something is deleting and re-creating the item in a loop.
 */
const PUT_IF_ABSENT_ROUNDS = 20;

/**
 * A {@link LockTableDriver} over the DynamoDB API (AWS, dynalite, or any compatible
 * server). Every read is strongly consistent, because lock decisions and digest checks
 * must see the latest write.
 */
export class DynamoDbLockTable implements LockTableDriver {
  readonly kind = "dynamodb";
  readonly location: string;
  private readonly table: string;
  private readonly client: DynamoDBClient;

  /** @throws ObjstateError `INVALID_ENDPOINT` when the endpoint is not an HTTP one. */
  constructor(options: LockDriverOptions) {
    const parsed = endpointOfKind(options.endpoint, "http", "the DynamoDB lock table", options.cwd);
    this.table = options.table;
    const url = displayUrl(parsed.url);
    this.location = `DynamoDB table "${options.table}" at ${url}`;
    const timeouts = resolveTimeouts(options.timeouts);
    // A provider, not resolved values: the SDK calls it again when temporary credentials near expiry.
    const credentials = sdkCredentials(
      options.credentials === undefined ? noCredentials(this.location) : reportingFailures(options.credentials, this.location),
    );
    this.client = withoutNodeVersionWarning(
      () =>
        new DynamoDBClient({
          ...sdkClientConfig({ service: "lock table", endpoint: parsed.url, region: options.region, credentials, timeouts }),
          // Discovery would send requests to whatever addresses the server lists.
          endpointDiscoveryEnabled: false,
          accountIdEndpointMode: "disabled",
        }),
    );
    armClient(this.client, { service: "lock table", endpoint: parsed.url, timeouts });
  }

  async describeKeySchema(): Promise<KeyAttribute[] | null> {
    const table = await this.describeTable();
    return table === null ? null : keySchemaOf(table);
  }

  /** Create the table (on-demand billing) and wait until it is ACTIVE; an existing table is left as it is. */
  async createTable(): Promise<void> {
    try {
      await this.client.send(
        new CreateTableCommand({
          TableName: this.table,
          AttributeDefinitions: [{ AttributeName: KEY, AttributeType: "S" }],
          KeySchema: [{ AttributeName: KEY, KeyType: "HASH" }],
          BillingMode: "PAY_PER_REQUEST",
        }),
      );
    } catch (e) {
      // Someone else created it (or is creating it): still wait for ACTIVE below.
      if (sdkErrorName(e) !== "ResourceInUseException") throw this.mapError(e, "create");
    }
    await this.waitUntilActive();
  }

  async putIfAbsent(id: string, attr: string, value: string): Promise<string | null> {
    for (let round = 0; round < PUT_IF_ABSENT_ROUNDS; round++) {
      const blocking = await this.tryPutIfAbsent(id, attr, value);
      if (blocking === undefined) return null;
      if (blocking !== null) return stringAttr(blocking, attr) ?? "";
      // The blocking item was deleted before we could read it: the slot may be free now.
    }
    throw new ObjstateError("LOCK_TABLE_ERROR", `item "${id}" in ${this.location} kept appearing and vanishing; gave up writing it`);
  }

  async get(id: string, attr: string): Promise<string | null> {
    const item = await this.getItem(id);
    return item === null ? null : stringAttr(item, attr);
  }

  async put(id: string, attr: string, value: string): Promise<void> {
    try {
      await this.client.send(new PutItemCommand({ TableName: this.table, Item: itemOf(id, attr, value) }));
    } catch (e) {
      throw this.mapError(e, `write item "${id}" in`);
    }
  }

  async updateIf(id: string, attr: string, expected: string | null, set: Readonly<Record<string, string>>): Promise<boolean> {
    const names: Record<string, string> = { "#c": attr };
    const values: Record<string, AttributeValue> = expected === null ? {} : { ":c": { S: expected } };
    const assignments = Object.entries(set).map(([k, v], i) => {
      names[`#s${i}`] = k;
      values[`:s${i}`] = { S: v };
      return `#s${i} = :s${i}`;
    });
    if (assignments.length === 0) {
      // The condition alone, read as the UpdateItem below would judge it: an absent item
      // fails it even when `expected` is null (it "lacks" the attribute, but does not exist).
      const item = await this.getItem(id);
      if (item === null) return false;
      return expected === null ? item[attr] === undefined : stringAttr(item, attr) === expected;
    }
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { [KEY]: { S: id } },
          // attribute_exists: an update would otherwise create the item.
          ConditionExpression: expected === null ? `attribute_exists(${KEY}) AND attribute_not_exists(#c)` : `attribute_exists(${KEY}) AND #c = :c`,
          UpdateExpression: `SET ${assignments.join(", ")}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (e) {
      if (isConditionalFailure(e)) return false;
      throw this.mapError(e, `update item "${id}" in`);
    }
  }

  async deleteIf(id: string, attr: string, expected: string): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: { [KEY]: { S: id } },
          ConditionExpression: "#a = :v",
          ExpressionAttributeNames: { "#a": attr },
          ExpressionAttributeValues: { ":v": { S: expected } },
        }),
      );
      return true;
    } catch (e) {
      if (isConditionalFailure(e)) return false;
      throw this.mapError(e, `delete item "${id}" from`);
    }
  }

  async delete(id: string): Promise<void> {
    try {
      await this.client.send(new DeleteItemCommand({ TableName: this.table, Key: { [KEY]: { S: id } } }));
    } catch (e) {
      throw this.mapError(e, `delete item "${id}" from`);
    }
  }

  async putLease(id: string, info: string, expires: number | undefined, nowSec: number): Promise<LeaseItem | null> {
    const item: Record<string, AttributeValue> = { [KEY]: { S: id }, Info: { S: info }, ...(expires === undefined ? {} : { Expires: { N: String(expires) } }) };
    for (let round = 0; round < PUT_IF_ABSENT_ROUNDS; round++) {
      try {
        await this.client.send(
          new PutItemCommand({
            TableName: this.table,
            Item: item,
            // A missing Expires makes the comparison false: the tool's own locks never qualify.
            ConditionExpression: `attribute_not_exists(${KEY}) OR #e < :now`,
            ExpressionAttributeNames: { "#e": "Expires" },
            ExpressionAttributeValues: { ":now": { N: String(nowSec) } },
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          }),
        );
        return null;
      } catch (e) {
        if (!isConditionalFailure(e)) throw this.mapError(e, `write lock item "${id}" in`);
        const blocking = e.Item ?? (await this.getItem(id));
        if (blocking !== null) return leaseOf(blocking);
      }
    }
    throw new ObjstateError("LOCK_TABLE_ERROR", `item "${id}" in ${this.location} kept appearing and vanishing; gave up writing it`);
  }

  async getLease(id: string): Promise<LeaseItem | null> {
    const item = await this.getItem(id);
    return item === null ? null : leaseOf(item);
  }

  async renewLease(id: string, expectedInfo: string, info: string, expires: number): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { [KEY]: { S: id } },
          ConditionExpression: `attribute_exists(${KEY}) AND Info = :old`,
          UpdateExpression: "SET Info = :info, #e = :exp",
          ExpressionAttributeNames: { "#e": "Expires" },
          ExpressionAttributeValues: { ":old": { S: expectedInfo }, ":info": { S: info }, ":exp": { N: String(expires) } },
        }),
      );
      return true;
    } catch (e) {
      if (isConditionalFailure(e)) return false;
      throw this.mapError(e, `renew lock item "${id}" in`);
    }
  }

  async getDigest(id: string): Promise<DigestItem | null> {
    const item = await this.getItem(id);
    return item === null ? null : digestOf(item);
  }

  async commitDigest(id: string, seen: DigestItem | null, next: DigestCommit): Promise<boolean> {
    const names: Record<string, string> = { "#d": "Digest", "#g": "Generation", "#l": "CommitLockID" };
    const values: Record<string, AttributeValue> = { ":nd": { S: next.digest }, ":ng": { N: String(next.generation) } };
    const sets = ["#d = :nd", "#g = :ng"];
    if (next.lockId !== undefined) {
      values[":nl"] = { S: next.lockId };
      sets.push("#l = :nl");
    }
    Object.entries(next.set ?? {}).forEach(([k, v], i) => {
      names[`#s${i}`] = k;
      values[`:s${i}`] = { S: v };
      sets.push(`#s${i} = :s${i}`);
    });
    let condition: string;
    if (seen === null) condition = `attribute_not_exists(${KEY})`;
    else {
      const digest = seen.digest === null ? "attribute_not_exists(#d)" : "#d = :od";
      if (seen.digest !== null) values[":od"] = { S: seen.digest };
      // No Generation: an item of an older objstate, or one the tool's own backend replaced.
      const generation = seen.generation === 0 ? "attribute_not_exists(#g)" : "#g = :og";
      if (seen.generation !== 0) values[":og"] = { N: String(seen.generation) };
      condition = `attribute_exists(${KEY}) AND ${digest} AND ${generation}`;
    }
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { [KEY]: { S: id } },
          ConditionExpression: condition,
          UpdateExpression: `SET ${sets.join(", ")}${next.lockId === undefined ? " REMOVE #l" : ""}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return true;
    } catch (e) {
      if (!isConditionalFailure(e)) throw this.mapError(e, `commit digest item "${id}" in`);
      // Servers that do not return the item with the failure (dynalite) cost one read.
      const now = e.Item ?? (await this.getItem(id));
      return now !== null && isCommit(digestOf(now), next);
    }
  }

  async *scanAttr(attr: string): AsyncIterable<{ readonly id: string; readonly value: string; readonly expires: number | undefined }> {
    for await (const item of this.scanAttrs([attr])) yield { id: item.id, value: item.values[attr] as string, expires: item.expires };
  }

  async *scanAttrs(attrs: readonly string[]): AsyncIterable<ScannedItem> {
    let start: Record<string, AttributeValue> | undefined;
    const names = Object.fromEntries(attrs.map((a, i) => [`#a${i}`, a]));
    do {
      let out;
      try {
        out = await this.client.send(
          new ScanCommand({
            TableName: this.table,
            ConsistentRead: true,
            FilterExpression: attrs.map((_, i) => `attribute_exists(#a${i})`).join(" OR "),
            // Only what is asked for: digest items carry release records and notes too.
            ProjectionExpression: ["#k", "#e", ...attrs.map((_, i) => `#a${i}`)].join(", "),
            ExpressionAttributeNames: { ...names, "#k": KEY, "#e": "Expires" },
            ExclusiveStartKey: start,
          }),
        );
      } catch (e) {
        throw this.mapError(e, "scan");
      }
      for (const item of out.Items ?? []) {
        const id = item[KEY]?.S;
        const values: Record<string, string> = {};
        for (const a of attrs) {
          const v = stringAttr(item, a);
          if (v !== null) values[a] = v;
        }
        if (id !== undefined && Object.keys(values).length > 0) yield { id, values, expires: leaseOf(item).expires };
      }
      start = out.LastEvaluatedKey;
    } while (start !== undefined);
  }

  close(): void {
    this.client.destroy();
  }

  /**
   * One conditional write. Returns undefined when written, the blocking item when one
   * exists, or null when the condition failed but the item is gone by the time we look.
   */
  private async tryPutIfAbsent(id: string, attr: string, value: string): Promise<Record<string, AttributeValue> | null | undefined> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: itemOf(id, attr, value),
          ConditionExpression: `attribute_not_exists(${KEY})`,
          // AWS returns the blocking item with the failure; servers that ignore this
          // (dynalite 4 does) cost one extra consistent read below.
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return undefined;
    } catch (e) {
      if (!isConditionalFailure(e)) throw this.mapError(e, `write item "${id}" in`);
      return e.Item ?? (await this.getItem(id));
    }
  }

  private async getItem(id: string): Promise<Record<string, AttributeValue> | null> {
    try {
      const out = await this.client.send(new GetItemCommand({ TableName: this.table, Key: { [KEY]: { S: id } }, ConsistentRead: true }));
      return out.Item ?? null;
    } catch (e) {
      throw this.mapError(e, `read item "${id}" from`);
    }
  }

  /**
   * DescribeTable, waiting (up to {@link CREATING_WAIT_MS}) while the table is still being
   * created: such a table already has its key schema but refuses items as if it did not
   * exist, so using it at once would report a table that is there as missing.
   */
  private async describeTable(): Promise<TableDescription | null> {
    const deadline = Date.now() + CREATING_WAIT_MS;
    for (let delay = 100; ; delay = Math.min(delay * 2, 1_000)) {
      const table = await this.describeTableOnce();
      if (table?.TableStatus !== "CREATING") return table;
      if (Date.now() + delay > deadline) {
        throw new ObjstateError(
          "TABLE_NOT_READY",
          `${this.location} is still being created (status CREATING after ${CREATING_WAIT_MS / 1000} s): try again once it is ACTIVE`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private async describeTableOnce(): Promise<TableDescription | null> {
    try {
      const out = await this.client.send(new DescribeTableCommand({ TableName: this.table }));
      return out.Table ?? null;
    } catch (e) {
      if (sdkErrorName(e) === "ResourceNotFoundException") return null;
      throw this.mapError(e, "describe");
    }
  }

  private async waitUntilActive(): Promise<void> {
    const deadline = Date.now() + ACTIVE_TIMEOUT_MS;
    for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
      const table = await this.describeTableOnce();
      if (table?.TableStatus === "ACTIVE") return;
      if (Date.now() + delay > deadline) {
        throw new ObjstateError(
          "LOCK_TABLE_ERROR",
          `${this.location} did not become ACTIVE within ${ACTIVE_TIMEOUT_MS / 1000} s (status ${table?.TableStatus ?? "absent"})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private mapError(e: unknown, action: string): ObjstateError {
    return toObjstateError(e, action, this.location);
  }
}

/**
 * Translate an SDK or socket error into an {@link ObjstateError} whose message names the
 * action and the table. Server text is kept only where it cannot echo request headers.
 * @internal exported for tests.
 */
export function toObjstateError(e: unknown, action: string, location: string): ObjstateError {
  if (e instanceof ObjstateError) return e;
  const name = sdkErrorName(e) ?? "Error";
  const verb = `could not ${action} ${location}`;
  if (name === "ResourceNotFoundException") {
    return new ObjstateError("TABLE_NOT_FOUND", `${verb}: the table does not exist (create it, or check kvstoreTable and the region)`, { cause: e });
  }
  if (isAccessDenied(e)) {
    // Server messages for signature errors quote the Authorization header: never copy them.
    return new ObjstateError("ACCESS_DENIED", `${verb}: access denied (${name}); check the credentials and their permissions on the table`, { cause: e });
  }
  if (isTlsToPlainHttp(e)) {
    return new ObjstateError("ENDPOINT_PLAIN_HTTP", `${verb}: ${plainHttpAdvice(endpointOf(location))}`, { cause: e });
  }
  if (isForeignAnswer(e)) {
    const status = sdkHttpStatus(e);
    return new ObjstateError(
      "ENDPOINT_NOT_DYNAMODB",
      `${verb}: the endpoint does not speak the DynamoDB API (its answer${status === undefined ? "" : `, HTTP ${status},`} is not a DynamoDB response); check kvstoreEndpoint: is it the object store's (S3) endpoint?`,
      { cause: e },
    );
  }
  const net = networkFailure(e);
  if (net !== undefined) {
    return new ObjstateError("ENDPOINT_UNREACHABLE", `${verb}: the endpoint did not answer (${net}); check kvstoreEndpoint and that the server is running`, {
      cause: e,
    });
  }
  return new ObjstateError("LOCK_TABLE_ERROR", `${verb}: ${name}: ${redact(firstLine(sdkErrorMessage(e)))}`, { cause: e });
}

/** The URL in a location such as `DynamoDB table "t" at https://host:port`. */
function endpointOf(location: string): string {
  return / at (\S+)$/.exec(location)?.[1] ?? location;
}

/** One line of a server's or the SDK's message, without JSON.parse's quote of a body it could not parse. */
function firstLine(message: string): string {
  return (message.split("\n")[0] ?? "").replace(/, (?:\.\.\.)?".*" is not valid JSON$/, "").trim();
}

function keySchemaOf(table: TableDescription): KeyAttribute[] {
  const types = new Map((table.AttributeDefinitions ?? []).map((d) => [d.AttributeName, d.AttributeType]));
  return (table.KeySchema ?? []).map((k) => ({
    name: k.AttributeName ?? "",
    type: types.get(k.AttributeName) ?? "",
    keyType: k.KeyType ?? "",
  }));
}

function itemOf(id: string, attr: string, value: string): Record<string, AttributeValue> {
  return { [KEY]: { S: id }, [attr]: { S: value } };
}

/** Only string attributes count: the lock table holds nothing else (types.ts). */
function leaseOf(item: Record<string, AttributeValue>): LeaseItem {
  const n = item["Expires"]?.N ?? item["Expires"]?.S;
  const expires = n === undefined ? undefined : Number(n);
  return { info: stringAttr(item, "Info") ?? "", expires: expires !== undefined && Number.isFinite(expires) ? expires : undefined };
}

/** `Generation` is a Number (a String written by hand counts too); absent or unreadable is 0. */
function digestOf(item: Record<string, AttributeValue>): DigestItem {
  const g = item["Generation"]?.N ?? item["Generation"]?.S;
  const generation = g === undefined ? 0 : Number(g);
  return {
    digest: stringAttr(item, "Digest"),
    generation: Number.isSafeInteger(generation) && generation > 0 ? generation : 0,
    lockId: stringAttr(item, "CommitLockID") ?? undefined,
  };
}

/** Does the item already hold this commit (made by a retry's first attempt, or by an adopter)? */
function isCommit(item: DigestItem, next: DigestCommit): boolean {
  return item.digest?.trim().toLowerCase() === next.digest && item.generation === next.generation;
}

function stringAttr(item: Record<string, AttributeValue>, attr: string): string | null {
  const v = item[attr];
  return v !== undefined && "S" in v && typeof v.S === "string" ? v.S : null;
}

/** Without our own provider the SDK would search env, files and the instance metadata service. */
function noCredentials(location: string): CredentialsProvider {
  return () =>
    Promise.reject(
      new ObjstateError("ACCESS_DENIED", `no credentials for ${location}: set accessKey/secretKey (or their environment variables), a profile or a role`),
    );
}

/**
 * Still a provider the SDK calls whenever it needs credentials (so refresh works), but a
 * failure becomes ACCESS_DENIED naming the table, and a foreign error's message, which
 * may quote what it was given, stays out of ours (it is kept as the cause).
 */
function reportingFailures(provider: CredentialsProvider, location: string): CredentialsProvider {
  return async () => {
    try {
      return await provider();
    } catch (e) {
      if (e instanceof ObjstateError) throw e;
      throw new ObjstateError("ACCESS_DENIED", `could not get credentials for ${location} (${sdkErrorName(e) ?? "Error"})`, { cause: e });
    }
  };
}

/** By name, not instanceof: the SDK may be loaded twice (CJS and ESM copies). */
function isConditionalFailure(e: unknown): e is ConditionalCheckFailedException {
  return sdkErrorName(e) === "ConditionalCheckFailedException";
}

/** Belt and braces: strip anything that looks like signing material from server text. */
function redact(message: string): string {
  return message
    .replace(/Authorization=.*/gs, "Authorization=[redacted]")
    .replace(/(Credential|Signature|X-Amz-Security-Token|X-Amz-Credential|X-Amz-Signature)=[^\s,]+/g, "$1=[redacted]");
}
