/** Opening a lock table: the driver is chosen by the endpoint's scheme (docs/design.md §2). */
import { parsedEndpoint } from "../io/endpoint.js";
import type { LockDriverOptions, LockTableDriver } from "./types.js";

export type { KeyAttribute, LockDriverOptions, LockTableDriver, ScannedItem } from "./types.js";

/**
 * `file:` → the embedded table in a local directory, `http(s)://` or a bare host → the DynamoDB
 * API. Nothing is sent until the first call on the driver; the drivers load on demand, so that
 * programs that only build configs (or use the embedded table) never load the AWS SDK.
 * @throws ObjstateError `INVALID_ENDPOINT` when the endpoint cannot be interpreted.
 */
export async function openLockTable(options: LockDriverOptions): Promise<LockTableDriver> {
  const endpoint = parsedEndpoint(options.endpoint, options.cwd);
  if (endpoint.kind === "file") return new (await import("./file.js")).FileLockTable({ ...options, endpoint });
  return new (await import("./dynamodb.js")).DynamoDbLockTable({ ...options, endpoint });
}
