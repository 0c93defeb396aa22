/** A loopback stand-in for the compute metadata service, for the credentials tests. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { listenLow } from "./port.js";

export interface RoleAnswer {
  /** HTTP status (default 200). */
  readonly status?: number;
  /** JSON body (default: a Success answer with the given keys). */
  readonly body?: unknown;
  /** Delay before answering, ms. */
  readonly delayMs?: number;
  /** Exact body bytes instead of `JSON.stringify(body)` (for non-JSON and oversized answers). */
  readonly raw?: string | Buffer;
  /** Extra response headers (e.g. `location` for a redirect). */
  readonly headers?: Record<string, string>;
}

export interface MetadataServer {
  readonly url: string;
  /** Paths requested so far. */
  readonly requests: string[];
  close(): Promise<void>;
}

/** Serve `roles[name]` at /latest/meta-data/ram/security-credentials/{name}; anything else is 404. */
export async function startMetadataServer(roles: Record<string, RoleAnswer>): Promise<MetadataServer> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? "");
    const m = /^\/latest\/meta-data\/ram\/security-credentials\/([^/]+)$/.exec(req.url ?? "");
    const answer = m === null ? undefined : roles[decodeURIComponent(m[1] as string)];
    const send = (): void => {
      if (answer === undefined) {
        res.writeHead(404).end("not found");
        return;
      }
      res.writeHead(answer.status ?? 200, { "content-type": "application/json", ...answer.headers }).end(answer.raw ?? JSON.stringify(answer.body));
    };
    if (answer?.delayMs !== undefined) setTimeout(send, answer.delayMs);
    else send();
  });
  await listenLow(server);
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A Success answer carrying the given keys, expiring in `seconds`. */
export function success(accessKeyId: string, secret: string, seconds = 3600, token = "metadata-token"): RoleAnswer {
  return {
    body: {
      Code: "Success",
      AccessKeyId: accessKeyId,
      AccessKeySecret: secret,
      SecurityToken: token,
      Expiration: new Date(Date.now() + seconds * 1000).toISOString(),
    },
  };
}
