/**
 * Body limits, slow clients, the request log and graceful shutdown of an in-process
 * `objstate serve` over the embedded store.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { request } from "node:http";
import { connect as netConnect } from "node:net";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer, type ServerOptions } from "../../../src/server/server.js";
import { hashPassword, parseUsers } from "../../../src/server/users.js";
import { HttpBackendClient, rawRequest, toolState } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { startServer } from "../../support/server-fixture.js";

/** Send raw bytes, resolve with whatever the server answers before it closes (or `ms` pass). */
function rawExchange(url: string, head: string, body: Buffer | undefined, ms: number): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const sock = netConnect(Number(u.port), u.hostname);
    let got = "";
    const done = (): void => {
      clearTimeout(t);
      sock.destroy();
      resolve(got);
    };
    const t = setTimeout(done, ms);
    sock.on("data", (d) => {
      got += d.toString("latin1");
      if (/\r\n\r\n/.test(got)) done();
    });
    sock.on("error", done);
    sock.on("close", done);
    sock.write(head);
    if (body !== undefined) sock.write(body);
  });
}

describe("objstate serve: limits, slow clients, logs, shutdown", () => {
  let backend: ObjectStoreBackend;
  let config: ObjectStoreBackendConfig;
  const servers: ObjstateServer[] = [];
  // Bodies and limits, not locks: writes without ?ID are the shortest requests with a body.
  const start = (extra: Partial<ServerOptions> = {}): Promise<ObjstateServer> => startServer(backend, { allowUnlockedWrites: true, ...extra }, servers);

  before(async () => {
    config = ObjectStoreBackendConfig.from(await embeddedTarget().setup({ locks: true }));
    backend = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined });
  });
  after(async () => {
    for (const s of servers) await s.close(200);
    backend.close();
  });

  it("a body announced above --max-state-size gets 413 before any of it is sent", async () => {
    const s = await start({ maxStateSize: 1024 * 1024 });
    // Headers only: the answer must come without the body ever being sent.
    const answer = await rawExchange(
      s.url,
      `POST /state/default HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${64 * 1024 * 1024}\r\n\r\n`,
      undefined,
      3000,
    );
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.match(answer, /connection: close/i);
  });

  it("a chunked body gets 413 as soon as its count passes the limit, and nothing is stored", async () => {
    const s = await start({ maxStateSize: 1024 });
    const ws = uniqueName("ws");
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${s.url}/state/${ws}`, { method: "POST", headers: { "Content-Type": "application/json" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.write(Buffer.alloc(600, 0x20));
      req.write(Buffer.alloc(600, 0x20));
      // The rest never needs to be sent; the answer arrives first.
      setTimeout(() => req.destroy(), 3000).unref();
    });
    assert.equal(status, 413);
    assert.equal(await new HttpBackendClient({ bases: [s.url], workspace: ws }).get(), null);
  });

  it("a client that stalls in the middle of its body is dropped after --client-timeout, and nothing is stored", async () => {
    const s = await start({ clientTimeoutMs: 300 });
    const ws = uniqueName("ws");
    const started = Date.now();
    const answer = await rawExchange(
      s.url,
      `POST /state/${ws} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`,
      Buffer.from('{"version": 4,'),
      5000,
    );
    assert.ok(Date.now() - started < 3000, "dropped in time");
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.equal(await new HttpBackendClient({ bases: [s.url], workspace: ws }).get(), null);
  });

  it("the 408 of a stalled body goes out even when its audit event takes longer than --client-timeout to store", async () => {
    const slow = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined });
    const auditLog = slow.auditLog.bind(slow);
    // A slow store for the audit objects: each event is stored 900 ms late.
    slow.auditLog = (o) => {
      const log = auditLog(o);
      const record = log.record.bind(log);
      log.record = async (e) => (await new Promise((r) => setTimeout(r, 900)), record(e));
      return log;
    };
    try {
      const s = await startServer(slow, { allowUnlockedWrites: true, clientTimeoutMs: 300 }, servers);
      const ws = uniqueName("ws");
      const head = `POST /state/${ws} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
      const answer = await rawExchange(s.url, head, Buffer.from('{"version": 4,'), 5000);
      assert.match(answer, /^HTTP\/1\.1 408 /);
    } finally {
      slow.close();
    }
  });

  it("a client that stalls in the middle of its headers is dropped after --client-timeout", async () => {
    const s = await start({ clientTimeoutMs: 300 });
    const started = Date.now();
    const answer = await rawExchange(s.url, "GET /state/default HTTP/1.1\r\nHost: localhost\r\n", undefined, 5000);
    assert.ok(Date.now() - started < 3000, `dropped after ${Date.now() - started} ms`);
    assert.match(answer, /^HTTP\/1\.1 408 |^$/);
  });

  it("one JSON line per request with time, method, route, workspace, status, ms, user, bytes — and no password, header or body", async () => {
    const lines: string[] = [];
    const users = parseUsers(
      JSON.stringify({ users: { ci: { password: await hashPassword("Pa55-word-xyz", { N: 1024, r: 8, p: 1 }), roles: { "*": ["read", "write", "lock"] } } } }),
      "users.json",
    );
    const s = await start({ users, logger: new Logger("info", (l) => lines.push(l)) });
    const ws = uniqueName("ws");
    const c = new HttpBackendClient({ bases: [s.url], workspace: ws, username: "ci", password: "Pa55-word-xyz" });
    assert.ok((await c.lock("OperationTypeApply")).ok);
    const body = toolState(1, "logged", { db_password: { value: "TOP-SECRET-VALUE", type: "string", sensitive: true } });
    assert.equal((await c.put(body)).status, 200);
    await c.get();
    assert.equal((await c.unlock()).status, 200);
    await rawRequest(s.url, "GET", "/state/default", undefined, { username: "ci", password: "wrong-Pa55" });
    assert.equal(lines.length, 5);
    const basic = Buffer.from("ci:Pa55-word-xyz").toString("base64");
    for (const line of lines) {
      assert.ok(!line.includes("Pa55") && !line.includes(basic) && !line.includes("TOP-SECRET") && !line.includes("lineage"), line);
      const o = JSON.parse(line) as Record<string, unknown>;
      for (const k of ["time", "level", "method", "route", "status", "ms", "bytesIn", "bytesOut"]) assert.ok(k in o, `${k} in ${line}`);
    }
    const post = JSON.parse(lines[1] as string) as Record<string, unknown>;
    assert.deepEqual(
      [post["method"], post["route"], post["workspace"], post["status"], post["user"], post["bytesIn"]],
      ["POST", "/state/:workspace", ws, 200, "ci", body.length],
    );
    assert.equal((JSON.parse(lines[4] as string) as Record<string, unknown>)["status"], 401);
  });

  it("a large body (hashed in the worker as it arrives) is checked against its Content-MD5 too; a GET's Content-MD5 is the digest the read proved", async () => {
    const s = await start();
    const ws = uniqueName("ws");
    const big = toolState(1, "big", { pad: { value: "z".repeat(6 * 1024 * 1024), type: "string" } });
    const bad = await rawRequest(s.url, "POST", `/state/${ws}`, big, {}, { "Content-MD5": Buffer.alloc(16).toString("base64") });
    assert.equal(bad.status, 400);
    assert.equal(await backend.readState(ws), null);
    assert.equal((await rawRequest(s.url, "POST", `/state/${ws}`, big)).status, 200);
    const read = await backend.readStateVersion(ws);
    assert.equal(read?.md5, createHash("md5").update(big).digest("hex"));
    const got = await rawRequest(s.url, "GET", `/state/${ws}`, undefined);
    assert.equal(got.headers["content-md5"], createHash("md5").update(big).digest("base64"));
  });

  it("close(): new connections are refused, a write in flight completes and is stored", async () => {
    const s = await start();
    const ws = uniqueName("ws");
    const body = toolState(1, "graceful");
    const url = s.url;
    const reply = new Promise<number>((resolve, reject) => {
      const req = request(
        `${url}/state/${ws}`,
        { method: "POST", headers: { "Content-Type": "application/json", "Content-Length": String(body.length) } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.write(body.subarray(0, 10));
      setTimeout(() => req.end(body.subarray(10)), 300);
    });
    await new Promise((r) => setTimeout(r, 100));
    const closing = s.close(5000);
    await assert.rejects(rawRequest(url, "GET", "/healthz", undefined), /ECONNREFUSED/);
    assert.equal(await reply, 200);
    await closing;
    assert.deepEqual(await backend.readState(ws), body);
  });
});
