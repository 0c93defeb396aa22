/** The fault proxy itself, in front of a tiny loopback HTTP server. */
import assert from "node:assert/strict";
import { Agent, createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { startFaultProxy, type FaultProxy } from "../../support/fault-proxy.js";
import { listenLow } from "../../support/port.js";

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly remotePort: number;
}

interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe("fault proxy", () => {
  let upstream: Server;
  let upstreamUrl: string;
  const seen: Seen[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });

  before(async () => {
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body, remotePort: req.socket.remotePort ?? 0 });
        res.setHeader("x-upstream", "yes");
        res.writeHead(req.url === "/missing" ? 404 : 200, { "content-type": "text/plain" });
        res.end(`echo:${req.method} ${req.url} ${body}`);
      });
    });
    await listenLow(upstream);
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });
  after(async () => {
    agent.destroy();
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  /** One request through `proxy`; rejects on a socket error (a lost reply). */
  function send(
    proxy: FaultProxy,
    method: string,
    path: string,
    body = "",
    headers: Record<string, string> = {},
    viaAgent: Agent | false = agent,
  ): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const u = new URL(proxy.url);
      const req = request({ host: u.hostname, port: u.port, method, path, headers, agent: viaAgent }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    });
  }

  async function withProxy(fn: (p: FaultProxy) => Promise<void>): Promise<void> {
    const p = await startFaultProxy(upstreamUrl);
    try {
      await fn(p);
    } finally {
      await p.close();
    }
  }

  it("forwards method, path, every header (Host too) and body; relays status, headers and body; keeps connections alive", async () => {
    await withProxy(async (p) => {
      seen.length = 0;
      const host = new URL(p.url).host;
      const big = "x".repeat(200_000);
      const r = await send(p, "PUT", "/bucket/key?versionId=1&x=%2F", big, {
        "x-amz-date": "20260101T000000Z",
        authorization: "AWS4-HMAC-SHA256 sig",
        "x-amz-target": "Svc.Op",
      });
      assert.equal(r.status, 200);
      assert.equal(r.headers["x-upstream"], "yes");
      assert.equal(r.body, `echo:PUT /bucket/key?versionId=1&x=%2F ${big}`);
      const s = seen[0] as Seen;
      assert.equal(s.method, "PUT");
      assert.equal(s.url, "/bucket/key?versionId=1&x=%2F");
      assert.equal(s.headers.host, host, "the upstream must see the Host the client signed for");
      assert.equal(s.headers["x-amz-date"], "20260101T000000Z");
      assert.equal(s.headers.authorization, "AWS4-HMAC-SHA256 sig");
      assert.equal(s.body, big);
      const missing = await send(p, "GET", "/missing");
      assert.equal(missing.status, 404);
      assert.equal((seen[1] as Seen).remotePort, s.remotePort, "the upstream connection was not kept alive");
      assert.deepEqual(
        p.log.map((e) => [e.method, e.path, e.target, e.outcome, e.held]),
        [
          ["PUT", "/bucket/key?versionId=1&x=%2F", "Svc.Op", 200, false],
          ["GET", "/missing", undefined, 404, false],
        ],
      );
    });
  });

  it("pause holds every request and forwards none; resume forwards them in order", async () => {
    await withProxy(async (p) => {
      seen.length = 0;
      p.pause();
      const replies = [send(p, "POST", "/a", "1", {}, false), send(p, "POST", "/b", "2", {}, false)];
      await p.waitFor({ path: "/b" });
      await sleep(100);
      assert.equal(seen.length, 0, "a paused proxy forwarded a request");
      assert.equal(p.heldCount(), 2);
      await p.resume();
      const [a, b] = await Promise.all(replies);
      assert.equal(a?.body, "echo:POST /a 1");
      assert.equal(b?.body, "echo:POST /b 2");
      assert.deepEqual(
        seen.map((s) => s.url),
        ["/a", "/b"],
      );
      assert.ok(p.log.every((e) => e.held && e.outcome === 200));
      assert.equal(p.heldCount(), 0);
      assert.equal((await send(p, "GET", "/after")).status, 200, "resume did not clear pause");
    });
  });

  it("a held request whose client died is still served on resume, like a stopped gateway's socket buffer", async () => {
    await withProxy(async (p) => {
      seen.length = 0;
      p.pause();
      const u = new URL(p.url);
      const req = request({ host: u.hostname, port: u.port, method: "PUT", path: "/stale", agent: false });
      req.on("error", () => undefined);
      req.end("old write");
      await p.waitFor({ path: "/stale" });
      req.destroy();
      await sleep(50);
      await p.resume();
      assert.deepEqual(
        seen.map((s) => [s.url, s.body]),
        [["/stale", "old write"]],
      );
      const [e] = p.find({ path: "/stale" });
      assert.equal(e?.outcome, 200);
      assert.equal(e?.clientGone, true);
    });
  });

  it("stall holds only matching requests (method, path, target, body) until resume", async () => {
    await withProxy(async (p) => {
      seen.length = 0;
      p.stall({ method: "POST", target: "DynamoDB_20120810.PutItem", body: '"Digest"' });
      const stalled = send(p, "POST", "/", '{"Item":{"Digest":{"S":"x"}}}', { "x-amz-target": "DynamoDB_20120810.PutItem" }, false);
      const other = await send(p, "POST", "/", '{"Item":{"Info":{"S":"x"}}}', { "x-amz-target": "DynamoDB_20120810.PutItem" }, false);
      assert.equal(other.status, 200);
      const get = await send(p, "POST", "/", '{"Key":{}}', { "x-amz-target": "DynamoDB_20120810.GetItem" }, false);
      assert.equal(get.status, 200);
      await sleep(100);
      assert.equal(seen.length, 2);
      assert.ok(!seen.some((s) => s.body.includes("Digest")));
      assert.equal(p.heldCount(), 1);
      await p.resume();
      assert.equal((await stalled).body, 'echo:POST / {"Item":{"Digest":{"S":"x"}}}');
      assert.equal(seen.length, 3);
    });
  });

  it("dropReplyOnce lets the upstream finish, then cuts the client off without a reply, once", async () => {
    await withProxy(async (p) => {
      seen.length = 0;
      const dropped = p.dropReplyOnce({ target: "DynamoDB_20120810.DeleteItem" });
      const lost = send(p, "POST", "/", "delete me", { "x-amz-target": "DynamoDB_20120810.DeleteItem" });
      await assert.rejects(lost, (e: NodeJS.ErrnoException) => e.code === "ECONNRESET" || /socket hang up/.test(e.message));
      const entry = await dropped;
      assert.equal(entry.outcome, "dropped");
      assert.deepEqual(
        seen.map((s) => s.body),
        ["delete me"],
        "the upstream did not get the request whose reply was dropped",
      );
      const again = await send(p, "POST", "/", "delete me", { "x-amz-target": "DynamoDB_20120810.DeleteItem" });
      assert.equal(again.status, 200, "the drop applied to more than one request");
      assert.equal(seen.length, 2);
    });
  });

  it("dropReplyOnce with a body rule skips requests whose body does not match", async () => {
    await withProxy(async (p) => {
      seen.length = 0;
      void p.dropReplyOnce({ target: "DynamoDB_20120810.PutItem", body: '"Info"' });
      const digest = await send(p, "POST", "/", '{"Digest":1}', { "x-amz-target": "DynamoDB_20120810.PutItem" }, false);
      assert.equal(digest.status, 200);
      await assert.rejects(send(p, "POST", "/", '{"Info":1}', { "x-amz-target": "DynamoDB_20120810.PutItem" }, false));
      assert.deepEqual(
        p.log.map((e) => e.outcome),
        [200, "dropped"],
      );
    });
  });

  it("throttle answers the next matching requests with DynamoDB's ThrottlingException, forwarding none, after a pending drop", async () => {
    await withProxy(async (p) => {
      seen.length = 0;
      const put = { "x-amz-target": "DynamoDB_20120810.PutItem" };
      void p.dropReplyOnce({ target: "DynamoDB_20120810.PutItem" });
      p.throttle({ target: "DynamoDB_20120810.PutItem" }, 2);
      await assert.rejects(send(p, "POST", "/", "first", put, false));
      for (const body of ["second", "third"]) {
        const r = await send(p, "POST", "/", body, put, false);
        assert.equal(r.status, 400);
        assert.match(r.body, /#ThrottlingException"/);
      }
      assert.equal((await send(p, "POST", "/", "fourth", put, false)).status, 200, "throttled more often than asked");
      p.throttle({ target: /PutItem/ });
      assert.equal((await send(p, "POST", "/", "fifth", put, false)).status, 400);
      p.unthrottle();
      assert.equal((await send(p, "POST", "/", "sixth", put, false)).status, 200);
      assert.deepEqual(
        seen.map((x) => x.body),
        ["first", "fourth", "sixth"],
      );
    });
  });

  it("refuses an upstream that is not loopback http", async () => {
    await assert.rejects(startFaultProxy("http://example.com:80"), /loopback http only/);
    await assert.rejects(startFaultProxy("https://127.0.0.1:1"), /loopback http only/);
  });
});
