/**
 * The settings table (docs/design.md §2): one row per setting that is not a field of the seed's objects;
 * the commands' options, the `--config` file's `objstate` section, variables, docs and the parse derive from it.
 */
import { DEFAULT_LAYOUT, LAYOUT_NAMES, type LayoutName } from "./layout.js";
import { encryptionFromEnvText, encryptionFromFile, mergeEncryptionSettings } from "./encryption-setting.js";
import type { EncryptionConfig } from "../encryption/index.js";
import { ObjstateError } from "../errors.js";
import { suggestion } from "./validate.js";
import { isPlainObject } from "./rules.js";
import {
  choiceOf,
  countOf,
  durationOf,
  layoutOf,
  leaseOf,
  listenOf,
  pathOf,
  sizeOf,
  switchOf,
  textsOf,
  type ListenAddress,
  type SettingOrigin,
} from "./setting-parsers.js";

export type { ListenAddress, SettingOrigin } from "./setting-parsers.js";

/** The commands of `objstate` that take settings, by their words. */
export const SETTINGS_COMMANDS = [
  "synth",
  "config",
  "workspace list",
  "workspace new",
  "workspace delete",
  "state pull",
  "state history",
  "state diff",
  "state rollback",
  "state push",
  "state repair",
  "state rekey",
  "lock",
  "locks",
  "unlock",
  "force-unlock",
  "output",
  "doctor",
  "init",
  "serve",
] as const;

export type SettingsCommand = (typeof SETTINGS_COMMANDS)[number];

/** Commands that contact a server: all but synth and config. */
const ONLINE = SETTINGS_COMMANDS.filter((c) => c !== "synth" && c !== "config");
/** Commands that only read, which take no lock (so they take neither a lease nor a lockfile setting). */
const LOCKLESS: readonly SettingsCommand[] = ["output", "state diff", "workspace list"];
/** Commands that wait for a lock another holder has. */
const LOCK_WAITERS: readonly SettingsCommand[] = ["workspace new", "workspace delete", "state rollback", "state push", "state repair", "state rekey", "lock"];
/** Commands that read a state and check it against its digest. */
const DIGEST_READERS: readonly SettingsCommand[] = ["state pull", "state push", "state rollback", "state rekey", "output", "serve"];

/** One row of the settings table. */
export interface SettingSpec<N extends string = string, T = unknown> {
  /** The commander attribute, the key of the {@link Settings} value and of the `--config` file's `objstate` section. */
  readonly name: N;
  /** `--lock-ttl`, `--no-console`; undefined for no flag (a setting that may hold a secret). */
  readonly flag?: string | undefined;
  readonly short?: string | undefined;
  /** `<duration>`; undefined for a switch. */
  readonly arg?: string | undefined;
  /** The flag may be given more than once (its values are collected). */
  readonly repeatable?: boolean | undefined;
  /** The values commander offers and checks. */
  readonly choices?: readonly string[] | undefined;
  /** Environment variable, if any (below the file, above the default). */
  readonly env?: string | undefined;
  /** The default as written (`60s`); undefined when the setting is off or the library's own applies. */
  readonly defaultText?: string | undefined;
  readonly default: T;
  /** Read a flag's, file's or variable's value; throws an ObjstateError naming `at`. */
  readonly parse: (raw: unknown, at: SettingOrigin) => T;
  /** The commands that offer the flag (a file key or a variable applies wherever the setting is read). */
  readonly commands: readonly SettingsCommand[];
  /** Commands that accept the flag without listing it (only to refuse it by name). */
  readonly hiddenOn?: readonly SettingsCommand[] | undefined;
  /** The help group it is listed under: `server` for a setting only `objstate serve` takes. */
  readonly group: "shared" | "server";
  /** One line for `--help` and docs (the default is added one way for all). */
  readonly doc: string;
  /** Given by both the file and the variable: the variable's over the file's (OpenTofu's TF_ENCRYPTION over the code's block). */
  readonly merge?: ((file: { raw: unknown; at: SettingOrigin }, env: { raw: unknown; at: SettingOrigin }) => T) | undefined;
}

/** A row and its one line of help; its flag is its name in kebab case (`--no-x` for a switch on by default) unless `flag` is given. */
function row<const N extends string, T>(spec: Omit<SettingSpec<N, T>, "group" | "doc">, doc: string): SettingSpec<N, T> {
  const group = spec.commands.length === 1 && spec.commands[0] === "serve" ? "server" : "shared";
  const flag = `--${spec.default === true ? "no-" : ""}${spec.name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  return Object.freeze({ flag, ...spec, group, commands: Object.freeze([...spec.commands]), doc });
}

const LOG_LEVELS = ["debug", "info", "warn", "error", "off"] as const;

/** The settings table, in the order of `objstate help settings`. */
export const SETTINGS_TABLE = [
  row(
    {
      name: "timeout",
      arg: "<duration>",
      env: "OBJSTATE_TIMEOUT",
      defaultText: "60s",
      default: undefined as number | undefined,
      parse: (raw, at) => durationOf(raw, at, 1),
      commands: ONLINE,
    },
    "give up on a request to the object store, lock table or STS after this long, retries included (one more second per MiB of a large body): 30s, 2m; connect 5s and idle 20s per attempt",
  ),
  row(
    { name: "lockTimeout", arg: "<duration>", env: "OBJSTATE_LOCK_TIMEOUT", defaultText: "0s", default: 0, parse: durationOf, commands: LOCK_WAITERS },
    "while another holder has the lock, retry (with backoff) for up to this long: 0s (fail at once), 30s, 5m, 1h30m",
  ),
  row(
    {
      name: "lockTtl",
      arg: "<duration>",
      default: undefined as number | undefined,
      parse: leaseOf,
      commands: ONLINE.filter((c) => !LOCKLESS.includes(c) && c !== "serve"),
      hiddenOn: ["serve"],
    },
    "locks this command takes expire unless renewed (objstate renews them every third of this while it works; an expired one is taken over): 30s, 1m; without it locks never expire",
  ),
  row(
    { name: "lockfile", default: false, parse: switchOf, commands: ["synth", ...ONLINE.filter((c) => !LOCKLESS.includes(c))] },
    "lock with a lockfile {state path}.tflock in the bucket (as the tool's S3 backend does), with or without a lock table; synth --for s3 writes it as use_lockfile",
  ),
  row(
    {
      name: "layout",
      arg: "<layout>",
      choices: LAYOUT_NAMES,
      defaultText: DEFAULT_LAYOUT,
      default: DEFAULT_LAYOUT as LayoutName,
      parse: layoutOf,
      commands: SETTINGS_COMMANDS,
    },
    "where the default workspace's state lives: seed ({prefix}/{key}, as the tool's OSS backend keeps it) or s3 ({key}, as the tool's S3 backend keeps it, to share a bucket and table with it); other workspaces are at {prefix}/NAME/{key} in both",
  ),
  row(
    { name: "digestRetry", arg: "<duration>", defaultText: "10s", default: 10_000, parse: durationOf, commands: DIGEST_READERS },
    "while a state read does not match its digest (a write in flight elsewhere), read again every 2s for up to this long before failing (exit 4): 0s, 10s, 1m",
  ),
  row(
    {
      name: "encryption",
      flag: undefined,
      env: "TF_ENCRYPTION",
      default: undefined as EncryptionConfig | undefined,
      parse: (raw, at) => (at.kind === "env" ? encryptionFromEnvText(raw, false) : encryptionFromFile(raw, at, false)),
      merge: mergeEncryptionSettings,
      commands: [],
    },
    'state encryption at rest in OpenTofu\'s JSON form ({"key_provider": …, "method": …, "state": {"method": …, "fallback": …}}): writes store an envelope OpenTofu reads, reads decrypt (README "Encryption at rest"). No flag: in the file a passphrase is {"file": PATH} or {"env": NAME}; TF_ENCRYPTION (JSON only) applies over the file\'s. Secrets are never printed',
  ),
  row(
    {
      name: "listen",
      arg: "<host:port>",
      defaultText: "127.0.0.1:8080",
      default: Object.freeze({ host: "127.0.0.1", port: 8080 }) as ListenAddress,
      parse: listenOf,
      commands: ["serve"],
    },
    "address to listen on; without --users only a loopback address is allowed (unless --insecure-no-auth)",
  ),
  row(
    { name: "publicUrl", arg: "<url>", repeatable: true, default: Object.freeze([]) as readonly string[], parse: textsOf, commands: ["serve"] },
    "an origin clients reach this server by, such as https://state.example.com (repeatable); other Host names get 421. Needed on a non-loopback --listen",
  ),
  row(
    { name: "users", arg: "<file>", default: undefined as string | undefined, parse: pathOf, commands: ["serve"] },
    "users file (mode 600): scrypt password hashes and roles (outputs, read, write, lock, force, admin) on workspace globs; add users with objstate serve hash-password",
  ),
  row(
    { name: "insecureNoAuth", default: false, parse: switchOf, commands: ["serve"] },
    "serve a non-loopback address without a users file: anyone who reaches it may read, write and unlock every state",
  ),
  row(
    { name: "tlsCert", arg: "<file>", default: undefined as string | undefined, parse: pathOf, commands: ["serve"] },
    "PEM certificate (chain): serve HTTPS (needs --tls-key)",
  ),
  row({ name: "tlsKey", arg: "<file>", default: undefined as string | undefined, parse: pathOf, commands: ["serve"] }, "PEM private key of --tls-cert"),
  row(
    { name: "tlsClientCa", arg: "<file>", default: undefined as string | undefined, parse: pathOf, commands: ["serve"] },
    "PEM CA: require client certificates signed by it; a certificate whose subject CN names a user of --users logs in as that user",
  ),
  row(
    { name: "maxStateSize", arg: "<size>", defaultText: "512MiB", default: 512 * 1024 ** 2, parse: sizeOf, commands: ["serve"] },
    "largest request body: 1024, 64KiB, 512MiB, 1GiB; larger ones get 413 before they are read",
  ),
  row(
    { name: "clientTimeout", arg: "<duration>", defaultText: "30s", default: 30_000, parse: durationOf, commands: ["serve"] },
    "headers must arrive within this long, and a request body must bring at least 4 KiB in every such window, or the client is dropped",
  ),
  row(
    { name: "maxConnections", arg: "<n>", defaultText: "1024", default: 1024, parse: countOf, commands: ["serve"] },
    "open connections in all; at the cap a new one takes the place of the oldest connection not answering a whole request of the address holding the most, or is closed at once",
  ),
  row(
    { name: "maxConnectionsPerClient", arg: "<n>", defaultText: "64", default: 64, parse: countOf, commands: ["serve"] },
    "open connections from one client address (an IPv6 /64 counts as one); more are closed at once. Behind a proxy every client has the proxy's address: raise it to --max-connections",
  ),
  row(
    { name: "shutdownGrace", arg: "<duration>", defaultText: "30s", default: 30_000, parse: durationOf, commands: ["serve"] },
    "on SIGTERM or SIGINT, how long requests in flight may take to finish before their connections are cut",
  ),
  row(
    { name: "allowUnlockedWrites", default: false, parse: switchOf, commands: ["serve"] },
    "accept a state write without ?ID, from a client that holds no lock (no lock_address in its backend block, or -lock=false): it may overwrite changes it never read. Needed to serve without a lock table or lockfile; without it such writes get 409 UNLOCKED_WRITE",
  ),
  row({ name: "console", default: true, parse: switchOf, commands: ["serve"] }, "serve no web console at / (only /state, /api/v1 and the probes)"),
  row(
    { name: "secretFile", arg: "<file>", default: undefined as string | undefined, parse: pathOf, commands: ["serve"] },
    "the console's form secret, shared by every replica behind one address so a form served by one posts to another: at least 32 bytes, mode 600, e.g. (umask 077; openssl rand -base64 48 > FILE); without it a new one each process",
  ),
  row(
    {
      name: "logLevel",
      arg: "<level>",
      choices: LOG_LEVELS,
      env: "OBJSTATE_LOG_LEVEL",
      defaultText: "info",
      default: "info" as (typeof LOG_LEVELS)[number],
      parse: choiceOf(LOG_LEVELS),
      commands: ["serve"],
    },
    "request log on stderr, one JSON line per request: debug, info, warn, error, off",
  ),
] as const;

type Rows = typeof SETTINGS_TABLE;

/** The typed values of the table's settings, by name. */
export type SettingValues = { readonly [R in Rows[number] as R["name"]]: R["default"] };

/** A setting's name. */
export type SettingName = keyof SettingValues;

/** The settings of one command: every row's value (flag > `--config` file > environment > default), each with its origin. Frozen. */
export interface Settings {
  readonly values: SettingValues;
  readonly origins: { readonly [N in SettingName]: SettingOrigin };
}

/** What commander gives for the table's flags: text (a list for a repeatable one) or a switch, by name; absent when not given. */
export type SettingFlags = {
  readonly [R in Rows[number] as R["name"]]?: R["default"] extends boolean ? boolean : R["default"] extends readonly string[] ? string[] : string;
};

/** The `--config` file's `objstate` section, and the file's name for messages. */
export interface SettingsFileSection {
  readonly file: string;
  readonly section: unknown;
}

const FILE_KEYS = SETTINGS_TABLE.map((r: SettingSpec) => r.name);

function fileProblem(file: string, message: string): never {
  throw new ObjstateError("INVALID_CONFIG_FILE", `${file}: ${message}`, { details: { file } });
}

/**
 * Parse the settings once: flags (commander's values, by name), the `--config` file's `objstate`
 * section and the environment, over the defaults, into one frozen value; a bad value or unknown key throws naming where.
 */
export function parseSettings(flags: SettingFlags, file: SettingsFileSection | undefined, env: Readonly<Record<string, string | undefined>>): Settings {
  const section = file?.section;
  if (file !== undefined && section !== undefined && section !== null) {
    if (!isPlainObject(section))
      fileProblem(file.file, `objstate must be an object of objstate settings, such as {"lockTtl": "1m", "lockfile": true, "layout": "s3"}`);
    for (const k of Object.keys(section)) {
      if (FILE_KEYS.includes(k)) continue;
      fileProblem(file.file, `objstate.${k} is not an objstate setting${suggestion(k, FILE_KEYS, `the settings are: ${FILE_KEYS.join(", ")}`)}`);
    }
  }
  const values: Record<string, unknown> = {};
  const origins: Record<string, SettingOrigin> = {};
  for (const r of SETTINGS_TABLE as readonly SettingSpec[]) {
    const given = (flags as Readonly<Record<string, unknown>>)[r.name];
    const inFile = isPlainObject(section) ? section[r.name] : undefined;
    const fromEnv = r.env === undefined ? "" : (env[r.env] ?? "");
    const envAt: SettingOrigin = { kind: "env", variable: r.env ?? "" };
    // A switch on by default is given off with --no-x: commander reports the default (true) when absent.
    const flag = r.flag ?? "";
    let at: SettingOrigin = { kind: "default" };
    if (flag !== "" && given !== undefined && !(flag.startsWith("--no-") && given === true))
      at = { kind: "flag", flag: r.arg === undefined && given === false && !flag.startsWith("--no-") ? `--no-${flag.slice(2)}` : flag };
    else if (inFile !== undefined && inFile !== null) at = { kind: "file", file: file?.file ?? "", key: `objstate.${r.name}` };
    else if (fromEnv !== "") at = envAt;
    const raw = at.kind === "flag" ? given : at.kind === "file" ? inFile : fromEnv;
    if (at.kind === "default") values[r.name] = r.default;
    else if (at.kind === "file" && r.merge !== undefined && fromEnv !== "") values[r.name] = r.merge({ raw, at }, { raw: fromEnv, at: envAt });
    else values[r.name] = r.parse(raw, at);
    origins[r.name] = Object.freeze(at);
  }
  return Object.freeze({ values: Object.freeze(values) as unknown as SettingValues, origins: Object.freeze(origins) as unknown as Settings["origins"] });
}
