/**
 * Loopback servers that stall, for the deadline tests: one accepts connections and never
 * answers (a stopped gateway, a full disk); one sends the status line and headers and
 * part of a body, then nothing more.
 */
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { listenLow } from "./port.js";

export interface StalledServer {
  readonly url: string;
  /** Connections accepted so far. */
  readonly connections: () => number;
  close(): Promise<void>;
}

async function listen(server: Server | HttpServer): Promise<string> {
  await listenLow(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Accepts every connection, reads what comes, and never writes a byte. */
export async function silentServer(): Promise<StalledServer> {
  const sockets = new Set<Socket>();
  let count = 0;
  const server = createServer((s) => {
    count += 1;
    sockets.add(s);
    s.on("data", () => undefined);
    s.on("error", () => undefined);
    s.on("close", () => sockets.delete(s));
  });
  const url = await listen(server);
  return {
    url,
    connections: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Answers 200 with the given headers and a `Content-Length` of `length`, sends `prefix`
 * of the body, and then stalls.
 */
export async function stallingBodyServer(headers: Record<string, string>, prefix: string, length = 4096): Promise<StalledServer> {
  let count = 0;
  const server = createHttpServer((req, res) => {
    count += 1;
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { ...headers, "content-length": String(length), date: new Date().toUTCString() });
      res.write(prefix);
    });
  });
  const url = await listen(server);
  return {
    url,
    connections: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
