/**
 * serve's safety rules are the server's: an ObjstateServer made in code refuses what
 * `objstate serve` refuses (off loopback without users or public URLs, half a TLS pair, a
 * lease, no lock table, a port in use), before binding, with the same code and message.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { connect as netConnect, createServer as createNetServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { ERROR_CODES } from "../../../src/error-codes.js";
import { isObjstateError, type ObjstateError } from "../../../src/errors.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer, type ServerOptions } from "../../../src/server/server.js";
import { parseUsers } from "../../../src/server/users.js";
import { runCli } from "../../support/cli.js";
import { listenLow, withLowPort } from "../../support/port.js";

/** Fixed ports of this file (this engineer's range): nothing may listen on them after a refusal. */
const PORTS = [28431, 28432, 28433];
const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-safety-"));
const endpoint = pathToFileURL(join(cwd, "s")).href;
const STORE = ["--bucket", "safety", "--endpoint", "file:./s", "--kvstore-endpoint", "file:./s", "--kvstore-table", "locks"];
const opened: ObjectStoreBackend[] = [];

async function backendOf(locks: boolean, ttl?: number): Promise<ObjectStoreBackend> {
  const props = { bucket: "safety", endpoint, ...(locks ? { kvstoreEndpoint: endpoint, kvstoreTable: "locks" } : {}) };
  const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined, ttl });
  opened.push(b);
  return b;
}

/** The error the server gives, from its constructor or its listen; a server that listens is closed at once and fails the test. */
async function refusal(options: ServerOptions, host: string, port: number): Promise<ObjstateError> {
  let server: ObjstateServer | undefined;
  try {
    server = new ObjstateServer({ logger: new Logger("off"), ...options });
    await server.listen(host, port);
  } catch (e) {
    assert.ok(isObjstateError(e), String(e));
    return e;
  }
  await server.close(0);
  assert.fail(`the server listened on ${host}:${port}`);
}

/** True when a connection to the port on loopback is refused: nothing listens there. */
function nothingListens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ port, host: "127.0.0.1" }, () => {
      s.destroy();
      resolve(false);
    });
    s.on("error", (e: NodeJS.ErrnoException) => resolve(e.code === "ECONNREFUSED"));
  });
}

describe("serve's safety rules in ObjstateServer", () => {
  after(() => {
    for (const b of opened) b.close();
  });

  it("listen off loopback without users and without a public URL is AUTH_REQUIRED (then PUBLIC_URL_REQUIRED), before binding", async () => {
    const backend = await backendOf(true);
    const [p0, p1, p2] = PORTS as [number, number, number];
    const noUsers = await refusal({ backend }, "0.0.0.0", p0);
    assert.equal(noUsers.code, "AUTH_REQUIRED");
    assert.match(noUsers.message, /--listen 0\.0\.0\.0:28431 is not a loopback address and there is no --users file/);
    const users = parseUsers('{"users": {}}', "users.json");
    const noUrl = await refusal({ backend, users }, "::", p1);
    assert.equal(noUrl.code, "PUBLIC_URL_REQUIRED");
    assert.equal((await refusal({ backend, insecureNoAuth: true }, "0.0.0.0", p2)).code, "PUBLIC_URL_REQUIRED");
    for (const port of PORTS) assert.equal(await nothingListens(port), true, `something listens on ${port}`);
  });

  it("half a TLS pair is TLS_INCOMPLETE from the constructor: a certificate without its key, a client CA without both", async () => {
    const backend = await backendOf(true);
    const pem = Buffer.from("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n");
    for (const tls of [{ cert: pem }, { key: pem }, { ca: pem }]) {
      assert.throws(
        () => new ObjstateServer({ backend, logger: new Logger("off"), tls }),
        (e: unknown) => isObjstateError(e, "TLS_INCOMPLETE"),
      );
    }
  });

  it("on loopback without users it still starts, and warns as serve does", async () => {
    const server = new ObjstateServer({ backend: await backendOf(true), logger: new Logger("off") });
    const a = await withLowPort((port) => server.listen("127.0.0.1", port));
    try {
      assert.equal((await fetch(`http://127.0.0.1:${a.port}/healthz`)).status, 200);
      assert.deepEqual(
        server.warnings().map(([, code]) => code),
        ["SERVE_NO_USERS"],
      );
    } finally {
      await server.close(0);
    }
  });

  it("the CLI and the class give the same code, message and exit for the same settings", async () => {
    const taken = createNetServer();
    await listenLow(taken);
    const busy = (taken.address() as AddressInfo).port;
    const pem = Buffer.from("pem");
    const locked = (): Promise<ObjectStoreBackend> => backendOf(true);
    const cases: [string[], () => Promise<ServerOptions>, string, number, string][] = [
      [[...STORE, "--listen", "0.0.0.0:28431"], async () => ({ backend: await locked() }), "0.0.0.0", 28431, "AUTH_REQUIRED"],
      [
        [...STORE, "--listen", "0.0.0.0:28432", "--insecure-no-auth"],
        async () => ({ backend: await locked(), insecureNoAuth: true }),
        "0.0.0.0",
        28432,
        "PUBLIC_URL_REQUIRED",
      ],
      [[...STORE, "--tls-cert", "c.pem"], async () => ({ backend: await locked(), tls: { cert: pem } }), "127.0.0.1", 0, "TLS_INCOMPLETE"],
      [[...STORE, "--tls-client-ca", "ca.pem"], async () => ({ backend: await locked(), tls: { ca: pem } }), "127.0.0.1", 0, "TLS_INCOMPLETE"],
      [[...STORE, "--lock-ttl", "10m"], async () => ({ backend: await backendOf(true, 600_000) }), "127.0.0.1", 0, "SERVE_LEASE_UNSUPPORTED"],
      [STORE.slice(0, 4), async () => ({ backend: await backendOf(false) }), "127.0.0.1", 0, "SERVE_NO_LOCKING"],
      [[...STORE, "--listen", `127.0.0.1:${busy}`], async () => ({ backend: await locked() }), "127.0.0.1", busy, "LISTEN_FAILED"],
    ];
    try {
      for (const [args, options, host, port, code] of cases) {
        const e = await refusal(await options(), host, port);
        assert.equal(e.code, code, `${args.join(" ")}: ${e.message}`);
        const listen = args.includes("--listen") ? [] : ["--listen", "127.0.0.1:0"];
        const r = runCli(["serve", ...args, ...listen, "--log-level", "off"], { cwd });
        assert.equal(r.code, ERROR_CODES[e.code].exit, `${args.join(" ")}: ${r.stderr}`);
        assert.ok(r.stderr.includes(`objstate: error: ${e.message}\n`), `${args.join(" ")}: the CLI said ${r.stderr}, the class ${e.message}`);
      }
    } finally {
      taken.close();
    }
  });
});
