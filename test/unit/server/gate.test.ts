/**
 * The request gate of `objstate serve` (src/server/gate.ts): Host, cross-site and content-type
 * checks, as pure logic and through a real server on loopback over the embedded store. The
 * requests are the ones an attacker's page makes a browser send (Origin, Sec-Fetch-Site,
 * text/plain bodies) and the ones Terraform's and OpenTofu's clients send (neither header;
 * application/json bodies; an empty force-unlock).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { parsePublicUrl, RequestGate, isLoopbackHost } from "../../../src/server/gate.js";
import { ObjstateServer, type ServerOptions } from "../../../src/server/server.js";
import { hashPassword, parseUsers } from "../../../src/server/users.js";
import { HttpBackendClient, rawRequest, toolState } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { startServer } from "../../support/server-fixture.js";

function req(method: string, headers: Record<string, string>): IncomingMessage {
  return { method, headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])) } as unknown as IncomingMessage;
}

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code;
  }
}

describe("request gate (pure)", () => {
  const gate = new RequestGate({ tls: false, publicUrls: [parsePublicUrl("https://state.example.com")] });
  gate.bound("10.0.0.5", 8080);

  it("parses --public-url once: an http(s) origin, nothing else", () => {
    assert.deepEqual(parsePublicUrl("https://State.Example.com/"), { origin: "https://state.example.com", host: "state.example.com" });
    assert.deepEqual(parsePublicUrl("http://10.0.0.5:8080"), { origin: "http://10.0.0.5:8080", host: "10.0.0.5:8080" });
    assert.deepEqual(parsePublicUrl("https://state.example.com:443"), { origin: "https://state.example.com", host: "state.example.com" });
    for (const bad of ["state.example.com", "ftp://x", "https://u:p@x", "https://x/state", "https://x/?a=1", "https://x/#f", ""]) {
      assert.equal(
        codeOf(() => parsePublicUrl(bad)),
        "INVALID_PUBLIC_URL",
        bad,
      );
    }
    try {
      parsePublicUrl("https://x/state");
    } catch (e) {
      assert.match((e as Error).message, /--public-url/);
    }
  });

  it("answers the listed hosts, the listen address and loopback names; 421 for any other Host", () => {
    for (const host of ["state.example.com", "STATE.example.com", "10.0.0.5:8080", "localhost:9", "127.0.0.1:8080", "127.1.2.3", "[::1]:8080"]) {
      assert.equal(
        codeOf(() => gate.check(req("GET", { host }), "api")),
        undefined,
        host,
      );
    }
    for (const host of ["evil.example", "evil.example:8080", "state.example.com.evil.example", "10.0.0.5:8081", "10.0.0.6:8080", "state.example.com:8443"]) {
      assert.equal(
        codeOf(() => gate.check(req("GET", { host }), "api")),
        "MISDIRECTED_REQUEST",
        host,
      );
    }
    assert.equal(
      codeOf(() => gate.check(req("GET", {}), "api")),
      "MISDIRECTED_REQUEST",
    );
    // Probes answer whatever name a load balancer uses.
    assert.equal(
      codeOf(() => gate.check(req("GET", { host: "evil.example" }), "probe")),
      undefined,
    );
    assert.equal(isLoopbackHost("::ffff:127.0.0.1"), true);
    assert.equal(isLoopbackHost("localhost.evil.example"), false);
  });

  it("the own origin comes from the list (its scheme), or from a loopback Host on this server's scheme", () => {
    assert.equal(gate.check(req("GET", { host: "state.example.com" }), "console"), "https://state.example.com");
    assert.equal(gate.check(req("GET", { host: "localhost:8080" }), "console"), "http://localhost:8080");
  });

  it("refuses what a browser marks cross-site or same-site, and a foreign Origin, on every changing route", () => {
    const host = "state.example.com";
    for (const kind of ["api", "console"] as const) {
      for (const method of ["POST", "PUT", "DELETE", "LOCK", "UNLOCK"]) {
        assert.equal(
          codeOf(() => gate.check(req(method, { host, "sec-fetch-site": "cross-site" }), kind)),
          "CROSS_SITE_REQUEST",
        );
        assert.equal(
          codeOf(() => gate.check(req(method, { host, "sec-fetch-site": "same-site" }), kind)),
          "CROSS_SITE_REQUEST",
        );
        assert.equal(
          codeOf(() => gate.check(req(method, { host, origin: "https://evil.example" }), kind)),
          "CROSS_SITE_REQUEST",
        );
        assert.equal(
          codeOf(() => gate.check(req(method, { host, origin: "null" }), kind)),
          "CROSS_SITE_REQUEST",
        );
        assert.equal(
          codeOf(() => gate.check(req(method, { host, origin: "http://state.example.com" }), kind)),
          "CROSS_SITE_REQUEST",
        );
        // The server's own page, a user's own navigation, and the tool (neither header).
        assert.equal(
          codeOf(() => gate.check(req(method, { host, origin: "https://state.example.com", "sec-fetch-site": "same-origin" }), kind)),
          undefined,
        );
        assert.equal(
          codeOf(() => gate.check(req(method, { host, "sec-fetch-site": "none" }), kind)),
          undefined,
        );
        assert.equal(
          codeOf(() => gate.check(req(method, { host }), kind)),
          undefined,
        );
      }
    }
    // Reads: the state and the API are never a browser's cross-site business; a link to the console is.
    assert.equal(
      codeOf(() => gate.check(req("GET", { host, "sec-fetch-site": "cross-site" }), "api")),
      "CROSS_SITE_REQUEST",
    );
    assert.equal(
      codeOf(() => gate.check(req("GET", { host, "sec-fetch-site": "cross-site" }), "console")),
      undefined,
    );
  });

  it("a body must carry its client's type; an empty one needs none (the tool's force-unlock)", () => {
    const host = "localhost";
    const withBody = (type: string | undefined, extra: Record<string, string> = { "content-length": "12" }): Record<string, string> => ({
      host,
      ...extra,
      ...(type === undefined ? {} : { "content-type": type }),
    });
    assert.equal(
      codeOf(() => gate.check(req("POST", withBody("application/json")), "api")),
      undefined,
    );
    assert.equal(
      codeOf(() => gate.check(req("POST", withBody("Application/JSON; charset=utf-8")), "api")),
      undefined,
    );
    for (const t of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", undefined]) {
      assert.equal(
        codeOf(() => gate.check(req("POST", withBody(t)), "api")),
        "UNSUPPORTED_MEDIA_TYPE",
        String(t),
      );
      assert.equal(
        codeOf(() => gate.check(req("LOCK", withBody(t, { "transfer-encoding": "chunked" })), "api")),
        "UNSUPPORTED_MEDIA_TYPE",
        String(t),
      );
    }
    assert.equal(
      codeOf(() => gate.check(req("POST", withBody("application/x-www-form-urlencoded")), "console")),
      undefined,
    );
    assert.equal(
      codeOf(() => gate.check(req("POST", withBody("application/json")), "console")),
      "UNSUPPORTED_MEDIA_TYPE",
    );
    // Terraform's force-unlock: an empty chunked body typed application/json. OpenTofu's: no body headers at all.
    assert.equal(
      codeOf(() => gate.check(req("UNLOCK", { host, "transfer-encoding": "chunked", "content-type": "application/json" }), "api")),
      undefined,
    );
    assert.equal(
      codeOf(() => gate.check(req("UNLOCK", { host }), "api")),
      undefined,
    );
    assert.equal(
      codeOf(() => gate.check(req("UNLOCK", { host, "content-length": "0" }), "api")),
      undefined,
    );
  });
});

const CHEAP = { N: 1024, r: 8, p: 1 };

describe("request gate (objstate serve on loopback)", () => {
  let backend: ObjectStoreBackend;
  const servers: ObjstateServer[] = [];
  let users: ServerOptions["users"];

  const start = (extra: Partial<ServerOptions> = {}): Promise<ObjstateServer> => startServer(backend, { ...extra }, servers);

  before(async () => {
    const props = await embeddedTarget().setup({ locks: true });
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    users = parseUsers(JSON.stringify({ users: { ops: { password: await hashPassword("pw", CHEAP), roles: { "*": ["admin"] } } } }), "users.json");
  });
  after(async () => {
    for (const s of servers) await s.close(500);
    backend.close();
  });

  it("a cross-site LOCK, state write or API call changes nothing, with or without users", async () => {
    for (const auth of [{}, { username: "ops", password: "pw" }]) {
      const s = await start(Object.keys(auth).length === 0 ? {} : { users });
      const ws = uniqueName("xs");
      const lineage = randomUUID();
      const info = Buffer.from(
        JSON.stringify({ ID: randomUUID(), Operation: "OperationTypeApply", Info: "", Who: "evil", Version: "1", Created: new Date().toISOString(), Path: "" }),
      );
      const attacks: [string, string, Buffer | undefined, Record<string, string>][] = [
        ["POST", `/state/${ws}`, toolState(1, lineage), { Origin: "http://evil.example" }],
        ["POST", `/state/${ws}`, toolState(1, lineage), { "Sec-Fetch-Site": "cross-site" }],
        ["POST", `/state/${ws}/lock`, info, { "Sec-Fetch-Site": "same-site", Origin: "http://localhost:3000" }],
        ["POST", `/state/${ws}`, toolState(1, lineage), { "Content-Type": "text/plain" }],
        ["LOCK", `/state/${ws}`, info, { Origin: "null" }],
        ["POST", `/api/v1/workspaces/${ws}/rollback`, Buffer.from('{"to":"x"}'), { Origin: "http://evil.example" }],
        ["DELETE", `/state/${ws}`, undefined, { Origin: "http://evil.example" }],
      ];
      for (const [method, path, body, headers] of attacks) {
        const r = await rawRequest(s.url, method, path, body, auth, headers);
        assert.ok(r.status === 403 || r.status === 415, `${method} ${path} ${JSON.stringify(headers)} → ${r.status}`);
        const code = (JSON.parse(r.body.toString()) as { code: string }).code;
        assert.ok(code === "CROSS_SITE_REQUEST" || code === "UNSUPPORTED_MEDIA_TYPE", code);
      }
      assert.equal(await backend.readState(ws), null, "nothing was written");
      assert.equal(await backend.lockInfo(ws), null, "no lock was taken");
      // The same requests as the tool sends them go through.
      const tool = new HttpBackendClient({ bases: [s.url], workspace: ws, retries: 0, ...auth });
      assert.equal((await tool.lock("OperationTypeApply")).ok, true);
      assert.equal((await tool.put(toolState(1, lineage))).status, 200);
      assert.equal((await tool.unlock()).status, 200);
    }
  });

  it("the tool's force-unlock (empty chunked body; OpenTofu: no body) passes the content-type rule", async () => {
    const s = await start();
    for (const flavour of ["terraform", "opentofu"] as const) {
      const ws = uniqueName("fu");
      await backend.lock(ws, { operation: "apply" });
      const r = await new HttpBackendClient({ bases: [s.url], workspace: ws, retries: 0, flavour }).unlock((await backend.lockInfo(ws))?.ID ?? "");
      assert.equal(r.status, 200, flavour);
      assert.equal(await backend.lockInfo(ws), null, flavour);
    }
  });

  it("a foreign Host (DNS rebinding) gets 421 naming --public-url; the probes answer it; a listed one is served", async () => {
    const s = await start({ publicUrls: [parsePublicUrl("https://state.example.com")] });
    const r = await rawRequest(s.url, "GET", "/state/default", undefined, {}, { Host: "rebind.evil.example" });
    assert.equal(r.status, 421);
    assert.match(r.body.toString(), /--public-url/);
    assert.equal((await rawRequest(s.url, "GET", "/", undefined, {}, { Host: "rebind.evil.example" })).status, 421);
    assert.equal((await rawRequest(s.url, "GET", "/healthz", undefined, {}, { Host: "rebind.evil.example" })).status, 200);
    assert.notEqual((await rawRequest(s.url, "GET", "/state/default", undefined, {}, { Host: "state.example.com" })).status, 421);
    // The console's forms must come from the listed origin when reached by its name.
    const form = Buffer.from("csrf=x&id=y");
    const ok = await rawRequest(
      s.url,
      "POST",
      "/workspaces/default/force-unlock",
      form,
      {},
      { Host: "state.example.com", Origin: "http://state.example.com", "Content-Type": "application/x-www-form-urlencoded" },
    );
    assert.equal(ok.status, 403, "http:// is not the listed https:// origin");
  });

  it("over TLS: HSTS on every answer; TLS 1.1 and TLS 1.2 suites without forward secrecy or AEAD are refused", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-gate-"));
    const f = (n: string): string => join(dir, n);
    execFileSync(
      "openssl",
      [
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
        f("k"),
        "-out",
        f("c"),
      ],
      { stdio: "ignore" },
    );
    const ca = readFileSync(f("c"));
    const s = await start({ tls: { cert: ca, key: readFileSync(f("k")) } });
    const r = await rawRequest(s.url, "GET", "/healthz", undefined, { tls: { ca } });
    assert.equal(r.status, 200);
    assert.match(String(r.headers["strict-transport-security"]), /max-age=\d{7,}/);
    const port = Number(new URL(s.url).port);
    const handshake = (options: { minVersion?: "TLSv1" | "TLSv1.2"; maxVersion?: "TLSv1.1" | "TLSv1.2" | "TLSv1.3"; ciphers?: string }): Promise<string> =>
      new Promise((resolve) => {
        const sock = tlsConnect({ host: "127.0.0.1", port, ca, ...options }, () => {
          const v = `${sock.getProtocol() ?? "?"} ${sock.getCipher().name}`;
          sock.end();
          resolve(v);
        });
        sock.on("error", () => resolve("refused"));
      });
    assert.match(await handshake({ maxVersion: "TLSv1.3" }), /^TLSv1\.3 /);
    assert.match(await handshake({ maxVersion: "TLSv1.2" }), /^TLSv1\.2 ECDHE-RSA-(AES\d+-GCM|CHACHA20)/);
    assert.equal(await handshake({ minVersion: "TLSv1", maxVersion: "TLSv1.1", ciphers: "DEFAULT@SECLEVEL=0" }), "refused");
    for (const weak of ["AES128-GCM-SHA256", "AES256-SHA256", "ECDHE-RSA-AES128-SHA256", "ECDHE-RSA-AES256-SHA", "DHE-RSA-AES128-GCM-SHA256"]) {
      assert.equal(await handshake({ maxVersion: "TLSv1.2", ciphers: weak }), "refused", weak);
    }
  });
});
