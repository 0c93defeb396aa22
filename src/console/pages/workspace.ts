/** The Workspace page (lock, outputs, latest versions) and the Force-unlock confirmation (the lock's facts, the name typed out). Pure. */
import { formatAgo, formatBytes, formatTime, leaseText, lockAge, operationName } from "../format.js";
import { html, type SafeHtml } from "../html.js";
import { crumbs, doneNotice, layout, lockCell, postForm, rollbackLink, workspaceUrl, type Frame } from "../layout.js";
import { ENCRYPTED, type Encrypted, type LockView, type OutputView, type VersionView, type WorkspaceSummary } from "../types.js";

export interface WorkspaceView {
  readonly frame: Frame;
  readonly summary: WorkspaceSummary;
  /** Sensitive values already replaced by `<sensitive>` unless `revealed`. */
  readonly outputs: readonly OutputView[] | Encrypted;
  readonly revealed: boolean;
  readonly canReveal: boolean;
  readonly canForceUnlock: boolean;
  readonly canRollback: boolean;
  /** The newest versions; null when this server keeps no history; "hidden" when the user may not read them (the outputs role). */
  readonly versions: readonly VersionView[] | null | "hidden";
  readonly notice?: string | undefined;
}

function lockSection(v: WorkspaceView): SafeHtml {
  const f = v.frame;
  const lock = v.summary.lock;
  const cell = html`${lockCell("p", v.summary.name, lock, f.now, lock?.id ?? "")}
<p id="lock-changed" class="notice" role="status" hidden>The lock changed since this page was loaded. <a href="${workspaceUrl(f.base, v.summary.name)}">Reload</a> to act on it.</p>`;
  if (lock === null) return cell;
  return html`${cell}
<dl class="facts"><dt>Lock ID</dt><dd><code>${lock.id || "(none)"}</code></dd>${lock.info === "" ? "" : html`<dt>Info</dt><dd>${lock.info}</dd>`}</dl>
${
  v.canForceUnlock
    ? html`<form method="get" action="${workspaceUrl(f.base, v.summary.name, "/force-unlock")}">
<input type="hidden" name="id" value="${lock.id}">
<p><button type="submit" class="danger">Force-unlock…</button> <span class="muted">Shows who holds the lock and asks you to confirm; releases the lock with this ID only.</span></p>
</form>`
    : ""
}`;
}

function outputsSection(v: WorkspaceView): SafeHtml {
  const f = v.frame;
  const outputs = v.outputs;
  if (outputs === ENCRYPTED)
    return html`<p class="notice" data-encrypted>Encrypted: this state was encrypted by its client (OpenTofu's state encryption), and this server has no key for it, so its outputs cannot be shown.</p>`;
  if (outputs.length === 0) return html`<p class="muted">No outputs.</p>`;
  const anySensitive = outputs.some((o) => o.sensitive);
  const reveal =
    anySensitive && v.canReveal
      ? v.revealed
        ? html`<p><a href="${workspaceUrl(f.base, v.summary.name)}">Hide sensitive values</a></p>`
        : html`<form method="get" action="${workspaceUrl(f.base, v.summary.name)}"><input type="hidden" name="reveal" value="1"><p><button type="submit">Reveal sensitive values</button></p></form>`
      : "";
  return html`<div class="scroll"><table>
<thead><tr><th scope="col">Output</th><th scope="col">Value</th></tr></thead>
<tbody>
${outputs.map((o) => html`<tr data-output="${o.name}"><td><code>${o.name}</code>${o.sensitive ? html` <span class="muted">(sensitive)</span>` : ""}</td><td><code>${o.value}</code></td></tr>`)}
</tbody>
</table></div>
${reveal}`;
}

function timeline(v: WorkspaceView): SafeHtml {
  const f = v.frame;
  if (v.versions === null) return html`<p class="muted">This store keeps no versions (bucket versioning is off).</p>`;
  if (v.versions === "hidden") return html`<p class="muted">Versions and history need the read role on this workspace.</p>`;
  if (v.versions.length === 0) return html`<p class="muted">No versions.</p>`;
  return html`<ol class="diff" aria-label="Latest versions">
${v.versions.map(
  (ver) =>
    html`<li>${ver.deleteMarker ? "deleted" : html`serial ${ver.serial ?? "?"}`} · <time datetime="${ver.lastModified}" title="${formatTime(ver.lastModified)}">${formatAgo(ver.lastModified, f.now)}</time>${ver.who === undefined ? "" : html` · ${ver.who}`}${ver.operation === undefined ? "" : html` · ${operationName(ver.operation)}`} · ${formatBytes(ver.size)}${rollbackLink(f.base, v.summary.name, ver, v.canRollback, " · ")}</li>`,
)}
</ol>
<p><a href="${workspaceUrl(f.base, v.summary.name, "/history")}">Full history and diffs</a></p>`;
}

export function renderWorkspace(v: WorkspaceView): SafeHtml {
  const f = v.frame;
  const s = v.summary;
  const crumbs = html`<a href="${f.base}/">Workspaces</a> / ${s.name}`;
  const body = html`${doneNotice(v.notice)}
<dl class="facts">
<dt>Serial</dt><dd>${s.lastWrite?.serial ?? "no state"}</dd>
<dt>Last write</dt><dd>${s.lastWrite?.time === undefined ? "unknown" : formatTime(s.lastWrite.time)}${s.lastWrite?.who === undefined ? "" : ` by ${s.lastWrite.who}`}</dd>
<dt>Size</dt><dd>${formatBytes(s.size)}</dd>
<dt>Resources</dt><dd>${s.resources === ENCRYPTED ? "unknown (encrypted)" : (s.resources ?? "unknown (not a state objstate can read)")}</dd>
</dl>
<h2>Lock</h2>
${lockSection(v)}
<h2>Outputs</h2>
${outputsSection(v)}
<h2>Versions</h2>
${timeline(v)}`;
  return layout(f, s.name, body, { live: s.name, crumbs });
}

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
  const confirm = html`<p><label for="confirm">To confirm, type the workspace's name, <strong class="mono">${v.workspace}</strong>:</label><br>
<input type="text" id="confirm" name="confirm" required autocomplete="off" autocapitalize="off" spellcheck="false"></p>
<p><button type="submit" class="danger">Force-unlock ${v.workspace}</button> <a href="${workspaceUrl(f.base, v.workspace)}">Cancel</a></p>`;
  // Live like the Workspace page: if the lock changes while this page is open, it says so.
  const body = html`${v.changedFrom === undefined ? "" : html`<p class="notice bad" role="alert">The lock changed since the page you came from (it showed lock <code>${v.changedFrom || "(none)"}</code>): this is the lock held now.</p>`}
${lockCell("p", v.workspace, l, f.now, l.id)}
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
${postForm(f, workspaceUrl(f.base, v.workspace, "/force-unlock"), { id: l.id }, confirm)}`;
  return layout(f, `Force-unlock ${v.workspace}`, body, { live: v.workspace, crumbs: crumbs(f, v.workspace) });
}
