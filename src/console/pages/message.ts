/** A page that only says something: an error, a refusal, a not-found. Pure. */
import { html, type SafeHtml } from "../html.js";
import { layout, type Frame } from "../layout.js";

/**
 * A message as text, its `backtick` spans (flags, commands, fields in the library's
 * messages) as code; everything escaped. A lone backtick stays a backtick.
 */
export function messageText(message: string): SafeHtml {
  const parts = message.split(/`([^`]+)`/);
  return html`${parts.map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : part))}`;
}

export interface MessageView {
  readonly frame: Frame;
  readonly title: string;
  readonly message: string;
  readonly back?: { readonly href: string; readonly label: string } | undefined;
  readonly tone?: "bad" | "good" | undefined;
}

export function renderMessage(v: MessageView): SafeHtml {
  return layout(
    v.frame,
    v.title,
    html`<p class="notice${v.tone === undefined ? "" : ` ${v.tone}`}" role="${v.tone === "bad" ? "alert" : "status"}">${messageText(v.message)}</p>
${v.back === undefined ? "" : html`<p><a href="${v.back.href}" data-back>${v.back.label}</a>${v.back.href === `${v.frame.base}/` ? "" : html` · <a href="${v.frame.base}/">All workspaces</a>`}</p>`}`,
  );
}
