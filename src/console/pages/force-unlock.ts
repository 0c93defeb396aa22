/**
 * The Force-unlock confirmation: who holds the lock, since when, its lease, and a form that
 * asks for the workspace's name typed out and carries the lock ID shown. Pure.
 */
import { html, type SafeHtml } from "../html.js";
import { crumbs, csrfField, layout, workspaceUrl, type Frame } from "../layout.js";
import { leaseText, lockAge, lockText, operationName } from "../format.js";
import type { LockView } from "../types.js";

export interface ForceUnlockView {
  readonly frame: Frame;
  readonly workspace: string;
  /** The lock held now: the one the form releases. */
  readonly lock: LockView;
  /** The lock ID of the page the user came from, when another lock is held now. */
  readonly changedFrom?: string | undefined;
}

export function renderForceUnlock(v: ForceUnlockView): SafeHtml {
  const f = v.frame;
  const l = v.lock;
  // Live like the Workspace page: if the lock changes while this page is open, it says so.
  const body = html`${v.changedFrom === undefined ? "" : html`<p class="notice bad" role="alert">The lock changed since the page you came from (it showed lock <code>${v.changedFrom || "(none)"}</code>): this is the lock held now.</p>`}
<p data-lock-ws="${v.workspace}" data-lock-id="${l.id}" data-locked="true" class="locked">${lockText(l, f.now)}</p>
<p id="lock-changed" class="notice" role="status" hidden>The lock changed since this page was loaded: confirming now releases nothing. <a href="${workspaceUrl(f.base, v.workspace, "/force-unlock")}">Reload</a> to review the lock held now.</p>
<dl class="facts" data-lock-facts>
<dt>Held by</dt><dd data-holder>${l.who || "unknown"}</dd>
<dt>Operation</dt><dd>${l.operation === "" ? "unknown" : operationName(l.operation)}</dd>
<dt>Taken</dt><dd data-age>${lockAge(l, f.now)}</dd>
<dt>Lease</dt><dd data-lease>${leaseText(l, f.now)}</dd>
<dt>Lock ID</dt><dd><code>${l.id || "(none)"}</code></dd>
${l.info === "" ? "" : html`<dt>Info</dt><dd>${l.info}</dd>`}
</dl>
<p class="notice bad">Force-unlocking releases this lock while its holder may still be at work: the holder's next write is refused and its changes never reach the state, and another client may take the lock meanwhile. Only the lock with the ID above is released; if it changed since this page was shown, nothing is.</p>
<form method="post" action="${workspaceUrl(f.base, v.workspace, "/force-unlock")}">
${csrfField(f)}
<input type="hidden" name="id" value="${l.id}">
<p><label for="confirm">To confirm, type the workspace's name, <strong class="mono">${v.workspace}</strong>:</label><br>
<input type="text" id="confirm" name="confirm" required autocomplete="off" autocapitalize="off" spellcheck="false"></p>
<p><button type="submit" class="danger">Force-unlock ${v.workspace}</button> <a href="${workspaceUrl(f.base, v.workspace)}">Cancel</a></p>
</form>`;
  return layout(f, `Force-unlock ${v.workspace}`, body, { live: v.workspace, crumbs: crumbs(f, v.workspace) });
}
