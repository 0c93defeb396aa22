/** A state diff as lists (resources and outputs added, removed, changed). Pure. */
import { SENSITIVE, isEmptyStateDiff, type StateDiff } from "../../state/diff.js";
import { html, type SafeHtml } from "../html.js";

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

export function renderDiffLists(d: StateDiff): SafeHtml {
  if (isEmptyStateDiff(d)) return html`<p class="notice">No changes: both versions have the same resources and outputs.</p>`;
  const r = d.resources;
  const o = d.outputs;
  return html`<p>${r.added.length} added, ${r.changed.length} changed, ${r.removed.length} removed; outputs: ${o.added.length} added, ${o.changed.length} changed, ${o.removed.length} removed.</p>
<h2>Resources</h2>
${
  r.added.length + r.removed.length + r.changed.length === 0
    ? html`<p class="muted">No resource changed.</p>`
    : html`<ul class="diff" aria-label="Resource changes">
${r.added.map((a) => html`<li class="added"><span aria-hidden="true">+ </span><span class="sr">added </span><code>${a}</code></li>`)}
${r.removed.map((a) => html`<li class="removed"><span aria-hidden="true">− </span><span class="sr">removed </span><code>${a}</code></li>`)}
${r.changed.map((c) => html`<li class="changed"><span aria-hidden="true">~ </span><span class="sr">changed </span><code>${c.address}</code> <span class="muted">(${c.attributes.join(", ")})</span></li>`)}
</ul>`
}
<h2>Outputs</h2>
${
  o.added.length + o.removed.length + o.changed.length === 0
    ? html`<p class="muted">No output changed.</p>`
    : html`<ul class="diff" aria-label="Output changes">
${o.added.map((x) => html`<li class="added">+ <code>${x.name}</code> = <code>${showJson(x.value)}</code></li>`)}
${o.removed.map((x) => html`<li class="removed">− <code>${x.name}</code> = <code>${showJson(x.value)}</code></li>`)}
${o.changed.map((x) => html`<li class="changed">~ <code>${x.name}</code>: <code>${showJson(x.before)}</code> → <code>${showJson(x.after)}</code></li>`)}
</ul>`
}`;
}
