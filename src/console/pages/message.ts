/** A page that only says something: an error, a refusal, a not-found. Pure. */
import { html, type SafeHtml } from "../html.js";
import { layout, type Frame } from "../layout.js";

export interface MessageView {
  readonly frame: Frame;
  readonly title: string;
  readonly message: string;
  /** Where to go next. */
  readonly back?: { readonly href: string; readonly label: string } | undefined;
  readonly tone?: "bad" | "good" | undefined;
}

export function renderMessage(v: MessageView): SafeHtml {
  return layout(
    v.frame,
    v.title,
    html`<p class="notice${v.tone === undefined ? "" : ` ${v.tone}`}" role="${v.tone === "bad" ? "alert" : "status"}">${v.message}</p>
${v.back === undefined ? "" : html`<p><a href="${v.back.href}">${v.back.label}</a></p>`}`,
  );
}
