/**
 * The History page's chart: resource count and state size over the versions, as inline
 * SVG drawn on the server (no script, no style attribute: the stylesheet colours it, so
 * the Content-Security-Policy stays strict). Pure.
 */
import { formatBytes } from "./format.js";
import { html, trusted, type SafeHtml } from "./html.js";

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
