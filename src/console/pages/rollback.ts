/** The Rollback confirmation: the diff it will apply and the serial it will write. Pure. */
import type { StateDiff } from "../../state/diff.js";
import { formatTime } from "../format.js";
import { html, type SafeHtml } from "../html.js";
import { crumbs, csrfField, layout, workspaceUrl, type Frame } from "../layout.js";
import { ENCRYPTED, type Encrypted, type VersionView } from "../types.js";
import { renderDiffLists } from "./diff-list.js";

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
  const body = html`<p class="notice">Rolling back writes the content of serial <strong>${v.target.serial ?? "?"}</strong> (written ${formatTime(v.target.lastModified)}) as a new version with serial <strong data-new-serial>${v.newSerial ?? "?"}</strong>${v.keepsSerial === true ? " (an encrypted version keeps its own serial: its bytes are restored as they are)" : ""}, under the workspace's lock. Nothing is deleted: the current version (serial ${v.current.serial ?? "?"}) stays in the history.</p>
<h2>Changes it will apply</h2>
${
  v.diff === ENCRYPTED
    ? html`<p class="notice" data-encrypted>Encrypted: this server has no key for these versions (their client encrypts them), so it cannot show what changes.</p>`
    : renderDiffLists(v.diff)
}
<form method="post" action="${workspaceUrl(f.base, v.workspace, "/rollback")}">
${csrfField(f)}
<input type="hidden" name="to" value="${v.target.versionId}">
<input type="hidden" name="current" value="${v.current.versionId}">
<p><button type="submit" class="danger">Roll back to serial ${v.target.serial ?? "?"}</button> <a href="${workspaceUrl(f.base, v.workspace, "/history")}">Cancel</a></p>
</form>`;
  return layout(f, `Roll back ${v.workspace}`, body, { crumbs: crumbs(f, v.workspace, true) });
}
