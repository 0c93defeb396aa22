/**
 * The `encryption` setting in OpenTofu's JSON shape (the same body `TF_ENCRYPTION` holds):
 * `key_provider`, `method`, `state` (with `method`, nested `fallback`, `enforced`) and
 * `remote_state_data_sources`, parsed into a frozen {@link EncryptionConfig}. Every error
 * names the JSON path of the field at fault and never a secret's value.
 */
import { ObjstateError } from "../errors.js";
import { describeReadProblem, ReadFileError, readBoundedFile } from "../io/read-file.js";
import { printSafely, REDACTED } from "../util/redact.js";

/** OpenTofu's fewest characters of a pbkdf2 passphrase. */
export const MIN_PASSPHRASE_LENGTH = 16;
/** OpenTofu refuses fewer pbkdf2 iterations than this. */
export const MIN_ITERATIONS = 200_000;
/** OpenTofu's defaults for pbkdf2 (OWASP's recommendation for PBKDF2-HMAC-SHA512 at the time). */
export const PBKDF2_DEFAULTS = Object.freeze({ iterations: 600_000, hashFunction: "sha512" as const, keyLength: 32, saltLength: 32 });

/** A secret taken from the configuration: prints as `<redacted>` everywhere. */
export class Secret {
  readonly #value: Buffer;
  /** Where it came from, for messages: `env:NAME`, `file:PATH` or `literal`. */
  readonly source: string;
  constructor(value: Buffer, source: string) {
    this.#value = value;
    this.source = source;
    Object.freeze(this);
  }
  /** The secret's bytes (a copy). */
  bytes(): Buffer {
    return Buffer.from(this.#value);
  }
  /** Its length in characters (UTF-8 decoded), for the minimum length check. */
  get length(): number {
    return this.#value.toString("utf8").length;
  }
}
printSafely(Secret.prototype, "Secret", (s) => ({ value: REDACTED, source: s.source }));

export interface Pbkdf2ProviderConfig {
  readonly type: "pbkdf2";
  readonly name: string;
  /** `key_provider.pbkdf2.NAME` */
  readonly address: string;
  /** The key of this provider's entry in an envelope's `meta`: `encrypted_metadata_alias`, or the address. */
  readonly metaKey: string;
  readonly passphrase: Secret;
  readonly keyLength: number;
  readonly iterations: number;
  readonly hashFunction: "sha256" | "sha512";
  readonly saltLength: number;
}

export interface ExternalProviderConfig {
  readonly type: "external";
  readonly name: string;
  readonly address: string;
  readonly metaKey: string;
  /** The program and its arguments (not run through a shell). */
  readonly command: readonly string[];
}

export type KeyProviderConfig = Pbkdf2ProviderConfig | ExternalProviderConfig;

export interface AesGcmMethodConfig {
  readonly type: "aes_gcm";
  readonly name: string;
  /** `method.aes_gcm.NAME` */
  readonly address: string;
  /** Address of the key provider giving the keys. */
  readonly keys: string;
  /** Additional authenticated data, when set. */
  readonly aad: Buffer | undefined;
}

export interface UnencryptedMethodConfig {
  readonly type: "unencrypted";
  readonly name: string;
  readonly address: string;
}

export type MethodConfig = AesGcmMethodConfig | UnencryptedMethodConfig;

/** A target (`state`, a remote state data source): its methods, the primary first, then each fallback in order. */
export interface TargetConfig {
  /** Method addresses: `[primary, fallback, fallback.fallback, ...]`. */
  readonly methods: readonly string[];
  /** `enforced`: no `unencrypted` method may be used (only `state` and `plan` have it). */
  readonly enforced: boolean;
}

export interface EncryptionConfig {
  readonly keyProviders: ReadonlyMap<string, KeyProviderConfig>;
  readonly methods: ReadonlyMap<string, MethodConfig>;
  /** `state`; undefined when the configuration has none (states are then neither encrypted nor decrypted). */
  readonly state: TargetConfig | undefined;
  /** `remote_state_data_sources.default`. */
  readonly remoteDefault: TargetConfig | undefined;
  /** `remote_state_data_sources.remote_state_data_source.NAME`, by data source name. */
  readonly remoteTargets: ReadonlyMap<string, TargetConfig>;
}

/** Where the configuration came from, for messages and for what it may hold. */
export interface ParseOptions {
  /** Named in messages: `TF_ENCRYPTION`, `the encryption setting`, a file. */
  readonly source: string;
  /**
   * Whether a passphrase may be written in the configuration itself. True for `TF_ENCRYPTION`
   * (the variable is the reference); false for a settings file, which must point at a file
   * or a variable instead (`{"file": PATH}` / `{"env": NAME}`).
   */
  readonly literalSecrets: boolean;
  /** Environment for `{"env": NAME}` references (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

const NAME = /^[a-zA-Z_0-9-]+$/;
const MAX_SECRET_FILE_BYTES = 64 * 1024;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObject(v: unknown): v is Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

class Parser {
  constructor(readonly opts: ParseOptions) {}

  fail(path: string, what: string, code: "ENCRYPTION_CONFIG_INVALID" | "ENCRYPTION_KDF_TOO_WEAK" = "ENCRYPTION_CONFIG_INVALID"): never {
    throw new ObjstateError(code, `${this.opts.source}: ${path}: ${what}`, { details: { path, source: this.opts.source } });
  }

  /** HCL JSON lets a block be an object or an array of objects (several blocks); both are read here, in order (the caller refuses a block declared twice). */
  blockObjects(v: Json | undefined, path: string): [string, Json][] {
    if (v === undefined) return [];
    const parts = Array.isArray(v) ? v : [v];
    const out: [string, Json][] = [];
    for (const part of parts) {
      if (!isObject(part)) this.fail(path, "must be an object of labelled blocks");
      out.push(...Object.entries(part));
    }
    return out;
  }

  body(v: Json, path: string): Record<string, Json> {
    const b = Array.isArray(v) && v.length === 1 ? v[0] : v;
    if (!isObject(b)) this.fail(path, "must be an object");
    return b;
  }

  only(body: Record<string, Json>, path: string, allowed: readonly string[]): void {
    for (const k of Object.keys(body)) if (!allowed.includes(k)) this.fail(`${path}.${k}`, `is not a known field (known: ${allowed.join(", ")})`);
  }

  /** A reference as HCL JSON writes it: `method.aes_gcm.x` or `${method.aes_gcm.x}`. */
  reference(v: Json | undefined, path: string, root: "method" | "key_provider"): string {
    if (typeof v !== "string") this.fail(path, `must be a reference string such as "${root}.TYPE.NAME"`);
    const m = /^\$\{\s*([^}]*?)\s*\}$/.exec(v);
    const ref = m?.[1] ?? v;
    const parts = ref.split(".");
    if (parts.length !== 3 || parts[0] !== root || !NAME.test(parts[1] ?? "") || !NAME.test(parts[2] ?? ""))
      this.fail(path, `must reference ${root}.TYPE.NAME (got ${JSON.stringify(v)})`);
    return ref;
  }

  integer(v: Json | undefined, path: string, fallback: number): number {
    if (v === undefined) return fallback;
    if (typeof v !== "number" || !Number.isSafeInteger(v)) this.fail(path, "must be a whole number");
    return v;
  }

  secret(v: Json | undefined, path: string): Secret {
    const how = `give {"file": "PATH"} (a file holding the passphrase) or {"env": "NAME"} (an environment variable)`;
    if (v === undefined) this.fail(path, `is required: ${how}`);
    if (typeof v === "string") {
      if (!this.opts.literalSecrets) this.fail(path, `must not be written in the setting itself: ${how}`);
      return new Secret(Buffer.from(v, "utf8"), "literal");
    }
    if (!isObject(v)) this.fail(path, `must be ${how}`);
    const keys = Object.keys(v);
    if (keys.length !== 1 || (keys[0] !== "file" && keys[0] !== "env")) this.fail(path, `must be ${how}`);
    if (typeof v["env"] === "string") {
      const env = this.opts.env ?? process.env;
      const value = env[v["env"]];
      if (value === undefined || value === "") this.fail(`${path}.env`, `environment variable ${v["env"]} is not set or empty`);
      return new Secret(Buffer.from(value, "utf8"), `env:${v["env"]}`);
    }
    const file = v["file"];
    if (typeof file !== "string" || file === "" || file === "-") this.fail(`${path}.${keys[0]}`, "must be a non-empty string");
    let bytes: Buffer;
    try {
      bytes = readBoundedFile(file, MAX_SECRET_FILE_BYTES).bytes;
    } catch (e) {
      if (e instanceof ReadFileError)
        this.fail(`${path}.file`, `cannot read ${file}: it ${describeReadProblem(e.problem).replace(/^no such file$/, "does not exist")}`);
      throw e;
    }
    // A trailing newline (echo, editors) is not part of the passphrase.
    return new Secret(Buffer.from(bytes.toString("utf8").replace(/\r?\n$/, ""), "utf8"), `file:${file}`);
  }

  keyProvider(type: string, name: string, v: Json, path: string): KeyProviderConfig {
    const body = this.body(v, path);
    const address = `key_provider.${type}.${name}`;
    const alias = body["encrypted_metadata_alias"];
    if (alias !== undefined && (typeof alias !== "string" || alias === "")) this.fail(`${path}.encrypted_metadata_alias`, "must be a non-empty string");
    const metaKey = typeof alias === "string" ? alias : address;
    if (type === "pbkdf2") {
      this.only(body, path, ["passphrase", "chain", "key_length", "iterations", "hash_function", "salt_length", "encrypted_metadata_alias"]);
      if (body["chain"] !== undefined) this.fail(`${path}.chain`, "is not supported by objstate yet: give passphrase instead");
      const passphrase = this.secret(body["passphrase"], `${path}.passphrase`);
      if (passphrase.length < MIN_PASSPHRASE_LENGTH)
        this.fail(
          `${path}.passphrase`,
          `is too short (${passphrase.source}): at least ${MIN_PASSPHRASE_LENGTH} characters are needed`,
          "ENCRYPTION_KDF_TOO_WEAK",
        );
      const iterations = this.integer(body["iterations"], `${path}.iterations`, PBKDF2_DEFAULTS.iterations);
      if (iterations < MIN_ITERATIONS)
        this.fail(
          `${path}.iterations`,
          `${iterations} is dangerously low: at least ${MIN_ITERATIONS} are needed (default ${PBKDF2_DEFAULTS.iterations})`,
          "ENCRYPTION_KDF_TOO_WEAK",
        );
      const keyLength = this.integer(body["key_length"], `${path}.key_length`, PBKDF2_DEFAULTS.keyLength);
      if (keyLength <= 0 || keyLength > 1024) this.fail(`${path}.key_length`, "must be between 1 and 1024");
      const saltLength = this.integer(body["salt_length"], `${path}.salt_length`, PBKDF2_DEFAULTS.saltLength);
      if (saltLength <= 0 || saltLength > 1024) this.fail(`${path}.salt_length`, "must be between 1 and 1024");
      const hash = body["hash_function"] ?? PBKDF2_DEFAULTS.hashFunction;
      if (hash !== "sha256" && hash !== "sha512") this.fail(`${path}.hash_function`, `must be "sha256" or "sha512" (got ${JSON.stringify(hash)})`);
      return Object.freeze({ type, name, address, metaKey, passphrase, keyLength, iterations, hashFunction: hash, saltLength });
    }
    if (type === "external") {
      this.only(body, path, ["command", "encrypted_metadata_alias"]);
      const command = body["command"];
      if (!Array.isArray(command) || command.length === 0 || !command.every((c): c is string => typeof c === "string") || command[0] === "")
        this.fail(`${path}.command`, 'must be a non-empty list of strings: ["/path/to/program", "arg", ...]');
      return Object.freeze({ type, name, address, metaKey, command: Object.freeze([...command]) });
    }
    return this.fail(
      path,
      `key provider type "${type}" is not supported by objstate (supported: pbkdf2, external; KMS, Vault and OpenBao plug in through external)`,
    );
  }

  method(type: string, name: string, v: Json, path: string): MethodConfig {
    const body = this.body(v, path);
    const address = `method.${type}.${name}`;
    if (type === "unencrypted") {
      this.only(body, path, []);
      return Object.freeze({ type, name, address });
    }
    if (type === "aes_gcm") {
      this.only(body, path, ["keys", "aad"]);
      const keys = this.reference(body["keys"], `${path}.keys`, "key_provider");
      const raw = body["aad"];
      let aad: Buffer | undefined;
      if (raw !== undefined) {
        if (!Array.isArray(raw) || !raw.every((b) => typeof b === "number" && Number.isInteger(b) && b >= 0 && b <= 255))
          this.fail(`${path}.aad`, "must be a list of bytes (whole numbers 0-255), as OpenTofu reads it");
        aad = Buffer.from(raw as number[]);
      }
      return Object.freeze({ type, name, address, keys, aad });
    }
    return this.fail(path, `method type "${type}" is not supported (supported: aes_gcm, unencrypted)`);
  }

  target(v: Json, path: string, enforceable: boolean): TargetConfig {
    const methods: string[] = [];
    let enforced = false;
    let body: Record<string, Json> | undefined = this.body(v, path);
    let at = path;
    let first = true;
    while (body !== undefined) {
      this.only(body, at, first && enforceable ? ["method", "fallback", "enforced"] : ["method", "fallback"]);
      if (first && body["enforced"] !== undefined) {
        if (typeof body["enforced"] !== "boolean") this.fail(`${at}.enforced`, "must be true or false");
        enforced = body["enforced"];
      }
      if (body["method"] !== undefined) methods.push(this.reference(body["method"], `${at}.method`, "method"));
      const fb: Json | undefined = body["fallback"];
      at = `${at}.fallback`;
      body = fb === undefined ? undefined : this.body(fb, at);
      first = false;
    }
    return Object.freeze({ methods: Object.freeze(methods), enforced });
  }
}

/**
 * Parse the `encryption` configuration in OpenTofu's JSON shape. References are checked
 * (unless `partial`, for a part to merge first): every target's methods exist, every
 * method's key provider exists, `enforced` targets use no `unencrypted` method.
 * @throws ObjstateError `ENCRYPTION_CONFIG_INVALID` (naming the JSON path),
 *   `ENCRYPTION_KDF_TOO_WEAK` (a short passphrase, too few iterations)
 */
export function parseEncryptionConfig(value: unknown, opts: ParseOptions & { readonly partial?: boolean }): EncryptionConfig {
  const p: Parser = new Parser(opts);
  if (!isObject(value)) p.fail("(top level)", "must be a JSON object with key_provider, method and state");
  p.only(value, "(top level)", ["key_provider", "method", "state", "plan", "remote_state_data_sources"]);

  const keyProviders = new Map<string, KeyProviderConfig>();
  for (const [type, named] of p.blockObjects(value["key_provider"], "key_provider")) {
    if (!NAME.test(type)) p.fail(`key_provider.${type}`, "a key provider type is letters, digits, _ and -");
    for (const [name, body] of p.blockObjects(named, `key_provider.${type}`)) {
      if (!NAME.test(name)) p.fail(`key_provider.${type}.${name}`, "a key provider name is letters, digits, _ and -");
      if (keyProviders.has(`key_provider.${type}.${name}`)) p.fail(`key_provider.${type}.${name}`, "is declared twice");
      const kp = p.keyProvider(type, name, body, `key_provider.${type}.${name}`);
      keyProviders.set(kp.address, kp);
    }
  }
  const methods = new Map<string, MethodConfig>();
  for (const [type, named] of p.blockObjects(value["method"], "method")) {
    if (!NAME.test(type)) p.fail(`method.${type}`, "a method type is letters, digits, _ and -");
    for (const [name, body] of p.blockObjects(named, `method.${type}`)) {
      if (!NAME.test(name)) p.fail(`method.${type}.${name}`, "a method name is letters, digits, _ and -");
      if (methods.has(`method.${type}.${name}`)) p.fail(`method.${type}.${name}`, "is declared twice");
      const m = p.method(type, name, body, `method.${type}.${name}`);
      methods.set(m.address, m);
    }
  }

  const state = value["state"] === undefined ? undefined : p.target(value["state"], "state", true);
  let remoteDefault: TargetConfig | undefined;
  const remoteTargets = new Map<string, TargetConfig>();
  const remote = value["remote_state_data_sources"];
  if (remote !== undefined) {
    const body = p.body(remote, "remote_state_data_sources");
    p.only(body, "remote_state_data_sources", ["default", "remote_state_data_source"]);
    if (body["default"] !== undefined) remoteDefault = p.target(body["default"], "remote_state_data_sources.default", false);
    for (const [name, t] of p.blockObjects(body["remote_state_data_source"], "remote_state_data_sources.remote_state_data_source")) {
      const path = `remote_state_data_sources.remote_state_data_source.${name}`;
      if (remoteTargets.has(name)) p.fail(path, "is declared twice");
      remoteTargets.set(name, p.target(t, path, false));
    }
  }

  const cfg: EncryptionConfig = Object.freeze({ keyProviders, methods, state, remoteDefault, remoteTargets });
  return opts.partial === true ? cfg : checkEncryptionConfig(cfg, opts.source);
}

/**
 * Check the references of a whole configuration (after {@link mergeEncryptionConfigs}, or
 * of one parsed alone), as OpenTofu does when it sets the targets up.
 * @throws ObjstateError `ENCRYPTION_CONFIG_INVALID` naming the JSON path
 */
export function checkEncryptionConfig(cfg: EncryptionConfig, source: string): EncryptionConfig {
  const p: Parser = new Parser({ source, literalSecrets: false });
  for (const m of cfg.methods.values()) {
    if (m.type === "aes_gcm" && !cfg.keyProviders.has(m.keys)) p.fail(`${m.address}.keys`, `references ${m.keys}, which is not declared under key_provider`);
  }
  const checkTarget = (t: TargetConfig | undefined, path: string): void => {
    if (t === undefined) return;
    if (t.methods.length === 0) {
      p.fail(
        `${path}.method`,
        `is required: the method to encrypt with, e.g. "method.aes_gcm.NAME"${t.enforced ? ` (${path}.enforced is set, so states must be encrypted)` : ""}`,
      );
    }
    t.methods.forEach((m, i) => {
      const at = `${path}${".fallback".repeat(i)}.method`;
      const found = cfg.methods.get(m);
      if (found === undefined) p.fail(at, `references ${m}, which is not declared under method`);
      if (t.enforced && found.type === "unencrypted")
        p.fail(at, `${m} is unencrypted, which ${path}.enforced forbids: remove enforced to migrate, or the unencrypted method`);
    });
  };
  checkTarget(cfg.state, "state");
  checkTarget(cfg.remoteDefault, "remote_state_data_sources.default");
  for (const [name, t] of cfg.remoteTargets) checkTarget(t, `remote_state_data_sources.remote_state_data_source.${name}`);
  return cfg;
}

/**
 * Two configurations as OpenTofu merges the code's with `TF_ENCRYPTION`'s: `override`'s key
 * providers and methods replace `base`'s of the same address (whole blocks: OpenTofu merges
 * their attributes, which parsed values no longer allow), a target's method chain comes from
 * `override` when it names one, and `enforced` holds if either sets it. Parse both parts
 * with `partial` and check the result with {@link checkEncryptionConfig}.
 */
export function mergeEncryptionConfigs(base: EncryptionConfig | undefined, override: EncryptionConfig | undefined): EncryptionConfig | undefined {
  if (base === undefined || override === undefined) return override ?? base;
  const target = (a: TargetConfig | undefined, b: TargetConfig | undefined): TargetConfig | undefined => {
    if (a === undefined || b === undefined) return b ?? a;
    return Object.freeze({ methods: b.methods.length > 0 ? b.methods : a.methods, enforced: a.enforced || b.enforced });
  };
  const remoteTargets = new Map(base.remoteTargets);
  for (const [name, t] of override.remoteTargets) remoteTargets.set(name, target(remoteTargets.get(name), t) as TargetConfig);
  return Object.freeze({
    keyProviders: new Map([...base.keyProviders, ...override.keyProviders]),
    methods: new Map([...base.methods, ...override.methods]),
    state: target(base.state, override.state),
    remoteDefault: target(base.remoteDefault, override.remoteDefault),
    remoteTargets,
  });
}

/**
 * The configuration in `TF_ENCRYPTION`, as OpenTofu reads it: empty or blank means none.
 * Only the JSON form is read; an HCL value is refused with the way to write it as JSON.
 * `partial`: its references are checked after merging (see {@link mergeEncryptionConfigs}).
 * @throws ObjstateError `ENCRYPTION_CONFIG_INVALID`, `ENCRYPTION_KDF_TOO_WEAK`
 */
export function encryptionConfigFromEnv(env: Readonly<Record<string, string | undefined>> = process.env, partial = false): EncryptionConfig | undefined {
  const text = (env["TF_ENCRYPTION"] ?? "").trim();
  if (text === "") return undefined;
  if (!text.startsWith("{")) {
    throw new ObjstateError(
      "ENCRYPTION_CONFIG_INVALID",
      'TF_ENCRYPTION holds HCL, which objstate does not read: write it in OpenTofu\'s JSON form instead, e.g. {"key_provider":{"pbkdf2":{"k":{"passphrase":"..."}}},"method":{"aes_gcm":{"m":{"keys":"key_provider.pbkdf2.k"}}},"state":{"method":"method.aes_gcm.m"}}',
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    // The parser's message quotes the text near the error, which may be a passphrase.
    const at = e instanceof SyntaxError ? /position (\d+)/.exec(e.message)?.[1] : undefined;
    throw new ObjstateError(
      "ENCRYPTION_CONFIG_INVALID",
      `TF_ENCRYPTION is not valid JSON${at === undefined ? "" : ` (at character ${at})`}: write OpenTofu's JSON form of the encryption block`,
    );
  }
  return parseEncryptionConfig(value, { source: "TF_ENCRYPTION", literalSecrets: true, env, partial });
}
