/**
 * Auth, roles, failed-login limits, TLS and client certificates of `objstate serve`, in
 * process over the embedded store, on loopback.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { ObjstateServer, type ServerOptions } from "../../../src/server/server.js";
import { hashPassword, parseUsers } from "../../../src/server/users.js";
import { HttpBackendClient, rawRequest, toolState } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { startServer } from "../../support/server-fixture.js";

const CHEAP = { N: 1024, r: 8, p: 1 };
const USERS: Record<string, Record<string, string[]>> = {
  reader: { "*": ["read"] },
  writer: { "*": ["read", "write", "lock"] },
  scribe: { "*": ["read", "write"] },
  rewinder: { "*": ["read", "write", "lock", "force"] },
  forcer: { "*": ["read", "lock", "force"] },
  admin: { "*": ["admin"] },
  scoped: { "staging-*": ["read", "write", "lock"] },
  consumer: { "*": ["outputs"] },
  // `?` matches the name `*`: admin on every one-letter workspace, not on every workspace.
  oneletter: { "?": ["admin"] },
  bystander: { "*": ["read"] },
};
/** Hashed at the default cost (about 50 ms a check), so a burst of guesses arrives while checks run. */
const GUESSED = "guessed";
const pw = (name: string): string => `pw-of-${name}`;

/** `GET /state/default` as `user`, from the local address `local` (any 127/8 address is this host). */
function from(local: string, port: number, user: string, password: string): Promise<{ status: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const auth = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    const req = httpRequest({ host: "127.0.0.1", port, localAddress: local, path: "/state/default", headers: { Authorization: auth }, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"] }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("objstate serve: users, roles, TLS", () => {
  let backend: ObjectStoreBackend;
  let config: ObjectStoreBackendConfig;
  let props: ObjectStoreBackendConfigProps;
  let users: ServerOptions["users"];
  const servers: ObjstateServer[] = [];

  // Roles, not locks: writes without ?ID (refused by default, see server-suite) keep each case short.
  const start = (extra: Partial<ServerOptions> = {}): Promise<ObjstateServer> => startServer(backend, { users, allowUnlockedWrites: true, ...extra }, servers);
  const as = (base: string, user: string, workspace = uniqueName("ws")): HttpBackendClient =>
    new HttpBackendClient({ bases: [base], workspace, username: user, password: pw(user), retries: 0 });

  before(async () => {
    props = await embeddedTarget().setup({ locks: true });
    config = ObjectStoreBackendConfig.from(props);
    backend = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined });
    const entries: Record<string, unknown> = {};
    for (const [name, roles] of Object.entries(USERS)) entries[name] = { password: await hashPassword(pw(name), CHEAP), roles };
    entries[GUESSED] = { password: await hashPassword(pw(GUESSED)), roles: { "*": ["read"] } };
    users = parseUsers(JSON.stringify({ users: entries }), "users.json");
  });
  after(async () => {
    for (const s of servers) await s.close(500);
    backend.close();
  });

  it("no credentials, a wrong password or an unknown user → 401 with a Basic challenge", async () => {
    const s = await start();
    const none = await rawRequest(s.url, "GET", "/state/default", undefined);
    assert.equal(none.status, 401);
    assert.match(String(none.headers["www-authenticate"]), /^Basic /);
    assert.equal((await rawRequest(s.url, "GET", "/state/default", undefined, { username: "writer", password: "nope" })).status, 401);
    assert.equal((await rawRequest(s.url, "GET", "/state/default", undefined, { username: "nobody", password: "x" })).status, 401);
    // Probes stay open for load balancers.
    assert.equal((await rawRequest(s.url, "GET", "/healthz", undefined)).status, 200);
  });

  it("serves the web console at / behind the same users and roles; its actions need a CSRF token and the role", async () => {
    const s = await start();
    assert.equal((await rawRequest(s.url, "GET", "/", undefined)).status, 401);
    const ws = uniqueName("ws");
    const held = await backend.lock(ws, { operation: "apply" });
    try {
      const page = await rawRequest(s.url, "GET", `/workspaces/${ws}`, undefined, { username: "forcer", password: pw("forcer") });
      assert.equal(page.status, 200);
      assert.match(String(page.headers["content-security-policy"]), /default-src 'none'|script-src 'self'/);
      const html = page.body.toString();
      assert.match(html, new RegExp(held.ID));
      const confirmation = (
        await rawRequest(s.url, "GET", `/workspaces/${ws}/force-unlock?id=${held.ID}`, undefined, { username: "forcer", password: pw("forcer") })
      ).body.toString();
      const token = /name="csrf" value="([^"]+)"/.exec(confirmation)?.[1];
      assert.ok(token !== undefined, "the force-unlock confirmation carries a CSRF token");
      const readerPage = (await rawRequest(s.url, "GET", `/workspaces/${ws}`, undefined, { username: "reader", password: pw("reader") })).body.toString();
      assert.doesNotMatch(readerPage, /force-unlock"/, "a read-only user sees no action");
      const form = (fields: Record<string, string>): Buffer => Buffer.from(new URLSearchParams(fields).toString());
      const post = (user: string, fields: Record<string, string>, origin = s.url): ReturnType<typeof rawRequest> =>
        rawRequest(
          s.url,
          "POST",
          `/workspaces/${ws}/force-unlock`,
          form(fields),
          { username: user, password: pw(user) },
          { "Content-Type": "application/x-www-form-urlencoded", Origin: origin },
        );
      assert.equal((await post("forcer", { id: held.ID, csrf: token, confirm: ws }, "https://evil.example")).status, 403, "cross-site");
      assert.equal((await post("forcer", { id: held.ID, csrf: "forged", confirm: ws })).status, 403, "no valid token");
      assert.equal((await post("reader", { id: held.ID, csrf: token, confirm: ws })).status, 403, "read-only user");
      assert.equal((await post("forcer", { id: held.ID, csrf: token })).status, 400, "the workspace's name not typed");
      assert.notEqual(await backend.lockInfo(ws), null);
      const done = await post("forcer", { id: held.ID, csrf: token, confirm: ws });
      assert.equal(done.status, 303);
      assert.equal(await backend.lockInfo(ws), null, "released from the page");
    } finally {
      await backend.unlock(ws, held.ID).catch(() => undefined);
    }
  });

  it("a read-only user reads but cannot write or lock (403)", async () => {
    const s = await start();
    const r = as(s.url, "reader");
    assert.equal(await r.get(), null);
    assert.equal((await r.put(toolState(1, "ro"))).status, 403);
    const l = await r.lock("OperationTypeApply");
    assert.ok(!l.ok && l.status === 403);
  });

  it("write + lock run the tool's apply; force-unlock needs force, and DELETE needs admin", async () => {
    const s = await start();
    const ws = uniqueName("ws");
    const w = as(s.url, "writer", ws);
    assert.ok((await w.lock("OperationTypeApply")).ok);
    assert.equal((await w.put(toolState(1, "rw"))).status, 200);
    // The tool's force-unlock (empty body) needs the force role, even for the lock's owner;
    // OpenTofu's ({"ID"} only) is the owner's own UNLOCK (ownership.test.ts has the rest).
    assert.equal((await as(s.url, "writer", ws).unlock()).status, 403);
    assert.equal((await as(s.url, "forcer", ws).unlock()).status, 200);
    assert.equal((await w.delete()).status, 403);
    assert.equal((await as(s.url, "admin", ws).delete()).status, 200);
  });

  it("the holder's UNLOCK releases by its ID without reading the lock first, with force or without (the release checks ID and owner itself); a wrong ID is still 409 with the holder", async () => {
    const s = await start();
    const ws = uniqueName("ws");
    let looks = 0;
    const look = backend.lockInfo.bind(backend);
    backend.lockInfo = (w?: string) => {
      looks += 1;
      return look(w);
    };
    try {
      const r = as(s.url, "rewinder", ws);
      assert.ok((await r.lock("OperationTypeApply")).ok);
      const tofu = new HttpBackendClient({ bases: [s.url], workspace: ws, username: "rewinder", password: pw("rewinder"), flavour: "opentofu", retries: 0 });
      const wrong = await tofu.unlock(randomUUID());
      assert.equal(wrong.status, 409);
      assert.equal((JSON.parse(wrong.body.toString()) as { ID: string }).ID, r.lockID, "the 409 carries the holder");
      assert.equal((await r.unlock()).status, 200);
      assert.equal(await look(ws), null);
      assert.equal((await r.unlock()).status, 200, "a retried UNLOCK is done");
      assert.equal(looks, 0, "nothing read the lock before releasing it");
      const w = as(s.url, "writer", ws);
      assert.ok((await w.lock("OperationTypeApply")).ok);
      const wrongByWriter = await new HttpBackendClient({
        bases: [s.url],
        workspace: ws,
        username: "writer",
        password: pw("writer"),
        flavour: "opentofu",
        retries: 0,
      }).unlock(randomUUID());
      assert.equal(wrongByWriter.status, 409);
      assert.equal((JSON.parse(wrongByWriter.body.toString()) as { ID: string }).ID, w.lockID, "the 409 carries the holder");
      assert.equal((await w.unlock()).status, 200);
      assert.equal(await look(ws), null);
      assert.equal(looks, 0, "without force too: the owner is checked on the release's own read");
    } finally {
      Reflect.deleteProperty(backend, "lockInfo");
    }
  });

  it("rollback through /api/v1 needs write and lock, and force too when forced; history and versions need read", async () => {
    const s = await start();
    const ws = uniqueName("ws");
    const w = as(s.url, "writer", ws);
    assert.equal((await w.put(toolState(1, "rb"))).status, 200);
    assert.equal((await w.put(toolState(2, "rb"))).status, 200);
    const call = (user: string, method: string, path: string, body?: object) =>
      rawRequest(s.url, method, path, body === undefined ? undefined : Buffer.from(JSON.stringify(body)), { username: user, password: pw(user) });
    const h = await call("reader", "GET", `/api/v1/workspaces/${ws}/history`);
    assert.equal(h.status, 200);
    const first = (JSON.parse(h.body.toString()) as { versions: { versionId: string }[] }).versions[1]?.versionId as string;
    assert.equal((await call("reader", "GET", `/api/v1/workspaces/${ws}/versions/${first}`)).status, 200);
    assert.equal((await call("scoped", "GET", `/api/v1/workspaces/${ws}/history`)).status, 403);
    const rollback = `/api/v1/workspaces/${ws}/rollback`;
    assert.equal((await call("reader", "POST", rollback, { to: first })).status, 403);
    const scribe = await call("scribe", "POST", rollback, { to: first });
    assert.equal(scribe.status, 403);
    assert.match(JSON.parse(scribe.body.toString()).message, /needs the lock role/);
    assert.equal((await call("forcer", "POST", rollback, { to: first })).status, 403, "lock and force without write");
    const forced = await call("writer", "POST", rollback, { to: first, force: true });
    assert.equal(forced.status, 403);
    assert.match(JSON.parse(forced.body.toString()).message, /needs the force role/);
    assert.equal((await call("rewinder", "POST", rollback, { to: first, force: true })).status, 200);
    const done = await call("writer", "POST", rollback, { to: first });
    assert.equal(done.status, 200);
    assert.equal(JSON.parse(done.body.toString()).serial, 4);
  });

  it("roles apply on workspace globs; listings show only what the user may read", async () => {
    const s = await start();
    const staging = as(s.url, "scoped", uniqueName("staging"));
    assert.equal((await staging.put(toolState(1, "st"))).status, 200);
    assert.equal((await as(s.url, "scoped", uniqueName("prod")).put(toolState(1, "p"))).status, 403);
    const list = await rawRequest(s.url, "GET", "/api/v1/workspaces", undefined, { username: "scoped", password: pw("scoped") });
    const names = (JSON.parse(list.body.toString()) as { workspaces: { name: string }[] }).workspaces.map((w) => w.name);
    assert.ok(names.length > 0 && names.every((n) => n.startsWith("staging-")), names.join(","));
  });

  it("failed logins are limited per address and user: 429 with Retry-After, even for the right password", async () => {
    const s = await start({ loginLimit: { failures: 3, windowMs: 60_000 } });
    for (let i = 0; i < 3; i++)
      assert.equal((await rawRequest(s.url, "GET", "/state/default", undefined, { username: "writer", password: `guess${i}` })).status, 401);
    const limited = await rawRequest(s.url, "GET", "/state/default", undefined, { username: "writer", password: pw("writer") });
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers["retry-after"]) >= 1);
  });

  it("a burst of 200 concurrent wrong guesses: only the limit reaches the password check, the rest get 429; other users there, and the user elsewhere, still log in", async () => {
    const s = await start();
    const port = Number(new URL(s.url).port);
    const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => from("127.0.0.1", port, GUESSED, `guess-${i}`)));
    const checked = replies.filter((r) => r.status === 401);
    const refused = replies.filter((r) => r.status === 429);
    // Each 401 is one password check that answered "wrong".
    assert.equal(checked.length, 10, `statuses: ${replies.map((r) => r.status).join(",")}`);
    assert.equal(refused.length, 190);
    assert.ok(
      refused.every((r) => Number(r.retryAfter) >= 1),
      "every 429 carries Retry-After",
    );
    assert.equal((await from("127.0.0.1", port, GUESSED, pw(GUESSED))).status, 429, "the guessed name stays limited at that address, right password or not");
    // 200 or 204: whether /state/default has a state is another test's business.
    assert.ok([200, 204].includes((await from("127.0.0.1", port, "bystander", pw("bystander"))).status), "another user behind the same address");
    assert.ok([200, 204].includes((await from("127.0.0.2", port, GUESSED, pw(GUESSED))).status), "the guessed user from another address");
  });

  it("the outputs role reads outputs (sensitive values masked) and the listing, never the state, history, versions or diffs; read implies it", async () => {
    const s = await start();
    const ws = uniqueName("ws");
    const state = toolState(1, "out", { url: { value: "https://x", type: "string" }, token: { value: "hunter2", type: "string", sensitive: true } });
    assert.equal((await as(s.url, "writer", ws).put(state)).status, 200);
    assert.equal((await as(s.url, "writer", ws).put(toolState(2, "out", { url: { value: "https://y", type: "string" } }))).status, 200);
    const call = (user: string, method: string, path: string, body?: Buffer) => rawRequest(s.url, method, path, body, { username: user, password: pw(user) });
    const outputs = await call("consumer", "GET", `/api/v1/workspaces/${ws}/outputs`);
    assert.equal(outputs.status, 200);
    assert.deepEqual(JSON.parse(outputs.body.toString()), { outputs: { url: { sensitive: false, type: "string", value: "https://y" } } });
    const history = await call("reader", "GET", `/api/v1/workspaces/${ws}/history`);
    const [v2, v1] = (JSON.parse(history.body.toString()) as { versions: { versionId: string }[] }).versions.map((v) => v.versionId);
    const denied = await call("consumer", "GET", `/state/${ws}`);
    assert.equal(denied.status, 403);
    assert.match(JSON.parse(denied.body.toString()).message, /needs the read role; the outputs role reads only GET \/api\/v1\/workspaces\/.*\/outputs/);
    for (const [method, path, body] of [
      ["GET", `/api/v1/workspaces/${ws}/history`],
      ["GET", `/api/v1/workspaces/${ws}/versions/${v1}`],
      ["GET", `/api/v1/workspaces/${ws}/diff?from=${v1}&to=${v2}`],
      ["POST", `/api/v1/workspaces/${ws}/diff`, state],
    ] as const) {
      const r = await call("consumer", method, path, body);
      assert.equal(r.status, 403, `${method} ${path}`);
      assert.ok(!r.body.toString().includes("hunter2"));
    }
    const list = await call("consumer", "GET", "/api/v1/workspaces");
    assert.ok(
      (JSON.parse(list.body.toString()) as { workspaces: { name: string }[] }).workspaces.some((w) => w.name === ws),
      "listed",
    );
    assert.equal((await call("reader", "GET", `/api/v1/workspaces/${ws}/outputs`)).status, 200, "read implies outputs");
    assert.equal((await call("scoped", "GET", `/api/v1/workspaces/${ws}/outputs`)).status, 403);

    // The console: the Workspace page with outputs masked and no versions; history and diffs refused.
    const page = await call("consumer", "GET", `/workspaces/${ws}`);
    assert.equal(page.status, 200);
    const html = page.body.toString();
    assert.match(html, /data-output="url"/);
    assert.match(html, /Versions and history need the read role/);
    assert.doesNotMatch(html, /\/history"/, "no link to the history");
    assert.equal((await call("consumer", "GET", `/workspaces/${ws}/history`)).status, 403);
    assert.equal((await call("consumer", "GET", `/workspaces/${ws}/diff?from=${v1}&to=${v2}`)).status, 403);
    assert.equal((await call("consumer", "GET", `/workspaces/${ws}?reveal=1`)).status, 403);
    assert.match((await call("consumer", "GET", "/")).body.toString(), new RegExp(ws), "the console's list");
    const withSecret = uniqueName("ws");
    assert.equal((await as(s.url, "writer", withSecret).put(state)).status, 200);
    const masked = (await call("consumer", "GET", `/workspaces/${withSecret}`)).body.toString();
    assert.match(masked, /data-output="token"/);
    assert.ok(!masked.includes("hunter2"), "sensitive value masked on the page");
    const api = JSON.parse((await call("consumer", "GET", `/api/v1/workspaces/${withSecret}/outputs`)).body.toString());
    assert.deepEqual(api.outputs.token, { sensitive: true, type: "string", value: "<sensitive>" });
  });

  it("a lock of another state under the prefix is listed only for admin on * itself, not for a glob that matches the name *", async () => {
    const s = await start();
    const other = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ ...props, key: "other.tfstate" }), { env: {}, onWarning: () => undefined });
    const otherWs = uniqueName("ws");
    const held = await other.lock(otherWs, { operation: "apply" });
    try {
      const foreign = async (user: string): Promise<number> => {
        const r = await rawRequest(s.url, "GET", "/api/v1/locks", undefined, { username: user, password: pw(user) });
        assert.equal(r.status, 200);
        return (JSON.parse(r.body.toString()) as { locks: { workspace: string | null; id: string }[] }).locks.filter(
          (l) => l.workspace === null && l.id === held.ID,
        ).length;
      };
      assert.equal(await foreign("admin"), 1);
      assert.equal(await foreign("oneletter"), 0);
      assert.equal(await foreign("reader"), 0);
    } finally {
      await other.unlock(otherWs, held.ID).catch(() => undefined);
      other.close();
    }
  });

  it("TLS with a self-signed certificate made here; client certificates log in as the user their CN names", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-tls-"));
    const f = (n: string): string => join(dir, n);
    const ssl = (...args: string[]): void => void execFileSync("openssl", args, { stdio: "ignore" });
    ssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      f("server.key"),
      "-out",
      f("server.crt"),
    );
    const s = await start({ tls: { cert: readFileSync(f("server.crt")), key: readFileSync(f("server.key")) } });
    assert.match(s.url, /^https:/);
    const ca = readFileSync(f("server.crt"));
    const c = new HttpBackendClient({ bases: [s.url], workspace: uniqueName("ws"), username: "writer", password: pw("writer"), tls: { ca }, retries: 0 });
    assert.equal((await c.put(toolState(1, "tls"))).status, 200);
    assert.deepEqual(await c.get(), toolState(1, "tls"));
    await assert.rejects(rawRequest(s.url, "GET", "/healthz", undefined, {}), /self-signed|certificate/i);

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca", "-keyout", f("ca.key"), "-out", f("ca.crt"));
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=writer", "-keyout", f("client.key"), "-out", f("client.csr"));
    ssl("x509", "-req", "-in", f("client.csr"), "-CA", f("ca.crt"), "-CAkey", f("ca.key"), "-CAcreateserial", "-days", "1", "-out", f("client.crt"));
    const m = await start({ tls: { cert: readFileSync(f("server.crt")), key: readFileSync(f("server.key")), ca: readFileSync(f("ca.crt")) } });
    const withCert = new HttpBackendClient({
      bases: [m.url],
      workspace: uniqueName("ws"),
      tls: { ca, cert: readFileSync(f("client.crt")), key: readFileSync(f("client.key")) },
      retries: 0,
    });
    assert.equal((await withCert.put(toolState(1, "mtls"))).status, 200);
    const history = await rawRequest(m.url, "GET", `/api/v1/workspaces/${withCert.options.workspace as string}/history`, undefined, {
      tls: { ca, cert: readFileSync(f("client.crt")), key: readFileSync(f("client.key")) },
    });
    const recorded = (JSON.parse(history.body.toString()) as { versions: { principal: unknown }[] }).versions[0]?.principal;
    assert.deepEqual(recorded, { name: "writer", via: "certificate", tokenId: null, oidc: null }, "the write records the certificate's user");
    await assert.rejects(rawRequest(m.url, "GET", "/state/default", undefined, { username: "writer", password: pw("writer"), tls: { ca } }));
  });
});
