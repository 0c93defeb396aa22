/** The console's page renderers: pure functions of view models. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backFrom, pageLink } from "../../../src/console/back.js";
import { renderMessage, type Frame } from "../../../src/console/layout.js";
import { lockText, operationName } from "../../../src/console/format.js";
import { renderDiff, renderDiffPicker, renderRollback } from "../../../src/console/pages/diff.js";
import { renderChart, renderHistory } from "../../../src/console/pages/history.js";
import { renderForceUnlock, renderWorkspace, type WorkspaceView } from "../../../src/console/pages/workspace.js";
import { filterWorkspaces, renderWorkspaces, sortByLastWrite } from "../../../src/console/pages/workspaces.js";
import type { VersionView, WorkspaceSummary } from "../../../src/console/types.js";
import { diffStates } from "../../../src/state/diff.js";
import { makeState } from "../../support/console-memory.js";

const frame: Frame = { base: "/ui", user: "alice<b>", now: Date.parse("2026-11-24T01:00:00Z"), csrf: "123.tok" };
const EVIL = `<img src=x onerror=alert(1)>`;
const lock = { id: "L-1", who: "bob@host", operation: "apply", info: "", created: "2026-11-24T00:55:00Z" };
const ws = (name: string, time: string | undefined, extra: Partial<WorkspaceSummary> = {}): WorkspaceSummary => ({
  name,
  lock: null,
  lastWrite: { time, serial: 3 },
  size: 2048,
  resources: 4,
  ...extra,
});
const version = (id: string, serial: number, extra: Partial<VersionView> = {}): VersionView => ({
  versionId: id,
  lastModified: "2026-11-23T10:00:00Z",
  size: 100 * serial,
  serial,
  lineage: "L",
  isLatest: false,
  deleteMarker: false,
  resources: serial,
  ...extra,
});

/** What the Content-Security-Policy would block: inline script, inline style, event handlers. */
function assertCspClean(page: string): void {
  assert.ok(!/<script(?![^>]*\bsrc=)/.test(page), "inline <script>");
  assert.ok(!/<style/.test(page), "inline <style>");
  // Attribute names only: quoted values (escaped state data) are blanked first.
  for (const tag of page.match(/<[a-zA-Z][^>]*>/g) ?? []) {
    const names = tag.replace(/"[^"]*"/g, '""');
    assert.ok(!/\sstyle=/.test(names), `style attribute in ${tag}`);
    assert.ok(!/\son[a-z]+=/i.test(names), `event handler attribute in ${tag}`);
  }
}

const baseView = (over: Partial<WorkspaceView> = {}): WorkspaceView => ({
  frame,
  summary: ws("prod", "2026-11-24T00:00:00Z", { lock }),
  outputs: [
    { name: "url", value: '"https://x"', sensitive: false },
    { name: "password", value: '"<sensitive>"', sensitive: true },
  ],
  revealed: false,
  canReveal: false,
  canForceUnlock: false,
  canRollback: false,
  versions: [version("v2", 2, { isLatest: true }), version("v1", 1)],
  ...over,
});

describe("console pages", () => {
  it("Workspaces: sorted by last write (unknown last), filtered, escaped, live, CSP-clean", () => {
    const rows = [
      ws("old", "2026-01-01T00:00:00Z"),
      ws("none", undefined, { lastWrite: null }),
      ws(EVIL, "2026-11-01T00:00:00Z", { lock }),
      ws("new", "2026-11-20T00:00:00Z"),
    ];
    assert.deepEqual(
      sortByLastWrite(rows).map((w) => w.name),
      ["new", EVIL, "old", "none"],
    );
    assert.deepEqual(
      filterWorkspaces(rows, " OL ").map((w) => w.name),
      ["old"],
    );
    const page = renderWorkspaces({ frame, rows: sortByLastWrite(rows), query: `"q`, total: 4 }).value;
    assertCspClean(page);
    assert.ok(!page.includes(EVIL) && page.includes("&lt;img src=x onerror=alert(1)&gt;"));
    assert.ok(page.includes('href="/ui/workspaces/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"'));
    assert.ok(page.includes("alice&lt;b&gt;"));
    assert.ok(page.includes('value="&quot;q"'));
    assert.ok(page.includes('data-locks-url="/ui/console/locks"'));
    const pending = renderWorkspaces({
      frame,
      rows: [ws("listed", "2026-11-20T00:00:00Z", { lastWrite: { time: "2026-11-20T00:00:00Z", serial: null, who: "stale@x", pending: true } })],
      query: "",
      total: 1,
    }).value;
    assert.ok(pending.includes("by … serial …") && !pending.includes("stale@x") && !pending.includes("serial ?"), "who and serial being read show as …");
    assert.match(page, /locked by bob@host \(apply\) since 2026-11-24 00:55 UTC \(5 min ago\)/);
    assert.ok(page.indexOf('data-ws="new"') < page.indexOf('data-ws="old"'));
    assert.ok(page.includes('<link rel="stylesheet" href="/ui/console/console.css">') && page.includes('<script src="/ui/console/live.js" defer></script>'));
    assert.ok(page.includes('name="viewport"') && page.includes('class="skip"'));
  });

  it("Workspace: no action buttons without the roles; sensitive masked; a force-unlock button to its confirmation, with the ID shown", () => {
    const ro = renderWorkspace(baseView()).value;
    assertCspClean(ro);
    assert.ok(!ro.includes('method="post"'), "read-only sees no action form");
    assert.ok(!ro.includes("Reveal") && !ro.includes("Roll back"));
    assert.ok(ro.includes("&quot;&lt;sensitive&gt;&quot;") && ro.includes("(sensitive)"));
    const all = renderWorkspace(baseView({ canForceUnlock: true, canReveal: true, canRollback: true })).value;
    assert.match(
      all,
      /<form method="get" action="\/ui\/workspaces\/prod\/force-unlock">\s*<input type="hidden" name="id" value="L-1">\s*<p><button type="submit" class="danger">Force-unlock…<\/button>/,
    );
    assert.ok(!all.includes('method="post"') && !all.includes("123.tok"), "the Workspace page posts nothing: the confirmation does");
    assert.ok(all.includes("Reveal sensitive values"));
    assert.ok(all.includes('href="/ui/workspaces/prod/rollback?to=v1"') && !all.includes("rollback?to=v2"), "no rollback to the current version");
    assert.ok(all.includes('data-lock-id="L-1"'));
  });

  it("Workspace without history and without lock says so; a notice is shown", () => {
    const page = renderWorkspace(baseView({ versions: null, summary: ws("dev", undefined), canForceUnlock: true, notice: "The lock was released." })).value;
    assert.ok(page.includes("keeps no versions"));
    assert.ok(!page.includes("force-unlock"));
    assert.ok(page.includes("The lock was released."));
  });

  it("Workspace for a user with only the outputs role: outputs, no versions and no link to the history", () => {
    const page = renderWorkspace(baseView({ versions: "hidden" })).value;
    assert.ok(page.includes('data-output="url"'));
    assert.ok(page.includes("Versions and history need the read role"));
    assert.ok(!page.includes("/history"));
  });

  it("History: chart, newest first, from/to radios defaulting to the last two, rollback links only with the roles", () => {
    const versions = [version("v3", 3, { isLatest: true, who: EVIL }), version("v2", 2), version("d", 0, { deleteMarker: true }), version("v1", 1)];
    const page = renderHistory({ frame, workspace: "prod", versions, canRollback: true }).value;
    assertCspClean(page);
    assert.ok(page.includes('<svg class="chart"'));
    assert.match(page, /name="to" value="v3"[^>]*checked/);
    assert.match(page, /name="from" value="v2"[^>]*checked/);
    assert.ok(!/name="from" value="d"/.test(page), "a delete marker cannot be diffed");
    assert.ok(page.includes("rollback?to=v2") && page.includes("rollback?to=v1") && !page.includes("rollback?to=v3"));
    assert.ok(!page.includes(EVIL));
    assert.ok(!renderHistory({ frame, workspace: "prod", versions, canRollback: false }).value.includes("rollback?to="));
    assert.ok(renderHistory({ frame, workspace: "prod", versions: null, canRollback: true }).value.includes("keeps no versions"));
  });

  it("History: who the client said it was, and the server user the write was made for (escaped), only when one was recorded", () => {
    const versions = [version("v2", 2, { who: "ci@runner", principal: { name: EVIL, via: "certificate" } }), version("v1", 1, { who: "me@laptop" })];
    const page = renderHistory({ frame, workspace: "prod", versions, canRollback: false }).value;
    assert.match(page, /ci@runner<br><span class="muted" data-principal>as server user &lt;img src=x onerror=alert\(1\)&gt; \(certificate\)<\/span>/);
    assert.ok(!page.includes(EVIL));
    assert.equal(page.match(/data-principal/g)?.length, 1, "the CLI's write names no server user");
  });

  it("Chart: one point per version on each line, scaled; nothing for no versions", () => {
    const svg = renderChart([
      { resources: 0, size: 10 },
      { resources: 5, size: 20 },
      { resources: undefined, size: 40 },
    ]).value;
    const lines = [...svg.matchAll(/points="([^"]*)"/g)].map((m) => (m[1] as string).split(" ").filter(Boolean));
    assert.equal(lines[0]?.length, 2, "an unknown count is left out");
    assert.equal(lines[1]?.length, 3);
    assert.match(svg, /max 5 resources · 40 B/);
    assert.equal(renderChart([]).value, "");
  });

  it("Diff: added/removed/changed resources and outputs, sensitive masked, lineage warning", () => {
    const a = makeState(1, 2, { url: { value: "a" }, pw: { value: "secret-1", sensitive: true } }, "a", "L1");
    const b = makeState(2, 3, { url: { value: "b" }, pw: { value: "secret-2", sensitive: true } }, "b", "L2");
    const page = renderDiff({ frame, workspace: "prod", from: "v1", to: "v2", diff: diffStates(a, b) }).value;
    assertCspClean(page);
    assert.match(page, /class="added">.*null_resource\.r\[2\]/);
    assert.match(page, /class="changed">.*null_resource\.r\[0\]/);
    assert.ok(page.includes("&quot;a&quot;</code> → <code>&quot;b&quot;"));
    assert.ok(!page.includes("secret-1") && !page.includes("secret-2") && page.includes("&lt;sensitive&gt;"));
    assert.ok(page.includes("different lineages"));
    assert.ok(renderDiff({ frame, workspace: "p", from: "x", to: "y", diff: diffStates(a, a) }).value.includes("No changes"));
  });

  it("Rollback confirmation: the diff it will apply, the serial it will write, a POST form with CSRF", () => {
    const a = makeState(7, 3);
    const b = makeState(5, 1);
    const page = renderRollback({
      frame,
      workspace: "prod",
      target: version("v5", 5),
      current: version("v7", 7, { isLatest: true }),
      diff: diffStates(a, b),
      newSerial: 8,
    }).value;
    assertCspClean(page);
    assert.match(page, /data-new-serial>8</);
    assert.match(page, /class="removed">.*null_resource\.r\[2\]/);
    assert.match(
      page,
      /<form method="post" action="\/ui\/workspaces\/prod\/rollback">\s*<input type="hidden" name="csrf" value="123.tok">\s*<input type="hidden" name="to" value="v5">\s*<input type="hidden" name="current" value="v7">/,
    );
  });

  it("Force-unlock confirmation: holder, age, lease (expires in / expired / never), the typed name and the lock ID in a POST form; escaped, CSP-clean", () => {
    const page = renderForceUnlock({ frame, workspace: "prod", lock: { ...lock, who: EVIL, info: EVIL, expires: "2026-11-24T01:04:00Z" } }).value;
    assertCspClean(page);
    assert.ok(!page.includes(EVIL) && page.includes("&lt;img src=x onerror=alert(1)&gt;"));
    assert.match(page, /<dd data-age>5 min ago \(2026-11-24 00:55 UTC\)<\/dd>/);
    assert.match(page, /<dd data-lease>expires in 4 min \(2026-11-24 01:04 UTC\)<\/dd>/);
    assert.match(
      page,
      /<form method="post" action="\/ui\/workspaces\/prod\/force-unlock">\s*<input type="hidden" name="csrf" value="123.tok">\s*<input type="hidden" name="id" value="L-1">/,
    );
    assert.match(page, /<label for="confirm">To confirm, type the workspace's name, <strong class="mono">prod<\/strong>:<\/label>/);
    assert.match(page, /<button type="submit" class="danger">Force-unlock prod<\/button>/);
    assert.ok(
      page.includes('data-lock-ws="prod" data-lock-id="L-1"') && page.includes('id="lock-changed"'),
      "live: says when the lock changes while it is open",
    );
    assert.ok(!page.includes("changed since the page you came from"));
    assert.match(
      renderForceUnlock({ frame, workspace: "prod", lock: { ...lock, expires: "2026-11-24T00:58:00Z" } }).value,
      /<dd data-lease>expired 2 min ago \(2026-11-24 00:58 UTC\): another client may take the lock over<\/dd>/,
    );
    assert.match(renderForceUnlock({ frame, workspace: "prod", lock }).value, /<dd data-lease>never: no lease, held until released<\/dd>/);
    assert.match(renderForceUnlock({ frame, workspace: "prod", lock: { ...lock, created: "" } }).value, /<dd data-age>unknown/);
    assert.match(
      renderForceUnlock({ frame, workspace: "prod", lock, changedFrom: "L-0" }).value,
      /The lock changed since the page you came from \(it showed lock <code>L-0<\/code>\)/,
    );
  });

  it("Diff picker: two selects of the versions with a state (newest two by default, or the side given), a link to History", () => {
    const versions = [version("v3", 3, { isLatest: true, who: EVIL }), version("d", 0, { deleteMarker: true }), version("v2", 2), version("v1", 1)];
    const page = renderDiffPicker({ frame, workspace: "prod", versions }).value;
    assertCspClean(page);
    assert.ok(!page.includes(EVIL));
    assert.match(page, /<select id="to" name="to" required>\s*<option value="v3" selected>serial 3 · 2026-11-23 10:00 UTC · &lt;img/);
    assert.match(page, /<select id="from" name="from" required>\s*<option value="v3">[^<]*<\/option><option value="v2" selected>/);
    assert.ok(!page.includes('value="d"'), "a delete marker cannot be compared");
    assert.ok(page.includes('href="/ui/workspaces/prod/history"'));
    const given = renderDiffPicker({ frame, workspace: "prod", versions, from: "v1", to: "nope" }).value;
    assert.match(given, /<option value="v1" selected>/);
    assert.match(given, /<select id="to" name="to" required>\s*<option value="v3" selected>/, "an unknown side falls back to the default");
    assert.match(
      renderDiffPicker({ frame, workspace: "prod", versions: [version("v1", 1, { isLatest: true })] }).value,
      /one version with a state: there is nothing to compare yet/,
    );
    assert.match(renderDiffPicker({ frame, workspace: "prod", versions: null }).value, /keeps no versions/);
  });

  it("operations by the names people use: apply, not OperationTypeApply (lock text, force-unlock, History, timeline)", () => {
    assert.deepEqual(
      [
        "OperationTypeApply",
        "OperationTypePlan",
        "OperationTypeRefresh",
        "OperationTypeInvalid",
        "state-mv",
        "state-replace-provider",
        "workspace-new",
        "taint",
        "rollback",
      ].map(operationName),
      ["apply", "plan", "refresh", "import or console", "state mv", "state replace-provider", "workspace new", "taint", "rollback"],
    );
    const held = { ...lock, operation: "OperationTypeApply" };
    assert.match(lockText(held, frame.now), /^locked by bob@host \(apply\) since /);
    const pages = [
      renderWorkspaces({ frame, rows: [ws("prod", "2026-11-24T00:00:00Z", { lock: held })], query: "", total: 1 }).value,
      renderForceUnlock({ frame, workspace: "prod", lock: held }).value,
      renderHistory({
        frame,
        workspace: "prod",
        versions: [version("v2", 2, { isLatest: true, operation: "OperationTypePlan" }), version("v1", 1, { operation: "OperationTypeApply" })],
        canRollback: false,
      }).value,
      renderWorkspace(baseView({ versions: [version("v2", 2, { isLatest: true, operation: "OperationTypeApply" })] })).value,
    ];
    for (const page of pages) assert.ok(!page.includes("OperationType"), page);
    assert.ok((pages[0] as string).includes("(apply)"));
    assert.match(pages[1] as string, /<dt>Operation<\/dt><dd>apply<\/dd>/);
    assert.match(pages[2] as string, /data-label="Operation">plan<\/td>[\s\S]*data-label="Operation">apply<\/td>/);
    assert.ok((pages[3] as string).includes(" · apply · "));
  });

  it("Message page escapes the message", () => {
    const page = renderMessage({ frame, title: "t", message: EVIL, tone: "bad" }).value;
    assert.ok(!page.includes(EVIL) && page.includes('role="alert"'));
  });

  it("Message page: `backtick` spans as code, escaped (never markup), a lone backtick kept; a link back and one to all workspaces", () => {
    const page = renderMessage({
      frame,
      title: "t",
      message: `Turn it on with \`objstate init --versioning\`; \`${EVIL}\` and 5\` <b>`,
      tone: "bad",
      back: { href: "/ui/workspaces/prod/history", label: "Back to the history of prod" },
    }).value;
    assert.ok(
      page.includes("Turn it on with <code>objstate init --versioning</code>; <code>&lt;img src=x onerror=alert(1)&gt;</code> and 5&#96; &lt;b&gt;"),
      page,
    );
    assert.ok(!page.includes(EVIL) && !page.includes("`"));
    assert.match(page, /<a href="\/ui\/workspaces\/prod\/history" data-back>Back to the history of prod<\/a> · <a href="\/ui\/">All workspaces<\/a>/);
    assert.ok(
      !renderMessage({ frame, title: "t", message: "m", back: { href: "/ui/", label: "Back to workspaces" } }).value.includes("All workspaces"),
      "one link when it goes to the Workspaces page",
    );
  });

  it("error pages link back to the console page the user came from (same origin only), else to the page above the one that failed", () => {
    const o = "https://objstate.example";
    const failed = new URL(`${o}/ui/workspaces/prod/rollback`);
    const back = (referer: string | undefined, url = failed) => backFrom("/ui", url, referer, o);
    assert.deepEqual(back(`${o}/ui/workspaces/prod/history?all=1&done=rollback`), {
      href: "/ui/workspaces/prod/history?all=1",
      label: "Back to the history of prod",
    });
    assert.deepEqual(back(`${o}/ui/workspaces/a%2Fb/force-unlock?id=L-1`), {
      href: "/ui/workspaces/a%2Fb/force-unlock?id=L-1",
      label: "Back to the force-unlock of a/b",
    });
    assert.deepEqual(back(`${o}/ui/?q=pr`), { href: "/ui/?q=pr", label: "Back to workspaces" });
    // Not a console page of this origin, or the failed page itself: the page above instead.
    for (const r of [
      undefined,
      "",
      "not a url",
      `https://evil.example/ui/workspaces/x`,
      `${o}//evil.example/`,
      `${o}/api/v1/workspaces`,
      `${o}/workspaces/x`,
      `${o}/ui/workspaces/prod/rollback`,
    ]) {
      assert.deepEqual(back(r), { href: "/ui/workspaces/prod", label: "Back to prod" }, String(r));
    }
    assert.deepEqual(back(undefined, new URL(`${o}/ui/workspaces/prod?reveal=1`)), { href: "/ui/workspaces/prod", label: "Back to prod" });
    assert.deepEqual(back(undefined, new URL(`${o}/ui/workspaces/prod`)), { href: "/ui/", label: "Back to workspaces" });
    assert.equal(pageLink("/ui", new URL(`${o}/ui/console/locks`)), undefined);
  });
});
