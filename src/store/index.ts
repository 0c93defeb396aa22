/** Opens the object-store driver an endpoint calls for (docs/design.md §2). */
import { parsedEndpoint } from "../io/endpoint.js";
import type { ObjectStoreDriver, StoreDriverOptions } from "./types.js";

export type { S3DriverOptions, WireRequest } from "./s3.js";

/**
 * The FileDriver for `file:` endpoints, the S3 driver for `http(s)://` and bare hosts (pass
 * `S3DriverOptions` for its hooks). Both load on demand: the AWS SDK takes long to import.
 * @throws ObjstateError `INVALID_ENDPOINT` when the endpoint cannot be understood.
 */
export async function openStore(options: StoreDriverOptions): Promise<ObjectStoreDriver> {
  const endpoint = parsedEndpoint(options.endpoint, options.cwd);
  if (endpoint.kind === "file") return new (await import("./file.js")).FileDriver({ ...options, endpoint });
  return new (await import("./s3.js")).S3Driver({ ...options, endpoint });
}
