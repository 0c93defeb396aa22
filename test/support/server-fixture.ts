/** `objstate serve` in process on 127.0.0.1 (a free port) for the server's tests. */
import type { ObjectStoreBackend } from "../../src/index.js";
import { Logger } from "../../src/server/log.js";
import { ObjstateServer, type ServerOptions } from "../../src/server/server.js";
import { withLowPort } from "./port.js";

/**
 * A server over `backend`, silent unless `extra` gives a logger; pushed onto `started` (when
 * given) so the suite's `after` can close it.
 */
export async function startServer(backend: ObjectStoreBackend, extra: Partial<ServerOptions> = {}, started?: ObjstateServer[]): Promise<ObjstateServer> {
  const s = new ObjstateServer({ backend, logger: new Logger("off"), ...extra });
  await withLowPort((port) => s.listen("127.0.0.1", port));
  started?.push(s);
  return s;
}
