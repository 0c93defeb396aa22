/**
 * handleConsole over an in-memory ConsoleApi, through a loopback node:http server: routes,
 * headers, role checks, CSRF and Origin refusals, actions and their log lines.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CONTENT_SECURITY_POLICY } from "../../../src/console/assets.js";
import { CsrfTokens } from "../../../src/console/csrf.js";
import { HISTORY_PAGE } from "../../../src/console/handler.js";
import { makeState, MemoryConsoleApi } from "../../support/console-memory.js";
import { basic, startConsoleServer, type ConsoleTestServer } from "../../support/console-server.js";
import { listenLow } from "../../support/port.js";

const key = Buffer.alloc(32, 1);
const csrf = new CsrfTokens({ key });
let api: MemoryConsoleApi;
let srv: ConsoleTestServer;
let v1: string;
let v2: string;
let v3: string;

async function get(path: string, user = "admin", headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${srv.url}${path}`, { headers: { authorization: basic(user), ...headers }, redirect: "manual" });
}

async function post(path: string, fields: Record<string, string>, user = "admin", headers: Record<string, string> = { origin: "" }): Promise<Response> {
  const h: Record<string, string> = { authorization: basic(user), "content-type": "application/x-www-form-urlencoded", ...headers };
  if (h["origin"] === "") h["origin"] = srv.url;
  return fetch(`${srv.url}${path}`, { method: "POST", headers: h, body: new URLSearchParams(fields).toString(), redirect: "manual" });
}

describe("handleConsole", () => {
  before(async () => {
    api = new MemoryConsoleApi();
    v1 = api.write("prod", makeState(1, 1, { url: { value: "u1" }, pw: { value: "hunter2", sensitive: true } }), {
      who: "ci@runner",
      lastModified: "2026-11-20T00:00:00Z",
    });
    v2 = api.write("prod", makeState(2, 2, { url: { value: "u2" }, pw: { value: "hunter2", sensitive: true } }), {
      who: "ci@runner",
      lastModified: "2026-11-21T00:00:00Z",
    });
    v3 = api.write("prod", makeState(3, 3, { url: { value: "u3" }, pw: { value: "hunter3", sensitive: true } }), {
      who: "ci@runner",
      lastModified: "2026-11-22T00:00:00Z",
    });
    api.write("dev", makeState(1, 0), { lastModified: "2026-11-23T00:00:00Z" });
    api.write("__proto__", makeState(1, 0), { lastModified: "2026-01-01T00:00:00Z" });
    api.setLock("dev", { id: "LOCK-1", who: "bob@laptop", operation: "apply", info: "", created: "2026-11-23T00:00:00Z" });
    srv = await startConsoleServer(api, { csrf });
  });
  after(() => srv.close());

  it("serves the Workspaces page with the strict CSP and security headers; unknown paths are not the console's", async () => {
    const r = await get("/");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-security-policy"), CONTENT_SECURITY_POLICY);
    assert.match(CONTENT_SECURITY_POLICY, /script-src 'self';/);
    assert.ok(!CONTENT_SECURITY_POLICY.includes("unsafe"));
    assert.equal(r.headers.get("x-frame-options"), "DENY");
    assert.equal(r.headers.get("x-content-type-options"), "nosniff");
    const page = await r.text();
    assert.ok(page.indexOf('data-ws="dev"') < page.indexOf('data-ws="prod"'), "most recent write first");
    assert.equal((await get("/api/v1/workspaces")).status, 404);
  });

  it("serves the stylesheet and script with ETags (304 on revalidation)", async () => {
    const css = await get("/console/console.css");
    assert.equal(css.headers.get("content-type"), "text/css; charset=utf-8");
    assert.match(await css.text(), /prefers-color-scheme:dark/);
    const js = await get("/console/live.js");
    const etag = js.headers.get("etag") as string;
    assert.match(await js.text(), /textContent/);
    assert.equal((await get("/console/live.js", "admin", { "if-none-match": etag })).status, 304);
  });

  it("lock JSON for all workspaces and for one; a workspace named __proto__ is a plain key", async () => {
    const all = (await (await get("/console/locks")).json()) as { locks: Record<string, { id: string; text: string } | null> };
    assert.equal(all.locks["dev"]?.id, "LOCK-1");
    assert.match(all.locks["dev"]?.text ?? "", /locked by bob@laptop \(apply\)/);
    assert.equal(all.locks["prod"], null);
    assert.ok(Object.hasOwn(all.locks, "__proto__"));
    const one = (await (await get("/console/locks?ws=dev")).json()) as { locks: Record<string, unknown> };
    assert.deepEqual(Object.keys(one.locks), ["dev"]);
  });

  it("sensitive outputs are masked, revealed only for admin (and logged); others get 403", async () => {
    const masked = await (await get("/workspaces/prod", "operator")).text();
    assert.ok(!masked.includes("hunter3") && masked.includes("&lt;sensitive&gt;"));
    assert.ok(!masked.includes("Reveal"));
    const admin = await (await get("/workspaces/prod")).text();
    assert.ok(admin.includes("Reveal sensitive values") && !admin.includes("hunter3"));
    const shown = await (await get("/workspaces/prod?reveal=1")).text();
    assert.ok(shown.includes("hunter3"));
    assert.equal((await get("/workspaces/prod?reveal=1", "operator")).status, 403);
    assert.deepEqual(
      srv.log.filter((e) => e.action === "reveal").map((e) => `${e.user} ${e.outcome}`),
      ["admin ok", "operator refused"],
    );
  });

  it("History lists the newest HISTORY_PAGE versions with a link to the rest (?all=1); the rollback confirmation finds a version beyond them", async () => {
    const many = new MemoryConsoleApi();
    const ids = Array.from({ length: HISTORY_PAGE + 5 }, (_, i) =>
      many.write("big", makeState(i + 1, 1), { lastModified: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString() }),
    );
    const s2 = await startConsoleServer(many, { csrf });
    try {
      const at = (path: string): Promise<Response> => fetch(`${s2.url}${path}`, { headers: { authorization: basic("admin") } });
      const first = await (await at("/workspaces/big/history")).text();
      assert.equal(first.match(/<tr data-version=/g)?.length, HISTORY_PAGE);
      assert.ok(
        first.includes('href="/workspaces/big/history?all=1"') && first.includes(`data-version="${ids.at(-1)}"`) && !first.includes(`data-version="${ids[0]}"`),
      );
      const all = await (await at("/workspaces/big/history?all=1")).text();
      assert.equal(all.match(/<tr data-version=/g)?.length, HISTORY_PAGE + 5);
      assert.ok(!all.includes("?all=1"), "nothing more to show");
      const small = await (await at("/workspaces/prod/history")).text();
      assert.ok(!small.includes("?all=1"), "no link when every version is shown");
      const confirm = await at(`/workspaces/big/rollback?to=${ids[0]}`);
      assert.equal(confirm.status, 200);
      assert.match(await confirm.text(), new RegExp(`data-new-serial>${HISTORY_PAGE + 6}<`));
      assert.equal((await at("/workspaces/big/rollback?to=no-such")).status, 404);
    } finally {
      await s2.close();
    }
  });

  it("a read-only user sees no action buttons and gets 403 when posting anyway, logged with the user", async () => {
    const page = await (await get("/workspaces/dev", "reader")).text();
    assert.ok(!page.includes('method="post"') && !page.includes("Force-unlock"));
    const hist = await (await get("/workspaces/prod/history", "reader")).text();
    assert.ok(!hist.includes("Roll back"));
    assert.equal((await get(`/workspaces/prod/rollback?to=${v1}`, "reader")).status, 403);
    const r = await post("/workspaces/dev/force-unlock", { csrf: csrf.issue("reader"), id: "LOCK-1" }, "reader");
    assert.equal(r.status, 403);
    assert.equal((await post("/workspaces/prod/rollback", { csrf: csrf.issue("reader"), to: v1, current: v3 }, "reader")).status, 403);
    assert.deepEqual(
      srv.log.filter((e) => e.user === "reader").map((e) => `${e.action} ${e.outcome} ${e.detail}`),
      ["force-unlock refused needs force", "rollback refused needs write and lock"],
    );
    assert.ok(!api.calls.some((c) => c.startsWith("force-unlock dev")));
  });

  it("a cross-site POST (other Origin, no Origin/Referer, no or bad CSRF token, another user's token) is refused", async () => {
    const fields = { csrf: csrf.issue("admin"), id: "LOCK-1", confirm: "dev" };
    assert.equal((await post("/workspaces/dev/force-unlock", fields, "admin", { origin: "http://evil.example" })).status, 403);
    assert.equal((await post("/workspaces/dev/force-unlock", fields, "admin", {})).status, 403);
    assert.equal((await post("/workspaces/dev/force-unlock", { id: "LOCK-1", confirm: "dev" })).status, 403);
    assert.equal((await post("/workspaces/dev/force-unlock", { csrf: csrf.issue("operator"), id: "LOCK-1", confirm: "dev" })).status, 403);
    assert.equal((await post("/workspaces/dev/force-unlock", { csrf: new CsrfTokens().issue("admin"), id: "LOCK-1", confirm: "dev" })).status, 403);
    assert.ok(!api.calls.some((c) => c.startsWith("force-unlock dev")), "no refused POST reached the API");
    assert.ok(srv.log.some((e) => e.outcome === "refused" && e.detail.startsWith("cross-site") && !e.detail.includes("evil.example")));
  });

  it("actions are POSTs (their GET is the confirmation; other methods 405); a JSON body is 415", async () => {
    const r = await fetch(`${srv.url}/workspaces/dev/force-unlock`, { method: "DELETE", headers: { authorization: basic("admin") } });
    assert.equal(r.status, 405);
    assert.equal(r.headers.get("allow"), "GET, HEAD, POST");
    assert.equal((await get("/workspaces/dev/force-unlock")).status, 200);
    const j = await fetch(`${srv.url}/workspaces/dev/force-unlock`, {
      method: "POST",
      headers: { authorization: basic("admin"), origin: srv.url, "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(j.status, 415);
  });

  it("a form over 16 KiB is a 413 page that says the console's limit; nothing is released", async () => {
    const r = await post("/workspaces/dev/force-unlock", { csrf: csrf.issue("admin"), id: "x".repeat(16 * 1024), confirm: "dev" });
    assert.equal(r.status, 413);
    assert.match(await r.text(), /The form is larger than the console takes \(16 KiB, for three short fields\): nothing was done/);
    assert.equal((await api.lock("dev"))?.id, "LOCK-1");
  });

  it("force-unlock: a wrong ID is a 409; the right one releases, logs and redirects (303) to a notice", async () => {
    const bad = await post("/workspaces/dev/force-unlock", { csrf: csrf.issue("operator"), id: "OTHER", confirm: "dev" }, "operator");
    assert.equal(bad.status, 409);
    assert.match(await bad.text(), /The lock you confirmed \(ID OTHER\) is no longer the one on dev.*Nothing was released/);
    const r = await post("/workspaces/dev/force-unlock", { csrf: csrf.issue("operator"), id: "LOCK-1", confirm: "dev" }, "operator");
    assert.equal(r.status, 303);
    assert.equal(r.headers.get("location"), "/workspaces/dev?done=force-unlock");
    assert.equal(await api.lock("dev"), null);
    assert.ok(srv.log.some((e) => e.user === "operator" && e.action === "force-unlock" && e.outcome === "ok" && e.detail === "lock LOCK-1"));
    assert.ok((await (await get("/workspaces/dev?done=force-unlock")).text()).includes("The lock was released."));
    assert.ok(!(await (await get("/workspaces/dev?done=constructor")).text()).includes("function"));
  });

  it("diff between two versions; a missing version is 404; without both versions, a form to pick them", async () => {
    const page = await (await get(`/workspaces/prod/diff?from=${v1}&to=${v3}`)).text();
    assert.match(page, /class="added">.*null_resource\.r\[2\]/);
    assert.ok(!page.includes("hunter"));
    assert.equal((await get(`/workspaces/prod/diff?from=${v1}&to=nope`)).status, 404);
    for (const q of ["", `?from=${v1}`, "?from=&to="]) {
      const r = await get(`/workspaces/prod/diff${q}`);
      assert.equal(r.status, 200, q);
      const picker = await r.text();
      assert.match(picker, /<form method="get" action="\/workspaces\/prod\/diff">/);
      assert.match(picker, new RegExp(`<select id="to" name="to" required>[\\s\\S]*<option value="${v3}" selected>serial 3 `));
      assert.match(
        picker,
        new RegExp(`<select id="from" name="from" required>[\\s\\S]*<option value="${q === "" || q.startsWith("?from=&") ? v2 : v1}" selected>`),
      );
      assert.ok(picker.includes('href="/workspaces/prod/history"'));
    }
  });

  it("a page of a workspace that does not exist is a 404; default, a locked one and one with versions exist", async () => {
    for (const sub of ["", "/history", "/diff", "/diff?from=a&to=b", "/rollback?to=a", "/force-unlock"]) {
      const r = await get(`/workspaces/nope${sub}`);
      assert.equal(r.status, 404, sub);
      const page = await r.text();
      assert.ok(sub.includes("=") || page.includes("There is no workspace nope"), sub);
    }
    assert.equal((await get("/workspaces/nope?reveal=1")).status, 404);
    assert.ok(!srv.log.some((e) => e.workspace === "nope"), "nothing revealed or logged of a workspace that does not exist");
    assert.equal((await get("/workspaces/default")).status, 200, "default always exists");
    assert.equal((await get("/workspaces/default/history")).status, 200);
    api.setLock("held-only", { id: "L-H", who: "tool@ci", operation: "apply", info: "", created: new Date().toISOString() });
    assert.equal((await get("/workspaces/held-only")).status, 200, "a lock without a state: its page offers force-unlock");
    assert.equal((await get("/workspaces/prod/history")).status, 200);
  });

  it("force-unlock confirmation: holder, age, lease; the POST needs the workspace's name typed and the lock ID shown", async () => {
    const now = Date.now();
    api.setLock("conf", {
      id: "L-C",
      who: "carol@ci",
      operation: "apply",
      info: "run 42",
      created: new Date(now - 3 * 60_000).toISOString(),
      expires: new Date(now + 4 * 60_000).toISOString(),
    });
    api.write("conf", makeState(1, 1));
    const ws = await (await get("/workspaces/conf", "operator")).text();
    assert.match(ws, /<form method="get" action="\/workspaces\/conf\/force-unlock">\s*<input type="hidden" name="id" value="L-C">/);
    assert.ok(!/method="post"[^>]*force-unlock/.test(ws), "the Workspace page itself releases nothing");
    const r = await get("/workspaces/conf/force-unlock?id=L-C", "operator");
    assert.equal(r.status, 200);
    const page = await r.text();
    assert.match(page, /<dd data-holder>carol@ci<\/dd>/);
    assert.match(page, /<dd data-age>3 min ago \(/);
    assert.match(page, /<dd data-lease>expires in 4 min \(/);
    assert.ok(page.includes("run 42") && !page.includes("The lock changed since the page you came from"));
    assert.match(
      page,
      /<form method="post" action="\/workspaces\/conf\/force-unlock">\s*<input type="hidden" name="csrf" value="[^"]+">\s*<input type="hidden" name="id" value="L-C">/,
    );
    assert.match(page, /<input type="text" id="confirm" name="confirm" required/);
    // Came from a page that showed another lock: this page shows the one held now, and says so.
    assert.match(
      await (await get("/workspaces/conf/force-unlock?id=L-OLD", "operator")).text(),
      /The lock changed since the page you came from \(it showed lock <code>L-OLD<\/code>\)/,
    );
    assert.equal((await get("/workspaces/conf/force-unlock", "reader")).status, 403);
    // Without the name, or with another one: refused, logged, nothing released.
    const token = csrf.issue("operator");
    for (const fields of [
      { csrf: token, id: "L-C" } as Record<string, string>,
      { csrf: token, id: "L-C", confirm: "prod" },
      { csrf: token, id: "L-C", confirm: "conf " },
      { csrf: token, id: "L-C", confirm: "CONF" },
    ]) {
      const refused = await post("/workspaces/conf/force-unlock", fields, "operator");
      assert.equal(refused.status, 400, JSON.stringify(fields));
      assert.match(await refused.text(), /type the workspace&#39;s name, conf, exactly: nothing was released/);
    }
    assert.equal((await api.lock("conf"))?.id, "L-C");
    assert.ok(!api.calls.includes("force-unlock conf L-C"), "no refused confirmation reached the API");
    assert.equal(srv.log.filter((e) => e.workspace === "conf" && e.outcome === "refused" && e.detail === "workspace name not confirmed").length, 4);
    // A lock taken again since the confirmation was shown: the ID it carried no longer matches.
    api.setLock("conf", { id: "L-NEW", who: "dave@ci", operation: "apply", info: "", created: new Date(now).toISOString() });
    const stale = await post("/workspaces/conf/force-unlock", { csrf: token, id: "L-C", confirm: "conf" }, "operator");
    assert.equal(stale.status, 409);
    assert.equal((await api.lock("conf"))?.id, "L-NEW", "the new holder's lock is not broken");
    const ok = await post("/workspaces/conf/force-unlock", { csrf: token, id: "L-NEW", confirm: "conf" }, "operator");
    assert.equal(ok.status, 303);
    assert.equal(await api.lock("conf"), null);
    // Released: the confirmation now says there is nothing to release.
    const gone = await get("/workspaces/conf/force-unlock?id=L-NEW", "operator");
    assert.equal(gone.status, 409);
    assert.match(await gone.text(), /conf is not locked any more: there is nothing to force-unlock/);
  });

  it("rollback: confirmation shows the new serial; a stale confirmation is 409; confirmed, it writes serial + 1", async () => {
    const confirm = await (await get(`/workspaces/prod/rollback?to=${v1}`, "operator")).text();
    assert.match(confirm, /data-new-serial>4</);
    assert.match(confirm, /class="removed">.*null_resource\.r\[1\]/);
    assert.equal((await get(`/workspaces/prod/rollback?to=${v3}`, "operator")).status, 409, "already current");
    const stale = await post("/workspaces/prod/rollback", { csrf: csrf.issue("operator"), to: v1, current: v2 }, "operator");
    assert.equal(stale.status, 409);
    const r = await post("/workspaces/prod/rollback", { csrf: csrf.issue("operator"), to: v1, current: v3 }, "operator");
    assert.equal(r.status, 303);
    assert.equal(r.headers.get("location"), "/workspaces/prod/history?done=rollback");
    const [top] = await api.history("prod", { limit: 1 });
    assert.equal(top?.serial, 4);
    assert.equal(top?.resources, 1);
    assert.ok(srv.log.some((e) => e.action === "rollback" && e.outcome === "ok" && e.user === "operator" && e.detail.includes("serial 4")));
    assert.ok(srv.log.some((e) => e.action === "rollback" && e.outcome === "refused" && e.detail === "state changed since confirmation"));
  });

  it("an unexpected error is a 500 page that says nothing of it, and goes to onError", async () => {
    const { handleConsole } = await import("../../../src/console/handler.js");
    const { createServer } = await import("node:http");
    const seen: unknown[] = [];
    const broken = Object.assign(Object.create(api) as MemoryConsoleApi, { listWorkspaces: () => Promise.reject(new Error("secret-detail at /var/x")) });
    const server = createServer(
      (req, res) => void handleConsole(req, res, { user: "admin", can: () => true, log: () => {}, api: broken, csrf, onError: (e) => seen.push(e) }),
    );
    await listenLow(server);
    try {
      const r = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
      assert.equal(r.status, 500);
      const page = await r.text();
      assert.ok(!page.includes("secret-detail") && page.includes("internal error"));
      assert.equal(seen.length, 1);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("an error page links back to the page the user came from, and shows the message's `code` as code", async () => {
    const res = await get("/workspaces/prod/rollback", "admin", { referer: `${srv.url}/workspaces/prod/history` });
    assert.equal(res.status, 400);
    const page = await res.text();
    assert.ok(page.includes("Pick the version to roll back to (<code>to</code>)."), page);
    assert.match(page, /<a href="\/workspaces\/prod\/history" data-back>Back to the history of prod<\/a> · <a href="\/">All workspaces<\/a>/);
    // From elsewhere (another origin): the workspace the failed page belongs to.
    const other = await (await get("/workspaces/prod/rollback", "admin", { referer: "https://elsewhere.example/workspaces/prod/history" })).text();
    assert.match(other, /<a href="\/workspaces\/prod" data-back>Back to prod<\/a>/);
  });

  it("a server without history says so on the History page", async () => {
    const bare = new MemoryConsoleApi({ hasHistory: false });
    bare.write("default", makeState(1, 1));
    const s = await startConsoleServer(bare);
    try {
      const r = await fetch(`${s.url}/workspaces/default/history`, { headers: { authorization: basic("admin") } });
      assert.equal(r.status, 200);
      assert.match(await r.text(), /keeps no versions/);
    } finally {
      await s.close();
    }
  });

  it("mounted under a base path, other paths are left to the server", async () => {
    const { handleConsole } = await import("../../../src/console/handler.js");
    const { createServer } = await import("node:http");
    const server = createServer((req, res) => {
      const ctx = { user: "admin", can: () => true, log: () => {}, api, csrf, base: "/ui" };
      void handleConsole(req, res, ctx).then((h) => {
        if (!h) res.writeHead(418).end();
      });
    });
    await listenLow(server);
    const port = (server.address() as { port: number }).port;
    try {
      const page = await (await fetch(`http://127.0.0.1:${port}/ui`)).text();
      assert.ok(page.includes('href="/ui/workspaces/prod"'));
      assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 418);
      assert.equal((await fetch(`http://127.0.0.1:${port}/state/default`)).status, 418);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
