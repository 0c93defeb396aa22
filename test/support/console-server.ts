/**
 * A test server for the console: node:http on 127.0.0.1, HTTP Basic users with roles,
 * mounting `handleConsole` over a given {@link ConsoleApi}. Stands in for `objstate serve`
 * until that lands.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { CsrfTokens } from "../../src/console/csrf.js";
import { handleConsole } from "../../src/console/handler.js";
import type { ConsoleApi, ConsoleLogEntry, ConsoleRole } from "../../src/console/types.js";

/** Test users: password = name. */
export const USERS: Readonly<Record<string, readonly ConsoleRole[]>> = {
  admin: ["read", "write", "lock", "force", "admin"],
  operator: ["read", "write", "lock", "force"],
  reader: ["read"],
};

export interface ConsoleTestServer {
  readonly url: string;
  readonly log: ConsoleLogEntry[];
  readonly server: Server;
  close(): Promise<void>;
}

export function basic(user: string): string {
  return `Basic ${Buffer.from(`${user}:${user}`).toString("base64")}`;
}

export async function startConsoleServer(api: ConsoleApi, options: { pollMs?: number; csrf?: CsrfTokens } = {}): Promise<ConsoleTestServer> {
  const log: ConsoleLogEntry[] = [];
  const csrf = options.csrf ?? new CsrfTokens();
  const server = createServer((req, res) => {
    const m = /^Basic (.+)$/.exec(req.headers.authorization ?? "");
    const [user, pass] = m === null ? [] : Buffer.from(m[1] as string, "base64").toString("utf8").split(":");
    const roles = user === undefined ? undefined : USERS[user];
    if (roles === undefined || pass !== user) {
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="objstate"' }).end();
      return;
    }
    const ctx = { user: user as string, can: (role: ConsoleRole) => roles.includes(role), log: (e: ConsoleLogEntry) => log.push(e), api, csrf, pollMs: options.pollMs };
    handleConsole(req, res, ctx).then(
      (handled) => {
        if (!handled) res.writeHead(404, { "Content-Type": "text/plain" }).end("not the console's\n");
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
