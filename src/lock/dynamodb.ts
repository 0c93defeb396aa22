/** The lock table over the DynamoDB API (docs/design.md §5); reads are strongly consistent, as lock decisions need. */
import {
  BatchGetItemCommand,
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
  type PutItemCommandInput,
  type TableDescription,
} from "@aws-sdk/client-dynamodb";
import { setTimeout as sleep } from "node:timers/promises";
import { sdkCredentials } from "../io/sdk-credentials.js";
import { ObjstateError, type ErrorCode } from "../errors.js";
import { endpointOfKind, plainHttpAdvice } from "../io/endpoint.js";
import { displayUrl, newSdkClient, resolveTimeouts } from "../io/sdk-client.js";
import { isAccessDenied, isForeignAnswer, isTlsToPlainHttp, networkFailure, sdkErrorMessage, sdkErrorName, sdkHttpStatus } from "../io/sdk-errors.js";
import { redactText } from "../util/redact.js";
import { digestOf, isCommit, ItemReads, KEY, leaseOf, vanishing, type ItemText } from "./types.js";
import type { DigestCommit, DigestItem, KeyAttribute, LeaseItem, LockDriverOptions, LockTableDriver, ScannedItem } from "./types.js";

/** How long createTable waits for the table to become ACTIVE. */
const ACTIVE_TIMEOUT_MS = 5 * 60_000;
/** How long a connect waits for a table that someone else is still creating. */
const CREATING_WAIT_MS = 30_000;
/** More rounds of "exists, then gone" than this means something deletes and re-creates the item in a loop. */
const PUT_IF_ABSENT_ROUNDS = 20;

/** Most keys in one BatchGetItem (the API's limit). */
const BATCH_READ_MAX = 100;

type Item = Record<string, AttributeValue>;
interface Settle {
  resolve(item: Item | null): void;
  reject(e: unknown): void;
}

export class DynamoDbLockTable extends ItemReads implements LockTableDriver {
  readonly kind = "dynamodb";
  readonly location: string;
  private readonly table: string;
  private readonly client: DynamoDBClient;
  private reads: Map<string, Promise<Item | null> & Settle> | undefined;

  /** @throws ObjstateError `INVALID_ENDPOINT` */
  constructor(options: LockDriverOptions) {
    super();
    const parsed = endpointOfKind(options.endpoint, "http", "the DynamoDB lock table", options.cwd);
    this.table = options.table;
    this.location = `DynamoDB table "${options.table}" at ${displayUrl(parsed.url)}`;
    const timeouts = resolveTimeouts(options.timeouts);
    // A provider, not resolved values, so that refresh works; without ours the SDK would search env, files and the metadata service.
    const missing = `no credentials for ${this.location}: set accessKey/secretKey (or their environment variables), a profile or a role`;
    const credentials = sdkCredentials(options.credentials ?? (() => Promise.reject(new ObjstateError("ACCESS_DENIED", missing))), (e) => {
      if (e instanceof ObjstateError) throw e;
      // A foreign error's message may quote what it was given: kept as the cause only.
      throw new ObjstateError("ACCESS_DENIED", `could not get credentials for ${this.location} (${sdkErrorName(e) ?? "Error"})`, { cause: e });
    });
    const target = { service: "lock table" as const, endpoint: parsed.url, region: options.region, credentials, timeouts };
    // Discovery would send requests to whatever addresses the server lists.
    this.client = newSdkClient(target, (c) => new DynamoDBClient({ ...c, endpointDiscoveryEnabled: false, accountIdEndpointMode: "disabled" }));
  }

  async describeKeySchema(): Promise<KeyAttribute[] | null> {
    const table = await this.describeTable();
    if (table === null) return null;
    const types = new Map((table.AttributeDefinitions ?? []).map((d) => [d.AttributeName, d.AttributeType]));
    return (table.KeySchema ?? []).map((k) => ({ name: k.AttributeName ?? "", type: types.get(k.AttributeName) ?? "", keyType: k.KeyType ?? "" }));
  }

  /** On-demand billing; waits for ACTIVE. */
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
    const deadline = Date.now() + ACTIVE_TIMEOUT_MS;
    for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
      const table = await this.describeTableOnce();
      if (table?.TableStatus === "ACTIVE") return;
      if (Date.now() + delay > deadline) {
        const status = table?.TableStatus ?? "absent";
        throw new ObjstateError("LOCK_TABLE_ERROR", `${this.location} did not become ACTIVE within ${ACTIVE_TIMEOUT_MS / 1000} s (status ${status})`);
      }
      await sleep(delay);
    }
  }

  async putIfAbsent(id: string, attr: string, value: string): Promise<string | null> {
    const put = { Item: { [KEY]: { S: id }, [attr]: { S: value } }, ConditionExpression: `attribute_not_exists(${KEY})` };
    const blocking = await this.putOrAnswer(id, put, `write item "${id}" in`);
    return blocking === null ? null : (blocking[attr]?.S ?? "");
  }

  async put(id: string, attr: string, value: string): Promise<void> {
    const item = { [KEY]: { S: id }, [attr]: { S: value } };
    await this.call(`write item "${id}" in`, () => this.client.send(new PutItemCommand({ TableName: this.table, Item: item })));
  }

  async updateIf(id: string, attr: string, expected: string | null, set: Readonly<Record<string, string>>): Promise<boolean> {
    if (Object.keys(set).length === 0) {
      // The condition alone, as UpdateItem judges it: an absent item fails even with `expected` null.
      const item = await this.getItem(id);
      if (item === null) return false;
      return expected === null ? item[attr] === undefined : item[attr]?.S === expected;
    }
    return this.update(id, attr, expected, strings(set), `update item "${id}" in`);
  }

  async deleteIf(id: string, attr: string, expected: string): Promise<boolean> {
    const command = new DeleteItemCommand({
      TableName: this.table,
      Key: { [KEY]: { S: id } },
      ConditionExpression: "#a = :v",
      ExpressionAttributeNames: { "#a": attr },
      ExpressionAttributeValues: { ":v": { S: expected } },
    });
    return this.conditional(`delete item "${id}" from`, () => this.client.send(command));
  }

  async delete(id: string): Promise<void> {
    await this.call(`delete item "${id}" from`, () => this.client.send(new DeleteItemCommand({ TableName: this.table, Key: { [KEY]: { S: id } } })));
  }

  async putLease(id: string, info: string, expires: number | undefined, nowSec: number): Promise<LeaseItem | null> {
    const put = {
      Item: { [KEY]: { S: id }, Info: { S: info }, ...(expires === undefined ? {} : { Expires: { N: String(expires) } }) },
      // A missing Expires makes the comparison false: the tool's own locks never qualify.
      ConditionExpression: `attribute_not_exists(${KEY}) OR #e < :now`,
      ExpressionAttributeNames: { "#e": "Expires" },
      ExpressionAttributeValues: { ":now": { N: String(nowSec) } },
    };
    const blocking = await this.putOrAnswer(id, put, `write lock item "${id}" in`);
    return blocking === null ? null : leaseOf(textOf(blocking));
  }

  async renewLease(id: string, expectedInfo: string, info: string, expires: number): Promise<boolean> {
    return this.update(id, "Info", expectedInfo, { Info: { S: info }, Expires: { N: String(expires) } }, `renew lock item "${id}" in`);
  }

  async commitDigest(id: string, seen: DigestItem | null, next: DigestCommit): Promise<boolean> {
    const { names, values, sets } = assignments(strings(next.set ?? {}));
    Object.assign(names, { "#d": "Digest", "#g": "Generation", "#l": "CommitLockID" });
    Object.assign(values, { ":nd": { S: next.digest }, ":ng": { N: String(next.generation) } });
    sets.push("#d = :nd", "#g = :ng");
    if (next.lockId !== undefined) {
      values[":nl"] = { S: next.lockId };
      sets.push("#l = :nl");
    }
    let condition = `attribute_not_exists(${KEY})`;
    if (seen !== null) {
      if (seen.digest !== null) values[":od"] = { S: seen.digest };
      // No Generation: an item of an older objstate, or one the tool's own backend replaced.
      if (seen.generation !== 0) values[":og"] = { N: String(seen.generation) };
      const digest = seen.digest === null ? "attribute_not_exists(#d)" : "#d = :od";
      condition = `attribute_exists(${KEY}) AND ${digest} AND ${seen.generation === 0 ? "attribute_not_exists(#g)" : "#g = :og"}`;
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
      return isCommit(now === null ? null : digestOf(textOf(now)), next);
    }
  }

  async *scanAttrs(attrs: readonly string[]): AsyncIterable<ScannedItem> {
    let start: Item | undefined;
    const names = Object.fromEntries(attrs.map((a, i) => [`#a${i}`, a]));
    do {
      const scan = new ScanCommand({
        TableName: this.table,
        ConsistentRead: true,
        FilterExpression: attrs.map((_, i) => `attribute_exists(#a${i})`).join(" OR "),
        // Only what is asked for: digest items carry release records and notes too.
        ProjectionExpression: ["#k", "#e", ...attrs.map((_, i) => `#a${i}`)].join(", "),
        ExpressionAttributeNames: { ...names, "#k": KEY, "#e": "Expires" },
        ExclusiveStartKey: start,
      });
      const out = await this.call("scan", () => this.client.send(scan));
      for (const item of out.Items ?? []) {
        const id = item[KEY]?.S;
        const values = Object.fromEntries(attrs.flatMap((a) => (item[a]?.S === undefined ? [] : [[a, item[a].S]])));
        if (id !== undefined && Object.keys(values).length > 0) yield { id, values, expires: leaseOf(textOf(item)).expires };
      }
      start = out.LastEvaluatedKey;
    } while (start !== undefined);
  }

  close(): void {
    this.client.destroy();
  }

  private async call<T>(action: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      throw this.mapError(e, action);
    }
  }

  /** See {@link LockTableDriver.updateIf}. */
  private async update(id: string, attr: string, expected: string | null, set: Item, action: string): Promise<boolean> {
    const { names, values, sets } = assignments(set);
    names["#c"] = attr;
    if (expected !== null) values[":c"] = { S: expected };
    const command = new UpdateItemCommand({
      TableName: this.table,
      Key: { [KEY]: { S: id } },
      // attribute_exists: an update would otherwise create the item.
      ConditionExpression: `attribute_exists(${KEY}) AND ${expected === null ? "attribute_not_exists(#c)" : "#c = :c"}`,
      UpdateExpression: `SET ${sets.join(", ")}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
    return this.conditional(action, () => this.client.send(command));
  }

  /** False when its condition failed. */
  private async conditional(action: string, run: () => Promise<unknown>): Promise<boolean> {
    try {
      await run();
      return true;
    } catch (e) {
      if (isConditionalFailure(e)) return false;
      throw this.mapError(e, action);
    }
  }

  /** A conditional put: null when written, else the blocking item (tried again when it is gone by the time we look). */
  private async putOrAnswer(id: string, put: Omit<PutItemCommandInput, "TableName">, action: string): Promise<Item | null> {
    for (let round = 0; round < PUT_IF_ABSENT_ROUNDS; round++) {
      try {
        // AWS returns the blocking item with the failure; servers that ignore this (dynalite) cost one read.
        await this.client.send(new PutItemCommand({ TableName: this.table, ...put, ReturnValuesOnConditionCheckFailure: "ALL_OLD" }));
        return null;
      } catch (e) {
        if (!isConditionalFailure(e)) throw this.mapError(e, action);
        const blocking = e.Item ?? (await this.getItem(id));
        if (blocking !== null) return blocking;
      }
    }
    throw vanishing(id, this.location);
  }

  protected async readText(id: string): Promise<ItemText | null> {
    const item = await this.getItem(id);
    return item === null ? null : textOf(item);
  }

  /** Reads asked for in one turn of the event loop go out together, as one strongly consistent BatchGetItem (a server's requests share them). */
  private getItem(id: string): Promise<Item | null> {
    let batch = this.reads;
    if (batch === undefined) {
      batch = this.reads = new Map();
      setImmediate(() => {
        this.reads = undefined;
        void this.readBatch(batch as Map<string, Promise<Item | null> & Settle>);
      });
    }
    const known = batch.get(id);
    if (known !== undefined) return known;
    let settle: Settle | undefined;
    const p = new Promise<Item | null>((resolve, reject) => (settle = { resolve, reject }));
    batch.set(id, Object.assign(p, settle as Settle));
    return p;
  }

  private async readBatch(batch: Map<string, Promise<Item | null> & Settle>): Promise<void> {
    const ids = [...batch.keys()];
    for (let i = 0; i < ids.length; i += BATCH_READ_MAX) {
      const chunk = ids.slice(i, i + BATCH_READ_MAX);
      const one = (id: string): Promise<Item | null> =>
        this.call(`read item "${id}" from`, () =>
          this.client.send(new GetItemCommand({ TableName: this.table, Key: { [KEY]: { S: id } }, ConsistentRead: true })),
        ).then((o) => o.Item ?? null);
      let found = new Map<string, Item | null>();
      try {
        if (chunk.length === 1) found.set(chunk[0] as string, await one(chunk[0] as string));
        else {
          const keys = chunk.map((id) => ({ [KEY]: { S: id } }));
          const out = await this.client.send(new BatchGetItemCommand({ RequestItems: { [this.table]: { Keys: keys, ConsistentRead: true } } }));
          found = new Map(chunk.map((id) => [id, null]));
          for (const item of out.Responses?.[this.table] ?? []) found.set(item[KEY]?.S ?? "", item);
          // Keys the server left unprocessed (throttled) are read one by one.
          for (const k of out.UnprocessedKeys?.[this.table]?.Keys ?? []) found.set(k[KEY]?.S ?? "", await one(k[KEY]?.S ?? ""));
        }
      } catch (e) {
        for (const id of chunk) batch.get(id)?.reject(this.mapError(e, `read item "${id}" from`));
        continue;
      }
      for (const id of chunk) batch.get(id)?.resolve(found.get(id) ?? null);
    }
  }

  /** DescribeTable, waiting while the table is CREATING: it has its key schema but refuses items as if absent. */
  private async describeTable(): Promise<TableDescription | null> {
    const deadline = Date.now() + CREATING_WAIT_MS;
    for (let delay = 100; ; delay = Math.min(delay * 2, 1_000)) {
      const table = await this.describeTableOnce();
      if (table?.TableStatus !== "CREATING") return table;
      if (Date.now() + delay > deadline) {
        const waited = `status CREATING after ${CREATING_WAIT_MS / 1000} s`;
        throw new ObjstateError("TABLE_NOT_READY", `${this.location} is still being created (${waited}): try again once it is ACTIVE`);
      }
      await sleep(delay);
    }
  }

  private async describeTableOnce(): Promise<TableDescription | null> {
    try {
      return (await this.client.send(new DescribeTableCommand({ TableName: this.table }))).Table ?? null;
    } catch (e) {
      if (sdkErrorName(e) === "ResourceNotFoundException") return null;
      throw this.mapError(e, "describe");
    }
  }

  private mapError(e: unknown, action: string): ObjstateError {
    return toObjstateError(e, action, this.location);
  }
}

/**
 * An SDK or socket error as an {@link ObjstateError} naming the action and the table. Server
 * text is kept only where it cannot echo request headers. @internal exported for tests.
 */
export function toObjstateError(e: unknown, action: string, location: string): ObjstateError {
  if (e instanceof ObjstateError) return e;
  const name = sdkErrorName(e) ?? "Error";
  const verb = `could not ${action} ${location}`;
  const error = (code: ErrorCode, why: string): ObjstateError => new ObjstateError(code, `${verb}: ${why}`, { cause: e });
  if (name === "ResourceNotFoundException") return error("TABLE_NOT_FOUND", "the table does not exist (create it, or check kvstoreTable and the region)");
  // Server messages for signature errors quote the Authorization header: never copy them.
  if (isAccessDenied(e)) return error("ACCESS_DENIED", `access denied (${name}); check the credentials and their permissions on the table`);
  if (isTlsToPlainHttp(e)) return error("ENDPOINT_PLAIN_HTTP", plainHttpAdvice(/ at (\S+)$/.exec(location)?.[1] ?? location));
  if (isForeignAnswer(e)) {
    const status = sdkHttpStatus(e) === undefined ? "" : `, HTTP ${sdkHttpStatus(e)},`;
    const why = `the endpoint does not speak the DynamoDB API (its answer${status} is not a DynamoDB response)`;
    return error("ENDPOINT_NOT_DYNAMODB", `${why}; check kvstoreEndpoint: is it the object store's (S3) endpoint?`);
  }
  const net = networkFailure(e);
  if (net !== undefined) return error("ENDPOINT_UNREACHABLE", `the endpoint did not answer (${net}); check kvstoreEndpoint and that the server is running`);
  // One line, without JSON.parse's quote of a body it could not parse.
  const line = (sdkErrorMessage(e).split("\n")[0] ?? "").replace(/, (?:\.\.\.)?".*" is not valid JSON$/, "").trim();
  return error("LOCK_TABLE_ERROR", `${name}: ${redactText(line)}`);
}

function textOf(item: Item): ItemText {
  return Object.fromEntries(Object.entries(item).map(([k, v]) => [k, v.S ?? v.N]));
}

function strings(set: Readonly<Record<string, string>>): Item {
  return Object.fromEntries(Object.entries(set).map(([k, v]) => [k, { S: v }]));
}

/** `SET` assignments, with their placeholder names and values. */
function assignments(set: Item): { names: Record<string, string>; values: Item; sets: string[] } {
  const names: Record<string, string> = {};
  const values: Item = {};
  const sets = Object.entries(set).map(([k, v], i) => {
    names[`#s${i}`] = k;
    values[`:s${i}`] = v;
    return `#s${i} = :s${i}`;
  });
  return { names, values, sets };
}

/** By name, not instanceof: the SDK may be loaded twice (CJS and ESM copies). */
function isConditionalFailure(e: unknown): e is ConditionalCheckFailedException {
  return sdkErrorName(e) === "ConditionalCheckFailedException";
}
