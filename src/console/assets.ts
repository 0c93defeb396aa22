/** The console's stylesheet and script (live lock state, filter-as-you-type), served from its origin so the CSP needs nothing inline. */
import { createHash } from "node:crypto";

export const CSS_PATH = "/console/console.css";
export const JS_PATH = "/console/live.js";
/** The lock-state JSON the script polls. */
export const LOCKS_PATH = "/console/locks";

export const CSS = `:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--accent:#0550ae;--bad:#a40e26;--good:#116329;--warn:#7d4e00;--chip:#f6f8fa}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#30363d;--accent:#4493f8;--bad:#ff7b72;--good:#3fb950;--warn:#d29922;--chip:#161b22}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;background:var(--bg);color:var(--fg)}
a{color:var(--accent)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:var(--bg);padding:4px 8px;z-index:1}
header{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;align-items:baseline;padding:.75rem 1rem;border-bottom:1px solid var(--line)}
header .brand{font-weight:700;text-decoration:none;color:var(--fg)}
header .user{margin-left:auto;color:var(--muted);font-size:.9rem}
main{padding:1rem;max-width:72rem;margin:0 auto}
h1{font-size:1.4rem;margin:.25rem 0 1rem;overflow-wrap:anywhere}
h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
.crumbs{font-size:.9rem;color:var(--muted)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.95rem}
th,td{text-align:left;padding:.4rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;overflow-wrap:anywhere}
.muted{color:var(--muted)}
.locked{color:var(--bad);font-weight:600}
.free{color:var(--good)}
.notice{border:1px solid var(--line);border-left:4px solid var(--warn);padding:.5rem .75rem;margin:1rem 0;background:var(--chip)}
.notice.bad{border-left-color:var(--bad)}
.notice.good{border-left-color:var(--good)}
[hidden]{display:none!important}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
button{font:inherit;padding:.35rem .8rem;border:1px solid var(--line);border-radius:6px;background:var(--chip);color:var(--fg);cursor:pointer;text-decoration:none;display:inline-block}
button.danger{border-color:var(--bad);color:var(--bad)}
input[type=search],input[type=text],select{font:inherit;padding:.35rem .5rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg);max-width:100%}
.filter{display:flex;gap:.5rem;flex-wrap:wrap;align-items:center;margin-bottom:1rem}
.added{color:var(--good)}.removed{color:var(--bad)}.changed{color:var(--warn)}
ul.diff{list-style:none;padding-left:0}ul.diff li{padding:.15rem 0;overflow-wrap:anywhere}
.chart{width:100%;max-width:48rem;height:auto;border:1px solid var(--line);border-radius:6px}
.chart .res{fill:none;stroke:var(--accent);stroke-width:2}
.chart .size{fill:none;stroke:var(--warn);stroke-width:2;stroke-dasharray:5 3}
.chart text{fill:var(--muted);font-size:11px}
.chart .axis{stroke:var(--line)}
.legend .res{color:var(--accent)}.legend .size{color:var(--warn)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
@media (max-width:40rem){th.opt,td.opt{display:none}main{padding:.75rem}}
@media (max-width:40rem){table.cards,table.cards tbody{display:block}table.cards thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}table.cards tr{display:flex;flex-wrap:wrap;gap:.1rem .9rem;padding:.5rem 0;border-bottom:1px solid var(--line)}table.cards td,table.cards td.opt{display:block;min-width:0;max-width:100%;padding:.1rem 0;border:0;text-align:left;white-space:normal;overflow-wrap:anywhere}table.cards td.wide{flex-basis:100%}table.cards td[data-label]::before{content:attr(data-label) " ";color:var(--muted);font-weight:400}}
`;

export const JS = `"use strict";
// Live lock state: polls the console's lock endpoint and updates every [data-lock-ws] cell.
// Text only (textContent): nothing from the server becomes markup.
(function () {
  var body = document.body;
  var url = body.getAttribute("data-locks-url");
  var cells = Array.prototype.slice.call(document.querySelectorAll("[data-lock-ws]"));
  var interval = Number(body.getAttribute("data-poll-ms")) || 3000;
  function apply(locks) {
    cells.forEach(function (cell) {
      var ws = cell.getAttribute("data-lock-ws");
      if (!Object.prototype.hasOwnProperty.call(locks, ws)) return;
      var lock = locks[ws];
      var id = lock ? lock.id : "";
      cell.textContent = lock ? lock.text : "unlocked";
      cell.className = lock ? "locked" : "free";
      cell.setAttribute("data-locked", lock ? "true" : "false");
      var shown = cell.getAttribute("data-lock-id");
      var note = document.getElementById("lock-changed");
      if (note && shown !== null && shown !== id) note.hidden = false;
    });
  }
  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (j) { if (j && j.locks) apply(j.locks); })
      .catch(function () {})
      .then(function () { setTimeout(poll, interval); });
  }
  if (url && cells.length > 0) setTimeout(poll, interval);
  // Filter as you type; the form still filters on the server without script.
  var box = document.getElementById("filter");
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-ws]"));
  if (box && rows.length > 0) {
    box.addEventListener("input", function () {
      var q = box.value.toLowerCase();
      rows.forEach(function (row) { row.hidden = q !== "" && row.getAttribute("data-ws").toLowerCase().indexOf(q) < 0; });
    });
  }
})();
`;

/** Strong ETags, so a reload costs a 304. */
const etag = (text: string): string => `"${createHash("sha256").update(text).digest("base64url").slice(0, 22)}"`;
export const CSS_ETAG = etag(CSS);
export const JS_ETAG = etag(JS);

/** Every console page's policy: nothing inline or from elsewhere, forms post only here, no framing (clickjacking of the action buttons). */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
