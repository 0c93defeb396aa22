/**
 * Listening ports for tests and benches. Port 0 would give an ephemeral port (32768 and up
 * here), where the machine's own outgoing connections live; tests instead take a random port
 * in 20000-32767, which avoids the ranges the server scripts use (13300-13399, 16800-16899,
 * 17480-17599, 19000-19999), and try another when it is in use (other suites run at once).
 */
import { createServer, type AddressInfo, type Server } from "node:net";

export const LOW_PORT_MIN = 20000;
export const LOW_PORT_MAX = 32767;
const ATTEMPTS = 100;

/** A random port of the test range (not known to be free: see {@link withLowPort}). */
export function randomLowPort(): number {
  return LOW_PORT_MIN + Math.floor(Math.random() * (LOW_PORT_MAX - LOW_PORT_MIN + 1));
}

/** `e` is, or wraps (an ObjstateError's cause), an address-in-use failure. */
export function isAddressInUse(e: unknown): boolean {
  for (let c = e, depth = 0; c !== undefined && c !== null && depth < 5; depth++) {
    if ((c as NodeJS.ErrnoException).code === "EADDRINUSE") return true;
    if (c instanceof Error && /EADDRINUSE|port \d+ is in use/.test(c.message)) return true;
    c = (c as { cause?: unknown }).cause;
  }
  return false;
}

/** Run `listen(port)` with random ports of the test range until one is not in use. */
export async function withLowPort<T>(listen: (port: number) => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await listen(randomLowPort());
    } catch (e) {
      if (!isAddressInUse(e) || i >= ATTEMPTS) throw e;
    }
  }
}

/** `server.listen` on a free port of the test range; resolves with that port. */
export function listenLow(server: Server, host = "127.0.0.1"): Promise<number> {
  return withLowPort(
    (port) =>
      new Promise<number>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          resolve((server.address() as AddressInfo).port);
        });
      }),
  );
}

/**
 * A port of the test range that was free a moment ago, for a child process to listen on
 * (`--listen 127.0.0.1:PORT`). Another process may take it first: callers that start a
 * server with it retry on address-in-use through {@link withLowPort} where they can.
 */
export async function freeLowPort(host = "127.0.0.1"): Promise<number> {
  const probe = createServer();
  const port = await listenLow(probe, host);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
