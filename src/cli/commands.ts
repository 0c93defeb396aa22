/**
 * The actions of `synth`, `config`, `workspace …`, `state …`, `lock`, `unlock` and
 * `force-unlock`. Each takes the parsed options of its command; errors propagate to
 * main, which prints them and picks the exit code.
 */
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline/promises";
import { DEFAULT_WORKSPACE } from "../backend/layout.js";
import { describeHolder } from "../backend/lock-info.js";
import { COMMON_FIELDS } from "../config/fields.js";
import { RULES } from "../config/rules.js";
import { describeCredentialSource, resolveEffectiveSettings } from "../credentials/index.js";
import type { ResolvedSetting } from "../resolve/settings.js";
import { synthesizeProps } from "../synth/document.js";
import { formatToolJson, secretWarnings } from "../synth/tool-json.js";
import { durationFlag } from "./duration.js";
import { CliError, EXIT, parseJsonText, readInput, readJsonFile, usageError } from "./io.js";
import { acquireLock, guardedWhileLocked, lockWaiting, requireLocking, stateStored, warn, withBackend } from "./runtime.js";
import { backendConfigOf, describeOrigin, gatherSettings, hasSettingsInput, type SettingsInput } from "./settings.js";
import { formatBytes, paint, printJson, Progress } from "./term.js";

export type Opts = Record<string, unknown>;

const REDACTED = "<redacted>";

function workspaceOf(input: SettingsInput): string {
  return input.workspace ?? DEFAULT_WORKSPACE;
}

function lockTimeoutOf(opts: Opts): number {
  const t = opts["lockTimeout"];
  return typeof t === "string" ? durationFlag("--lock-timeout", t) : 0;
}

/** A workspace named as a command argument (`workspace new NAME`). */
function workspaceArg(name: string): string {
  if (!RULES.workspace.valid(name)) throw usageError(`workspace must be ${RULES.workspace.expected}, got ${JSON.stringify(name)}`, "INVALID_WORKSPACE");
  return name;
}

function say(text: string): void {
  process.stdout.write(`${text}\n`);
}

// ---------------------------------------------------------------- synth

/** `objstate synth [file]`: a props document, or the backend of the settings. */
export function synthAction(file: string | undefined, opts: Opts): void {
  if (file !== undefined) {
    if (hasSettingsInput(opts)) throw usageError("synth takes either a props file or settings (--config and flags), not both");
    const { doc, warnings } = synthesizeProps(readJsonFile(file));
    for (const w of warnings) process.stderr.write(`objstate: warning: ${w}\n`);
    process.stdout.write(formatToolJson(doc));
    return;
  }
  const config = backendConfigOf(gatherSettings(opts));
  for (const w of secretWarnings(config)) process.stderr.write(`objstate: warning: ${w}\n`);
  process.stdout.write(formatToolJson(config.toToolJson()));
}

// ---------------------------------------------------------------- config

function shownValue(name: string, secret: boolean, s: ResolvedSetting<unknown>): unknown {
  if (s.value === undefined) return null;
  if (secret) return REDACTED;
  if (name === "assumeRole") return JSON.parse(JSON.stringify(s.value)) as unknown;
  return s.value;
}

/** `objstate config`: every effective setting with where it came from, secrets redacted. */
export function configAction(opts: Opts): void {
  const input = gatherSettings(opts);
  const config = backendConfigOf(input);
  const settings = resolveEffectiveSettings(config, process.env, { onWarning: warn });
  const credentials = describeCredentialSource(settings);
  const all = settings as unknown as Record<string, ResolvedSetting<unknown>>;
  const rows = COMMON_FIELDS.map((f) => {
    const s = all[f.name] as ResolvedSetting<unknown>;
    const originKey = s.via !== undefined ? "assumeRole" : f.name;
    const origin = s.source === "explicit" ? input.origins[originKey] : undefined;
    return {
      name: f.name,
      value: shownValue(f.name, f.secret, s),
      source: s.source,
      ...(s.via === undefined ? {} : { via: s.via }),
      ...(origin === undefined ? {} : { from: describeOrigin(origin) }),
    };
  });
  if (opts["json"] === true) {
    const out: Record<string, unknown> = {};
    for (const { name, ...rest } of rows) out[name] = rest;
    printJson({ settings: out, workspace: workspaceOf(input), credentials });
    return;
  }
  const p = paint(process.stdout);
  const text = (v: unknown): string => (v === null ? "-" : typeof v === "string" ? v : JSON.stringify(v));
  const nameW = Math.max(...rows.map((r) => r.name.length));
  const valueW = Math.min(48, Math.max(...rows.map((r) => text(r.value).length)));
  for (const r of rows) {
    const src = [r.source, r.via === undefined ? "" : `via ${r.via}`, r.from === undefined ? "" : `from ${r.from}`].filter((x) => x !== "").join(", ");
    const value = text(r.value);
    const line = `${r.name.padEnd(nameW)}  ${value.padEnd(valueW)}  ${src}`;
    say(r.value === null ? p.dim(line) : line);
  }
  say(`${"workspace".padEnd(nameW)}  ${workspaceOf(input).padEnd(valueW)}  ${input.origins["workspace"] === undefined ? "default" : `from ${describeOrigin(input.origins["workspace"])}`}`);
  say(`credentials: ${credentials}`);
}

// ---------------------------------------------------------------- workspaces

/** `objstate workspace list`. */
export async function workspaceListAction(opts: Opts): Promise<void> {
  const input = gatherSettings(opts);
  await withBackend(backendConfigOf(input), async (backend) => {
    const list = await backend.listWorkspaces();
    if (opts["json"] === true) return printJson(list);
    const current = workspaceOf(input);
    for (const w of list) say(`${w === current ? "*" : " "} ${w}`);
  });
}

/** The empty state a new workspace starts with. */
export function emptyState(): string {
  return JSON.stringify({ version: 4, serial: 0, lineage: randomUUID(), outputs: {}, resources: [] });
}

/** `objstate workspace new NAME`: write an empty state, refusing a workspace that exists. */
export async function workspaceNewAction(name: string, opts: Opts): Promise<void> {
  workspaceArg(name);
  const input = gatherSettings(opts);
  const timeout = lockTimeoutOf(opts);
  const config = backendConfigOf(input);
  if (name === DEFAULT_WORKSPACE) throw new CliError("WORKSPACE_EXISTS", `workspace ${DEFAULT_WORKSPACE} already exists (it always does)`, EXIT.error);
  await withBackend(config, async (backend) => {
    const lock = backend.lockingEnabled ? await acquireLock(backend, name, { operation: "workspace new" }, timeout) : undefined;
    let failed = true;
    try {
      if ((await backend.listWorkspaces()).includes(name)) {
        throw new CliError("WORKSPACE_EXISTS", `workspace ${name} already exists (${backend.describe(name)})`, EXIT.error);
      }
      await backend.writeState(name, emptyState(), { lockId: lock?.info.ID, onStored: stateStored });
      failed = false;
    } finally {
      await lock?.release(failed);
    }
    if (opts["json"] === true) return printJson({ workspace: name, path: backend.describe(name), created: true });
    say(`created workspace ${name} (${backend.describe(name)})`);
  });
}

/** `objstate workspace delete NAME`: refuses `default`, a missing workspace and a locked one. */
export async function workspaceDeleteAction(name: string, opts: Opts): Promise<void> {
  workspaceArg(name);
  const input = gatherSettings(opts);
  const timeout = lockTimeoutOf(opts);
  const config = backendConfigOf(input);
  if (name === DEFAULT_WORKSPACE) throw usageError(`the ${DEFAULT_WORKSPACE} workspace cannot be deleted`, "CANNOT_DELETE_DEFAULT");
  await withBackend(config, async (backend) => {
    if (!(await backend.listWorkspaces()).includes(name)) {
      throw new CliError("WORKSPACE_NOT_FOUND", `workspace ${name} does not exist (no state at ${backend.describe(name)})`, EXIT.error);
    }
    // The delete takes and releases its own lock: an interrupt lets it settle, then says what it did.
    const { interrupted } = await guardedWhileLocked(backend.describe(name), () => backend.deleteWorkspace(name), timeout);
    if (interrupted) process.stderr.write(`objstate: interrupted, but the delete had already been sent: workspace ${name} is deleted and its lock released\n`);
    if (opts["json"] === true) return printJson({ workspace: name, path: backend.describe(name), deleted: true });
    say(`deleted workspace ${name} (${backend.describe(name)})`);
  });
}

// ---------------------------------------------------------------- state

/** `objstate state pull`: the exact stored bytes on stdout. */
export async function statePullAction(opts: Opts): Promise<void> {
  const input = gatherSettings(opts);
  const workspace = workspaceOf(input);
  await withBackend(backendConfigOf(input), async (backend) => {
    const progress = Progress.start(process.stderr, `pulling ${backend.describe(workspace)}`, undefined);
    let bytes: Buffer | null;
    try {
      bytes = await backend.readState(workspace);
    } finally {
      progress.done();
    }
    if (bytes === null) throw new CliError("STATE_NOT_FOUND", `no stored state for workspace ${workspace} at ${backend.describe(workspace)}`, EXIT.error);
    await new Promise<void>((resolve, reject) => process.stdout.write(bytes, (e) => (e ? reject(e) : resolve())));
  });
}

/** `objstate state push FILE|-`: checks the input is a JSON object, then writes it under the lock. */
export async function statePushAction(file: string, opts: Opts): Promise<void> {
  const input = gatherSettings(opts);
  const workspace = workspaceOf(input);
  const timeout = lockTimeoutOf(opts);
  const config = backendConfigOf(input);
  const bytes = readInput(file, "state");
  const name = file === "-" ? "standard input" : file;
  const doc = parseJsonText(bytes.toString("utf8"), name);
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw usageError(`${name} is not a state: expected a JSON object`, "INVALID_STATE");

  await withBackend(config, async (backend) => {
    const lock = backend.lockingEnabled ? await acquireLock(backend, workspace, { operation: "state push", info: `objstate state push ${name}` }, timeout) : undefined;
    const progress = Progress.start(process.stderr, `pushing ${backend.describe(workspace)}`, bytes.length);
    let failed = true;
    try {
      await backend.writeState(workspace, bytes, { lockId: lock?.info.ID, onProgress: (sent) => progress.update(sent), onStored: stateStored });
      failed = false;
    } finally {
      progress.done();
      await lock?.release(failed);
    }
    if (opts["json"] === true) return printJson({ workspace, path: backend.describe(workspace), bytes: bytes.length, locked: lock !== undefined });
    say(`pushed ${formatBytes(bytes.length)} to ${backend.describe(workspace)}${lock === undefined ? " (not locked: no lock table)" : ""}`);
  });
}

// ---------------------------------------------------------------- locks

/** `objstate lock`: take the lock and print its ID. */
export async function lockAction(opts: Opts): Promise<void> {
  const input = gatherSettings(opts);
  const workspace = workspaceOf(input);
  const timeout = lockTimeoutOf(opts);
  const config = backendConfigOf(input);
  requireLocking(config, "take");
  await withBackend(config, async (backend) => {
    const operation = typeof opts["operation"] === "string" ? opts["operation"] : "objstate lock";
    const info = typeof opts["info"] === "string" ? opts["info"] : "";
    const { info: lock, interrupted } = await lockWaiting(backend, workspace, { operation, info }, timeout);
    if (opts["json"] === true) printJson(lock);
    else say(lock.ID);
    if (interrupted !== undefined) {
      // The lock landed after the interrupt: it is held, and only its ID can release it.
      throw new CliError("INTERRUPTED", `interrupted after the lock was taken: lock ${lock.ID} on ${backend.describe(workspace)} is held; release it with objstate unlock ${lock.ID} -w ${workspace}`, interrupted.exitCode);
    }
  });
}

/** `objstate unlock ID`. */
export async function unlockAction(id: string, opts: Opts): Promise<void> {
  const input = gatherSettings(opts);
  const workspace = workspaceOf(input);
  const config = backendConfigOf(input);
  requireLocking(config, "release");
  await withBackend(config, async (backend) => {
    await backend.unlock(workspace, id);
    if (opts["json"] === true) return printJson({ workspace, path: backend.describe(workspace), unlocked: id });
    say(`released lock ${id} on ${backend.describe(workspace)}`);
  });
}

function interactive(): boolean {
  return process.stdin.isTTY === true && process.stderr.isTTY === true;
}

async function confirm(question: string): Promise<boolean> {
  // terminal: false — the terminal echoes the answer itself; readline's line editing would
  // write ANSI cursor codes (and NO_COLOR asks for none).
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: false });
  try {
    return (await rl.question(question)).trim() === "yes";
  } finally {
    rl.close();
  }
}

/** `objstate force-unlock ID`: someone else's lock; asks first on a TTY unless --force. */
export async function forceUnlockAction(id: string, opts: Opts): Promise<void> {
  const force = opts["force"] === true;
  if (!force && !interactive()) {
    throw usageError("force-unlock needs confirmation, and standard input is not a terminal: pass --force to release the lock without asking", "CONFIRMATION_REQUIRED");
  }
  const input = gatherSettings(opts);
  const workspace = workspaceOf(input);
  const config = backendConfigOf(input);
  requireLocking(config, "release");
  await withBackend(config, async (backend) => {
    if (!force) {
      const holder = await backend.lockInfo(workspace);
      if (holder === null) throw new CliError("LOCK_NOT_FOUND", `the state at ${backend.describe(workspace)} is not locked (no lock with ID ${id})`, EXIT.error);
      if (holder.ID !== id) throw new CliError("LOCK_ID_MISMATCH", `lock ID ${id} does not match the lock on ${backend.describe(workspace)}: ${describeHolder(holder)}`, EXIT.locked);
      process.stderr.write(`The lock on ${backend.describe(workspace)}: ${describeHolder(holder)}.\nReleasing it while its holder is still at work can corrupt the state.\n`);
      if (!(await confirm("Force-unlock? Only 'yes' will be accepted: "))) throw new CliError("CANCELLED", "force-unlock cancelled; the lock is still held", EXIT.error);
    }
    await backend.forceUnlock(workspace, id);
    if (opts["json"] === true) return printJson({ workspace, path: backend.describe(workspace), unlocked: id, forced: true });
    say(`force-released lock ${id} on ${backend.describe(workspace)}`);
  });
}
