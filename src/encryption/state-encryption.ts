/**
 * State encryption for one target (`state`, or a remote state data source): writes OpenTofu's v0
 * envelope, reads it with the primary method, then each fallback, and plain states only where an
 * `unencrypted` method allows it.
 */
import { ObjstateError } from "../errors.js";
import { nodeCrypto } from "../util/builtins.js";
import { JsonScanner } from "../json/scan.js";
import { Base64GcmOpener, gcmDecipher, KEY_LENGTHS, looksLikeStateStart, NONCE_BYTES, type OpenKey, sealBase64Into, TAG_BYTES } from "./aes-gcm.js";
import type { AesGcmMethodConfig, EncryptionConfig, KeyProviderConfig, MethodConfig, TargetConfig } from "./config.js";
import { ExternalProvider, type ExternalOptions } from "./external.js";
import { Pbkdf2Provider } from "./pbkdf2.js";

export const ENCRYPTION_VERSION = "v0";

/** The clear fields of an envelope (OpenTofu copies them from the state for backends). */
export interface EnvelopeHeader {
  readonly serial: number | null;
  readonly lineage: string;
}

export interface Decrypted {
  readonly state: Buffer;
  /** False: a plain state, read through `unencrypted`. */
  readonly encrypted: boolean;
  readonly method: string;
  /** Read by a fallback, or plain while the primary encrypts (OpenTofu's "migration"). */
  readonly migration: boolean;
  /** Undefined for a plain state. */
  readonly header: EnvelopeHeader | undefined;
}

export type StateContext = { readonly workspace?: string };

export interface StateEncryptionOptions extends ExternalOptions {
  /** Salts and nonces (default: `crypto.randomBytes`); tests pass a fixed one. */
  readonly randomBytes?: (n: number) => Buffer;
}

/** `state`, or the remote state data source of that name (its own block, else `default`). */
export type EncryptionTarget = { readonly kind: "state" } | { readonly kind: "remote"; readonly name: string };

type Provider = Pbkdf2Provider | ExternalProvider;

/** As Go's encoding/json writes a string (<, >, &, U+2028/9 escaped). */
function goString(s: string): string {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function where(ctx: StateContext | undefined): string {
  return ctx?.workspace === undefined ? "the state" : `the state of workspace "${ctx.workspace}"`;
}

/** Plaintext pieces copied into one buffer of `most` bytes (3/4 of the stored size), or joined at the end past it. */
class PlainSink {
  private readonly pieces: Buffer[] = [];
  private buf: Buffer | undefined;
  private n = 0;
  constructor(private most: number) {}
  add = (b: Buffer): void => {
    if (this.n + b.length > this.most) {
      if (this.buf !== undefined) this.pieces.push(this.buf.subarray(0, this.n));
      this.buf = undefined;
      this.most = 0;
      this.pieces.push(b);
    } else (this.buf ??= Buffer.allocUnsafe(this.most)).set(b, this.n);
    this.n += b.length;
  };
  result(): Buffer {
    return this.buf !== undefined ? this.buf.subarray(0, this.n) : Buffer.concat(this.pieces, this.n);
  }
}

export class StateEncryption {
  /** The primary first. */
  readonly methods: readonly MethodConfig[];
  readonly #providers = new Map<string, Provider>();

  constructor(
    readonly config: EncryptionConfig,
    readonly target: TargetConfig,
    private readonly opts: StateEncryptionOptions = {},
  ) {
    this.methods = target.methods.map((m) => config.methods.get(m) as MethodConfig);
    const metaKeys = new Map<string, string>();
    for (const m of this.methods) {
      if (m.type !== "aes_gcm" || this.#providers.has(m.keys)) continue;
      const kp = config.keyProviders.get(m.keys) as KeyProviderConfig;
      this.#providers.set(m.keys, kp.type === "pbkdf2" ? new Pbkdf2Provider(kp, opts.randomBytes) : new ExternalProvider(kp, opts));
      const other = metaKeys.get(kp.metaKey);
      if (other !== undefined)
        throw new ObjstateError(
          "ENCRYPTION_CONFIG_INVALID",
          `key providers ${other} and ${kp.address} store their metadata under the same key "${kp.metaKey}": give one of them another encrypted_metadata_alias`,
        );
      metaKeys.set(kp.metaKey, kp.address);
    }
    Object.freeze(this);
  }

  /** The encryption of `target`, or undefined when the configuration encrypts nothing there. */
  static for(config: EncryptionConfig, target: EncryptionTarget = { kind: "state" }, opts: StateEncryptionOptions = {}): StateEncryption | undefined {
    const t = target.kind === "state" ? config.state : (config.remoteTargets.get(target.name) ?? config.remoteDefault);
    if (t === undefined || t.methods.length === 0) return undefined;
    return new StateEncryption(config, t, opts);
  }

  /** The primary method writes plain states (`unencrypted` first: migrating out). */
  get writesPlain(): boolean {
    return this.methods[0]?.type === "unencrypted";
  }

  /** The envelope of `state` with its clear fields (`state` itself when the primary is `unencrypted`). */
  async encrypt(state: Uint8Array, header: EnvelopeHeader): Promise<Buffer> {
    const primary = this.methods[0] as MethodConfig;
    if (primary.type === "unencrypted") return Buffer.from(state.buffer, state.byteOffset, state.byteLength);
    const kp = this.config.keyProviders.get(primary.keys) as KeyProviderConfig;
    const { key, meta } = await (this.#providers.get(primary.keys) as Provider).encryptionKey();
    checkKeyLength(primary, kp, key, "encryption");
    const serial = header.serial === null ? "null" : String(header.serial);
    if (header.serial !== null && !Number.isSafeInteger(header.serial))
      throw new ObjstateError("STATE_INVALID", `the state's serial ${serial} is not a whole number`);
    const head = `{"serial":${serial},"lineage":${goString(header.lineage)},"meta":{${goString(kp.metaKey)}:"${meta.toString("base64")}"},"encrypted_data":"`;
    const tail = `","encryption_version":"${ENCRYPTION_VERSION}"}`;
    const headBytes = Buffer.byteLength(head);
    const out = Buffer.allocUnsafe(headBytes + 4 * Math.ceil((NONCE_BYTES + state.byteLength + TAG_BYTES) / 3) + tail.length);
    out.write(head, 0, "utf8");
    const nonce = (this.opts.randomBytes ?? ((n: number) => nodeCrypto().randomBytes(n)))(NONCE_BYTES);
    out.write(tail, sealBase64Into(out, headBytes, key, primary.aad, state, nonce), "utf8");
    return out;
  }

  async decrypt(stored: Uint8Array, ctx?: StateContext): Promise<Decrypted> {
    const d = this.decryptor(ctx, stored.byteLength);
    await d.push(stored);
    return d.end();
  }

  /** A reader fed the stored bytes as they arrive; `storedSize` sizes its buffer; `borrowed`: a piece is valid until its push settles. */
  decryptor(ctx?: StateContext, storedSize?: number, borrowed = false): StateDecryptor {
    return new StateDecryptor(this, ctx, storedSize, borrowed);
  }

  /** @internal the method's key for the stored metadata, or why there is none. */
  async candidateKey(m: AesGcmMethodConfig, meta: ReadonlyMap<string, Buffer>, ctx?: StateContext): Promise<{ key: Buffer | undefined; why: string }> {
    const kp = this.config.keyProviders.get(m.keys) as KeyProviderConfig;
    const stored = meta.get(kp.metaKey);
    if (stored === undefined) return { key: undefined, why: `${m.address}: the envelope holds no metadata for ${kp.metaKey}` };
    const key = await (this.#providers.get(m.keys) as Provider).decryptionKey(stored, `the envelope of ${where(ctx)}`);
    if (key === undefined) return { key: undefined, why: `${m.address}: ${kp.address} gave no decryption key for the stored metadata` };
    checkKeyLength(m, kp, key, "decryption");
    return { key, why: `${m.address}: its key (${kp.address}) does not open the data` };
  }
}

function checkKeyLength(m: AesGcmMethodConfig, kp: KeyProviderConfig, key: Buffer, which: string): void {
  if (!KEY_LENGTHS.includes(key.length)) {
    throw new ObjstateError(
      "ENCRYPTION_CONFIG_INVALID",
      `${m.address}: ${kp.address} gave a ${key.length}-byte ${which} key; AES-GCM needs 16, 24 or 32 bytes${kp.type === "pbkdf2" ? ` (set key_provider.pbkdf2.${kp.name}.key_length)` : ""}`,
    );
  }
}

/** A kept member's value: the scanner accepted its bytes, so JSON.parse reads them. */
function valueOf(s: JsonScanner, key: string): unknown {
  const v = s.values.get(key);
  return v === undefined ? undefined : JSON.parse(v.toString("utf8"));
}

/** Bytes allowed after an envelope's `encrypted_data` (its tail is a few dozen). */
const ENVELOPE_TAIL_LIMIT = 1024 * 1024;
/** Top-level members read from an envelope, or from a plain state to tell it from one. */
const CLEAR_MEMBERS = ["meta", "encryption_version", "serial", "lineage", "terraform_version"];

export class StateDecryptor {
  private readonly scanner = new JsonScanner(CLEAR_MEMBERS);
  /** The pieces before `encrypted_data`: the whole text of a plain state. */
  private held: Buffer[] = [];
  private phase: "head" | "data" | "after" = "head";
  private opener: Base64GcmOpener | undefined;
  private escapes = false;
  private readonly sink: PlainSink;
  private readonly meta = new Map<string, Buffer>();
  private readonly reasons: string[] = [];
  private chosen: string | undefined;
  private afterBytes = 0;
  /** The data's characters, kept when the envelope's meta comes after them (not OpenTofu's order): opened at the end. */
  private deferred: Buffer[] | undefined;

  constructor(
    private readonly enc: StateEncryption,
    private readonly ctx: StateContext | undefined,
    storedSize: number | undefined,
    private readonly borrowed: boolean,
  ) {
    this.sink = new PlainSink(Math.floor(((storedSize ?? 0) * 3) / 4));
  }

  async push(piece: Uint8Array): Promise<void> {
    let b = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    while (b.length > 0) {
      if (this.phase === "after") {
        this.afterBytes += b.length;
        if (this.afterBytes > ENVELOPE_TAIL_LIMIT) this.tampered(`more than ${ENVELOPE_TAIL_LIMIT} bytes follow its encrypted_data`);
        this.scanner.feed(b);
        return;
      }
      if (this.phase === "data") {
        const { end, escapes } = this.scanner.skipString(b);
        if (escapes) this.escapes = true;
        const chars = end === -1 ? b : b.subarray(0, end);
        if (this.deferred !== undefined) this.deferred.push(Buffer.from(chars));
        else await (this.opener as Base64GcmOpener).push(chars);
        if (end === -1) return;
        this.phase = "after";
        b = b.subarray(end + 1);
        continue;
      }
      const at = this.scanner.feedUntil(b, "encrypted_data");
      if (at === -1) {
        this.held.push(this.borrowed ? Buffer.from(b) : b);
        return;
      }
      this.held = [];
      this.startData();
      b = b.subarray(at);
    }
  }

  private error(code: "ENCRYPTION_TAMPERED" | "ENCRYPTION_UNKNOWN_VERSION" | "ENCRYPTION_PLAIN_STATE" | "STATE_INVALID", message: string): never {
    throw new ObjstateError(code, message, { details: { workspace: this.ctx?.workspace } });
  }

  private tampered(why: string): never {
    this.error("ENCRYPTION_TAMPERED", `cannot decrypt ${where(this.ctx)}: ${why}; the stored envelope was altered or truncated after it was written`);
  }

  private unknownVersion(v: unknown): never {
    this.error(
      "ENCRYPTION_UNKNOWN_VERSION",
      `cannot decrypt ${where(this.ctx)}: its envelope has encryption_version ${JSON.stringify(v)}, and objstate reads only "${ENCRYPTION_VERSION}" (written by a newer OpenTofu?)`,
    );
  }

  private startData(): void {
    this.phase = "data";
    // OpenTofu writes meta before encrypted_data; another order is read too, by keeping the data until the meta is seen.
    if (this.scanner.values.has("meta")) this.readMeta();
    else this.deferred = [];
    const version = valueOf(this.scanner, "encryption_version");
    if (version !== undefined && version !== ENCRYPTION_VERSION) this.unknownVersion(version);
    this.opener = new Base64GcmOpener((nonce, probe) => this.choose(nonce, probe), this.sink.add);
  }

  private readMeta(): void {
    const meta = valueOf(this.scanner, "meta");
    if (meta === undefined || meta === null) return;
    if (typeof meta !== "object" || Array.isArray(meta)) this.tampered('its "meta" is not an object');
    for (const [k, v] of Object.entries(meta as Record<string, unknown>)) {
      if (typeof v !== "string") this.tampered(`its meta "${k}" is not a base64 string`);
      this.meta.set(k, Buffer.from(v, "base64"));
    }
  }

  private async choose(nonce: Buffer, probe: Buffer): Promise<OpenKey | undefined> {
    for (const m of this.enc.methods) {
      if (m.type !== "aes_gcm") continue;
      const { key, why } = await this.enc.candidateKey(m, this.meta, this.ctx);
      if (key !== undefined && looksLikeStateStart(gcmDecipher(key, nonce).update(probe))) {
        this.chosen = m.address;
        return { key, aad: m.aad };
      }
      this.reasons.push(why);
    }
    return undefined;
  }

  /** Only a prefix was pushed (a large state about to be written over): throw what it shows already. */
  async checkPrefix(): Promise<void> {
    if (this.phase === "head") {
      if (!this.scanner.values.has("encryption_version") && !this.enc.methods.some((m) => m.type === "unencrypted")) this.plainRefused();
      return;
    }
    if (this.deferred !== undefined) return;
    const opener = this.opener as Base64GcmOpener;
    await opener.settle();
    if (opener.noKey) this.wrongKey();
  }

  /** All pieces were pushed: the state, once the tag and clear fields check out. */
  async end(): Promise<Decrypted> {
    if (this.phase === "data") this.tampered("its encrypted_data string never ends");
    if (this.phase === "head") return this.plain();
    const f = this.scanner.end();
    if (f?.kind === "syntax")
      this.tampered(
        f.reason === "end" ? "it ends before its closing brace" : f.reason === "after" ? "something follows its closing brace" : "it is not valid JSON",
      );
    const version = valueOf(this.scanner, "encryption_version");
    if (version === undefined || version === "")
      this.error(
        "ENCRYPTION_UNKNOWN_VERSION",
        `cannot decrypt ${where(this.ctx)}: it has encrypted_data but no encryption_version, so it is neither an envelope objstate reads nor a state`,
      );
    if (version !== ENCRYPTION_VERSION) this.unknownVersion(version);
    const opener = this.opener as Base64GcmOpener;
    if (this.deferred !== undefined) {
      this.readMeta();
      for (const chars of this.deferred) await opener.push(chars);
    }
    const failure = this.escapes ? { kind: "not-base64" as const } : await opener.end();
    if (opener.noKey) this.wrongKey();
    if (failure?.kind === "not-base64") this.tampered("its encrypted_data is not base64");
    if (failure?.kind === "too-short") this.tampered(`its encrypted_data holds ${failure.bytes} bytes, fewer than a nonce and a tag`);
    if (failure !== undefined) this.tampered(`the data fails its authentication tag (GCM) under ${this.chosen}, whose key does open it`);
    const serial = valueOf(this.scanner, "serial");
    const lineage = valueOf(this.scanner, "lineage");
    const state = this.sink.result();
    this.checkClearFields(serial, lineage, state);
    const header: EnvelopeHeader = { serial: typeof serial === "number" ? serial : null, lineage: typeof lineage === "string" ? lineage : "" };
    const primary = this.enc.methods[0] as MethodConfig;
    return { state, encrypted: true, method: this.chosen as string, migration: primary.address !== this.chosen, header };
  }

  private wrongKey(): never {
    const tried = this.reasons.length === 0 ? "no aes_gcm method is configured" : this.reasons.join("; ");
    const written = [...this.meta.keys()];
    const hint =
      written.length === 0 ? "" : ` It was written with ${written.join(", ")}: configure that key provider (with its old passphrase) as a fallback method.`;
    throw new ObjstateError("ENCRYPTION_WRONG_KEY", `cannot decrypt ${where(this.ctx)}: no configured method's key opens it (${tried}).${hint}`, {
      details: { workspace: this.ctx?.workspace, methods: this.enc.methods.map((m) => m.address) },
    });
  }

  /** OpenTofu's check: the clear serial and lineage must be the decrypted state's own. */
  private checkClearFields(serial: unknown, lineage: unknown, state: Buffer): void {
    // Writers put both near the top: stop once they are seen.
    const s = new JsonScanner(["serial", "lineage"]);
    for (let at = 0; at < state.length && s.values.size < 2 && !s.failed; at += 64 * 1024) s.feed(state.subarray(at, at + 64 * 1024));
    const innerSerial = valueOf(s, "serial");
    const innerLineage = valueOf(s, "lineage");
    if (typeof serial === "number" && typeof innerSerial === "number" && serial !== innerSerial)
      this.tampered(`its clear serial ${serial} is not the encrypted state's serial ${innerSerial}`);
    if (typeof lineage === "string" && lineage !== "" && innerLineage !== lineage)
      this.tampered(`its clear lineage ${JSON.stringify(lineage)} is not the encrypted state's lineage ${JSON.stringify(innerLineage)}`);
  }

  private plain(): Decrypted {
    const whole = this.held.length === 1 ? (this.held[0] as Buffer) : Buffer.concat(this.held);
    const f = this.scanner.end();
    const version = valueOf(this.scanner, "encryption_version");
    // An envelope whose encrypted_data is missing or not a string: not readable.
    if (f === undefined && typeof version === "string" && version !== "") {
      if (version !== ENCRYPTION_VERSION) this.unknownVersion(version);
      this.tampered("its encrypted_data is missing or not a string");
    }
    if (f !== undefined) {
      if (whole.includes('"encryption_version"')) this.tampered("it is not complete JSON");
      this.error("STATE_INVALID", `${where(this.ctx)} is neither a state nor an encryption envelope: it is not a complete JSON object`);
    }
    if (!this.scanner.values.has("terraform_version"))
      this.error("STATE_INVALID", `${where(this.ctx)} is neither a state (it has no terraform_version) nor an encryption envelope (no encryption_version)`);
    const unencrypted = this.enc.methods.find((m) => m.type === "unencrypted");
    if (unencrypted === undefined) this.plainRefused();
    const primary = this.enc.methods[0] as MethodConfig;
    return { state: whole, encrypted: false, method: unencrypted.address, migration: primary.type !== "unencrypted", header: undefined };
  }

  private plainRefused(): never {
    this.error(
      "ENCRYPTION_PLAIN_STATE",
      `${where(this.ctx)} is stored unencrypted, and the encryption configuration has no unencrypted method (tried ${this.enc.methods.map((m) => m.address).join(", ")}): to migrate it in, add method "unencrypted" as a fallback of state`,
    );
  }
}

/** The stored bytes are an envelope: their top level has a string `encryption_version` (before or after the data). */
export function isEnvelope(stored: Uint8Array): boolean {
  const s = new JsonScanner(["encryption_version"]);
  const b = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  const at = s.feedUntil(b, "encrypted_data");
  if (at !== -1) {
    const { end } = s.skipString(b.subarray(at));
    if (end !== -1) s.feed(b.subarray(at + end + 1));
  }
  return s.values.get("encryption_version")?.[0] === 0x22;
}
