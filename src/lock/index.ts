/**
 * Opening a lock table: the driver is chosen by the endpoint's scheme (docs/design.md §2).
 * The DynamoDB driver is imported on demand, so programs that only use the embedded
 * table (or no locking at all) never load the AWS SDK.
 */
import { parsedEndpoint } from "../io/endpoint.js";
import type { LockDriverOptions, LockTableDriver } from "./types.js";

export type { KeyAttribute, LockDriverOptions, LockTableDriver, ScannedItem } from "./types.js";

/**
 * Open the lock table `options.table` at `options.endpoint`: `file:` → the embedded
 * table in a local directory, `http(s)://` or a bare host → the DynamoDB API.
 * Nothing is sent over the network until the first call on the driver.
 *
 * @throws ObjstateError `INVALID_ENDPOINT` when the endpoint cannot be interpreted.
 */
export async function openLockTable(options: LockDriverOptions): Promise<LockTableDriver> {
  const endpoint = parsedEndpoint(options.endpoint, options.cwd);
  // Drivers load on demand: importing the package for configs and synthesis stays cheap.
  if (endpoint.kind === "file") return new (await import("./file.js")).FileLockTable({ ...options, endpoint });
  const { DynamoDbLockTable } = await import("./dynamodb.js");
  return new DynamoDbLockTable({ ...options, endpoint });
}
