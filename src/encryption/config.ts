/** The `encryption` setting in OpenTofu's JSON shape (as `TF_ENCRYPTION` holds it); errors name the JSON path, never a secret. */
import { ObjstateError } from "../errors.js";
import { ReadFileError, readBoundedFile } from "../io/read-file.js";
import { printSafely, REDACTED } from "../util/redact.js";

/** OpenTofu's pbkdf2 floors and defaults (OWASP's for PBKDF2-HMAC-SHA512). */
export const MIN_PASSPHRASE_LENGTH = 16;
export const MIN_ITERATIONS = 200_000;
export const PBKDF2_DEFAULTS = Object.freeze({ iterations: 600_000, hashFunction: "sha512" as const, keyLength: 32, saltLength: 32 });

/** A secret taken from the configuration: prints as `<redacted>` everywhere. */
export class Secret {
  readonly #value: Buffer;
  /** `source`: `env:NAME`, `file:PATH` or `literal`, for messages. */
  constructor(
    value: Buffer,
    readonly source: string,
  ) {
    this.#value = value;
    Object.freeze(this);
  }
  bytes(): Buffer {
    return Buffer.from(this.#value);
  }
  /** In characters, for the minimum length. */
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
  /** Its key in an envelope's `meta`: `encrypted_metadata_alias`, or the address. */
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
  /** The program and its arguments (no shell). */
  readonly command: readonly string[];
}

export type KeyProviderConfig = Pbkdf2ProviderConfig | ExternalProviderConfig;

export interface AesGcmMethodConfig {
  readonly type: "aes_gcm";
  readonly name: string;
  readonly address: string;
  /** The key provider's address. */
  readonly keys: string;
  readonly aad: Buffer | undefined;
}

export interface UnencryptedMethodConfig {
  readonly type: "unencrypted";
  readonly name: string;
  readonly address: string;
}

export type MethodConfig = AesGcmMethodConfig | UnencryptedMethodConfig;

/** `state`, or a remote state data source. */
export interface TargetConfig {
  /** Method addresses: `[primary, fallback, fallback.fallback, ...]`. */
  readonly methods: readonly string[];
  /** No `unencrypted` method may be used (only `state` and `plan` have it). */
  readonly enforced: boolean;
}

export interface EncryptionConfig {
  readonly keyProviders: ReadonlyMap<string, KeyProviderConfig>;
  readonly methods: ReadonlyMap<string, MethodConfig>;
  readonly state: TargetConfig | undefined;
  /** `remote_state_data_sources.default`. */
  readonly remoteDefault: TargetConfig | undefined;
  /** `remote_state_data_sources.remote_state_data_source.NAME`, by name. */
  readonly remoteTargets: ReadonlyMap<string, TargetConfig>;
}

export interface ParseOptions {
  /** Named in messages: `TF_ENCRYPTION`, `the encryption setting`, a file. */
  readonly source: string;
  /** A passphrase may be written in it (`TF_ENCRYPTION`); else only `{"file": PATH}` or `{"env": NAME}`. */
  readonly literalSecrets: boolean;
  /** For `{"env": NAME}` (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

const NAME = /^[a-zA-Z_0-9-]+$/;
const MAX_SECRET_FILE_BYTES = 64 * 1024;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export function isObject(v: unknown): v is Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `text` as JSON, or undefined when it is not JSON (which JSON itself never yields). */
export function jsonOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

class Parser {
  constructor(readonly opts: ParseOptions) {}

  fail(path: string, what: string, code: "ENCRYPTION_CONFIG_INVALID" | "ENCRYPTION_KDF_TOO_WEAK" = "ENCRYPTION_CONFIG_INVALID"): never {
    throw new ObjstateError(code, `${this.opts.source}: ${path}: ${what}`, { details: { path, source: this.opts.source } });
  }

  /** HCL JSON's labelled blocks: an object, or an array of them, in order. */
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

  /** `ROOT.TYPE.NAME` blocks, by address. */
  typedBlocks<T>(v: Json | undefined, root: string, what: string, parse: (type: string, name: string, v: Json, path: string) => T): Map<string, T> {
    const out = new Map<string, T>();
    for (const [type, named] of this.blockObjects(v, root)) {
      if (!NAME.test(type)) this.fail(`${root}.${type}`, `a ${what} type is letters, digits, _ and -`);
      for (const [name, body] of this.blockObjects(named, `${root}.${type}`)) {
        const path = `${root}.${type}.${name}`;
        if (!NAME.test(name)) this.fail(path, `a ${what} name is letters, digits, _ and -`);
        if (out.has(path)) this.fail(path, "is declared twice");
        out.set(path, parse(type, name, body, path));
      }
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

  /** `method.aes_gcm.x` or `${method.aes_gcm.x}`. */
  reference(v: Json | undefined, path: string, root: "method" | "key_provider"): string {
    if (typeof v !== "string") this.fail(path, `must be a reference string such as "${root}.TYPE.NAME"`);
    const m = /^\$\{\s*([^}]*?)\s*\}$/.exec(v);
    const ref = m?.[1] ?? v;
    const parts = ref.split(".");
    if (parts.length !== 3 || parts[0] !== root || !NAME.test(parts[1] ?? "") || !NAME.test(parts[2] ?? ""))
      this.fail(path, `must reference ${root}.TYPE.NAME (got ${JSON.stringify(v)})`);
    return ref;
  }

  /** `fallback` when absent; `bytes`: between 1 and 1024. */
  integer(v: Json | undefined, path: string, fallback: number, bytes = false): number {
    if (v === undefined) return fallback;
    if (typeof v !== "number" || !Number.isSafeInteger(v)) this.fail(path, "must be a whole number");
    if (bytes && (v <= 0 || v > 1024)) this.fail(path, "must be between 1 and 1024");
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
      if (e instanceof ReadFileError) this.fail(`${path}.file`, `cannot read ${file}: it ${e.reason.replace(/^no such file$/, "does not exist")}`);
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
      const weak = (field: string, why: string): never => this.fail(`${path}.${field}`, why, "ENCRYPTION_KDF_TOO_WEAK");
      const passphrase = this.secret(body["passphrase"], `${path}.passphrase`);
      if (passphrase.length < MIN_PASSPHRASE_LENGTH)
        weak("passphrase", `is too short (${passphrase.source}): at least ${MIN_PASSPHRASE_LENGTH} characters are needed`);
      const iterations = this.integer(body["iterations"], `${path}.iterations`, PBKDF2_DEFAULTS.iterations);
      if (iterations < MIN_ITERATIONS)
        weak("iterations", `${iterations} is dangerously low: at least ${MIN_ITERATIONS} are needed (default ${PBKDF2_DEFAULTS.iterations})`);
      const keyLength = this.integer(body["key_length"], `${path}.key_length`, PBKDF2_DEFAULTS.keyLength, true);
      const saltLength = this.integer(body["salt_length"], `${path}.salt_length`, PBKDF2_DEFAULTS.saltLength, true);
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
      if (raw !== undefined && (!Array.isArray(raw) || !raw.every((b) => typeof b === "number" && Number.isInteger(b) && b >= 0 && b <= 255)))
        this.fail(`${path}.aad`, "must be a list of bytes (whole numbers 0-255), as OpenTofu reads it");
      const aad = raw === undefined ? undefined : Buffer.from(raw as number[]);
      return Object.freeze({ type, name, address, keys, aad });
    }
    return this.fail(path, `method type "${type}" is not supported (supported: aes_gcm, unencrypted)`);
  }

  target(v: Json, path: string, enforceable: boolean): TargetConfig {
    const methods: string[] = [];
    let enforced = false;
    let body: Record<string, Json> | undefined = this.body(v, path);
    let at = path;
    while (body !== undefined) {
      const first = at === path;
      this.only(body, at, first && enforceable ? ["method", "fallback", "enforced"] : ["method", "fallback"]);
      if (first && body["enforced"] !== undefined) {
        if (typeof body["enforced"] !== "boolean") this.fail(`${at}.enforced`, "must be true or false");
        enforced = body["enforced"];
      }
      if (body["method"] !== undefined) methods.push(this.reference(body["method"], `${at}.method`, "method"));
      const fb: Json | undefined = body["fallback"];
      at = `${at}.fallback`;
      body = fb === undefined ? undefined : this.body(fb, at);
    }
    return Object.freeze({ methods: Object.freeze(methods), enforced });
  }
}

/**
 * Parse the `encryption` configuration; its references are checked unless `partial` (a part to merge first).
 * @throws ObjstateError `ENCRYPTION_CONFIG_INVALID` (naming the JSON path), `ENCRYPTION_KDF_TOO_WEAK`
 */
export function parseEncryptionConfig(value: unknown, opts: ParseOptions & { readonly partial?: boolean }): EncryptionConfig {
  const p: Parser = new Parser(opts);
  if (!isObject(value)) p.fail("(top level)", "must be a JSON object with key_provider, method and state");
  p.only(value, "(top level)", ["key_provider", "method", "state", "plan", "remote_state_data_sources"]);

  const keyProviders = p.typedBlocks(value["key_provider"], "key_provider", "key provider", (t, n, v, at) => p.keyProvider(t, n, v, at));
  const methods = p.typedBlocks(value["method"], "method", "method", (t, n, v, at) => p.method(t, n, v, at));

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
 * Check a whole configuration's references as OpenTofu does: every target's methods and every
 * method's key provider exist, `enforced` targets use no `unencrypted` method.
 * @throws ObjstateError `ENCRYPTION_CONFIG_INVALID` naming the JSON path
 */
export function checkEncryptionConfig(cfg: EncryptionConfig, source: string): EncryptionConfig {
  const p: Parser = new Parser({ source, literalSecrets: false });
  for (const m of cfg.methods.values())
    if (m.type === "aes_gcm" && !cfg.keyProviders.has(m.keys)) p.fail(`${m.address}.keys`, `references ${m.keys}, which is not declared under key_provider`);
  const checkTarget = (t: TargetConfig | undefined, path: string): void => {
    if (t === undefined) return;
    if (t.methods.length === 0)
      p.fail(
        `${path}.method`,
        `is required: the method to encrypt with, e.g. "method.aes_gcm.NAME"${t.enforced ? ` (${path}.enforced is set, so states must be encrypted)` : ""}`,
      );
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
 * Two configurations merged as OpenTofu merges the code's with `TF_ENCRYPTION`'s: `override`'s
 * key providers and methods replace `base`'s whole, a target's method chain comes from
 * `override` when it names one, and `enforced` holds if either sets it. Parse both with
 * `partial`, then {@link checkEncryptionConfig} the result.
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
 * The configuration in `TF_ENCRYPTION` (blank: none). Only the JSON form is read. `partial`:
 * see {@link parseEncryptionConfig}.
 * @throws ObjstateError `ENCRYPTION_CONFIG_INVALID`, `ENCRYPTION_KDF_TOO_WEAK`
 */
export function encryptionConfigFromEnv(env: Readonly<Record<string, string | undefined>> = process.env, partial = false): EncryptionConfig | undefined {
  const text = (env["TF_ENCRYPTION"] ?? "").trim();
  if (text === "") return undefined;
  if (!text.startsWith("{"))
    throw new ObjstateError(
      "ENCRYPTION_CONFIG_INVALID",
      'TF_ENCRYPTION holds HCL, which objstate does not read: write it in OpenTofu\'s JSON form instead, e.g. {"key_provider":{"pbkdf2":{"k":{"passphrase":"..."}}},"method":{"aes_gcm":{"m":{"keys":"key_provider.pbkdf2.k"}}},"state":{"method":"method.aes_gcm.m"}}',
    );
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
