/** `state history`, `state diff` and `state rollback` (docs/design.md §9): versions read without a lock table. */
import type { ObjectStoreBackend, StateVersion } from "../backend/backend.js";
import { formatStateDiff, type StateDiff } from "../state/diff.js";
import { confirm, interactive } from "./confirm.js";
import { CliError, countFlag, lockIdFlag, usageError, versionFlag, writeOut } from "./io.js";
import { refuseLockIdWithoutLocking, underLock, withBackend } from "./runtime.js";
import { selected } from "./settings.js";
import { colorsAllowed, formatBytes, printJson, table } from "./term.js";
import { printable as safe } from "../util/printable.js";
import { historyEntryJson, principalText, rollbackJson, versionDiffJson } from "../wire/shapes.js";
import type { Opts } from "./options.js";

/** One line of `state history`: the columns, then who wrote it and how. */
function versionRow(v: StateVersion): string[] {
  const time = v.lastModified === undefined ? "?" : v.lastModified.toISOString().replace(/\.\d{3}Z$/, "Z");
  if (v.deleteMarker) return [v.isLatest ? "*" : " ", v.versionId, time, "-", "-", "-", "deleted (delete marker)"];
  let by: string;
  if (v.writer === "other") by = "another client (no objstate record)";
  else {
    const how = [v.operation === undefined ? undefined : safe(v.operation), v.lockId === undefined ? undefined : `lock ${safe(v.lockId)}`]
      .filter((x) => x !== undefined)
      .join(", ");
    by = `${safe(v.who ?? "objstate")}${how === "" ? "" : ` (${how})`}`;
    // The server's authenticated user, beside what the client claimed in `Who`.
    if (v.principal !== undefined) by += ` as server user ${safe(principalText(v.principal))}`;
    if (v.sourceVersion !== undefined) by += ` restoring ${safe(v.sourceVersion)}`;
  }
  return [
    v.isLatest ? "*" : " ",
    v.versionId,
    time,
    formatBytes(v.size),
    v.serial === undefined ? "?" : String(v.serial),
    v.lineage === undefined ? "?" : safe(v.lineage),
    by,
  ];
}

export async function stateHistoryAction(opts: Opts): Promise<void> {
  const limit = countFlag(opts.limit, "--limit", "INVALID_LIMIT");
  const s = selected(opts);
  await withBackend(s, async (backend) => {
    const versions: StateVersion[] = [];
    for await (const v of backend.history(s.workspace, { limit })) versions.push(v);
    if (opts.json === true) return printJson({ workspace: s.workspace, path: backend.describe(s.workspace), versions: versions.map(historyEntryJson) });
    if (versions.length === 0) return writeOut(`no versions of workspace ${s.workspace} at ${backend.describe(s.workspace)}\n`);
    const rows = [[" ", "VERSION", "TIME", "SIZE", "SERIAL", "LINEAGE", "WRITTEN BY"], ...versions.map(versionRow)];
    await writeOut(`${table(rows)}\n`);
  });
}

/** `objstate state diff [--from V] [--to V] [--json]`: exit 0 whether or not anything changed. */
export async function stateDiffAction(opts: Opts): Promise<void> {
  const fromFlag = versionFlag(opts.from, "--from");
  const toFlag = versionFlag(opts.to, "--to");
  const s = selected(opts);
  await withBackend(s, async (backend) => {
    // The sides not given are the library's: the version before the current one, and the current one.
    const compared = await backend.diff(s.workspace, { from: fromFlag, to: toFlag });
    if (opts.json === true) return printJson(versionDiffJson(s.workspace, compared));
    await writeOut(diffText(compared.from, compared.to, compared.diff, colorsAllowed(process.stdout)));
  });
}

/** A diff as `state diff` prints it: the two version IDs, then the changes. */
function diffText(from: string | null, to: string | null, diff: StateDiff, color: boolean): string {
  return `${from ?? "(no state)"} → ${to ?? "(no state: deleted)"}\n${formatStateDiff(diff, { color })}`;
}

/** Show on stderr what a rollback to `to` changes (as `state diff` prints it) and ask; returns the current version the diff was made from. */
async function confirmRollback(backend: ObjectStoreBackend, workspace: string, to: string): Promise<string | null> {
  const { from: current, diff } = await backend.previewRollback(workspace, to);
  const serial = diff.serial.before === null ? "" : ` (serial ${diff.serial.before + 1})`;
  process.stderr.write(
    `Rolling back ${backend.describe(workspace)} to version ${to} writes its content as a new version${serial}; what changes from the current state:\n`,
  );
  process.stderr.write(diffText(current, to, diff, colorsAllowed(process.stderr)));
  if (!(await confirm("Roll back? Only 'yes' will be accepted: "))) throw new CliError("CANCELLED", "rollback cancelled; nothing was written");
  return current;
}

/** `objstate state rollback --to V`: shows the diff and asks first unless --yes (which it needs when no one is at a terminal). */
export async function stateRollbackAction(opts: Opts): Promise<void> {
  // Commander requires --to.
  const to = versionFlag(opts.to, "--to") as string;
  const ask = opts.yes !== true;
  if (ask && !interactive()) {
    throw usageError(
      "state rollback shows the diff and asks for confirmation, and standard input is not a terminal: pass --yes to roll back without asking (objstate state diff --from CURRENT --to VERSION shows what it would change)",
      "CONFIRMATION_REQUIRED",
    );
  }
  const given = lockIdFlag(opts.lockId);
  const s = selected(opts);
  await withBackend(s, async (backend) => {
    const where = backend.describe(s.workspace);
    refuseLockIdWithoutLocking(backend, given);
    // Asked before the lock is taken: no one else waits on it while a person reads the diff.
    const shown = ask ? await confirmRollback(backend, s.workspace, to) : undefined;
    // Under the lock, the library checks that the diff confirmed is still the one the rollback applies.
    const result = await underLock(
      backend,
      s.workspace,
      { operation: "rollback", info: `objstate state rollback --to ${to}`, lockId: given },
      s.input.settings.values.lockTimeout,
      (lock) => backend.rollback(s.workspace, to, { lockId: lock.id, force: opts.force === true, expectCurrent: shown }),
    );
    if (opts.json === true) return printJson({ ...rollbackJson(s.workspace, result), path: where, locked: backend.lockingEnabled });
    const was = result.restored ? "restoring the deleted workspace" : `replacing serial ${result.previousSerial ?? "?"}`;
    await writeOut(
      `rolled back ${where} to version ${to}: written as serial ${result.serial}${result.lineage === undefined ? "" : ` of lineage ${safe(result.lineage)}`}, ${was}; nothing was deleted${backend.lockingEnabled ? "" : " (not locked: no lock table)"}\n`,
    );
  });
}
