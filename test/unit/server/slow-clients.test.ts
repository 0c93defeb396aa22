/**
 * Slow clients and connection caps of an in-process `objstate serve` over the embedded
 * store: the minimum body rate on every route (also after the answer), uploads that keep
 * moving are never cut, /healthz under 300 slow connections, caps per address and in all.
 * Clients bind to other loopback addresses (Linux routes all of 127.0.0.0/8 to lo).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { connect as netConnect, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer, type ServerOptions } from "../../../src/server/server.js";
import { addressGroup } from "../../../src/server/address.js";
import { HttpBackendClient, toolState } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { startServer } from "../../support/server-fixture.js";

/** A raw connection from `localAddress`, resolved once connected. */
function open(url: string, localAddress = "127.0.0.1"): Promise<Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = netConnect({ port: Number(u.port), host: u.hostname, localAddress }, () => resolve(sock));
    sock.once("error", reject);
  });
}

/**
 * Send `head` and wait: resolves with the status line of the answer, or "closed" when the
 * server closed the connection without one.
 */
function ask(sock: Socket, head: string): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    const onData = (d: Buffer): void => {
      got += d.toString("latin1");
      const line = /^(HTTP\/1\.1 \d{3})[^\r]*\r\n/.exec(got);
      if (line !== null) finish(line[1] as string);
    };
    const onClose = (): void => finish(got === "" ? "closed" : got.slice(0, 12));
    const finish = (v: string): void => {
      sock.off("data", onData);
      sock.off("close", onClose);
      resolve(v);
    };
    sock.on("data", onData);
    sock.once("close", onClose);
    sock.on("error", () => undefined);
    sock.write(head);
  });
}

/**
 * Send `head`, then a body of `length` bytes one byte every `everyMs`. Resolves with the
 * status line the server answered (if any) and whether it closed the connection before the
 * whole body was sent.
 */
function drip(url: string, head: string, length: number, everyMs: number): Promise<{ status: string | undefined; closedEarly: boolean }> {
  return open(url).then(
    (sock) =>
      new Promise((resolve) => {
        let got = "";
        let sent = 0;
        let closed = false;
        const finish = (): void => {
          clearInterval(timer);
          sock.destroy();
          resolve({ status: /^HTTP\/1\.1 \d{3}/.exec(got)?.[0], closedEarly: closed && sent < length });
        };
        sock.on("data", (d) => (got += d.toString("latin1")));
        sock.on("error", () => undefined);
        sock.once("close", () => {
          closed = true;
          finish();
        });
        sock.write(head);
        const timer = setInterval(() => {
          if (closed) return;
          sock.write(" ");
          sent += 1;
          if (sent === length) finish();
        }, everyMs);
      }),
  );
}

describe("objstate serve: slow clients and connection caps", () => {
  let backend: ObjectStoreBackend;
  const servers: ObjstateServer[] = [];
  // Slow bodies, not locks: writes without ?ID are the shortest requests with a body.
  const start = (extra: Partial<ServerOptions> = {}): Promise<ObjstateServer> => startServer(backend, { allowUnlockedWrites: true, ...extra }, servers);

  before(async () => {
    const config = ObjectStoreBackendConfig.from(await embeddedTarget().setup({ locks: true }));
    backend = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined });
  });
  after(async () => {
    for (const s of servers) await s.close(200);
    backend.close();
  });

  it("a body dripped a byte at a time, each byte inside the client timeout, is dropped with 408 and nothing is stored", async () => {
    const s = await start({ clientTimeoutMs: 400 });
    const ws = uniqueName("ws");
    // A per-chunk idle timer would wait for all 20 bytes (one every 300 ms < 400 ms).
    const r = await drip(s.url, `POST /state/${ws} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{`, 19, 300);
    assert.equal(r.status, "HTTP/1.1 408");
    assert.ok(r.closedEarly, "the connection was closed before the body was complete");
    assert.equal(await backend.readState(ws), null);
  });

  for (const path of ["/healthz", "/readyz", "/metrics"]) {
    it(`GET ${path} with a dripped body: answered, then the connection is dropped before the body ends (not kept while node:http discards it)`, async () => {
      const s = await start({ clientTimeoutMs: 400 });
      const r = await drip(s.url, `GET ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 20\r\n\r\n`, 20, 300);
      assert.equal(r.status, "HTTP/1.1 200");
      assert.ok(r.closedEarly, "the dripping connection was dropped");
    });
  }

  it("uploads on a slow link that keeps moving are never cut, however long they take (a rate, not a deadline)", async () => {
    const s = await start({ clientTimeoutMs: 600 });
    const ws = uniqueName("ws");
    // 16 KiB every 40 ms: ~1 s for 400 KiB, longer than the client timeout.
    const state = toolState(1, "slow-link", { pad: { value: "s".repeat(400 * 1024), type: "string" } });
    const sock = await open(s.url);
    const md5 = createHash("md5").update(state).digest("base64");
    const answered = ask(
      sock,
      `POST /state/${ws} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-MD5: ${md5}\r\nContent-Length: ${state.length}\r\n\r\n`,
    );
    for (let at = 0; at < state.length; at += 16 * 1024) {
      sock.write(state.subarray(at, at + 16 * 1024));
      await new Promise((r) => setTimeout(r, 40));
    }
    assert.equal(await answered, "HTTP/1.1 200");
    assert.deepEqual(await backend.readState(ws), state);
    // A route that does not read its body: node:http discards it while it moves, the connection lives on.
    const head = `GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${state.length}\r\n\r\n`;
    assert.equal(await ask(sock, head), "HTTP/1.1 200");
    for (let at = 0; at < state.length; at += 16 * 1024) {
      sock.write(state.subarray(at, at + 16 * 1024));
      await new Promise((r) => setTimeout(r, 40));
    }
    assert.equal(await ask(sock, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"), "HTTP/1.1 200", "the same connection serves the next request");
    sock.destroy();
  });

  it("/healthz answers 127.0.0.1 while 300 slow connections from other loopback addresses are open (default caps)", async () => {
    const s = await start();
    const slow: Socket[] = [];
    try {
      for (let i = 0; i < 300; i++) {
        const sock = await open(s.url, `127.0.0.${2 + (i % 30)}`);
        sock.on("error", () => undefined);
        // Half stall in their headers, half in their bodies.
        sock.write(
          i % 2 === 0
            ? "GET /healthz HTTP/1.1\r\nHost: localhost\r\n"
            : `POST /state/${uniqueName("ws")} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"ver`,
        );
        slow.push(sock);
      }
      const sock = await open(s.url, "127.0.0.1");
      assert.equal(await ask(sock, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"), "HTTP/1.1 200");
      sock.destroy();
      assert.equal(slow.filter((c) => c.destroyed || c.readableEnded).length, 0, "the slow connections were all still open");
    } finally {
      for (const c of slow) c.destroy();
    }
  });

  it("a connection over the per-address cap is closed at once, while another address is served; a freed place is taken again", async () => {
    const s = await start({ maxConnectionsPerClient: 4 });
    const held: Socket[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        const sock = await open(s.url, "127.0.0.2");
        assert.equal(await ask(sock, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"), "HTTP/1.1 200");
        held.push(sock);
      }
      const over = await open(s.url, "127.0.0.2");
      assert.equal(await ask(over, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"), "closed");
      const other = await open(s.url, "127.0.0.3");
      assert.equal(await ask(other, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"), "HTTP/1.1 200");
      other.destroy();
      // The held ones still work; one closed frees its place (once the server has seen it go).
      assert.equal(await ask(held[0] as Socket, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"), "HTTP/1.1 200");
      (held.shift() as Socket).destroy();
      let again = "closed";
      for (let attempt = 0; attempt < 50 && again === "closed"; attempt++) {
        await new Promise((r) => setTimeout(r, 20));
        const sock = await open(s.url, "127.0.0.2");
        again = await ask(sock, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
        held.push(sock);
      }
      assert.equal(again, "HTTP/1.1 200");
    } finally {
      for (const c of held) c.destroy();
    }
  });

  it("at the total cap, connections that never complete a request from a few addresses make room: legitimate clients are answered", async () => {
    const s = await start({ maxConnections: 6, maxConnectionsPerClient: 2 });
    const slow: Socket[] = [];
    try {
      // Three addresses fill the cap: each one connection stalled in its headers, one trickling its body.
      for (let a = 2; a <= 4; a++) {
        for (const head of [
          "GET /healthz HTTP/1.1\r\nHost: localhost\r\n",
          `POST /state/${uniqueName("ws")} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"ver`,
        ]) {
          const sock = await open(s.url, `127.0.0.${a}`);
          sock.on("error", () => undefined);
          sock.write(head);
          slow.push(sock);
        }
      }
      for (const a of [10, 11, 12]) {
        const sock = await open(s.url, `127.0.0.${a}`);
        assert.equal(await ask(sock, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"), "HTTP/1.1 200", `a client from 127.0.0.${a}`);
        slow.push(sock);
      }
    } finally {
      for (const c of slow) c.destroy();
    }
  });

  it("at the total cap, a connection is closed at once when every open one is answering a whole request; refusals are counted in a warn line", async () => {
    const lines: string[] = [];
    const s = await start({ maxConnections: 3, clientTimeoutMs: 400, logger: new Logger("warn", (l) => lines.push(l)) });
    const ws = uniqueName("ws");
    // Larger than what the kernel and the client's stream buffer: an answer to a client that stops reading never finishes.
    await backend.writeState(ws, toolState(1, "big", { pad: { value: "b".repeat(32 * 1024 * 1024), type: "string" } }));
    const held: Socket[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const sock = await open(s.url, `127.0.0.${10 + i}`);
        sock.on("error", () => undefined);
        const started = new Promise((resolve) => sock.once("data", resolve));
        sock.write(`GET /state/${ws} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
        await started;
        sock.pause();
        held.push(sock);
      }
      const over = await open(s.url, "127.0.0.20");
      assert.equal(await ask(over, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"), "closed");
      // The sweep reports what it counted (every 100 ms with this timeout).
      for (let i = 0; i < 100 && !lines.some((l) => l.includes("refused")); i++) await new Promise((r) => setTimeout(r, 20));
      const report = JSON.parse(lines.find((l) => l.includes("refused")) ?? "{}") as Record<string, unknown>;
      assert.deepEqual([report["level"], report["refusedOverCaps"], report["maxConnections"]], ["warn", 1, 3]);
      assert.ok(!lines.some((l) => l.includes("127.0.0.")), "no address in the log");
    } finally {
      for (const c of held) c.destroy();
    }
  });

  it("the tool's client still works through the guard (keep-alive, LOCK, POST, UNLOCK)", async () => {
    const s = await start({ maxConnectionsPerClient: 2, clientTimeoutMs: 500 });
    const c = new HttpBackendClient({ bases: [s.url], workspace: uniqueName("ws") });
    assert.ok((await c.lock("OperationTypeApply")).ok);
    assert.equal((await c.put(toolState(1, "guarded"))).status, 200);
    assert.equal((await c.unlock()).status, 200);
  });

  it("a cap below 1 is refused when the server is made (node would read 0 as no cap)", () => {
    for (const extra of [{ maxConnections: 0 }, { maxConnectionsPerClient: 0.5 }]) {
      assert.throws(
        () => new ObjstateServer({ backend, logger: new Logger("off"), ...extra }),
        (e: Error & { code?: string }) => e.code === "INVALID_LIMIT" && /at least 1/.test(e.message),
      );
    }
  });

  it("clients are counted by IPv4 address and by IPv6 /64", () => {
    assert.equal(addressGroup("127.0.0.2"), "127.0.0.2");
    assert.equal(addressGroup("::ffff:10.1.2.3"), "10.1.2.3");
    assert.equal(addressGroup("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
    assert.equal(addressGroup("2001:db8:1:2:bbbb:cccc:dddd:eeee"), "2001:db8:1:2::/64");
    assert.equal(addressGroup("2001:db8::1"), "2001:db8:0:0::/64");
    assert.equal(addressGroup("::1"), "0:0:0:0::/64");
    assert.equal(addressGroup("fe80::1%eth0"), "fe80:0:0:0::/64");
  });
});
