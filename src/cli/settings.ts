/** Settings on the command line: one flag per field and a `--config` file, the config's explicit props (flag over file); errors name their flag or file. */
import { Option, type Command } from "commander";
import { ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../config/backend-config.js";
import { ConfigError } from "../config/errors.js";
import { ASSUME_ROLE_FIELDS, COMMON_FIELDS, type FieldSpec } from "../config/fields.js";
import { DataRemoteStateObjectStoreConfig, type DataRemoteStateObjectStoreConfigProps } from "../config/remote-state-config.js";
import { DEFAULT_WORKSPACE } from "../config/layout.js";
import { isPlainObject, RULES } from "../config/rules.js";
import { suggestion } from "../config/validate.js";
import { AWS_ENV } from "../resolve/settings.js";
import { parseJson, readJsonFile, usageError } from "./io.js";
import {
  parseSettings,
  SETTINGS_TABLE,
  type SettingFlags,
  type SettingOrigin,
  type Settings,
  type SettingsCommand,
  type SettingSpec,
} from "../config/settings-table.js";
import type { Opts } from "./options.js";

const SETTINGS_HELP_GROUP = "Settings (precedence: flag > --config file > environment > default):";

/** Fields that get a flag: every backend field except the deprecated `assumeRole` block. */
const FLAG_FIELDS: readonly FieldSpec[] = COMMON_FIELDS.filter((f) => f.kind !== "assumeRole");

/** `kvstoreTable` → `--kvstore-table`. */
export function flagOf(fieldName: string): string {
  return `--${fieldName.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

function placeholder(f: FieldSpec): string {
  if (f.kind === "number") return "<integer>";
  const words = f.name.split(/(?=[A-Z])/);
  return `<${(words[words.length - 1] as string).toLowerCase()}>`;
}

function helpOf(f: FieldSpec): string {
  // The AWS variables come after the seed's (and its profile): "; then" says so.
  const lists = [f.env, AWS_ENV[f.name] ?? []].filter((l) => l.length > 0).map((l) => l.join(", "));
  const env = lists.length > 0 ? ` [env: ${lists.join("; then ")}]` : "";
  const def = f.default !== undefined ? ` [default: ${f.default}${f.name === "sharedCredentialsFile" ? " when a profile is given" : ""}]` : "";
  const secret = f.secret ? " Prefer the environment variable: flags are visible to other users in the process list." : "";
  return `${f.doc}${secret}${env}${def}`;
}

/** The commander option of a settings-table row, as `command` offers it (hidden where it is only refused). */
function optionOf(r: SettingSpec, command: SettingsCommand): Option {
  const flags = `${r.short === undefined ? "" : `${r.short}, `}${r.flag ?? ""}${r.arg === undefined ? "" : ` ${r.arg}`}`;
  const help = `${r.doc}${r.env === undefined ? "" : ` [env: ${r.env}]`}${r.defaultText === undefined ? "" : ` [default: ${r.defaultText}]`}`;
  const o = new Option(flags, help).helpGroup(r.group === "server" ? "Server:" : SETTINGS_HELP_GROUP);
  if (r.choices !== undefined) o.choices(r.choices);
  if (r.repeatable === true) o.argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v]);
  return r.hiddenOn?.includes(command) === true ? o.hideHelp() : o;
}

/** Add `--config`, `-w/--workspace` (when asked), one flag per field (`--x` and `--no-x` for booleans) and the settings-table rows `command` offers. */
export function addSettingsOptions(cmd: Command, command: SettingsCommand, options: { workspace?: boolean; defaults?: boolean } = {}): Command {
  const add = (o: Option): void => {
    cmd.addOption(o.helpGroup(SETTINGS_HELP_GROUP));
  };
  add(
    new Option(
      "-c, --config <file>",
      'settings file: ObjectStoreBackendConfig props ({"bucket": …, "kvstoreTable": …}) or tool JSON ({"tool": {"backend": {"objectstore": {…}}}}), with objstate\'s own settings in an "objstate" section; - for standard input',
    ),
  );
  if (options.workspace === true) add(new Option("-w, --workspace <name>", "workspace to act on [default: the config file's workspace, else default]"));
  if (options.defaults === true)
    add(new Option("--defaults <json>", 'output values used when the state does not define them, as a JSON object (e.g. \'{"vpc_id": "none"}\')'));
  // The rows whose flag `command` offers (listed or hidden).
  for (const r of SETTINGS_TABLE as readonly SettingSpec[])
    if (r.commands.includes(command) || r.hiddenOn?.includes(command) === true) cmd.addOption(optionOf(r, command));
  for (const f of FLAG_FIELDS) {
    const flag = flagOf(f.name);
    if (f.kind === "boolean") {
      add(new Option(flag, helpOf(f)));
      add(new Option(`--no-${flag.slice(2)}`, `set ${f.name} to false`));
    } else {
      add(new Option(`${flag} ${placeholder(f)}`, helpOf(f)));
    }
  }
  cmd.addHelpText("after", "\nAll settings that are not fields (with their --config file keys and variables): objstate help settings");
  return cmd;
}

/** Where an explicit value came from. */
type Origin = Extract<SettingOrigin, { kind: "flag" | "file" }>;

/** The settings a command was given: explicit props (the file's, overridden by flags) with the origin of each (and of `workspace` and `defaults`). */
export interface SettingsInput {
  readonly props: Readonly<Record<string, unknown>>;
  readonly origins: Readonly<Record<string, Origin>>;
  /** `-w`, else the file's `workspace`; undefined means `default`. */
  readonly workspace: string | undefined;
  /** Output defaults (`--defaults`, else the file's `defaults`). */
  readonly defaults: Readonly<Record<string, unknown>> | undefined;
  /** The `--config` file, when one was given. */
  readonly file: string | undefined;
  /** The settings table's values, parsed once: flag > file > environment > default. */
  readonly settings: Settings;
}

/** True when any settings flag or `--config` was given. */
export function hasSettingsInput(opts: Opts): boolean {
  return opts.config !== undefined || FLAG_FIELDS.some((f) => fieldFlag(opts, f.name) !== undefined);
}

function fieldFlag(opts: Opts, name: string): unknown {
  return (opts as Readonly<Record<string, unknown>>)[name];
}

interface FileSettings {
  readonly props: Record<string, unknown>;
  /** Field name → how the file spells it (`kvstoreTable`, `tool.backend.objectstore.kvstore_table`). */
  readonly keys: Record<string, string>;
  readonly workspace?: unknown;
  readonly defaults?: unknown;
  /** The file's `objstate` section: objstate's own settings (`lockTtl`, `lockfile`, `layout`). */
  readonly objstate?: unknown;
}

const TOOL_BLOCK = "tool.backend.objectstore";

function fileError(file: string, message: string): never {
  throw usageError(`${file}: ${message}`, "INVALID_CONFIG_FILE");
}

function fromToolJson(doc: Record<string, unknown>, file: string): FileSettings {
  const tool = doc["tool"];
  const backend = isPlainObject(tool) ? tool["backend"] : undefined;
  const block = isPlainObject(backend) ? backend["objectstore"] : undefined;
  if (!isPlainObject(block)) fileError(file, `expected tool JSON with an objectstore backend: {"tool": {"backend": {"objectstore": {…}}}}`);
  const props: Record<string, unknown> = {};
  const keys: Record<string, string> = {};
  /** The field spelled `key` in the tool JSON at `at`, or the file's error naming the nearest. */
  const fieldAt = (fields: readonly FieldSpec[], key: string, at: string, of: string): FieldSpec => {
    const f = fields.find((x) => x.jsonKey === key);
    if (f !== undefined) return f;
    const keys = fields.map((x) => x.jsonKey);
    fileError(file, `${at} is not a setting of ${of}${suggestion(key, keys, `the settings are: ${keys.join(", ")}`)}`);
  };
  for (const [k, v] of Object.entries(block)) {
    const f = fieldAt(COMMON_FIELDS, k, `${TOOL_BLOCK}.${k}`, "the objectstore backend");
    keys[f.name] = `${TOOL_BLOCK}.${k}`;
    props[f.name] =
      f.kind === "assumeRole" && isPlainObject(v)
        ? Object.fromEntries(
            Object.entries(v).map(([ik, iv]) => [fieldAt(ASSUME_ROLE_FIELDS, ik, `${TOOL_BLOCK}.${k}.${ik}`, "the assume_role block").name, iv]),
          )
        : v;
  }
  return { props, keys, objstate: doc["objstate"] };
}

function fromProps(obj: Record<string, unknown>, path: string): FileSettings {
  const { workspace, defaults, objstate, ...rest } = obj;
  const keys: Record<string, string> = {};
  for (const k of Object.keys(obj)) keys[k] = `${path}${k}`;
  return { props: rest, keys, workspace, defaults, objstate };
}

/** Read a `--config` file: ObjectStoreBackendConfig props (plus `workspace` and `defaults`), tool JSON (`tool.backend.objectstore`), or a `synth` props document (its `backend`). */
function loadConfigFile(file: string, name: string): FileSettings {
  const doc = readJsonFile(file);
  if (!isPlainObject(doc))
    fileError(name, `expected a JSON object: ObjectStoreBackendConfig props ({"bucket": …}) or tool JSON ({"tool": {"backend": {"objectstore": {…}}}})`);
  if ("tool" in doc) return fromToolJson(doc, name);
  if ("backend" in doc || "remoteStates" in doc) {
    const backend = doc["backend"];
    if (!isPlainObject(backend)) fileError(name, `"backend" must be an object of ObjectStoreBackendConfig props`);
    return fromProps(backend, "backend.");
  }
  return fromProps(doc, "");
}

function parseInteger(flag: string, f: FieldSpec, text: string): number {
  if (!/^[+-]?\d+$/.test(text.trim())) throw usageError(`${flag} must be ${f.rule.expected}, got ${JSON.stringify(text)}`, "INVALID_VALUE");
  return Number(text.trim());
}

/** The explicit settings of a command from its parsed options (flags and `--config`), and its settings-table values. */
export function gatherSettings(opts: Opts, env: Readonly<Record<string, string | undefined>> = process.env): SettingsInput {
  const file = opts.config;
  const fileName = file === "-" ? "standard input" : file;
  const props: Record<string, unknown> = {};
  const origins: Record<string, Origin> = {};
  let workspace: string | undefined;
  let defaults: Record<string, unknown> | undefined;
  let section: unknown;
  if (file !== undefined && fileName !== undefined) {
    const fs = loadConfigFile(file, fileName);
    section = fs.objstate;
    const from = (k: string): Origin & { kind: "file" } => ({ kind: "file", file: fileName, key: fs.keys[k] ?? k });
    for (const [k, v] of Object.entries(fs.props)) {
      if (v === undefined || v === null) continue;
      props[k] = v;
      origins[k] = from(k);
    }
    const take = <T>(k: "workspace" | "defaults", valid: (v: unknown) => v is T, expected: string): T | undefined => {
      const v = fs[k];
      if (v === undefined || v === null) return undefined;
      if (!valid(v)) fileError(fileName, `${from(k).key} must be ${expected}`);
      origins[k] = from(k);
      return v;
    };
    workspace = take("workspace", (v): v is string => typeof v === "string" && RULES.workspace.valid(v), RULES.workspace.expected);
    defaults = take("defaults", isPlainObject, "a JSON object");
  }
  for (const f of FLAG_FIELDS) {
    const v = fieldFlag(opts, f.name);
    if (v === undefined) continue;
    const flag = f.kind === "boolean" && v === false ? `--no-${flagOf(f.name).slice(2)}` : flagOf(f.name);
    props[f.name] = f.kind === "number" ? parseInteger(flag, f, String(v)) : v;
    origins[f.name] = { kind: "flag", flag };
  }
  const w = opts.workspace;
  if (w !== undefined) {
    if (!RULES.workspace.valid(w)) throw usageError(`--workspace must be ${RULES.workspace.expected}, got ${JSON.stringify(w)}`, "INVALID_WORKSPACE");
    workspace = w;
    origins["workspace"] = { kind: "flag", flag: "--workspace" };
  }
  const d = opts.defaults;
  if (d !== undefined) {
    const v = parseJson(d, (where) => usageError(`--defaults must be a JSON object, got invalid JSON${where}`, "INVALID_VALUE"));
    if (!isPlainObject(v)) throw usageError("--defaults must be a JSON object", "INVALID_VALUE");
    defaults = v;
    origins["defaults"] = { kind: "flag", flag: "--defaults" };
  }
  const settings = parseSettings(settingFlagsOf(opts), fileName === undefined ? undefined : { file: fileName, section }, env);
  return { props, origins, workspace, defaults, file: fileName, settings };
}

/** The settings-table flags among a command's options (commander keeps them under the rows' names). */
export function settingFlagsOf(opts: Opts): SettingFlags {
  return Object.fromEntries(SETTINGS_TABLE.map((r) => [r.name, fieldFlag(opts, r.name)]).filter(([, v]) => v !== undefined)) as SettingFlags;
}

/** An origin for `objstate config`: `--layout`, `FILE (objstate.layout)`, `env OBJSTATE_TIMEOUT`; undefined for the default. */
export function describeOrigin(o: SettingOrigin): string | undefined {
  if (o.kind === "default") return undefined;
  return o.kind === "flag" ? o.flag : o.kind === "file" ? `${o.file} (${o.key})` : `env ${o.variable}`;
}

/** Re-word a ConfigError so it names the flag or the file the bad value came from. */
export function locateConfigError(e: ConfigError, input: SettingsInput): ConfigError {
  if (e.code === "REQUIRED" && e.field === "bucket") {
    const where = input.file === undefined ? "pass --bucket NAME or a --config file that sets it" : `pass --bucket NAME or set bucket in ${input.file}`;
    return new ConfigError("REQUIRED", `bucket is required: ${where}`, { field: "bucket", cause: e });
  }
  if (e.variable !== undefined || e.field === undefined) return e;
  const [top = "", ...rest] = e.field.split(".");
  const origin = input.origins[top];
  if (origin === undefined) {
    // An unknown key can only have come from the file.
    return input.file === undefined ? e : new ConfigError(e.code, `${input.file}: ${e.message}`, { field: e.field, cause: e });
  }
  if (origin.kind === "flag") {
    const msg = e.message.startsWith(e.field) ? `${origin.flag}${e.message.slice(e.field.length)}` : `${origin.flag}: ${e.message}`;
    return new ConfigError(e.code, msg, { field: e.field, cause: e });
  }
  let shown = origin.key;
  if (rest.length > 0) {
    const inner = ASSUME_ROLE_FIELDS.find((x) => x.name === rest[0]);
    shown = origin.key.startsWith(TOOL_BLOCK) && inner !== undefined ? `${origin.key}.${inner.jsonKey}` : `${origin.key}.${rest.join(".")}`;
  }
  const msg = e.message.startsWith(e.field) ? `${shown}${e.message.slice(e.field.length)}` : e.message;
  return new ConfigError(e.code, `${origin.file}: ${msg}`, { field: e.field, cause: e });
}

function withLocation<T>(input: SettingsInput, build: () => T): T {
  try {
    return build();
  } catch (e) {
    throw e instanceof ConfigError ? locateConfigError(e, input) : e;
  }
}

/** A command's settings, its workspace (`default` unless one is selected) and backend config. */
export type Selected = { readonly input: SettingsInput; readonly workspace: string; readonly config: ObjectStoreBackendConfig };

export function selected(opts: Opts): Selected {
  const input = gatherSettings(opts);
  return { input, workspace: input.workspace ?? DEFAULT_WORKSPACE, config: backendConfigOf(input) };
}

/** The backend config of the explicit settings; errors name the flag or file. */
export function backendConfigOf(input: SettingsInput): ObjectStoreBackendConfig {
  return withLocation(input, () => ObjectStoreBackendConfig.from(input.props as ObjectStoreBackendConfigProps));
}

/** The remote-state config (backend settings + workspace + defaults); errors name the flag or file. */
export function remoteStateConfigOf(input: SettingsInput): DataRemoteStateObjectStoreConfig {
  const props = { ...input.props, workspace: input.workspace, defaults: input.defaults } as DataRemoteStateObjectStoreConfigProps;
  return withLocation(input, () => DataRemoteStateObjectStoreConfig.from(props));
}

/** What the command's settings ask of a connection: timeouts (undefined: the drivers' defaults), lease, lockfile, layout, digest retry, state encryption. */
export function connectOptionsOf(own: Settings) {
  const v = own.values;
  const retry = { timeoutMs: v.digestRetry, intervalMs: Math.min(2_000, Math.max(1, v.digestRetry)) };
  const timeouts = v.timeout === undefined ? undefined : { requestMs: v.timeout };
  return { timeouts, ttl: v.lockTtl, lockfile: v.lockfile || undefined, layout: v.layout, digestRetry: retry, encryption: v.encryption };
}
