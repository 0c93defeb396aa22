/** The History page: versions, a form to diff two, and a chart drawn as inline SVG (the stylesheet colours it: the CSP stays strict). Pure. */
import { formatBytes, formatTime, operationName } from "../format.js";
import { html, trusted, type SafeHtml } from "../html.js";
import { crumbs, doneNotice, layout, NO_VERSIONS, rollbackLink, workspaceUrl, type Frame } from "../layout.js";
import { ENCRYPTED, type VersionView } from "../types.js";
import { principalText } from "../../wire/shapes.js";

export interface HistoryView {
  readonly frame: Frame;
  readonly workspace: string;
  /** Newest first; null when this server keeps no history. */
  readonly versions: readonly VersionView[] | null;
  readonly canRollback: boolean;
  readonly notice?: string | undefined;
  /** Where the older versions are listed, when only the newest are shown here. */
  readonly more?: string | undefined;
  readonly moreLimit?: number | undefined;
}

const ENCRYPTED_VERSIONS =
  "Versions marked encrypted were encrypted by their client (OpenTofu's state encryption), and this server has no key for them: their resources are not counted and their content cannot be compared. They can still be rolled back to (the bytes are restored as they are).";

function row(v: HistoryView, ver: VersionView, fromDefault: string | undefined, toDefault: string | undefined): SafeHtml {
  const f = v.frame;
  const radio = (name: "from" | "to", checked: boolean): SafeHtml =>
    ver.deleteMarker
      ? html``
      : html`<input type="radio" name="${name}" value="${ver.versionId}" aria-label="${name} version ${ver.serial ?? ver.versionId}"${checked ? html` checked` : ""}>`;
  return html`<tr data-version="${ver.versionId}">
<td${ver.deleteMarker ? "" : html` data-label="From"`}>${radio("from", ver.versionId === fromDefault)}</td><td${ver.deleteMarker ? "" : html` data-label="To"`}>${radio("to", ver.versionId === toDefault)}</td>
<td class="num" data-label="Serial">${ver.deleteMarker ? html`<span class="muted">deleted</span>` : (ver.serial ?? "?")}${ver.isLatest ? html` <span class="muted">(current)</span>` : ""}${ver.resources === ENCRYPTED ? html` <span class="muted" data-encrypted>(encrypted)</span>` : ""}</td>
<td data-label="Written"><time datetime="${ver.lastModified}">${formatTime(ver.lastModified)}</time></td>
<td class="opt" data-label="By">${ver.who ?? html`<span class="muted">unknown</span>`}${ver.principal === undefined ? "" : html`<br><span class="muted" data-principal>as server user ${principalText(ver.principal)}</span>`}</td>
<td class="opt"${ver.operation === undefined ? "" : html` data-label="Operation"`}>${ver.operation === undefined ? "" : operationName(ver.operation)}</td>
<td class="num" data-label="Size">${formatBytes(ver.size)}</td>
<td>${rollbackLink(f.base, v.workspace, ver, v.canRollback)}</td>
</tr>`;
}

export function renderHistory(v: HistoryView): SafeHtml {
  const f = v.frame;
  const trail = { crumbs: crumbs(f, v.workspace) };
  if (v.versions === null) return layout(f, `History of ${v.workspace}`, NO_VERSIONS, trail);
  // Delete markers have no content to diff or restore.
  const states = v.versions.filter((x) => !x.deleteMarker);
  const toDefault = states[0]?.versionId;
  const fromDefault = states[1]?.versionId;
  const points = [...states].reverse().map((x) => ({ resources: x.resources === ENCRYPTED ? undefined : x.resources, size: x.size }));
  const encrypted = states.some((x) => x.resources === ENCRYPTED);
  const body = html`${doneNotice(v.notice)}
${encrypted ? html`<p class="notice" data-encrypted>${ENCRYPTED_VERSIONS}</p>` : ""}
${renderChart(points)}
<form method="get" action="${workspaceUrl(f.base, v.workspace, "/diff")}">
<p><button type="submit">Compare selected versions</button> <span class="muted">Pick a “from” and a “to” version below.</span></p>
<div class="scroll"><table class="cards">
<caption class="sr">Versions of ${v.workspace}, newest first</caption>
<thead><tr><th scope="col">From</th><th scope="col">To</th><th scope="col" class="num">Serial</th><th scope="col">Written</th><th scope="col" class="opt">Who</th><th scope="col" class="opt">Operation</th><th scope="col" class="num">Size</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>
${v.versions.map((ver) => row(v, ver, fromDefault, toDefault))}
</tbody>
</table></div>
</form>
${v.more === undefined ? "" : html`<p><a href="${v.more}" data-more>Show older versions</a> <span class="muted">(the newest ${v.moreLimit ?? ""} of them)</span></p>`}`;
  return layout(f, `History of ${v.workspace}`, body, trail);
}

/** One point: a version's resource count (undefined when unknown) and size. */
export interface ChartPoint {
  readonly resources: number | undefined;
  readonly size: number;
}

const W = 600;
const H = 180;
const PAD = { left: 8, right: 8, top: 22, bottom: 8 };

/** `x,y` pairs of one series scaled into the plot; unknown values are skipped. */
function line(values: readonly (number | undefined)[], max: number): string {
  const n = values.length;
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const parts: string[] = [];
  values.forEach((v, i) => {
    if (v === undefined || !Number.isFinite(v)) return;
    const x = PAD.left + (n === 1 ? plotW / 2 : (i * plotW) / (n - 1));
    const y = PAD.top + plotH - (max <= 0 ? 0 : (v / max) * plotH);
    parts.push(`${x.toFixed(1)},${y.toFixed(1)}`);
  });
  return parts.join(" ");
}

/** The chart for `points`, oldest first. Empty markup when there are none. */
export function renderChart(points: readonly ChartPoint[]): SafeHtml {
  if (points.length === 0) return html``;
  const res = points.map((p) => p.resources);
  const sizes = points.map((p) => p.size);
  const maxRes = Math.max(0, ...res.filter((v): v is number => v !== undefined));
  const maxSize = Math.max(0, ...sizes);
  const label = `Resource count (max ${maxRes}) and state size (max ${formatBytes(maxSize)}) over ${points.length} versions, oldest on the left`;
  // Only numbers the code computed go into the polylines' markup; the label is escaped.
  return html`<figure>
<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${label}" xmlns="http://www.w3.org/2000/svg">
<title>${label}</title>
<line class="axis" x1="${PAD.left}" y1="${H - PAD.bottom}" x2="${W - PAD.right}" y2="${H - PAD.bottom}"></line>
<text x="${PAD.left}" y="14">max ${maxRes} resources · ${formatBytes(maxSize)}</text>
<polyline class="res" points="${trusted(line(res, maxRes))}"></polyline>
<polyline class="size" points="${trusted(line(sizes, maxSize))}"></polyline>
</svg>
<figcaption class="legend"><span class="res">━ resources</span> · <span class="size">╍ state size</span> (oldest → newest)</figcaption>
</figure>`;
}
