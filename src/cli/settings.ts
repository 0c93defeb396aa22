/**
 * Settings on the command line: one flag per field, generated from the field table, and
 * a `--config` file. Flags and the file together are the config's explicit props (flag
 * wins over file); environment variables and defaults come from resolution. Errors say
 * which flag or file a bad value came from.
 */
import { Option, type Command } from "commander";
import { ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../config/backend-config.js";
import { ConfigError } from "../config/errors.js";
import { ASSUME_ROLE_FIELDS, COMMON_FIELDS, type FieldSpec } from "../config/fields.js";
import { DataRemoteStateObjectStoreConfig, type DataRemoteStateObjectStoreConfigProps } from "../config/remote-state-config.js";
import { isPlainObject, RULES } from "../config/rules.js";
import { nearest } from "../config/validate.js";
import { AWS_ENV } from "../resolve/settings.js";
import { jsonSyntaxProblem } from "../json/syntax-error.js";
import { durationFlag } from "./duration.js";
import { readJsonFile, usageError } from "./io.js";
import { setLockSettings, type LockSettings } from "./lock-settings.js";
import { DEFAULT_LAYOUT, isLayoutName, LAYOUT_NAMES, type LayoutName } from "../config/layout.js";
import { setLayoutSetting, type LayoutSetting } from "./layout-setting.js";

/** Heading of the settings options in `--help`. */
export const SETTINGS_HELP_GROUP = "Settings (precedence: flag > --config file > environment > default):";

/** Fields that get a flag: every backend field except the deprecated `assumeRole` block. */
export const FLAG_FIELDS: readonly FieldSpec[] = COMMON_FIELDS.filter((f) => f.kind !== "assumeRole");

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

/**
 * Add `--config`, `-w/--workspace` (when asked) and one flag per field to a command, in
 * the settings help group. Booleans get `--x` and `--no-x`; numbers take an integer.
 */
export function addSettingsOptions(cmd: Command, options: { workspace?: boolean; defaults?: boolean } = {}): Command {
  const add = (o: Option): void => {
    cmd.addOption(o.helpGroup(SETTINGS_HELP_GROUP));
  };
  add(new Option("-c, --config <file>", 'settings file: ObjectStoreBackendConfig props ({"bucket": …, "kvstoreTable": …}) or tool JSON ({"tool": {"backend": {"objectstore": {…}}}}); - for standard input'));
  if (options.workspace === true) add(new Option("-w, --workspace <name>", "workspace to act on [default: the config file's workspace, else default]"));
  if (options.defaults === true) add(new Option("--defaults <json>", 'output values used when the state does not define them, as a JSON object (e.g. \'{"vpc_id": "none"}\')'));
  add(new Option("--layout <layout>", `where the default workspace's state lives: seed ({prefix}/{key}, as the tool's OSS backend keeps it) or s3 ({key}, as the tool's S3 backend keeps it, to share a bucket and table with it); other workspaces are at {prefix}/NAME/{key} in both [default: ${DEFAULT_LAYOUT}]`).choices(LAYOUT_NAMES));
  for (const f of FLAG_FIELDS) {
    const flag = flagOf(f.name);
    if (f.kind === "boolean") {
      add(new Option(flag, helpOf(f)));
      add(new Option(`--no-${flag.slice(2)}`, `set ${f.name} to false`));
    } else {
      add(new Option(`${flag} ${placeholder(f)}`, helpOf(f)));
    }
  }
  return cmd;
}

/** Where an explicit value came from. */
export type Origin = { readonly kind: "flag"; readonly flag: string } | { readonly kind: "file"; readonly file: string; readonly key: string };

/** The settings a command was given: explicit props with the origin of each. */
export interface SettingsInput {
  /** Explicit backend props: the file's, overridden by flags. */
  readonly props: Readonly<Record<string, unknown>>;
  /** Origin of each explicit field (and of `workspace` / `defaults`). */
  readonly origins: Readonly<Record<string, Origin>>;
  /** The workspace to act on: `-w`, else the file's `workspace`; undefined means `default`. */
  readonly workspace: string | undefined;
  /** Output defaults (`--defaults`, else the file's `defaults`). */
  readonly defaults: Readonly<Record<string, unknown>> | undefined;
  /** The `--config` file, when one was given. */
  readonly file: string | undefined;
}

/** True when any settings flag or `--config` was given. */
export function hasSettingsInput(opts: Record<string, unknown>): boolean {
  return opts["config"] !== undefined || FLAG_FIELDS.some((f) => opts[f.name] !== undefined);
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
  const jsonKeys = COMMON_FIELDS.map((f) => f.jsonKey);
  for (const [k, v] of Object.entries(block)) {
    const f = COMMON_FIELDS.find((x) => x.jsonKey === k);
    if (f === undefined) {
      const near = nearest(k, jsonKeys);
      fileError(file, `${TOOL_BLOCK}.${k} is not a setting of the objectstore backend${near === undefined ? `; the settings are: ${jsonKeys.join(", ")}` : `; did you mean ${near}?`}`);
    }
    keys[f.name] = `${TOOL_BLOCK}.${k}`;
    if (f.kind === "assumeRole" && isPlainObject(v)) {
      const inner: Record<string, unknown> = {};
      const innerKeys = ASSUME_ROLE_FIELDS.map((x) => x.jsonKey);
      for (const [ik, iv] of Object.entries(v)) {
        const g = ASSUME_ROLE_FIELDS.find((x) => x.jsonKey === ik);
        if (g === undefined) {
          const near = nearest(ik, innerKeys);
          fileError(file, `${TOOL_BLOCK}.${k}.${ik} is not a setting of the assume_role block${near === undefined ? `; the settings are: ${innerKeys.join(", ")}` : `; did you mean ${near}?`}`);
        }
        inner[g.name] = iv;
      }
      props[f.name] = inner;
    } else {
      props[f.name] = v;
    }
  }
  return { props, keys, objstate: doc["objstate"] };
}

function fromProps(obj: Record<string, unknown>, path: string): FileSettings {
  const { workspace, defaults, objstate, ...rest } = obj;
  const keys: Record<string, string> = {};
  for (const k of Object.keys(obj)) keys[k] = `${path}${k}`;
  return { props: rest, keys, workspace, defaults, objstate };
}

/**
 * Read a `--config` file: ObjectStoreBackendConfig props (field names, plus optional
 * `workspace` and `defaults`), tool JSON (`tool.backend.objectstore` with snake_case keys,
 * mapped back through the field table's `jsonKey`), or a `synth` props document (its
 * `backend`).
 */
export function loadConfigFile(file: string): FileSettings {
  const name = file === "-" ? "standard input" : file;
  const doc = readJsonFile(file);
  if (!isPlainObject(doc)) fileError(name, `expected a JSON object: ObjectStoreBackendConfig props ({"bucket": …}) or tool JSON ({"tool": {"backend": {"objectstore": {…}}}})`);
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

function parseDefaults(text: string, label: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    // Not V8's message, nor the cause: it quotes the text, and defaults may hold secrets.
    const { problem, at } = jsonSyntaxProblem(e, text);
    throw usageError(`${label} must be a JSON object, got invalid JSON${at === "" ? "" : ` ${at}`}: ${problem}`, "INVALID_VALUE");
  }
  if (!isPlainObject(v)) throw usageError(`${label} must be a JSON object`, "INVALID_VALUE");
  return v;
}

/** The explicit settings of a command from its parsed options (flags and `--config`). */
export function gatherSettings(opts: Record<string, unknown>): SettingsInput {
  const file = typeof opts["config"] === "string" ? opts["config"] : undefined;
  const fileName = file === "-" ? "standard input" : file;
  const props: Record<string, unknown> = {};
  const origins: Record<string, Origin> = {};
  let workspace: string | undefined;
  let defaults: Record<string, unknown> | undefined;
  let lock: LockSettings = {};
  let layout: LayoutSetting = { name: DEFAULT_LAYOUT, from: undefined };
  if (file !== undefined) {
    const fs = loadConfigFile(file);
    const own = objstateSectionOf(fs.objstate, fileName as string);
    lock = own.lock;
    if (own.layout !== undefined) layout = { name: own.layout, from: `${fileName as string} (objstate.layout)` };
    for (const [k, v] of Object.entries(fs.props)) {
      if (v === undefined || v === null) continue;
      props[k] = v;
      origins[k] = { kind: "file", file: fileName as string, key: fs.keys[k] ?? k };
    }
    if (fs.workspace !== undefined && fs.workspace !== null) {
      if (typeof fs.workspace !== "string" || !RULES.workspace.valid(fs.workspace)) {
        fileError(fileName as string, `${fs.keys["workspace"] ?? "workspace"} must be ${RULES.workspace.expected}`);
      }
      workspace = fs.workspace;
      origins["workspace"] = { kind: "file", file: fileName as string, key: fs.keys["workspace"] ?? "workspace" };
    }
    if (fs.defaults !== undefined && fs.defaults !== null) {
      if (!isPlainObject(fs.defaults)) fileError(fileName as string, `${fs.keys["defaults"] ?? "defaults"} must be a JSON object`);
      defaults = fs.defaults;
      origins["defaults"] = { kind: "file", file: fileName as string, key: fs.keys["defaults"] ?? "defaults" };
    }
  }
  for (const f of FLAG_FIELDS) {
    const v = opts[f.name];
    if (v === undefined) continue;
    const flag = f.kind === "boolean" && v === false ? `--no-${flagOf(f.name).slice(2)}` : flagOf(f.name);
    props[f.name] = f.kind === "number" ? parseInteger(flag, f, String(v)) : v;
    origins[f.name] = { kind: "flag", flag };
  }
  const w = opts["workspace"];
  if (typeof w === "string") {
    if (!RULES.workspace.valid(w)) throw usageError(`--workspace must be ${RULES.workspace.expected}, got ${JSON.stringify(w)}`, "INVALID_WORKSPACE");
    workspace = w;
    origins["workspace"] = { kind: "flag", flag: "--workspace" };
  }
  const d = opts["defaults"];
  if (typeof d === "string") {
    defaults = parseDefaults(d, "--defaults");
    origins["defaults"] = { kind: "flag", flag: "--defaults" };
  }
  const ttl = opts["lockTtl"];
  if (typeof ttl === "string") lock = { ...lock, ttlMs: lockTtlOf("--lock-ttl", ttl) };
  if (opts["lockfile"] === true) lock = { ...lock, lockfile: true };
  const flagged = layoutFlagOf(opts);
  if (flagged !== undefined) layout = { name: flagged, from: "--layout" };
  setLockSettings(lock);
  setLayoutSetting(layout);
  return { props, origins, workspace, defaults, file: fileName };
}

/** A lease length: a duration of at least 1 s (the lease's expiry is stored in whole seconds). */
function lockTtlOf(label: string, text: string): number {
  const ms = durationFlag(label, text);
  if (ms < 1000) throw usageError(`${label} must be at least 1s (a lease's expiry is stored in whole seconds), got ${JSON.stringify(text)}`, "INVALID_LOCK_TTL");
  return ms;
}

/** `--layout` (commander has checked it against the choices), or undefined when not given. */
export function layoutFlagOf(opts: Record<string, unknown>): LayoutName | undefined {
  const v = opts["layout"];
  if (v === undefined) return undefined;
  if (!isLayoutName(v)) throw usageError(`--layout must be ${LAYOUT_NAMES.join(" or ")}, got ${JSON.stringify(v)}`, "INVALID_LAYOUT");
  return v;
}

const OBJSTATE_SETTINGS = ["lockTtl", "lockfile", "layout"];

/**
 * The `--config` file's `objstate` section: `{"lockTtl": "1m", "lockfile": true, "layout": "s3"}`,
 * beside the props (or the tool JSON's `tool` block). Anything else in it is refused by name.
 */
function objstateSectionOf(section: unknown, file: string): { lock: LockSettings; layout: LayoutName | undefined } {
  if (section === undefined || section === null) return { lock: {}, layout: undefined };
  if (!isPlainObject(section)) fileError(file, `objstate must be an object: {"lockTtl": "1m", "lockfile": true, "layout": "s3"}`);
  let lock: LockSettings = {};
  let layout: LayoutName | undefined;
  for (const [k, v] of Object.entries(section)) {
    if (k === "lockTtl") {
      if (typeof v !== "string") fileError(file, `objstate.lockTtl must be a duration such as "30s" or "5m"`);
      lock = { ...lock, ttlMs: lockTtlOf(`${file} (objstate.lockTtl)`, v) };
    } else if (k === "lockfile") {
      if (typeof v !== "boolean") fileError(file, `objstate.lockfile must be true or false`);
      lock = { ...lock, lockfile: v };
    } else if (k === "layout") {
      if (!isLayoutName(v)) fileError(file, `objstate.layout must be "seed" (the default workspace at {prefix}/{key}) or "s3" (at {key}, as the tool's S3 backend keeps it), got ${JSON.stringify(v)}`);
      layout = v;
    } else {
      const near = nearest(k, OBJSTATE_SETTINGS);
      fileError(file, `objstate.${k} is not an objstate setting${near === undefined ? `; the settings are: ${OBJSTATE_SETTINGS.join(", ")}` : `; did you mean ${near}?`}`);
    }
  }
  return { lock, layout };
}

/** Describe an origin for messages: `--bucket` or `file stack.json`. */
export function describeOrigin(o: Origin): string {
  return o.kind === "flag" ? o.flag : `${o.file} (${o.key})`;
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
    if (e instanceof ConfigError) throw locateConfigError(e, input);
    throw e;
  }
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

// ---------------------------------------------------------------- objstate serve

/** Heading of the server options in `objstate serve --help`. */
export const SERVE_HELP_GROUP = "Server:";

/**
 * The options of `objstate serve`: not fields of the seed's config (nothing to synthesize),
 * so they live here beside the settings flags, like `--timeout`.
 */
export function addServeOptions(cmd: Command): Command {
  const add = (o: Option): void => {
    cmd.addOption(o.helpGroup(SERVE_HELP_GROUP));
  };
  add(new Option("--listen <host:port>", "address to listen on; without --users only a loopback address is allowed (unless --insecure-no-auth)").default("127.0.0.1:8080"));
  add(new Option("--public-url <url>", "an origin clients reach this server by, such as https://state.example.com (repeatable); other Host names get 421. Needed on a non-loopback --listen").argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v]));
  add(new Option("--users <file>", "users file (mode 600): scrypt password hashes and roles (outputs, read, write, lock, force, admin) on workspace globs; add users with objstate serve hash-password"));
  add(new Option("--insecure-no-auth", "serve a non-loopback address without a users file: anyone who reaches it may read, write and unlock every state"));
  add(new Option("--tls-cert <file>", "PEM certificate (chain): serve HTTPS (needs --tls-key)"));
  add(new Option("--tls-key <file>", "PEM private key of --tls-cert"));
  add(new Option("--tls-client-ca <file>", "PEM CA: require client certificates signed by it; a certificate whose subject CN names a user of --users logs in as that user"));
  add(new Option("--max-state-size <size>", "largest request body: 1024, 64KiB, 512MiB, 1GiB; larger ones get 413 before they are read").default("512MiB"));
  add(new Option("--client-timeout <duration>", "headers must arrive within this long, and a request body must bring at least 4 KiB in every such window, or the client is dropped").default("30s"));
  add(new Option("--max-connections <n>", "open connections in all; more are closed at once").default("1024"));
  add(new Option("--max-connections-per-client <n>", "open connections from one client address (an IPv6 /64 counts as one); more are closed at once. Behind a proxy every client has the proxy's address: raise it to --max-connections").default("64"));
  add(new Option("--shutdown-grace <duration>", "on SIGTERM or SIGINT, how long requests in flight may take to finish before their connections are cut").default("30s"));
  add(new Option("--allow-unlocked-writes", "accept a state write without ?ID, from a client that holds no lock (no lock_address in its backend block, or -lock=false): it may overwrite changes it never read. Needed to serve without a lock table or lockfile [default: such writes get 409 UNLOCKED_WRITE]"));
  add(new Option("--no-console", "serve no web console at / (only /state, /api/v1 and the probes)"));
  add(new Option("--secret-file <file>", "the console's form secret, shared by every replica behind one address so a form served by one posts to another: at least 32 bytes, mode 600, e.g. (umask 077; openssl rand -base64 48 > FILE) [default: a new one each process]"));
  add(new Option("--log-level <level>", "request log on stderr, one JSON line per request: debug, info, warn, error, off").choices(["debug", "info", "warn", "error", "off"]).default("info"));
  return cmd;
}
