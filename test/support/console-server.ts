/**
 * Servers for the console's browser tests: `objstate serve` itself ({@link startObjstateConsole},
 * in process, a users file, over an embedded store), and a bare node:http server mounting
 * `handleConsole` over a given {@link ConsoleApi} ({@link startConsoleServer}) for tests of
 * the console alone.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CsrfTokens } from "../../src/console/csrf.js";
import { handleConsole } from "../../src/console/handler.js";
import type { ConsoleApi, ConsoleLogEntry, ConsoleRole } from "../../src/console/types.js";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../src/index.js";
import { Logger } from "../../src/server/log.js";
import { ObjstateServer } from "../../src/server/server.js";
import { hashPassword, loadUsers } from "../../src/server/users.js";
import { embeddedTarget } from "./targets.js";
import { listenLow, withLowPort } from "./port.js";

/** Test users: password = name. */
export const USERS: Readonly<Record<string, readonly ConsoleRole[]>> = {
  admin: ["read", "write", "lock", "force", "admin"],
  operator: ["read", "write", "lock", "force"],
  reader: ["read"],
};

export interface ConsoleTestServer {
  readonly url: string;
  readonly log: ConsoleLogEntry[];
  close(): Promise<void>;
}

export function basic(user: string): string {
  return `Basic ${Buffer.from(`${user}:${user}`).toString("base64")}`;
}

/** `objstate serve` as the browser tests run it. */
export interface ObjstateConsole extends ConsoleTestServer {
  readonly server: ObjstateServer;
  readonly backend: ObjectStoreBackend;
  readonly config: ObjectStoreBackendConfig;
  /** Tokens made with the server's CSRF key (to post as a user would from its page). */
  readonly csrf: CsrfTokens;
}

/**
 * Start an `ObjstateServer` on 127.0.0.1 over a fresh embedded store with a lock table, with
 * a users file written to a temp dir ({@link USERS}, cheap scrypt cost). Its console's
 * action lines are parsed from the server's request log into `log`.
 */
export async function startObjstateConsole(): Promise<ObjstateConsole> {
  const props = await embeddedTarget().setup({ locks: true });
  const config = ObjectStoreBackendConfig.from(props);
  const backend = await ObjectStoreBackend.connect(config, { env: {}, who: "console@server", onWarning: () => {} });
  const entries: Record<string, unknown> = {};
  for (const [name, roles] of Object.entries(USERS)) entries[name] = { password: await hashPassword(name, { N: 1024, r: 8, p: 1 }), roles: { "*": roles } };
  const file = join(mkdtempSync(join(tmpdir(), "objstate-console-users-")), "users.json");
  writeFileSync(file, JSON.stringify({ users: entries }), { mode: 0o600 });
  const log: ConsoleLogEntry[] = [];
  const logger = new Logger("info", (line) => {
    const e = JSON.parse(line) as Record<string, string>;
    if (e["msg"] === "console action")
      log.push({
        user: e["user"] as string,
        action: e["action"] as ConsoleLogEntry["action"],
        workspace: e["workspace"] as string,
        outcome: e["outcome"] as ConsoleLogEntry["outcome"],
        detail: e["detail"] as string,
      });
  });
  const csrfKey = Buffer.alloc(32, 7);
  const server = new ObjstateServer({ backend, users: loadUsers(file), logger, csrfKey });
  await withLowPort((port) => server.listen("127.0.0.1", port));
  return {
    url: server.url,
    log,
    server,
    backend,
    config,
    csrf: new CsrfTokens({ key: csrfKey }),
    close: async () => {
      await server.close(1000);
      backend.close();
    },
  };
}

export async function startConsoleServer(
  api: ConsoleApi,
  options: { pollMs?: number; csrf?: CsrfTokens } = {},
): Promise<ConsoleTestServer & { readonly server: Server }> {
  const log: ConsoleLogEntry[] = [];
  const csrf = options.csrf ?? new CsrfTokens();
  const server = createServer((req, res) => {
    const m = /^Basic (.+)$/.exec(req.headers.authorization ?? "");
    const [user, pass] =
      m === null
        ? []
        : Buffer.from(m[1] as string, "base64")
            .toString("utf8")
            .split(":");
    const roles = user === undefined ? undefined : USERS[user];
    if (roles === undefined || pass !== user) {
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="objstate"' }).end();
      return;
    }
    const ctx = {
      user: user as string,
      can: (role: ConsoleRole) => roles.includes(role),
      log: (e: ConsoleLogEntry) => void log.push(e),
      api,
      csrf,
      pollMs: options.pollMs,
    };
    handleConsole(req, res, ctx).then(
      (handled) => {
        if (!handled) res.writeHead(404, { "Content-Type": "text/plain" }).end("not the console's\n");
      },
      () => res.destroy(),
    );
  });
  await listenLow(server);
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
