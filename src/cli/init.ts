/**
 * `objstate init [--create-bucket] [--create-table] [--versioning [--keep-days N]
 * [--keep-versions N]]`: the library's `provision`, printed. Exit 1 when something is still
 * missing or unusable afterwards.
 */
import { provision, type ProvisionResult, type ProvisionStatus } from "../admin/provision.js";
import type { Retention } from "../store/types.js";
import type { Opts } from "./options.js";
import { CliError, countFlag, usageError } from "./io.js";
import { adminOptionsOf } from "./runtime.js";
import { backendConfigOf, gatherSettings } from "./settings.js";
import { paint, printJson } from "./term.js";

/** What `--versioning` and the retention flags ask for, checked before anything connects. */
function versioningRequest(opts: Opts): { retention: Omit<Retention, "prefix"> | undefined } | undefined {
  const days = countFlag(opts.keepDays, "--keep-days", "INVALID_RETENTION");
  const versions = countFlag(opts.keepVersions, "--keep-versions", "INVALID_RETENTION");
  const asked = opts.versioning === true;
  if (!asked && (days !== undefined || versions !== undefined))
    throw usageError("--keep-days and --keep-versions set how long versions are kept: give them with --versioning", "INVALID_RETENTION");
  if (!asked) return undefined;
  return { retention: days === undefined && versions === undefined ? undefined : { noncurrentDays: days, newerNoncurrentVersions: versions } };
}

/** `objstate init`. */
export async function initAction(opts: Opts): Promise<void> {
  const versioning = versioningRequest(opts);
  const input = gatherSettings(opts);
  const done = await provision(backendConfigOf(input), {
    ...adminOptionsOf(input.settings),
    createBucket: opts.createBucket === true,
    createTable: opts.createTable === true,
    versioning,
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
  const bad = results.filter((r: ProvisionResult) => r.status === "missing" || r.status === "unusable");
  if (bad.length > 0)
    throw new CliError("INIT_INCOMPLETE", bad.map((r) => `${r.what} ${r.name} is ${r.status === "missing" ? "missing" : "unusable"}`).join("; "));
}
