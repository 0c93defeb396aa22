/**
 * State encryption for one target (`state`, or a remote state data source): writes the v0
 * envelope OpenTofu writes, reads it with the primary method, then each fallback, and reads
 * plain states only where an `unencrypted` method allows it. This is what state I/O calls;
 * it knows nothing of stores, workspaces or locks (the caller names the workspace for
 * messages).
 */
import { ObjstateError } from "../errors.js";
import { nodeCrypto } from "../util/builtins.js";
import {
  base64Length,
  Base64GcmOpener,
  KEY_LENGTHS,
  looksLikeStateStart,
  NONCE_BYTES,
  type OpenFailure,
  type OpenKey,
  sealToBase64,
  TAG_BYTES,
} from "./aes-gcm.js";
import type { AesGcmMethodConfig, EncryptionConfig, KeyProviderConfig, MethodConfig, TargetConfig } from "./config.js";
import { ExternalProvider, type ExternalOptions } from "./external.js";
import { Pbkdf2Provider } from "./pbkdf2.js";
import { memberOf, type Member, TopLevelScanner } from "./scan.js";

/** The only envelope version there is. */
export const ENCRYPTION_VERSION = "v0";

/** The clear fields of an envelope (OpenTofu copies them from the state so backends can read them). */
export interface EnvelopeHeader {
  /** `serial`: null when the state had none. */
  readonly serial: number | null;
  readonly lineage: string;
}

/** An envelope ready to be written: its exact size first, then its bytes in pieces. */
export interface Envelope {
  readonly byteLength: number;
  /**
   * The bytes in pieces of 64 KiB, encrypted as they are taken: buffers, or text that is
   * ASCII (the base64 of the data, which is most of it), whose characters are its bytes
   * (write it with `latin1`). Every iteration encrypts
   * again and yields the very same bytes (one nonce for the envelope: the same plaintext
   * under the same key and nonce is the same ciphertext, nothing more to learn), so a
   * writer can read it again without anything holding it whole.
   */
  readonly chunks: Iterable<Buffer | string>;
  /** All bytes in one buffer (exactly {@link byteLength}): for small states and tests. */
  toBuffer(): Buffer;
}

/** What a read found. */
export interface Decrypted {
  /** The state's JSON. */
  readonly state: Buffer;
  /** Whether the stored bytes were an envelope (false: a plain state, read through `unencrypted`). */
  readonly encrypted: boolean;
  /** The method that read it (`method.TYPE.NAME`). */
  readonly method: string;
  /** It was read by a fallback, or is plain while the primary encrypts: the next write changes its form (OpenTofu's "migration"). */
  readonly migration: boolean;
  /** The envelope's clear `serial` and `lineage` (undefined for a plain state). */
  readonly header: EnvelopeHeader | undefined;
}

/** Names the state in messages. */
export interface StateContext {
  /** Workspace of the state (named in errors). */
  readonly workspace?: string;
}

/** Options of a {@link StateEncryption}. */
export interface StateEncryptionOptions extends ExternalOptions {
  /** Source of salts and nonces (default: `crypto.randomBytes`); tests pass a fixed one to get known envelopes. */
  readonly randomBytes?: (n: number) => Buffer;
}

/** Which target's methods apply: `state`, or the remote state data source of that name (its own block, else `default`). */
export type EncryptionTarget = { readonly kind: "state" } | { readonly kind: "remote"; readonly name: string };

type Provider = Pbkdf2Provider | ExternalProvider;

/** Go's encoding/json escapes <, > and & (and U+2028/9) in strings; the envelope's clear fields are written the same. */
function goString(s: string): string {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function where(ctx: StateContext | undefined): string {
  return ctx?.workspace === undefined ? "the state" : `the state of workspace "${ctx.workspace}"`;
}

/**
 * Plaintext pieces gathered into one buffer: a lone piece (a small state, decrypted in one
 * call) is kept as it is; more are copied into one buffer sized from a hint when there is
 * one, so no second copy of the state is made.
 */
class PlainSink {
  private only: Buffer | undefined;
  private buf: Buffer | undefined;
  private chunks: Buffer[] = [];
  private n = 0;
  constructor(private readonly hint: number | undefined) {}
  add = (b: Buffer): void => {
    if (b.length === 0) return;
    if (this.n === 0) {
      this.only = b;
      this.n = b.length;
      return;
    }
    if (this.only !== undefined) {
      const first = this.only;
      this.only = undefined;
      const want = this.hint !== undefined && this.hint > 0 ? Math.floor((this.hint * 3) / 4) : 0;
      if (want >= first.length + b.length) {
        this.buf = Buffer.allocUnsafe(want);
        first.copy(this.buf, 0);
      } else this.chunks.push(first);
    }
    if (this.buf !== undefined && this.n + b.length <= this.buf.length) b.copy(this.buf, this.n);
    else {
      if (this.buf !== undefined) {
        this.chunks.push(this.buf.subarray(0, this.n));
        this.buf = undefined;
      }
      this.chunks.push(b);
    }
    this.n += b.length;
  };
  result(): Buffer {
    if (this.only !== undefined) return this.only;
    if (this.buf !== undefined) return this.buf.subarray(0, this.n);
    return this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.n);
  }
}

/** Encrypts and decrypts states for one target of an {@link EncryptionConfig}. */
export class StateEncryption {
  /** Method addresses, the primary first. */
  readonly methods: readonly MethodConfig[];
  readonly #providers = new Map<string, Provider>();

  constructor(
    readonly config: EncryptionConfig,
    readonly target: TargetConfig,
    private readonly opts: StateEncryptionOptions = {},
  ) {
    this.methods = target.methods.map((m) => config.methods.get(m) as MethodConfig);
    for (const m of this.methods) {
      if (m.type !== "aes_gcm" || this.#providers.has(m.keys)) continue;
      const kp = config.keyProviders.get(m.keys) as KeyProviderConfig;
      this.#providers.set(m.keys, kp.type === "pbkdf2" ? new Pbkdf2Provider(kp, opts.randomBytes) : new ExternalProvider(kp, opts));
    }
    const metaKeys = new Map<string, string>();
    for (const m of this.methods) {
      if (m.type !== "aes_gcm") continue;
      const kp = config.keyProviders.get(m.keys) as KeyProviderConfig;
      const other = metaKeys.get(kp.metaKey);
      if (other !== undefined && other !== kp.address) {
        throw new ObjstateError(
          "ENCRYPTION_CONFIG_INVALID",
          `key providers ${other} and ${kp.address} store their metadata under the same key "${kp.metaKey}": give one of them another encrypted_metadata_alias`,
        );
      }
      metaKeys.set(kp.metaKey, kp.address);
    }
    Object.freeze(this);
  }

  /**
   * The encryption of `config`'s `state` target, or of the remote state data source `name`
   * (its own block, else `remote_state_data_sources.default`). Undefined when the
   * configuration encrypts nothing there (states are read and written as they are).
   */
  static for(config: EncryptionConfig, target: EncryptionTarget = { kind: "state" }, opts: StateEncryptionOptions = {}): StateEncryption | undefined {
    const t = target.kind === "state" ? config.state : (config.remoteTargets.get(target.name) ?? config.remoteDefault);
    if (t === undefined || t.methods.length === 0) return undefined;
    return new StateEncryption(config, t, opts);
  }

  /** The primary method writes plain states (`unencrypted` first: migrating out). */
  get writesPlain(): boolean {
    return this.methods[0]?.type === "unencrypted";
  }

  /**
   * The envelope of `state` (its JSON bytes) with the clear `serial` and `lineage` the caller
   * read from it, or `state` itself when the primary method is `unencrypted`. Keys are
   * derived (or fetched) once per instance; the cipher runs while the pieces are taken.
   */
  async encrypt(state: Uint8Array, header: EnvelopeHeader): Promise<Envelope> {
    const primary = this.methods[0] as MethodConfig;
    if (primary.type === "unencrypted") {
      const b = Buffer.from(state.buffer, state.byteOffset, state.byteLength);
      return { byteLength: b.length, chunks: [b], toBuffer: () => b };
    }
    const { key, metaKey, meta } = await this.#writerKey(primary);
    const serial = header.serial === null ? "null" : String(header.serial);
    if (header.serial !== null && !Number.isSafeInteger(header.serial))
      throw new ObjstateError("STATE_INVALID", `the state's serial ${serial} is not a whole number`);
    const head = Buffer.from(
      `{"serial":${serial},"lineage":${goString(header.lineage)},"meta":{${goString(metaKey)}:"${meta.toString("base64")}"},"encrypted_data":"`,
      "utf8",
    );
    const tail = Buffer.from(`","encryption_version":"${ENCRYPTION_VERSION}"}`, "utf8");
    const byteLength = head.length + base64Length(NONCE_BYTES + state.byteLength + TAG_BYTES) + tail.length;
    const aad = primary.aad;
    const random = this.opts.randomBytes ?? ((n: number) => nodeCrypto().randomBytes(n));
    const nonce = random(NONCE_BYTES);
    function* chunks(): Generator<Buffer | string> {
      yield head;
      yield* sealToBase64(key, aad, state, nonce);
      yield tail;
    }
    return {
      byteLength,
      chunks: { [Symbol.iterator]: chunks },
      toBuffer: () => {
        const out = Buffer.allocUnsafe(byteLength);
        let n = 0;
        for (const c of chunks()) n += typeof c === "string" ? out.write(c, n, "latin1") : c.copy(out, n);
        return out;
      },
    };
  }

  async #writerKey(m: AesGcmMethodConfig): Promise<{ key: Buffer; metaKey: string; meta: Buffer }> {
    const kp = this.config.keyProviders.get(m.keys) as KeyProviderConfig;
    const { key, meta } = await (this.#providers.get(m.keys) as Provider).encryptionKey();
    checkKeyLength(m, kp, key, "encryption");
    return { key, metaKey: kp.metaKey, meta };
  }

  /** Read stored bytes held in memory (an envelope or, where allowed, a plain state). */
  async decrypt(stored: Uint8Array, ctx?: StateContext): Promise<Decrypted> {
    const d = this.decryptor(ctx, stored.byteLength);
    await d.push(stored);
    return d.end();
  }

  /**
   * A reader fed the stored bytes in pieces as they arrive: the ciphertext is decoded and
   * decrypted on the way, so only the plaintext is held. `sizeHint` (the stored size, when
   * known) lets it allocate the plaintext once. `borrowed`: each pushed piece is valid only
   * until its push settles (a reused read buffer), so whatever is kept of it is copied.
   */
  decryptor(ctx?: StateContext, sizeHint?: number, borrowed = false): StateDecryptor {
    return new StateDecryptor(this, ctx, sizeHint, borrowed);
  }

  /** @internal the candidate methods' keys for the stored metadata, tried in order by the opener. */
  async candidateKey(
    m: AesGcmMethodConfig,
    meta: ReadonlyMap<string, Buffer>,
    ctx: StateContext | undefined,
  ): Promise<{ key: Buffer | undefined; why: string }> {
    const kp = this.config.keyProviders.get(m.keys) as KeyProviderConfig;
    const stored = meta.get(kp.metaKey);
    if (stored === undefined) return { key: undefined, why: `${m.address}: the envelope holds no metadata for ${kp.metaKey}` };
    const provider = this.#providers.get(m.keys) as Provider;
    const key =
      provider instanceof Pbkdf2Provider ? await provider.decryptionKey(stored, `the envelope of ${where(ctx)}`) : await provider.decryptionKey(stored);
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

/** Bytes kept of the head (before `encrypted_data`) and tail of an envelope: both are a few hundred bytes. */
const ENVELOPE_PART_LIMIT = 1024 * 1024;

/** Reads stored bytes pushed in pieces; see {@link StateEncryption.decryptor}. */
export class StateDecryptor {
  private readonly scanner = new TopLevelScanner();
  /** Every piece outside `encrypted_data` (the whole text for a plain state). */
  private held: Buffer[] = [];
  private heldFrom = 0;
  private phase: "head" | "data" | "after" = "head";
  private opener: Base64GcmOpener | undefined;
  private escapes = false;
  private readonly sink: PlainSink;
  private meta: Map<string, Buffer> = new Map();
  private reasons: string[] = [];
  private chosen: string | undefined;
  private dataStart = -1;
  private afterBytes = 0;
  /** The data's characters, kept when the envelope's meta comes after them (not OpenTofu's order): opened at the end. */
  private deferred: Buffer[] | undefined;

  constructor(
    private readonly enc: StateEncryption,
    private readonly ctx: StateContext | undefined,
    sizeHint: number | undefined,
    private readonly borrowed: boolean,
  ) {
    this.sink = new PlainSink(sizeHint);
  }

  /** The next piece of the stored bytes. */
  async push(piece: Uint8Array): Promise<void> {
    let b = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    while (b.length > 0) {
      if (this.phase === "data") {
        const { end, escapes } = this.scanner.skipString(b);
        if (escapes) this.escapes = true;
        const chars = end === -1 ? b : b.subarray(0, end);
        if (this.deferred !== undefined) this.deferred.push(Buffer.from(chars));
        else await (this.opener as Base64GcmOpener).push(chars);
        if (end === -1) return;
        this.phase = "after";
        b = b.subarray(end + 1);
        this.heldFrom = this.scanner.offset;
        continue;
      }
      const startOffset = this.scanner.offset;
      const at = this.phase === "head" ? this.scanner.scan(b, "encrypted_data") : this.scanner.scan(b);
      if (at === undefined) {
        this.hold(b);
        return;
      }
      this.hold(b.subarray(0, at));
      this.dataStart = startOffset + at;
      this.startData();
      this.phase = "data";
      b = b.subarray(at);
    }
  }

  private hold(b: Buffer): void {
    if (b.length === 0) return;
    // Outside the data only the head and tail are held for an envelope (they are small); a
    // plain state is held whole, as it is the result.
    if (this.phase === "after") {
      this.afterBytes += b.length;
      if (this.afterBytes > ENVELOPE_PART_LIMIT) this.tampered(`more than ${ENVELOPE_PART_LIMIT} bytes follow its encrypted_data`);
    }
    this.held.push(this.borrowed ? Buffer.from(b) : b);
  }

  /** `[start, end)` of the whole text, from the held pieces (never inside the data). */
  private text(start: number, end: number): Buffer {
    const parts: Buffer[] = [];
    let at = 0;
    let skipped = false;
    for (const h of this.held) {
      // The data's bytes are not held: the pieces after it continue at heldFrom.
      if (!skipped && this.dataStart >= 0 && at >= this.dataStart) {
        at = this.heldFrom;
        skipped = true;
      }
      const s = Math.max(start, at);
      const e = Math.min(end, at + h.length);
      if (s < e) parts.push(h.subarray(s - at, e - at));
      at += h.length;
    }
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  private member(key: string): unknown {
    const m = memberOf(this.scanner.members, key);
    if (m === undefined || m.end < 0) return undefined;
    if (m.key === "encrypted_data") return undefined;
    try {
      return JSON.parse(this.text(m.start, m.end).toString("utf8"));
    } catch {
      this.tampered(`its "${key}" is not valid JSON`);
    }
  }

  private tampered(why: string): never {
    throw new ObjstateError(
      "ENCRYPTION_TAMPERED",
      `cannot decrypt ${where(this.ctx)}: ${why}; the stored envelope was altered or truncated after it was written`,
      { details: { workspace: this.ctx?.workspace } },
    );
  }

  private startData(): void {
    // OpenTofu writes meta before encrypted_data; another order is read too, by keeping the
    // data until the meta has been seen.
    if (memberOf(this.scanner.members, "meta") === undefined) this.deferred = [];
    else this.readMeta();
    const version = this.member("encryption_version");
    if (version !== undefined && version !== ENCRYPTION_VERSION) this.unknownVersion(version);
    this.opener = new Base64GcmOpener((nonce, probe) => this.choose(nonce, probe), this.sink.add);
  }

  private readMeta(): void {
    const rawMeta = this.member("meta");
    if (rawMeta === undefined || rawMeta === null) return;
    if (typeof rawMeta !== "object" || Array.isArray(rawMeta)) this.tampered('its "meta" is not an object');
    for (const [k, v] of Object.entries(rawMeta as Record<string, unknown>)) {
      if (typeof v !== "string") this.tampered(`its meta "${k}" is not a base64 string`);
      this.meta.set(k, Buffer.from(v, "base64"));
    }
  }

  private unknownVersion(v: unknown): never {
    throw new ObjstateError(
      "ENCRYPTION_UNKNOWN_VERSION",
      `cannot decrypt ${where(this.ctx)}: its envelope has encryption_version ${JSON.stringify(v)}, and objstate reads only "${ENCRYPTION_VERSION}" (written by a newer OpenTofu?)`,
      { details: { workspace: this.ctx?.workspace } },
    );
  }

  private async choose(nonce: Buffer, probe: Buffer): Promise<OpenKey | undefined> {
    for (const m of this.enc.methods) {
      if (m.type !== "aes_gcm") continue;
      const { key, why } = await this.enc.candidateKey(m, this.meta, this.ctx);
      if (key === undefined) {
        this.reasons.push(why);
        continue;
      }
      const d = nodeCrypto().createDecipheriv(`aes-${key.length * 8}-gcm` as "aes-256-gcm", key, nonce);
      if (looksLikeStateStart(d.update(probe))) {
        this.chosen = m.address;
        return { key, aad: m.aad };
      }
      this.reasons.push(why);
    }
    return undefined;
  }

  /**
   * Only the first pieces were pushed (a large stored state, before it is written over): throw
   * what they already show — no configured key opens it, an unknown version, or a plain
   * state without an `unencrypted` method. Altered data further on is not seen here.
   */
  async checkPrefix(): Promise<void> {
    if (this.phase === "head") {
      if (memberOf(this.scanner.members, "encryption_version") === undefined && !this.enc.methods.some((m) => m.type === "unencrypted")) this.plainRefused();
      return;
    }
    const opener = this.opener as Base64GcmOpener;
    if (this.deferred !== undefined) return;
    await opener.settle();
    if (opener.noKey) this.wrongKey();
  }

  /** All pieces were pushed: the state, once the tag and the clear fields check out. */
  async end(): Promise<Decrypted> {
    if (this.phase === "data") this.tampered("its encrypted_data string never ends");
    if (this.phase === "head") return this.plain();
    if (!this.scanner.closed) this.tampered("it ends before its closing brace");
    if (this.scanner.broken) this.tampered("it is not valid JSON (something follows its closing brace)");
    const version = this.member("encryption_version");
    if (version === undefined || version === "")
      throw new ObjstateError(
        "ENCRYPTION_UNKNOWN_VERSION",
        `cannot decrypt ${where(this.ctx)}: it has encrypted_data but no encryption_version, so it is neither an envelope objstate reads nor a state`,
        { details: { workspace: this.ctx?.workspace } },
      );
    if (version !== ENCRYPTION_VERSION) this.unknownVersion(version);
    const opener = this.opener as Base64GcmOpener;
    if (this.deferred !== undefined) {
      this.readMeta();
      for (const chars of this.deferred) await opener.push(chars);
      this.deferred = undefined;
    }
    const failure: OpenFailure | undefined = this.escapes ? { kind: "not-base64" } : await opener.end();
    if (opener.noKey) this.wrongKey();
    if (failure !== undefined) {
      if (failure.kind === "not-base64") this.tampered("its encrypted_data is not base64");
      if (failure.kind === "too-short") this.tampered(`its encrypted_data holds ${failure.bytes} bytes, fewer than a nonce and a tag`);
      this.tampered(`the data fails its authentication tag (GCM) under ${this.chosen}, whose key does open it`);
    }
    const serial = this.member("serial");
    const lineage = this.member("lineage");
    const header: EnvelopeHeader = { serial: typeof serial === "number" ? serial : null, lineage: typeof lineage === "string" ? lineage : "" };
    const state = this.sink.result();
    this.checkClearFields(serial, lineage, state);
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
    // Writers put serial and lineage near the top: scan in pieces and stop once both are seen.
    const s = new TopLevelScanner();
    for (let at = 0; at < state.length && !s.closed; at += 64 * 1024) {
      s.scan(state.subarray(at, Math.min(state.length, at + 64 * 1024)));
      if (memberOf(s.members, "serial") !== undefined && memberOf(s.members, "lineage") !== undefined) break;
    }
    const field = (k: string): unknown => {
      const m = memberOf(s.members, k);
      if (m === undefined || m.end < 0) return undefined;
      try {
        return JSON.parse(state.subarray(m.start, m.end).toString("utf8"));
      } catch {
        return undefined;
      }
    };
    const innerSerial = field("serial");
    const innerLineage = field("lineage");
    if (typeof serial === "number" && typeof innerSerial === "number" && serial !== innerSerial)
      this.tampered(`its clear serial ${serial} is not the encrypted state's serial ${innerSerial}`);
    if (typeof lineage === "string" && lineage !== "" && innerLineage !== lineage)
      this.tampered(`its clear lineage ${JSON.stringify(lineage)} is not the encrypted state's lineage ${JSON.stringify(innerLineage)}`);
  }

  private plain(): Decrypted {
    const whole = this.held.length === 1 ? (this.held[0] as Buffer) : Buffer.concat(this.held);
    const members: readonly Member[] = this.scanner.members;
    const version = memberOf(members, "encryption_version");
    if (version !== undefined && this.scanner.closed) {
      let v: unknown;
      try {
        v = JSON.parse(whole.subarray(version.start, version.end).toString("utf8"));
      } catch {
        v = undefined;
      }
      // An envelope whose encrypted_data is not a string, or missing: not readable.
      if (typeof v === "string" && v !== "") {
        if (v !== ENCRYPTION_VERSION) this.unknownVersion(v);
        this.tampered("its encrypted_data is missing or not a string");
      }
    }
    if (!this.scanner.closed || this.scanner.broken) {
      if (whole.includes('"encryption_version"')) this.tampered("it is not complete JSON");
      throw new ObjstateError("STATE_INVALID", `${where(this.ctx)} is neither a state nor an encryption envelope: it is not a complete JSON object`, {
        details: { workspace: this.ctx?.workspace },
      });
    }
    if (memberOf(members, "terraform_version") === undefined) {
      throw new ObjstateError(
        "STATE_INVALID",
        `${where(this.ctx)} is neither a state (it has no terraform_version) nor an encryption envelope (no encryption_version)`,
        { details: { workspace: this.ctx?.workspace } },
      );
    }
    const unencrypted = this.enc.methods.find((m) => m.type === "unencrypted");
    if (unencrypted === undefined) this.plainRefused();
    const primary = this.enc.methods[0] as MethodConfig;
    return { state: whole, encrypted: false, method: unencrypted.address, migration: primary.type !== "unencrypted", header: undefined };
  }

  private plainRefused(): never {
    throw new ObjstateError(
      "ENCRYPTION_PLAIN_STATE",
      `${where(this.ctx)} is stored unencrypted, and the encryption configuration has no unencrypted method (tried ${this.enc.methods.map((m) => m.address).join(", ")}): to migrate it in, add method "unencrypted" as a fallback of state`,
      { details: { workspace: this.ctx?.workspace } },
    );
  }
}

/** Envelopes are cheaply told from plain states by their top level; exported for callers that only route bytes. */
export function isEnvelope(stored: Uint8Array): boolean {
  const s = new TopLevelScanner();
  const at = s.scan(stored, "encryption_version");
  return at !== undefined;
}
