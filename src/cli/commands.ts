/** The actions of `synth`, `config`, `workspace …`, `state pull|push|repair|rekey`, `lock`, `locks`, `unlock` and `force-unlock`. */
import { NO_LOCK_ID, type LockListing, type LockOptions, type ObjectStoreBackend, type RekeyResult } from "../backend/backend.js";
import { DEFAULT_WORKSPACE } from "../config/layout.js";
import { describeHolder } from "../backend/locks/lock-info.js";
import { COMMON_FIELDS } from "../config/fields.js";
import { RULES } from "../config/rules.js";
import { describeCredentialSource, resolveEffectiveSettings } from "../credentials/index.js";
import type { ResolvedSetting } from "../resolve/settings.js";
import { synthesizeProps } from "../synth/document.js";
import { formatToolJson, secretWarnings } from "../config/tool-json.js";
import { serveBackendTerraformJson, terraformWarnings, type TerraformBackendOptions } from "../config/terraform-json.js";
import { ConfigError } from "../config/errors.js";
import type { Opts } from "./options.js";
import { confirm, interactive } from "./confirm.js";
import { durationOf } from "../config/setting-parsers.js";
import { CliError, lockIdFlag, readingFile, readJsonFile, usageError, versionFlag, writeOut } from "./io.js";
import { guardedCall, lockWaiting, requireLocking, stateStored, underGivenLock, withBackend } from "./runtime.js";
import { once } from "node:events";
import { promisify } from "node:util";
import { sourceChanged } from "../store/byte-source.js";
import type { ByteSource } from "../store/types.js";
import { nodeChildProcess, nodeFs } from "../util/builtins.js";
import { FILE_LIMITS, openBoundedFile, readBoundedFile } from "../io/read-file.js";
import { isObjstateError } from "../errors.js";
import { formatAgo } from "../console/format.js";
import {
  backendConfigOf,
  describeOrigin,
  gatherSettings,
  hasSettingsInput,
  locateConfigError,
  selected,
  settingFlagsOf,
  type SettingsInput,
} from "./settings.js";
import { parseSettings } from "../config/settings-table.js";
import { describeEncryption } from "../config/encryption-setting.js";
import { formatBytes, paint, printJson, Progress, table, warn } from "./term.js";
import { redactUrl } from "../util/redact.js";
import { printable } from "../util/printable.js";
import { lockJson, rekeyJson, workspaceJson } from "../wire/shapes.js";

/** A workspace named as a command argument (`workspace new NAME`). */
function workspaceArg(name: string): string {
  if (!RULES.workspace.valid(name)) throw usageError(`workspace must be ${RULES.workspace.expected}, got ${JSON.stringify(name)}`, "INVALID_WORKSPACE");
  return name;
}

function say(text: string): void {
  process.stdout.write(`${text}\n`);
}

function warnAll(warnings: readonly string[]): void {
  for (const w of warnings) process.stderr.write(`objstate: warning: ${w}\n`);
}

/** The flag each option of the real tool's synthesis comes from, for messages. */
const TARGET_FLAGS: Readonly<Record<string, string>> = {
  backend: "--for",
  serveUrl: "--serve-url",
  username: "--username",
  workspace: "--workspace",
  lockfile: "--lockfile",
  layout: "--layout",
};

/** `--for` and the flags that go with it, checked against each other; undefined without `--for`. */
function synthTarget(opts: Opts, input: SettingsInput | undefined): TerraformBackendOptions | undefined {
  const { for: backend, serveUrl, username } = opts;
  const lockfile = opts.lockfile === true;
  // The message ends one way without --for, another with the --for given.
  const refuse = (message: string, without: string, other: string): never => {
    throw usageError(`${message}${backend === undefined ? without : other}`, "INVALID_FLAGS");
  };
  const given = [serveUrl !== undefined && "--serve-url", username !== undefined && "--username", opts.workspace !== undefined && "--workspace"];
  const flag = backend === "http" ? undefined : given.find((f) => f !== false);
  if (flag !== undefined) refuse(`${flag} goes with --for http (the address of objstate serve)`, "", `, not --for ${backend}`);
  const s3 = backend === "s3" || backend === "oss";
  if (lockfile && !s3)
    refuse("--lockfile goes with --for s3 (use_lockfile)", ": the seed's tool JSON has no lockfile setting", ": for http the server's own lock settings apply");
  const layoutWhy = "--layout goes with --for s3 or --for oss (synth then warns only when the tool's backend keeps the default workspace elsewhere)";
  if (opts.layout !== undefined && !s3) refuse(layoutWhy, ": the seed's tool JSON has no layout", ": for http the server's own --layout applies");
  if (backend === undefined) return undefined;
  if (backend === "http") {
    if (serveUrl === undefined) return refuse("--for http needs --serve-url URL: where the tool reaches objstate serve, such as http://127.0.0.1:8080", "", "");
    return { backend, serveUrl, username, workspace: input === undefined ? opts.workspace : input.workspace };
  }
  // The --config file's objstate.lockfile counts as --lockfile does, and its objstate.layout as --layout.
  const own = input === undefined ? parseSettings(settingFlagsOf(opts), undefined, process.env) : input.settings;
  const layout = opts.layout === undefined && input === undefined ? undefined : own.values.layout;
  return { backend, lockfile: lockfile || own.values.lockfile || undefined, layout };
}

/** Run `synthesize`; a ConfigError about an option of the real tool's synthesis is reworded to name its flag (others by `other`). */
function naming<T>(synthesize: () => T, other: (e: ConfigError) => unknown = (e) => e): T {
  try {
    return synthesize();
  } catch (e) {
    if (!(e instanceof ConfigError) || e.field === undefined) throw e;
    const flag = TARGET_FLAGS[e.field];
    if (flag === undefined) throw other(e);
    if (!e.message.startsWith(e.field)) throw e;
    throw new ConfigError(e.code, `${flag}${e.message.slice(e.field.length)}`, { field: e.field, cause: e });
  }
}

/** `objstate synth [file]`: a props document, or the backend of the settings; with `--for`, for one of the real tool's backends. */
export function synthAction(file: string | undefined, opts: Opts): void {
  if (file !== undefined) {
    if (hasSettingsInput(opts)) throw usageError("synth takes either a props file or settings (--config and flags), not both");
    const target = synthTarget(opts, undefined);
    const out = naming(() => synthesizeProps(readJsonFile(file), target));
    warnAll(out.warnings);
    return void process.stdout.write(formatToolJson(out.doc));
  }
  const input = gatherSettings(opts);
  const target = synthTarget(opts, input);
  // The server holds the store settings: for http none are needed.
  if (target?.backend === "http" && !hasSettingsInput(opts)) return void process.stdout.write(formatToolJson(naming(() => serveBackendTerraformJson(target))));
  const config = backendConfigOf(input);
  if (target === undefined) {
    warnAll(secretWarnings(config));
    return void process.stdout.write(formatToolJson(config.toToolJson()));
  }
  const doc = naming(
    () => config.toTerraformJson(target),
    (e) => locateConfigError(e, input),
  );
  warnAll(terraformWarnings(config, target));
  process.stdout.write(formatToolJson(doc));
}

function shownValue(name: string, secret: boolean, s: ResolvedSetting<unknown>): unknown {
  if (s.value === undefined) return null;
  if (secret) return "<redacted>";
  if (name === "assumeRole") return JSON.parse(JSON.stringify(s.value)) as unknown;
  return typeof s.value === "string" ? redactUrl(s.value) : s.value;
}

/** `objstate config`: every effective setting with where it came from, secrets redacted. */
export function configAction(opts: Opts): void {
  const { input, workspace, config } = selected(opts);
  const settings = resolveEffectiveSettings(config, process.env, { onWarning: warn });
  const credentials = describeCredentialSource(settings);
  const all = settings as unknown as Record<string, ResolvedSetting<unknown>>;
  const rows = COMMON_FIELDS.map((f) => {
    const s = all[f.name] as ResolvedSetting<unknown>;
    const origin = s.source === "explicit" ? input.origins[s.via !== undefined ? "assumeRole" : f.name] : undefined;
    return {
      name: f.name,
      value: shownValue(f.name, f.secret, s),
      source: s.source,
      ...(s.via === undefined ? {} : { via: s.via }),
      ...(origin === undefined ? {} : { from: describeOrigin(origin) }),
    };
  });
  // objstate's own setting, beside the seed's fields: explicit or the default.
  const from = describeOrigin(input.settings.origins.layout);
  const layout = { value: input.settings.values.layout, source: from === undefined ? "default" : "explicit", ...(from === undefined ? {} : { from }) };
  const encryption = describeEncryption(input.settings.values.encryption);
  if (opts.json === true) {
    const shown = Object.fromEntries(rows.map(({ name, ...rest }) => [name, rest]));
    return printJson({ settings: shown, layout, workspace, credentials, encryption });
  }
  const p = paint(process.stdout);
  const text = (v: unknown): string => (v === null ? "-" : typeof v === "string" ? v : JSON.stringify(v));
  const nameW = Math.max(...rows.map((r) => r.name.length));
  const valueW = Math.min(48, Math.max(...rows.map((r) => text(r.value).length)));
  const line = (name: string, value: string, src: string): string => `${name.padEnd(nameW)}  ${value.padEnd(valueW)}  ${src}`;
  for (const r of [...rows, { name: "layout", via: undefined, ...layout }]) {
    const src = [r.source, r.via === undefined ? "" : `via ${r.via}`, r.from === undefined ? "" : `from ${r.from}`].filter((x) => x !== "").join(", ");
    const l = line(r.name, text(r.value), src);
    say(r.value === null ? p.dim(l) : l);
  }
  const ws = input.origins["workspace"];
  say(line("workspace", workspace, ws === undefined ? "default" : `from ${describeOrigin(ws)}`));
  say(`credentials: ${credentials}`);
  const encFrom = describeOrigin(input.settings.origins.encryption);
  say(`encryption: ${encryption}${encFrom === undefined ? "" : ` (from ${encFrom})`}`);
}

/** `objstate workspace list`; with --json each workspace's lock and last write, as GET /api/v1/workspaces lists them. */
export async function workspaceListAction(opts: Opts): Promise<void> {
  const s = selected(opts);
  await withBackend(s, async (backend) => {
    if (opts.json === true) return printJson((await backend.workspaceStatuses()).map(workspaceJson));
    // One write: a line at a time is a system call each on a pipe, 10,000 for 10,000 workspaces.
    say((await backend.listWorkspaces()).map((w) => `${w === s.workspace ? "*" : " "} ${printable(w)}`).join("\n"));
  });
}

/** `objstate workspace new NAME`: write an empty state, refusing a workspace that exists. */
export async function workspaceNewAction(name: string, opts: Opts): Promise<void> {
  workspaceArg(name);
  const lockId = lockIdFlag(opts.lockId);
  const s = selected(opts);
  if (name === DEFAULT_WORKSPACE) throw new CliError("WORKSPACE_EXISTS", `workspace ${DEFAULT_WORKSPACE} already exists (it always does)`);
  await withBackend(s, async (backend) => {
    await underGivenLock(backend, name, lockId, s.input.settings.values.lockTimeout, { operation: "workspace new" }, (id) =>
      backend.createWorkspace(name, { lockId: id, onStored: stateStored }),
    );
    if (opts.json === true) return printJson({ workspace: name, path: backend.describe(name), created: true });
    say(`created workspace ${name} (${backend.describe(name)})`);
  });
}

/** `objstate workspace delete NAME`: refuses `default`, a missing workspace and a locked one. */
export async function workspaceDeleteAction(name: string, opts: Opts): Promise<void> {
  workspaceArg(name);
  const lockId = lockIdFlag(opts.lockId);
  const s = selected(opts);
  if (name === DEFAULT_WORKSPACE) throw usageError(`the ${DEFAULT_WORKSPACE} workspace cannot be deleted`, "CANNOT_DELETE_DEFAULT");
  await withBackend(s, async (backend) => {
    // The delete takes and releases its own lock (unless --lock-id): an interrupt lets it settle, then says what it did.
    const timeout = lockId === undefined ? s.input.settings.values.lockTimeout : 0;
    const { interrupted } = await guardedCall(backend.describe(name), timeout, (wait) => backend.deleteWorkspace(name, { lockId, wait, mustExist: true }));
    if (interrupted)
      process.stderr.write(
        `objstate: interrupted, but the delete had already been sent: workspace ${name} is deleted${lockId === undefined ? " and its lock released" : ""}\n`,
      );
    if (opts.json === true) return printJson({ workspace: name, path: backend.describe(name), deleted: true });
    say(`deleted workspace ${name} (${backend.describe(name)})`);
  });
}

/** `objstate state pull [--version ID]`: the exact stored bytes on stdout (of an old version: read without a lock table). */
export async function statePullAction(opts: Opts): Promise<void> {
  const version = versionFlag(opts.version, "--version") ?? versionFlag(opts.versionId, "--version-id");
  const s = selected(opts);
  await withBackend(s, async (backend) => {
    if (version !== undefined) return writeOut(await backend.readVersion(s.workspace, version, { stored: opts.rawEnvelope === true }));
    // The buffer being filled has the state's size: the line shows bytes against it.
    const bytes = await Progress.during(process.stderr, `pulling ${backend.describe(s.workspace)}`, undefined, (p) =>
      backend.readState(s.workspace, { onData: (body, filled) => p.update(filled, body.length), stored: opts.rawEnvelope === true }),
    );
    if (bytes === null) throw new CliError("STATE_NOT_FOUND", `no stored state for workspace ${s.workspace} at ${backend.describe(s.workspace)}`);
    await writeOut(bytes);
  });
}

/** Bytes per read of the file: the most of it in memory at once, per pass. */
const CHUNK = 1024 * 1024;

/**
 * The state to push: a file read from its open descriptor each time the write reads it (memory
 * stays bounded), or standard input, which cannot be read twice, held in memory.
 */
function openStateInput(file: string): { name: string; size: number; body: Buffer | ByteSource; close(): void } {
  if (file === "-") {
    const advice =
      "; standard input cannot be read twice (once to check it, once to send it), so it is held in memory: save the state to a file and push the file";
    const bytes = readingFile(() => readBoundedFile("-", FILE_LIMITS.state).bytes, advice);
    return { name: "standard input", size: bytes.length, body: bytes, close: () => undefined };
  }
  const { fd, size } = readingFile(() => openBoundedFile(file, FILE_LIMITS.stateFile));
  return { name: file, size, body: fileSource(fd, size, file), close: () => nodeFs().closeSync(fd) };
}

/**
 * The open file as a source: every read starts at byte 0 of the same descriptor, in fresh
 * buffers (a consumer may hold one). A file that shrank is `INPUT_CHANGED`; bytes changed in place fail the MD5.
 */
function fileSource(fd: number, size: number, name: string): ByteSource {
  const read = promisify(nodeFs().read);
  return {
    size,
    async *open() {
      for (let pos = 0; pos < size;) {
        const n = Math.min(CHUNK, size - pos);
        const buf = Buffer.allocUnsafe(n);
        for (let got = 0; got < n;) {
          const { bytesRead: r } = await read(fd, buf, got, n - got, pos + got);
          if (r === 0) throw sourceChanged(name, size, pos + got);
          got += r;
        }
        pos += n;
        yield buf;
      }
    },
  };
}

/** `objstate state push FILE|-`: one `writeState` under the lock (its own, or --lock-id's), through the lineage guard (--force to override). */
export async function statePushAction(file: string, opts: Opts): Promise<void> {
  const lockId = lockIdFlag(opts.lockId);
  const s = selected(opts);
  const state = openStateInput(file);
  try {
    await withBackend(s, async (backend) => {
      const where = backend.describe(s.workspace);
      const operation = { operation: "state push", info: `objstate state push ${state.name}` };
      const { result, locked } = await underGivenLock(backend, s.workspace, lockId, s.input.settings.values.lockTimeout, operation, (id) =>
        Progress.during(process.stderr, `pushing ${where}`, state.size, (p) =>
          backend.writeState(s.workspace, state.body, { lockId: id, force: opts.force === true, onProgress: (sent) => p.update(sent), onStored: stateStored }),
        ),
      );
      if (opts.json === true) return printJson({ workspace: s.workspace, path: where, bytes: state.size, locked, written: result.written, md5: result.md5 });
      if (!result.written) return say(`${where} already holds this state (MD5 ${result.md5}); nothing written`);
      say(`pushed ${formatBytes(state.size)} to ${where}${locked ? "" : " (not locked: no lock table)"}`);
    });
  } finally {
    state.close();
  }
}

/** `objstate state repair`: the library's repair under the lock, and leftovers older than --older-than removed. */
export async function stateRepairAction(opts: Opts): Promise<void> {
  const lockId = lockIdFlag(opts.lockId);
  const olderThan = opts.olderThan === undefined ? undefined : durationOf(opts.olderThan, { kind: "flag", flag: "--older-than" });
  const s = selected(opts);
  await withBackend(s, async (backend) => {
    const where = backend.describe(s.workspace);
    const { result: report } = await underGivenLock(backend, s.workspace, lockId, s.input.settings.values.lockTimeout, { operation: "state repair" }, (id) =>
      backend.repairState(s.workspace, { lockId: id, force: opts.force === true, leftoverMinAgeMs: olderThan }),
    );
    if (opts.json === true) return printJson({ workspace: s.workspace, path: where, ...report });
    const lines: Record<typeof report.action, string> = {
      ok: `the state at ${where} matches its digest; nothing to repair`,
      "recorded-digest": `recorded the digest of the state at ${where} (${report.md5 ?? "?"}; was ${report.previous ?? "none"}); it reads again`,
      "restored-committed": `the newest version of the state at ${where} was a write that never committed: wrote the committed state (${report.md5 ?? "?"}) again over it`,
      "removed-orphan-digest": `removed the digest of a state that is gone (${where})`,
      "no-state": `no state at ${where}; nothing to repair`,
      "no-lock-table": `no lock table, so no digests to repair`,
    };
    say(lines[report.action]);
    const what = (l: (typeof report.leftoversKept)[number]): string => `${l.kind} ${l.key ?? l.id} (from ${l.since?.toISOString() ?? "unknown"}`;
    for (const l of report.leftoversRemoved) say(`removed ${what(l)})`);
    for (const l of report.leftoversKept) say(`kept ${what(l)}: too recent, a writer may still be at work)`);
  });
}

/** `objstate state rekey [--all]`: one library call per workspace, under its lock. */
export async function stateRekeyAction(opts: Opts): Promise<void> {
  const input = gatherSettings(opts);
  const timeout = input.settings.values.lockTimeout;
  if (opts.all === true && input.workspace !== undefined) throw usageError("give either --all or -w/--workspace, not both");
  await withBackend({ input, config: backendConfigOf(input) }, async (backend) => {
    const workspaces = opts.all === true ? await backend.listWorkspaces() : [input.workspace ?? DEFAULT_WORKSPACE];
    const results: RekeyResult[] = [];
    for (const w of workspaces) {
      const r = await backend.rekey(w, { wait: timeout === 0 ? undefined : { timeoutMs: timeout } });
      results.push(r);
      if (opts.json === true) continue;
      say(
        r.rekeyed
          ? `rekeyed workspace ${w}: serial ${r.serial ?? "?"}, read with ${r.from ?? "?"}, written with ${r.to}`
          : `workspace ${w} has no state; nothing to rekey`,
      );
    }
    if (opts.json === true) printJson(rekeyJson(results));
  });
}

/** `objstate lock [-- command …]`: take the lock and print its ID, or hold it while a command runs. */
export async function lockAction(opts: Opts, command: readonly string[] = []): Promise<void> {
  const s = selected(opts);
  const timeout = s.input.settings.values.lockTimeout;
  requireLocking(s, "take");
  await withBackend(s, async (backend) => {
    const operation = { operation: opts.operation ?? "objstate lock", info: opts.info ?? "" };
    if (command.length > 0) return runUnderLock(backend, s.workspace, operation, timeout, command);
    const { info: lock, interrupted } = await lockWaiting(backend, s.workspace, operation, timeout);
    if (opts.json === true) printJson(lockJson(backend.listedLock(s.workspace, lock)));
    else say(lock.ID);
    // A lock that landed after the interrupt is held, and only its ID can release it.
    if (interrupted !== undefined)
      throw new CliError(
        "INTERRUPTED",
        `interrupted after the lock was taken: lock ${lock.ID} on ${backend.describe(s.workspace)} is held; release it with objstate unlock ${lock.ID} -w ${s.workspace}`,
        { exitCode: interrupted.exitCode },
      );
  });
}

/** `objstate locks`: every lock in the table and every lockfile under the prefix. */
export async function locksAction(opts: Opts): Promise<void> {
  const s = selected(opts);
  requireLocking(s, "list");
  await withBackend(s, async (backend) => printLocks(await backend.locks(), opts.json === true));
}

/** `objstate unlock ID`, and `objstate force-unlock ID` (someone else's lock; asks first on a TTY unless --force). */
export async function unlockAction(id: string, opts: Opts, forced = false): Promise<void> {
  const ask = forced && opts.force !== true;
  if (ask && !interactive())
    throw usageError(
      "force-unlock needs confirmation, and standard input is not a terminal: pass --force to release the lock without asking",
      "CONFIRMATION_REQUIRED",
    );
  const s = selected(opts);
  requireLocking(s, "release");
  await withBackend(s, async (backend) => {
    const where = backend.describe(s.workspace);
    if (ask) {
      const holder = await backend.lockInfo(s.workspace);
      // no-id names an item without readable lock info, which may have no Info at all.
      if (holder === null && id !== NO_LOCK_ID) throw new CliError("LOCK_NOT_FOUND", `the state at ${where} is not locked (no lock with ID ${id})`);
      if (holder === null) process.stderr.write(`The lock item of ${where} has no lock info.\n`);
      else if (holder.ID !== (id === NO_LOCK_ID ? "" : id))
        throw new CliError("LOCK_ID_MISMATCH", `lock ID ${id} does not match the lock on ${where}: ${describeHolder(holder)}`);
      else process.stderr.write(`The lock on ${where}: ${printable(describeHolder(holder))}.\n`);
      process.stderr.write("Releasing it while its holder is still at work can corrupt the state.\n");
      if (!(await confirm("Force-unlock? Only 'yes' will be accepted: "))) throw new CliError("CANCELLED", "force-unlock cancelled; the lock is still held");
    }
    // The same release either way: a wrong ID is refused, so a lock taken since is never broken by mistake.
    await backend.unlock(s.workspace, id);
    if (opts.json === true) return printJson({ workspace: s.workspace, path: where, unlocked: id, ...(forced ? { forced: true } : {}) });
    say(`${forced ? "force-released" : "released"} lock ${id} on ${where}`);
  });
}

/** Print the lock list: JSON, or one aligned line per lock (what the holders wrote, escaped). */
function printLocks(list: readonly LockListing[], json: boolean): void {
  if (json) return printJson(list.map(lockJson));
  if (list.length === 0) return say("no locks");
  const now = Date.now();
  // Times as the console shows them: how long ago first (what an operator judges a stale lock by), then UTC.
  const when = (iso: string, verb = ""): string => {
    const ago = formatAgo(iso, now);
    return ago === "" ? `${verb}${iso}` : `${verb}${iso} (${ago})`;
  };
  const rows = [
    ["WORKSPACE", "SOURCE", "ID", "WHO", "OPERATION", "INFO", "SINCE", "LEASE"],
    ...list.map((l) =>
      [
        l.workspace ?? `(${l.path})`,
        l.source,
        l.id || "(none)",
        l.who || "-",
        l.operation || "-",
        l.info || "-",
        l.since ? when(l.since) : "-",
        l.expires === null ? "never expires" : when(l.expires, l.expired ? "expired " : "expires "),
      ].map(printable),
    ),
  ];
  process.stdout.write(`${table(rows)}\n`);
}

/** Run `command` under the lock (`OBJSTATE_LOCK_ID`, `OBJSTATE_WORKSPACE`); a lost lease sends it SIGTERM and ends with `LOCK_LOST`. */
async function runUnderLock(
  backend: ObjectStoreBackend,
  workspace: string,
  options: LockOptions,
  timeoutMs: number,
  command: readonly string[],
): Promise<void> {
  const ended = await backend.withLock(workspace, { ...options, wait: { timeoutMs, setting: "--lock-timeout" } }, async (lock) => {
    const [file, ...args] = command as [string, ...string[]];
    const child = nodeChildProcess().spawn(file, args, {
      stdio: "inherit",
      env: { ...process.env, OBJSTATE_LOCK_ID: lock.id ?? "", OBJSTATE_WORKSPACE: workspace },
    });
    const onLost = (): boolean => child.kill("SIGTERM");
    lock.signal?.addEventListener("abort", onLost, { once: true });
    const exit = await once(child, "exit").then(
      ([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }),
      (e: Error) => new CliError("COMMAND_FAILED", `could not run ${file}: ${e.message}`, { cause: e }),
    );
    lock.signal?.removeEventListener("abort", onLost);
    // A lease lost while the command ran is what to report, whatever the command did.
    const lost: unknown = lock.signal?.aborted === true ? lock.signal.reason : undefined;
    if (isObjstateError(lost, "LOCK_LOST")) throw new CliError("LOCK_LOST", `${lost.message}; the command was stopped`, { cause: lost });
    if (exit instanceof CliError) throw exit;
    return exit;
  });
  // The command's own code is named, not passed on: its 3-7 would read as objstate's (locked, conflict…).
  if (ended.signal !== null) throw new CliError("COMMAND_FAILED", `${command[0]} was ended by ${ended.signal}; the lock was released`);
  if (ended.code !== 0) throw new CliError("COMMAND_FAILED", `${command[0]} exited with code ${ended.code ?? "?"}; the lock was released`);
}
