/** The Diff page: what changed between two versions, or a form to pick them. Pure. */
import type { StateDiff } from "../../state/diff.js";
import { formatTime } from "../format.js";
import { html, type SafeHtml } from "../html.js";
import { crumbs, layout, NO_VERSIONS, workspaceUrl, type Frame } from "../layout.js";
import { ENCRYPTED, type Encrypted, type VersionView } from "../types.js";
import { renderDiffLists } from "./diff-list.js";

export interface DiffView {
  readonly frame: Frame;
  readonly workspace: string;
  readonly from: string;
  readonly to: string;
  /** {@link ENCRYPTED} when a side is an envelope this server has no key for. */
  readonly diff: StateDiff | Encrypted;
}

export function renderDiff(v: DiffView): SafeHtml {
  const f = v.frame;
  const d = v.diff;
  const trail = { crumbs: crumbs(f, v.workspace, true) };
  if (d === ENCRYPTED)
    return layout(
      f,
      `Diff of ${v.workspace}`,
      html`<dl class="facts">
<dt>From</dt><dd><span class="muted mono">${v.from}</span></dd>
<dt>To</dt><dd><span class="muted mono">${v.to}</span></dd>
</dl>
<p class="notice" data-encrypted>Encrypted: these versions were encrypted by their client (OpenTofu's state encryption), and this server has no key for them, so their content cannot be compared.</p>`,
      trail,
    );
  const body = html`<dl class="facts">
<dt>From</dt><dd>serial ${d.serial.before ?? "none"} <span class="muted mono">(${v.from})</span></dd>
<dt>To</dt><dd>serial ${d.serial.after ?? "none"} <span class="muted mono">(${v.to})</span></dd>
</dl>
${d.lineage.before !== d.lineage.after ? html`<p class="notice bad">The two versions have different lineages (${d.lineage.before ?? "none"} → ${d.lineage.after ?? "none"}): they are not the same state's history.</p>` : ""}
${renderDiffLists(d)}`;
  return layout(f, `Diff of ${v.workspace}`, body, trail);
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
