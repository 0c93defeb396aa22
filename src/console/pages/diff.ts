/** The Diff page: what changed between two versions. Pure. */
import type { StateDiff } from "../../state/diff.js";
import { html, type SafeHtml } from "../html.js";
import { layout, workspaceUrl, type Frame } from "../layout.js";
import { renderDiffLists } from "./diff-list.js";

export interface DiffView {
  readonly frame: Frame;
  readonly workspace: string;
  readonly from: string;
  readonly to: string;
  readonly diff: StateDiff;
}

export function renderDiff(v: DiffView): SafeHtml {
  const f = v.frame;
  const d = v.diff;
  const crumbs = html`<a href="${f.base}/">Workspaces</a> / <a href="${workspaceUrl(f.base, v.workspace)}">${v.workspace}</a> / <a href="${workspaceUrl(f.base, v.workspace, "/history")}">History</a>`;
  const body = html`<dl class="facts">
<dt>From</dt><dd>serial ${d.serial.before ?? "none"} <span class="muted mono">(${v.from})</span></dd>
<dt>To</dt><dd>serial ${d.serial.after ?? "none"} <span class="muted mono">(${v.to})</span></dd>
</dl>
${d.lineage.before !== d.lineage.after ? html`<p class="notice bad">The two versions have different lineages (${d.lineage.before ?? "none"} → ${d.lineage.after ?? "none"}): they are not the same state's history.</p>` : ""}
${renderDiffLists(d)}`;
  return layout(f, `Diff of ${v.workspace}`, body, { crumbs });
}
