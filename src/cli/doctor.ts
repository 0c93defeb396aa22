/**
 * `objstate doctor`: the library's `diagnose`, one line per check with a fix for each
 * failure. Exit 1 when any check fails.
 */
import { diagnose, type CheckStatus } from "../admin/diagnose.js";
import { printable } from "../util/printable.js";
import type { Opts } from "./options.js";
import { CliError } from "./io.js";
import { adminOptionsOf } from "./runtime.js";
import { backendConfigOf, gatherSettings } from "./settings.js";
import { paint, printJson } from "./term.js";

/** `objstate doctor`. */
export async function doctorAction(opts: Opts): Promise<void> {
  const input = gatherSettings(opts);
  const { ok, checks } = await diagnose(() => backendConfigOf(input), { ...adminOptionsOf(input.settings), workspace: input.workspace });
  if (opts.json === true) printJson({ ok, checks });
  else {
    const p = paint(process.stdout);
    const mark: Record<CheckStatus, string> = { ok: p.green("ok  "), warn: p.yellow("warn"), fail: p.red("FAIL"), skip: p.dim("skip") };
    for (const r of checks)
      process.stdout.write(`${mark[r.status]}  ${r.name}: ${printable(r.detail)}${r.fix === undefined ? "" : ` — fix: ${printable(r.fix)}`}\n`);
  }
  const failed = checks.filter((r) => r.status === "fail").length;
  if (failed > 0) throw new CliError("DOCTOR_FAILED", `${failed} check${failed === 1 ? "" : "s"} failed`);
}
