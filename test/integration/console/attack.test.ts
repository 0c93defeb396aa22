/**
 * A hostile web page against `objstate serve`, in headless Chromium: the attacks a page the
 * operator visits can make a browser send, against a server with users (the operator's Basic
 * credentials cached by the browser) and against the no-users loopback server.
 *
 * - text/plain form posts whose body is valid JSON (a state, a lock info) to `/state`;
 * - `fetch` with `mode: "no-cors"` and credentials to `/state` and `/api/v1`;
 * - the console's own force-unlock form without a token;
 * - from another site (`evil.test`, mapped to 127.0.0.1 by Chromium's host-resolver rules) and
 *   from the same site on another port (`127.0.0.1:OTHER`);
 * - DNS rebinding: a name of the attacker's (`rebind.test`) resolving to the server, read
 *   same-origin.
 *
 * Nothing may change: the state, its lock and the workspace list are checked through the
 * library after each round, and the server's log must show every attack refused by the gate.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer } from "../../../src/server/server.js";
import { hashPassword, parseUsers } from "../../../src/server/users.js";
import { CHROMIUM, CHROMIUM_ARGS } from "../../support/browser.js";
import { toolState } from "../../support/http-backend-client.js";
import { embeddedTarget } from "../../support/targets.js";
import { listenLow, withLowPort } from "../../support/port.js";

const TIMEOUT = 10_000;

/** `<form enctype="text/plain">` sends `name=value`: a name that ends in `"a":"` makes the body JSON. */
function jsonFormBody(doc: Record<string, unknown>): { name: string; value: string } {
  const text = JSON.stringify({ ...doc, pad: "" });
  const cut = text.length - 2; // before the closing `"}` of "pad"
  return { name: text.slice(0, cut), value: text.slice(cut) };
}

/** The attacker's pages, each aimed at `victim` (the server's base URL). */
function attackPages(victim: string): Record<string, string> {
  const evilState = jsonFormBody({ version: 4, terraform_version: "1.9.0", serial: 999, lineage: "evil", outputs: {}, resources: [] });
  const evilLock = jsonFormBody({
    ID: "evil-lock",
    Operation: "OperationTypeApply",
    Info: "",
    Who: "evil",
    Version: "1",
    Created: new Date().toISOString(),
    Path: "",
  });
  const form = (action: string, enctype: string, fields: { name: string; value: string }[]): string =>
    `<!doctype html><body><form id="f" method="POST" enctype="${enctype}" action="${action}">${fields
      .map((f) => `<input type="hidden" name='${f.name.replace(/'/g, "&#39;")}' value='${f.value.replace(/'/g, "&#39;")}'>`)
      .join("")}</form><script>document.getElementById("f").submit()</script></body>`;
  const fetches = [
    [`${victim}/state/prod`, JSON.stringify({ version: 4, serial: 998, lineage: "evil", outputs: {}, resources: [] })],
    [`${victim}/state/prod/lock`, JSON.stringify({ ID: "evil-fetch", Operation: "x", Who: "evil" })],
    [`${victim}/state/pwned-fetch`, JSON.stringify({ version: 4, serial: 1, lineage: "evil", outputs: {}, resources: [] })],
    [`${victim}/api/v1/workspaces/prod/rollback`, JSON.stringify({ to: "x", force: true })],
  ];
  return {
    "/form-state": form(`${victim}/state/prod`, "text/plain", [evilState]),
    "/form-new": form(`${victim}/state/pwned`, "text/plain", [evilState]),
    "/form-lock": form(`${victim}/state/prod/lock`, "text/plain", [evilLock]),
    "/form-console": form(`${victim}/workspaces/prod/force-unlock`, "application/x-www-form-urlencoded", [{ name: "id", value: "any" }]),
    "/fetch": `<!doctype html><body><script>
      Promise.allSettled(${JSON.stringify(fetches)}.map(([u, b]) => fetch(u, { method: "POST", mode: "no-cors", credentials: "include", body: b })))
        .then(() => { document.title = "sent"; });
    </script></body>`,
  };
}
const FORM_ATTACKS = ["/form-state", "/form-new", "/form-lock", "/form-console"];
const FETCH_ATTACKS = 4;

async function startAttacker(): Promise<{ server: Server; port: number; victim: { current: string } }> {
  const victim = { current: "" };
  const server = createServer((req, res) => {
    const page = attackPages(victim.current)[new URL(req.url ?? "/", "http://x").pathname];
    if (page === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(page);
  });
  await listenLow(server);
  return { server, port: (server.address() as AddressInfo).port, victim };
}

describe("a hostile page against objstate serve, in headless Chromium", { timeout: 240_000 }, () => {
  let browser: Browser;
  let attacker: Awaited<ReturnType<typeof startAttacker>>;

  before(async () => {
    attacker = await startAttacker();
    // evil.test and rebind.test resolve to loopback inside the browser only: no traffic leaves 127.0.0.1.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [...CHROMIUM_ARGS, "--host-resolver-rules=MAP evil.test 127.0.0.1, MAP rebind.test 127.0.0.1"],
      headless: true,
      timeout: 30_000,
    });
  });
  after(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => attacker?.server.close(() => resolve()));
  });

  for (const mode of ["users", "no-users"] as const) {
    it(`${mode === "users" ? "a server with users, the operator's Basic credentials cached" : "the no-users loopback server"}: form posts and no-cors fetches from another site change nothing`, async () => {
      const props = await embeddedTarget().setup({ locks: true });
      const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
      const lineage = randomUUID();
      await backend.writeState("prod", toolState(5, lineage, { url: { value: "https://prod.example", type: "string" } }));
      const before = (await backend.readState("prod"))?.toString();
      const users =
        mode === "users"
          ? parseUsers(
              JSON.stringify({ users: { ops: { password: await hashPassword("ops-password", { N: 1024, r: 8, p: 1 }), roles: { "*": ["admin"] } } } }),
              "users.json",
            )
          : undefined;
      const lines: Record<string, unknown>[] = [];
      const server = new ObjstateServer({ backend, users, logger: new Logger("info", (l) => void lines.push(JSON.parse(l) as Record<string, unknown>)) });
      await withLowPort((port) => server.listen("127.0.0.1", port));
      attacker.victim.current = server.url;
      const context = await browser.newContext();
      const page: Page = await context.newPage();
      page.setDefaultTimeout(TIMEOUT);
      try {
        if (users !== undefined) {
          // The operator logs in to the console: Chromium caches the credentials for the server's origin.
          const u = new URL(server.url);
          const login = await page.goto(`http://ops:ops-password@${u.host}/`);
          assert.equal(login?.status(), 200, "the operator's own visit is served");
          const again = await page.goto(`${server.url}/api/v1/workspaces`);
          assert.equal(again?.status(), 200, "the browser resends the cached credentials on its own");
        }
        for (const origin of [`http://evil.test:${attacker.port}`, `http://127.0.0.1:${attacker.port}`]) {
          for (const path of FORM_ATTACKS) {
            const landed = page.waitForURL((url) => url.href.startsWith(server.url), { waitUntil: "commit" });
            await page.goto(`${origin}${path}`);
            await landed;
          }
          await page.goto(`${origin}/fetch`);
          await page.waitForFunction(() => document.title === "sent");
        }
      } finally {
        await context.close();
        await server.close(500);
      }
      assert.equal((await backend.readState("prod"))?.toString(), before, "the state is unchanged");
      assert.equal(await backend.lockInfo("prod"), null, "no lock was taken");
      for (const w of await backend.listWorkspaces()) assert.ok(!w.startsWith("pwned"), `no workspace ${w} was created`);
      backend.close();
      // Every attack reached the server and was refused at the gate, before any route ran.
      const refused = lines.filter((l) => l["msg"] === "request" && (l["code"] === "CROSS_SITE_REQUEST" || l["code"] === "UNSUPPORTED_MEDIA_TYPE"));
      assert.equal(
        refused.length,
        2 * (FORM_ATTACKS.length + FETCH_ATTACKS),
        JSON.stringify(lines.filter((l) => l["msg"] === "request").map((l) => `${l["method"]} ${l["route"]} ${l["status"]} ${l["code"]}`)),
      );
      assert.ok(refused.every((l) => l["status"] === 403 || l["status"] === 415));
    });
  }

  it("DNS rebinding: the attacker's name resolving to the server gets 421 and no data, on the API and the console", async () => {
    const props = await embeddedTarget().setup({ locks: true });
    const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    await backend.writeState("prod", toolState(1, randomUUID(), { secret_url: { value: "https://internal.example", type: "string" } }));
    const server = new ObjstateServer({ backend, logger: new Logger("off") });
    await withLowPort((port) => server.listen("127.0.0.1", port));
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(TIMEOUT);
    try {
      const port = new URL(server.url).port;
      for (const path of ["/state/prod", "/api/v1/workspaces", "/api/v1/workspaces/prod/outputs", "/"]) {
        const r = await page.goto(`http://rebind.test:${port}${path}`);
        assert.equal(r?.status(), 421, path);
        const text = await page.content();
        assert.ok(!text.includes("internal.example") && !text.includes('"prod"'), `${path} leaks nothing`);
      }
      // The same server by its own loopback address still answers.
      assert.equal((await page.goto(`${server.url}/api/v1/workspaces`))?.status(), 200);
    } finally {
      await context.close();
      await server.close(500);
      backend.close();
    }
  });
});
