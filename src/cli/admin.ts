/** `objstate doctor` and `objstate init`: the library's `diagnose` and `provision`, printed; exit 1 when a check fails or something is still missing. */
import { diagnose, type CheckStatus } from "../admin/diagnose.js";
import { provision, type ProvisionStatus } from "../admin/provision.js";
import { printable } from "../util/printable.js";
import type { Opts } from "./options.js";
import { CliError, countFlag, usageError } from "./io.js";
import { adminOptionsOf } from "./runtime.js";
import { backendConfigOf, gatherSettings } from "./settings.js";
import { paint, printJson } from "./term.js";

/** `objstate doctor`: one line per check, with a fix for each failure. */
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

/** `objstate init [--create-bucket] [--create-table] [--versioning [--keep-days N] [--keep-versions N]]`. */
export async function initAction(opts: Opts): Promise<void> {
  const days = countFlag(opts.keepDays, "--keep-days", "INVALID_RETENTION");
  const versions = countFlag(opts.keepVersions, "--keep-versions", "INVALID_RETENTION");
  const asked = opts.versioning === true;
  if (!asked && (days !== undefined || versions !== undefined))
    throw usageError("--keep-days and --keep-versions set how long versions are kept: give them with --versioning", "INVALID_RETENTION");
  const retention = days === undefined && versions === undefined ? undefined : { noncurrentDays: days, newerNoncurrentVersions: versions };
  const input = gatherSettings(opts);
  const done = await provision(backendConfigOf(input), {
    ...adminOptionsOf(input.settings),
    createBucket: opts.createBucket === true,
    createTable: opts.createTable === true,
    versioning: asked ? { retention } : undefined,
    layout: input.settings.values.layout,
  });
  const results = [done.bucket, ...(done.versions === undefined ? [] : [done.versions]), done.lockTable];
  if (opts.json === true) printJson(done);
  else {
    const p = paint(process.stdout);
    const mark: Record<ProvisionStatus, string> = {
      exists: p.green("exists "),
      created: p.green("created"),
      "on first use": p.green("later  "),
      missing: p.red("missing"),
      unusable: p.red("FAIL   "),
      "not configured": p.yellow("warn   "),
    };
    for (const r of results) process.stdout.write(`${mark[r.status]}  ${r.detail}\n`);
  }
  const bad = results.filter((r) => r.status === "missing" || r.status === "unusable");
  if (bad.length > 0)
    throw new CliError("INIT_INCOMPLETE", bad.map((r) => `${r.what} ${r.name} is ${r.status === "missing" ? "missing" : "unusable"}`).join("; "));
}
