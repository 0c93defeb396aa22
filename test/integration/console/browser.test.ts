/**
 * The console end to end in headless Chromium (Debian's package, via playwright-core),
 * served by `objstate serve` itself (an in-process ObjstateServer with a users file over an
 * embedded store and lock table): list, a lock taken through the http backend protocol
 * appearing live, force-unlock from the page, a diff of two real versions, a rollback with
 * its confirmation, a read-only user, cross-site POSTs. Each page is screenshotted to
 * test-output/console/.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { ObjectStoreBackend } from "../../../src/index.js";
import { launchChromium, screenshotPath } from "../../support/browser.js";
import { makeState } from "../../support/console-memory.js";
import { startObjstateConsole, type ObjstateConsole } from "../../support/console-server.js";
import { HttpBackendClient } from "../../support/http-backend-client.js";
import { listenLow } from "../../support/port.js";

const TIMEOUT = 10_000;

describe("web console of objstate serve in headless Chromium", { timeout: 180_000 }, () => {
  let browser: Browser;
  let server: ObjstateConsole;
  let library: ObjectStoreBackend;
  const contexts: BrowserContext[] = [];
  /** Version IDs of prod, oldest first (serials 1..8). */
  const prodVersions: string[] = [];

  async function pageAs(user: string): Promise<Page> {
    const ctx = await browser.newContext({ httpCredentials: { username: user, password: user }, viewport: { width: 1100, height: 760 } });
    contexts.push(ctx);
    const page = await ctx.newPage();
    page.setDefaultTimeout(TIMEOUT);
    return page;
  }

  before(async () => {
    server = await startObjstateConsole();
    library = await ObjectStoreBackend.connect(server.config, { env: {}, who: "alice@laptop", onWarning: () => {} });
    await library.writeState("default", makeState(1, 2, { region: { value: "eu-1" } }));
    for (let i = 1; i <= 8; i++) {
      await library.writeState(
        "prod",
        makeState(i, i + (i % 3), { url: { value: `https://v${i}.example` }, db_password: { value: `secret-${i}`, sensitive: true } }, `t${i}`),
      );
    }
    for await (const v of library.history("prod")) prodVersions.unshift(v.versionId);
    await library.writeState("staging", makeState(3, 4));
    browser = await launchChromium();
  });

  after(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await server?.close();
    library?.close();
  });

  it("lists the workspaces", async () => {
    const page = await pageAs("admin");
    await page.goto(`${server.url}/`);
    assert.equal(await page.title(), "Workspaces · objstate");
    assert.deepEqual((await page.locator("tr[data-ws]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-ws")))).sort(), [
      "default",
      "prod",
      "staging",
    ]);
    // Resource counts, serial and who are read in the background after the first view (a reload shows them).
    const count = page.locator('tr[data-ws="prod"] td').nth(4);
    const last = page.locator('tr[data-ws="prod"] td').nth(2);
    for (let i = 0; i < 50 && ((await count.innerText()) !== "10" || (await last.innerText()).includes("…")); i++) {
      await page.waitForTimeout(100);
      await page.reload();
    }
    assert.equal(await count.innerText(), "10");
    assert.match(await page.locator('tr[data-ws="prod"] td').nth(2).innerText(), /by alice@laptop serial 8/);
    // Keyboard: the first Tab reaches the skip link.
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to content");
    await page.screenshot({ path: screenshotPath("workspaces.png"), fullPage: true });
  });

  it("a lock taken through the http backend protocol (LOCK /state/staging) appears without a reload; force-unlock from the page, confirmed by typing the name, releases it", async () => {
    const page = await pageAs("operator");
    await page.goto(`${server.url}/`);
    const cell = page.locator('[data-lock-ws="staging"]');
    assert.equal(await cell.innerText(), "unlocked");
    const tool = new HttpBackendClient({ bases: [server.url], workspace: "staging", username: "operator", password: "operator", retries: 0 });
    const taken = await tool.lock("OperationTypeApply", "bob@ci");
    assert.ok(taken.ok);
    const lock = { ID: taken.id };
    try {
      // The page polls lock state every 3 s (the server's default).
      await page.waitForFunction(
        () => document.querySelector('[data-lock-ws="staging"]')?.textContent?.startsWith("locked by bob@ci (apply)") === true,
        undefined,
        { timeout: TIMEOUT },
      );
      await page.screenshot({ path: screenshotPath("workspaces-locked.png"), fullPage: true });
      await page.getByRole("link", { name: "staging", exact: true }).click();
      await page.waitForURL(/\/workspaces\/staging$/);
      assert.ok((await page.locator("main").innerText()).includes(lock.ID));
      await page.screenshot({ path: screenshotPath("workspace.png"), fullPage: true });
      await page.getByRole("button", { name: "Force-unlock…" }).click();
      // The confirmation: who holds it, since when, its lease, and the name to type.
      await page.waitForURL(new RegExp(`/workspaces/staging/force-unlock\\?id=${lock.ID}$`));
      assert.equal(await page.locator("[data-holder]").innerText(), "bob@ci");
      assert.match(await page.locator("[data-age]").innerText(), /^\d+ s ago \(/);
      assert.match(await page.locator("[data-lease]").innerText(), /^never/);
      await page.screenshot({ path: screenshotPath("force-unlock.png"), fullPage: true });
      // The button alone does nothing: the name is required (the browser keeps the form).
      await page.getByRole("button", { name: "Force-unlock staging" }).click();
      assert.equal(await page.locator("#confirm").evaluate((el) => (el as HTMLInputElement).validity.valueMissing), true);
      assert.match(page.url(), /\/force-unlock\?id=/);
      // Another name is refused by the server: nothing released.
      await page.getByLabel("To confirm, type the workspace's name, staging:").fill("stagin");
      await page.getByRole("button", { name: "Force-unlock staging" }).click();
      await page.waitForURL(/\/workspaces\/staging\/force-unlock$/);
      assert.ok((await page.locator("main").innerText()).includes("type the workspace's name, staging, exactly: nothing was released"));
      assert.equal((await library.lockInfo("staging"))?.ID, lock.ID);
      await page.getByRole("link", { name: "Review the lock and confirm again" }).click();
      await page.getByLabel("To confirm, type the workspace's name, staging:").fill("staging");
      await page.getByRole("button", { name: "Force-unlock staging" }).click();
      await page.waitForURL(/done=force-unlock/);
      assert.ok((await page.locator("main").innerText()).includes("The lock was released."));
      assert.equal(await page.locator('[data-lock-ws="staging"]').innerText(), "unlocked");
      assert.equal(await library.lockInfo("staging"), null);
      assert.ok(server.log.some((e) => e.user === "operator" && e.action === "force-unlock" && e.outcome === "ok" && e.detail === `lock ${lock.ID}`));
    } finally {
      await library.unlock("staging", lock.ID).catch(() => {});
    }
    // The tool's own write under the lock it lost is refused.
    assert.equal((await tool.put(Buffer.from(makeState(4, 4)))).status, 409);
  });

  it("a read-only user sees no action buttons and gets 403 when posting anyway", async () => {
    const lock = await library.lock("prod", { operation: "apply" });
    try {
      const page = await pageAs("reader");
      await page.goto(`${server.url}/workspaces/prod`);
      assert.ok((await page.locator('[data-lock-ws="prod"]').innerText()).startsWith("locked by alice@laptop"));
      assert.equal(await page.locator("button").count(), 0, "no buttons at all");
      assert.equal(await page.locator('form[method="post"]').count(), 0);
      assert.ok((await page.locator("main").innerText()).includes("<sensitive>"));
      assert.ok(!(await page.content()).includes("hunter2"));
      await page.screenshot({ path: screenshotPath("workspace-read-only.png"), fullPage: true });
      // Posting anyway from the console's own page, with a valid token for this user.
      const status = await page.evaluate(
        async ([id, token]) =>
          (
            await fetch("/workspaces/prod/force-unlock", {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({ csrf: token as string, id: id as string }).toString(),
            })
          ).status,
        [lock.ID, server.csrf.issue("reader")],
      );
      assert.equal(status, 403);
      assert.equal((await library.lockInfo("prod"))?.ID, lock.ID);
    } finally {
      await library.unlock("prod", lock.ID);
    }
  });

  it("a cross-site POST is refused (other site with a valid token; same site without one)", async () => {
    const lock = await library.lock("prod", { operation: "apply" });
    // The attacking site: another origin whose page posts the console's force-unlock form.
    const evil: Server = createServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end(
        `<form id="f" method="post" action="${server.url}/workspaces/prod/force-unlock"><input name="csrf" value="${server.csrf.issue("admin")}"><input name="id" value="${lock.ID}"></form><script>document.getElementById("f").submit()</script>`,
      );
    });
    await listenLow(evil);
    try {
      const page = await pageAs("admin");
      // Log in to the console first: the browser then holds the Basic credentials.
      await page.goto(`${server.url}/`);
      const port = (evil.address() as AddressInfo).port;
      // Another site (localhost): Sec-Fetch-Site says cross-site. Another origin on the same
      // site (127.0.0.1, another port): same-site, refused too.
      for (const host of ["localhost", "127.0.0.1"]) {
        await page.goto(`http://${host}:${port}/`);
        await page.waitForURL(`${server.url}/workspaces/prod/force-unlock`);
        assert.ok((await page.locator("main").innerText()).includes("Refused: this action must be posted from the console's own page."));
        if (host === "localhost") await page.screenshot({ path: screenshotPath("refused.png"), fullPage: true });
      }
      // Same origin, but no token: also refused.
      await page.goto(`${server.url}/`);
      const status = await page.evaluate(
        async (id) =>
          (await fetch("/workspaces/prod/force-unlock", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `id=${id}` }))
            .status,
        lock.ID,
      );
      assert.equal(status, 403);
      assert.equal((await library.lockInfo("prod"))?.ID, lock.ID, "the lock is still held");
      const refused = server.log.filter((e) => e.outcome === "refused").map((e) => e.detail);
      // Refused by the server's request gate, before any route: the browser marks both.
      assert.ok(refused.includes("cross-site: the browser marked it cross-site (Sec-Fetch-Site)"), JSON.stringify(refused));
      assert.ok(refused.includes("cross-site: the browser marked it same-site (Sec-Fetch-Site)"), JSON.stringify(refused));
      assert.ok(refused.includes("missing or invalid CSRF token"));
    } finally {
      evil.closeAllConnections();
      evil.close();
      await library.unlock("prod", lock.ID);
    }
  });

  it("history of real versions, a diff of two of them, and a rollback with its confirmation that puts the new version at the top", async () => {
    const page = await pageAs("operator");
    await page.goto(`${server.url}/workspaces/prod/history`);
    assert.equal(await page.locator("svg.chart polyline").count(), 2);
    assert.equal(await page.locator("tr[data-version]").count(), 8);
    await page.screenshot({ path: screenshotPath("history.png"), fullPage: true });
    // Pick two versions with the keyboard-usable radios and compare.
    await page.getByRole("radio", { name: "from version 2" }).check();
    await page.getByRole("radio", { name: "to version 6" }).check();
    await page.getByRole("button", { name: "Compare selected versions" }).click();
    await page.waitForURL(/\/diff\?/);
    assert.ok(page.url().includes(encodeURIComponent(prodVersions[1] as string)) || page.url().includes(prodVersions[1] as string));
    const diff = await page.locator("main").innerText();
    assert.match(diff, /null_resource\.r\[5\]/);
    assert.ok(diff.includes('"https://v2.example" → "https://v6.example"'));
    assert.ok(!(await page.content()).includes("secret-"));
    await page.screenshot({ path: screenshotPath("diff.png"), fullPage: true });
    // The Diff page without versions chosen offers them to pick.
    const picker = await page.goto(`${server.url}/workspaces/prod/diff`);
    assert.equal(picker?.status(), 200);
    await page.getByLabel("From (older)").selectOption(prodVersions[0] as string);
    await page.getByLabel("To (newer)").selectOption(prodVersions[1] as string);
    await page.getByRole("button", { name: "Compare" }).click();
    await page.waitForURL(/\/diff\?from=/);
    assert.ok((await page.locator("main").innerText()).includes('"https://v1.example" → "https://v2.example"'));
    // A workspace that does not exist is not rendered as an empty one.
    assert.equal((await page.goto(`${server.url}/workspaces/no-such-workspace`))?.status(), 404);
    // Roll back to serial 3: the confirmation shows the serial it will write.
    await page.goto(`${server.url}/workspaces/prod/history`);
    await page.locator(`tr[data-version="${prodVersions[2]}"]`).getByRole("link", { name: "Roll back to this…" }).click();
    await page.waitForURL(/\/rollback\?to=/);
    assert.equal(await page.locator("[data-new-serial]").innerText(), "9");
    await page.screenshot({ path: screenshotPath("rollback.png"), fullPage: true });
    await page.getByRole("button", { name: "Roll back to serial 3" }).click();
    await page.waitForURL(/\/history\?done=rollback/);
    const top = page.locator("tr[data-version]").first();
    assert.match(await top.innerText(), /^\s*9 \(current\)/);
    assert.equal(await page.locator("tr[data-version]").count(), 9);
    await page.screenshot({ path: screenshotPath("history-after-rollback.png"), fullPage: true });
    assert.ok(server.log.some((e) => e.action === "rollback" && e.user === "operator" && e.outcome === "ok"));
    // The store has it: version 3's content with serial 9, written as a rollback.
    const newest = (await library.history("prod", { limit: 1 }).next()).value;
    assert.deepEqual([newest?.serial, newest?.operation, newest?.sourceVersion], [9, "rollback", prodVersions[2]]);
    assert.deepEqual(newest?.principal, { name: "operator", via: "password" }, "the console's user is recorded with the version");
    assert.equal(
      (JSON.parse((await library.readState("prod"))?.toString() ?? "{}") as { outputs: { url: { value: string } } }).outputs.url.value,
      "https://v3.example",
    );
    assert.equal(await library.lockInfo("prod"), null);
  });

  it("laid out for a phone (390 px): no cell of a table row on the Workspaces and History pages lies beyond the viewport", async () => {
    const ctx = await browser.newContext({ httpCredentials: { username: "admin", password: "admin" }, viewport: { width: 390, height: 844 }, isMobile: true });
    contexts.push(ctx);
    const page = await ctx.newPage();
    page.setDefaultTimeout(TIMEOUT);
    // A held lock makes the longest Lock cell the Workspaces page shows (a CI runner's long host name).
    const lock = await library.lock("staging", {
      operation: "OperationTypeApply",
      info: "a long-running apply from the pipeline",
      who: "deploy-bot@ci-runner-7f9c2d41.build.example.internal",
    });
    try {
      for (const [path, rows, shot] of [
        ["/", "tr[data-ws]", "workspaces-phone.png"],
        ["/workspaces/prod/history", "tr[data-version]", "history-phone.png"],
      ] as const) {
        await page.goto(`${server.url}${path}`);
        assert.ok((await page.locator(rows).count()) > 0, `${path} lists rows`);
        // Every element inside a row, and every row: its right edge within the viewport.
        const beyond = await page.evaluate((sel) => {
          const width = window.innerWidth;
          const out: string[] = [];
          for (const row of Array.from(document.querySelectorAll(sel))) {
            for (const el of [row, ...Array.from(row.querySelectorAll("*"))]) {
              const r = el.getBoundingClientRect();
              if (r.width > 0 && r.right > width + 0.5)
                out.push(`${el.tagName.toLowerCase()} "${(el.textContent ?? "").trim().slice(0, 40)}" right=${Math.round(r.right)} > ${width}`);
            }
          }
          return out;
        }, rows);
        await page.screenshot({ path: screenshotPath(shot), fullPage: true });
        assert.deepEqual(beyond, [], `${path} at 390 px`);
      }
      // What the rows must still show there: the last write, and the rollback link on screen.
      await page.goto(`${server.url}/`);
      assert.ok(
        await page
          .locator('tr[data-ws="prod"]')
          .getByText(/serial \d+/)
          .isVisible(),
      );
      await page.goto(`${server.url}/workspaces/prod/history`);
      assert.ok(await page.locator("tr[data-version]").nth(1).getByRole("link", { name: "Roll back to this…" }).isVisible());
    } finally {
      await library.unlock("staging", lock.ID);
    }
  });

  it("readable on a phone: no horizontal scroll of the page itself", async () => {
    const ctx = await browser.newContext({ httpCredentials: { username: "admin", password: "admin" }, viewport: { width: 375, height: 740 }, isMobile: true });
    contexts.push(ctx);
    const page = await ctx.newPage();
    page.setDefaultTimeout(TIMEOUT);
    await page.goto(`${server.url}/workspaces/prod`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px`);
    await page.screenshot({ path: screenshotPath("workspace-phone.png"), fullPage: true });
  });
});
