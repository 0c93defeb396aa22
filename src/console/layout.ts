/** The frame every console page shares (head, header, skip link, main), and the page that only says something. Pure. */
import { CSS_PATH, JS_PATH, LOCKS_PATH } from "./assets.js";
import { lockText } from "./format.js";
import { html, type HtmlValue, type SafeHtml } from "./html.js";
import type { LockView, VersionView } from "./types.js";

/** What every page knows about the request it answers: mount path, user, render time, CSRF token, lock polling period. */
export interface Frame {
  readonly base: string;
  readonly user: string;
  readonly now: number;
  readonly csrf: string;
  readonly pollMs?: number | undefined;
}

export function workspaceUrl(base: string, workspace: string, sub = ""): string {
  return `${base}/workspaces/${encodeURIComponent(workspace)}${sub}`;
}

/** A query string from pairs; undefined values are left out. */
export function query(pairs: Readonly<Record<string, string | undefined>>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(pairs)) if (v !== undefined) p.set(k, v);
  const s = p.toString();
  return s === "" ? "" : `?${s}`;
}

type PageOptions = { readonly live?: string | undefined; readonly crumbs?: SafeHtml | undefined };

/** A whole page. `live` names the workspace whose lock the script polls ("*" for all). */
export function layout(frame: Frame, title: string, body: HtmlValue, options: PageOptions = {}): SafeHtml {
  const locksUrl = options.live === undefined ? undefined : `${frame.base}${LOCKS_PATH}${options.live === "*" ? "" : query({ ws: options.live })}`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title} · objstate</title>
<link rel="stylesheet" href="${frame.base}${CSS_PATH}">
<script src="${frame.base}${JS_PATH}" defer></script>
</head>
<body${locksUrl === undefined ? "" : html` data-locks-url="${locksUrl}" data-poll-ms="${frame.pollMs ?? 3000}"`}>
<a class="skip" href="#main">Skip to content</a>
<header>
<a class="brand" href="${frame.base}/">objstate console</a>
<nav aria-label="Main"><a href="${frame.base}/">Workspaces</a></nav>
<span class="user">Signed in as <strong>${frame.user}</strong></span>
</header>
<main id="main" tabindex="-1">
${options.crumbs === undefined ? "" : html`<p class="crumbs">${options.crumbs}</p>`}
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
}

/** An action's form: the CSRF token and `hidden` fields, then `content`. */
export function postForm(f: Frame, action: string, hidden: Readonly<Record<string, string>>, content: SafeHtml): SafeHtml {
  const fields = Object.entries({ csrf: f.csrf, ...hidden }).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`);
  return html`<form method="post" action="${action}">\n${fields}${content}\n</form>`;
}

/** The breadcrumbs of a workspace's sub-page: Workspaces / the workspace [/ History]. */
export function crumbs(f: Frame, workspace: string, history = false): SafeHtml {
  const up = history ? html` / <a href="${workspaceUrl(f.base, workspace, "/history")}">History</a>` : "";
  return html`<a href="${f.base}/">Workspaces</a> / <a href="${workspaceUrl(f.base, workspace)}">${workspace}</a>${up}`;
}

/** The one-time notice of a page an action redirected to. */
export const doneNotice = (notice: string | undefined): HtmlValue => notice !== undefined && html`<p class="notice good" role="status">${notice}</p>`;

/** `lead` and a link to roll back to `ver`, when it is neither current nor a deletion and the user may. */
export function rollbackLink(base: string, workspace: string, ver: VersionView, allowed: boolean, lead = ""): HtmlValue {
  return (
    allowed &&
    !ver.isLatest &&
    !ver.deleteMarker &&
    html`${lead}<a href="${workspaceUrl(base, workspace, "/rollback")}${query({ to: ver.versionId })}">Roll back to this…</a>`
  );
}

/** A lock's state as the pages' script updates it (`id`: the lock shown, which the script compares with the one held now). */
export function lockCell(tag: "p" | "td", workspace: string, lock: LockView | null, now: number, id?: string): SafeHtml {
  const attrs = html`data-lock-ws="${workspace}"${id === undefined ? "" : html` data-lock-id="${id}"`} data-locked="${lock === null ? "false" : "true"}" class="${lock === null ? "free" : "locked"}"`;
  return html`<${tag} ${attrs}>${lock === null ? "unlocked" : lockText(lock, now)}</${tag}>`;
}

export const NO_VERSIONS = html`<p class="notice">This store keeps no versions (bucket versioning is off): turn it on with <code>objstate init --versioning</code>.</p>`;

/** A message as escaped text, its `backtick` spans (flags, commands, fields) as code; a lone backtick stays one. */
export function messageText(message: string): SafeHtml {
  const parts = message.split(/`([^`]+)`/);
  return html`${parts.map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : part))}`;
}

export interface MessageView {
  readonly frame: Frame;
  readonly title: string;
  readonly message: string;
  readonly back?: { readonly href: string; readonly label: string } | undefined;
  readonly tone?: "bad" | "good" | undefined;
}

export function renderMessage(v: MessageView): SafeHtml {
  return layout(
    v.frame,
    v.title,
    html`<p class="notice${v.tone === undefined ? "" : ` ${v.tone}`}" role="${v.tone === "bad" ? "alert" : "status"}">${messageText(v.message)}</p>
${v.back === undefined ? "" : html`<p><a href="${v.back.href}" data-back>${v.back.label}</a>${v.back.href === `${v.frame.base}/` ? "" : html` · <a href="${v.frame.base}/">All workspaces</a>`}</p>`}`,
  );
}
