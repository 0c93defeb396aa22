/**
 * Opens the object-store driver an endpoint calls for (docs/design.md §2). The S3 driver is loaded
 * on demand: the AWS SDK takes a noticeable time to import, and `file:` users never need it.
 */
import { parsedEndpoint } from "../io/endpoint.js";
import type { ObjectStoreDriver, StoreDriverOptions } from "./types.js";

export type { S3DriverOptions, WireRequest } from "./s3.js";

/**
 * The driver for `options.endpoint`: the FileDriver for `file:` endpoints, the S3 driver
 * for `http(s)://` endpoints and bare hosts. Pass `S3DriverOptions` to set its extra hooks.
 * @throws ObjstateError `INVALID_ENDPOINT` when the endpoint cannot be understood.
 */
export async function openStore(options: StoreDriverOptions): Promise<ObjectStoreDriver> {
  const endpoint = parsedEndpoint(options.endpoint, options.cwd);
  // Drivers load on demand: importing the package for configs and synthesis stays cheap.
  if (endpoint.kind === "file") return new (await import("./file.js")).FileDriver({ ...options, endpoint });
  const { S3Driver } = await import("./s3.js");
  return new S3Driver({ ...options, endpoint });
}
