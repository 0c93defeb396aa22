/** The Diff page (what changed between two versions, or a form to pick them) and the Rollback confirmation. Pure. */
import { SENSITIVE, isEmptyStateDiff, type StateDiff } from "../../state/diff.js";
import { formatTime } from "../format.js";
import { html, type SafeHtml } from "../html.js";
import { crumbs, layout, NO_VERSIONS, postForm, workspaceUrl, type Frame } from "../layout.js";
import { ENCRYPTED, type Encrypted, type VersionView } from "../types.js";

export interface DiffView {
  readonly frame: Frame;
  readonly workspace: string;
  readonly from: string;
  readonly to: string;
  /** {@link ENCRYPTED} when a side is an envelope this server has no key for. */
  readonly diff: StateDiff | Encrypted;
}

export function renderDiff(v: DiffView): SafeHtml {
  const d = v.diff;
  const side = (id: string, serial: number | null | undefined): SafeHtml =>
    d === ENCRYPTED ? html`<span class="muted mono">${id}</span>` : html`serial ${serial ?? "none"} <span class="muted mono">(${id})</span>`;
  const changes =
    d === ENCRYPTED
      ? html`<p class="notice" data-encrypted>Encrypted: these versions were encrypted by their client (OpenTofu's state encryption), and this server has no key for them, so their content cannot be compared.</p>`
      : html`${d.lineage.before !== d.lineage.after ? html`<p class="notice bad">The two versions have different lineages (${d.lineage.before ?? "none"} → ${d.lineage.after ?? "none"}): they are not the same state's history.</p>` : ""}
${renderDiffLists(d)}`;
  const serial = d === ENCRYPTED ? undefined : d.serial;
  const body = html`<dl class="facts">
<dt>From</dt><dd>${side(v.from, serial?.before)}</dd>
<dt>To</dt><dd>${side(v.to, serial?.after)}</dd>
</dl>
${changes}`;
  return layout(v.frame, `Diff of ${v.workspace}`, body, { crumbs: crumbs(v.frame, v.workspace, true) });
}

export interface DiffPickerView {
  readonly frame: Frame;
  readonly workspace: string;
  readonly versions: readonly VersionView[] | null;
  /** A side already chosen (from the URL), preselected when it is listed. */
  readonly from?: string | undefined;
  readonly to?: string | undefined;
  /** Where the History page lists every version (when only the newest are offered here). */
  readonly more?: string | undefined;
}

/** The Diff page before two versions are chosen: a form to pick them (the newest two by default). */
export function renderDiffPicker(v: DiffPickerView): SafeHtml {
  const f = v.frame;
  const history = workspaceUrl(f.base, v.workspace, "/history");
  const trail = { crumbs: crumbs(f, v.workspace, true) };
  const title = `Compare versions of ${v.workspace}`;
  if (v.versions === null) return layout(f, title, NO_VERSIONS, trail);
  const states = v.versions.filter((x) => !x.deleteMarker);
  if (states.length < 2)
    return layout(
      f,
      title,
      html`<p class="notice">${v.workspace} has ${states.length === 0 ? "no version" : "one version"} with a state: there is nothing to compare yet.</p><p><a href="${history}">History of ${v.workspace}</a></p>`,
      trail,
    );
  const listed = (id: string | undefined): string | undefined => (id !== undefined && states.some((x) => x.versionId === id) ? id : undefined);
  const to = listed(v.to) ?? states[0]?.versionId;
  const from = listed(v.from) ?? states.find((x) => x.versionId !== to)?.versionId;
  const select = (name: "from" | "to", label: string, chosen: string | undefined): SafeHtml => html`<p><label for="${name}">${label}</label><br>
<select id="${name}" name="${name}" required>
${states.map((x) => html`<option value="${x.versionId}"${x.versionId === chosen ? html` selected` : ""}>serial ${x.serial ?? "?"} · ${formatTime(x.lastModified)}${x.who === undefined ? "" : ` · ${x.who}`}${x.isLatest ? " (current)" : ""}</option>`)}
</select></p>`;
  const body = html`<p>Pick the two versions to compare, or pick them on the <a href="${history}">History</a> page.</p>
<form method="get" action="${workspaceUrl(f.base, v.workspace, "/diff")}">
${select("from", "From (older)", from)}
${select("to", "To (newer)", to)}
<p><button type="submit">Compare</button></p>
</form>
${v.more === undefined ? "" : html`<p class="muted">Only the newest versions are offered here: <a href="${v.more}">every version</a> is on the History page.</p>`}`;
  return layout(f, title, body, trail);
}

type Json = StateDiff["outputs"]["added"][number]["value"];

/** A value as one line of JSON, cut at `max` characters. */
export function showJson(v: Json, max = 200): string {
  if (v === SENSITIVE) return SENSITIVE;
  let text: string;
  try {
    text = JSON.stringify(v);
  } catch {
    // Too deeply nested for JSON.stringify: say so rather than fail the page.
    text = "(value too deeply nested to show)";
  }
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** A list of changes, each of `lists` on its own line, or that no `what` changed. */
function changeList(what: string, label: string, lists: readonly SafeHtml[][]): SafeHtml {
  if (lists.every((l) => l.length === 0)) return html`<p class="muted">No ${what} changed.</p>`;
  return html`<ul class="diff" aria-label="${label}">\n${lists.map((l) => html`${l}\n`)}</ul>`;
}

export function renderDiffLists(d: StateDiff): SafeHtml {
  if (isEmptyStateDiff(d)) return html`<p class="notice">No changes: both versions have the same resources and outputs.</p>`;
  const r = d.resources;
  const o = d.outputs;
  return html`<p>${r.added.length} added, ${r.changed.length} changed, ${r.removed.length} removed; outputs: ${o.added.length} added, ${o.changed.length} changed, ${o.removed.length} removed.</p>
<h2>Resources</h2>
${changeList("resource", "Resource changes", [
  r.added.map((a) => html`<li class="added"><span aria-hidden="true">+ </span><span class="sr">added </span><code>${a}</code></li>`),
  r.removed.map((a) => html`<li class="removed"><span aria-hidden="true">− </span><span class="sr">removed </span><code>${a}</code></li>`),
  r.changed.map(
    (c) =>
      html`<li class="changed"><span aria-hidden="true">~ </span><span class="sr">changed </span><code>${c.address}</code> <span class="muted">(${c.attributes.join(", ")})</span></li>`,
  ),
])}
<h2>Outputs</h2>
${changeList("output", "Output changes", [
  o.added.map((x) => html`<li class="added">+ <code>${x.name}</code> = <code>${showJson(x.value)}</code></li>`),
  o.removed.map((x) => html`<li class="removed">− <code>${x.name}</code> = <code>${showJson(x.value)}</code></li>`),
  o.changed.map((x) => html`<li class="changed">~ <code>${x.name}</code>: <code>${showJson(x.before)}</code> → <code>${showJson(x.after)}</code></li>`),
])}`;
}

export interface RollbackView {
  readonly frame: Frame;
  readonly workspace: string;
  readonly target: VersionView;
  readonly current: VersionView;
  /** From the current state to the target's; {@link ENCRYPTED} when either is an envelope this server has no key for. */
  readonly diff: StateDiff | Encrypted;
  /** Serial of the new version: current + 1, or the target's own for an envelope (null: not known). */
  readonly newSerial: number | null;
  /** The target is an envelope: its bytes are restored as they are, keeping its serial. */
  readonly keepsSerial?: boolean | undefined;
}

export function renderRollback(v: RollbackView): SafeHtml {
  const f = v.frame;
  const confirm = html`<p><button type="submit" class="danger">Roll back to serial ${v.target.serial ?? "?"}</button> <a href="${workspaceUrl(f.base, v.workspace, "/history")}">Cancel</a></p>`;
  const body = html`<p class="notice">Rolling back writes the content of serial <strong>${v.target.serial ?? "?"}</strong> (written ${formatTime(v.target.lastModified)}) as a new version with serial <strong data-new-serial>${v.newSerial ?? "?"}</strong>${v.keepsSerial === true ? " (an encrypted version keeps its own serial: its bytes are restored as they are)" : ""}, under the workspace's lock. Nothing is deleted: the current version (serial ${v.current.serial ?? "?"}) stays in the history.</p>
<h2>Changes it will apply</h2>
${
  v.diff === ENCRYPTED
    ? html`<p class="notice" data-encrypted>Encrypted: this server has no key for these versions (their client encrypts them), so it cannot show what changes.</p>`
    : renderDiffLists(v.diff)
}
${postForm(f, workspaceUrl(f.base, v.workspace, "/rollback"), { to: v.target.versionId, current: v.current.versionId }, confirm)}`;
  return layout(f, `Roll back ${v.workspace}`, body, { crumbs: crumbs(f, v.workspace, true) });
}
