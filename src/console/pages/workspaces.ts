/** The Workspaces page: every workspace, its lock, last write, size and resources. Pure. */
import { formatAgo, formatBytes, formatTime } from "../format.js";
import { html, type SafeHtml } from "../html.js";
import { layout, lockCell, workspaceUrl, type Frame } from "../layout.js";
import type { WorkspaceSummary } from "../types.js";

export interface WorkspacesView {
  readonly frame: Frame;
  /** The workspaces to show, already filtered and sorted. */
  readonly rows: readonly WorkspaceSummary[];
  readonly query: string;
  readonly total: number;
}

/** Newest last write first; workspaces without a known write time after, by name. */
export function sortByLastWrite(rows: readonly WorkspaceSummary[]): WorkspaceSummary[] {
  // Each time parsed once, not once per comparison (thousands of rows).
  const keyed = rows.map((w) => {
    const t = w.lastWrite?.time === undefined ? Number.NaN : Date.parse(w.lastWrite.time);
    return { w, t: Number.isNaN(t) ? -Infinity : t };
  });
  keyed.sort((a, b) => (b.t === a.t ? 0 : b.t > a.t ? 1 : -1) || (a.w.name < b.w.name ? -1 : a.w.name > b.w.name ? 1 : 0));
  return keyed.map((k) => k.w);
}

/** Case-insensitive substring filter on the name. */
export function filterWorkspaces(rows: readonly WorkspaceSummary[], q: string): WorkspaceSummary[] {
  const needle = q.trim().toLowerCase();
  return needle === "" ? [...rows] : rows.filter((w) => w.name.toLowerCase().includes(needle));
}

function row(frame: Frame, w: WorkspaceSummary): SafeHtml {
  const lw = w.lastWrite;
  const last =
    lw === null
      ? html`<span class="muted">no state</span>`
      : html`${lw.time === undefined ? "" : html`<time datetime="${lw.time}" title="${formatTime(lw.time)}">${formatAgo(lw.time, frame.now)}</time> `}${lw.pending === true ? html`<span class="muted" title="being read: reload in a moment">by … serial …</span>` : html`${lw.who === undefined ? "" : html`by ${lw.who} `}<span class="muted">serial ${lw.serial ?? "?"}</span>`}`;
  return html`<tr data-ws="${w.name}">
<td class="wide"><a href="${workspaceUrl(frame.base, w.name)}">${w.name}</a></td>
${lockCell("td", w.name, w.lock, frame.now)}
<td class="wide" data-label="Last write:">${last}</td>
<td class="num opt" data-label="Size:">${formatBytes(w.size)}</td>
<td class="num opt" data-label="Resources:">${w.resources ?? html`<span class="muted" title="being counted: reload in a moment">…</span>`}</td>
</tr>`;
}

export function renderWorkspaces(v: WorkspacesView): SafeHtml {
  const body = html`<form class="filter" method="get" action="${v.frame.base}/" role="search">
<label for="filter">Filter workspaces</label>
<input type="search" id="filter" name="q" value="${v.query}" autocomplete="off">
<button type="submit">Filter</button>
</form>
<p class="muted">${v.rows.length === v.total ? `${v.total} workspaces` : `${v.rows.length} of ${v.total} workspaces`}, most recently written first.</p>
<div class="scroll"><table class="cards">
<thead><tr><th scope="col">Workspace</th><th scope="col">Lock</th><th scope="col">Last write</th><th scope="col" class="num opt">Size</th><th scope="col" class="num opt">Resources</th></tr></thead>
<tbody>
${v.rows.map((w) => row(v.frame, w))}
</tbody>
</table></div>`;
  return layout(v.frame, "Workspaces", body, { live: "*" });
}
