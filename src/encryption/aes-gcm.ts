/**
 * Method `aes_gcm` as OpenTofu applies it: AES-128/192/256-GCM, a random 12-byte nonce per
 * encryption, the optional AAD, and `encrypted_data = nonce ‖ ciphertext ‖ tag(16)`, which
 * the envelope holds as standard base64. Both directions work on pieces, so a large state
 * is encrypted straight into base64 chunks and decrypted from base64 chunks without a
 * second whole copy of it.
 */
import type { CipherGCM, DecipherGCM } from "node:crypto";
import { nodeCrypto } from "../util/builtins.js";
import { giveScratch, takeScratch } from "../util/scratch.js";

export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
/** AES key lengths OpenTofu accepts: 128, 192, 256 bits. */
export const KEY_LENGTHS: readonly number[] = [16, 24, 32];

/** Plaintext bytes per cipher call when sealing: a multiple of 3, so each piece's base64 needs no padding. */
const PIECE_BYTES = 3 * 16 * 1024;
/** Base64 characters decoded at a time: small strings are freed young, large ones pile up until a full collection. */
const DECODE_CHARS = 64 * 1024;
/** Bytes decoded before a cipher call (see `Base64GcmOpener`). */
const STAGING_BYTES = 4 * 1024 * 1024;

function cipherName(key: Uint8Array): "aes-128-gcm" | "aes-192-gcm" | "aes-256-gcm" {
  return `aes-${key.length * 8}-gcm` as "aes-128-gcm" | "aes-192-gcm" | "aes-256-gcm";
}

/** Base64 characters of `n` bytes. */
export function base64Length(n: number): number {
  return 4 * Math.ceil(n / 3);
}

/**
 * Write the base64 of `nonce ‖ AES-GCM(plain) ‖ tag` into `out` at `at` (it has room for
 * {@link base64Length} of it), a piece at a time so no whole ciphertext or string is made.
 * Returns the offset after it.
 */
export function sealBase64Into(out: Buffer, at: number, key: Uint8Array, aad: Uint8Array | undefined, plain: Uint8Array, nonce: Uint8Array): number {
  const c = nodeCrypto().createCipheriv(cipherName(key), key, nonce) as CipherGCM;
  if (aad !== undefined && aad.length > 0) c.setAAD(aad);
  // The nonce (12 bytes) and every full piece are multiples of 3: only the last piece is padded.
  at += out.write(Buffer.from(nonce).toString("base64"), at, "latin1");
  const view = Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength);
  let from = 0;
  for (; view.length - from > PIECE_BYTES; from += PIECE_BYTES)
    at += out.write(c.update(view.subarray(from, from + PIECE_BYTES)).toString("base64"), at, "latin1");
  const last = Buffer.concat([c.update(view.subarray(from)), c.final(), c.getAuthTag()]);
  return at + out.write(last.toString("base64"), at, "latin1");
}

/** Why an AES-GCM opening failed. */
export type OpenFailure =
  | { readonly kind: "not-base64" }
  | { readonly kind: "too-short"; readonly bytes: number }
  /** The tag did not match: the data was altered (or, with a wrong key, the prefix check already said so). */
  | { readonly kind: "tag" };

/**
 * Does a decrypted prefix look like the start of a state (`{` after optional whitespace,
 * printable text)? A wrong key yields random bytes: 16 of them pass with a chance near 10⁻⁹.
 * This picks the method among fallbacks and tells a wrong key from altered data; nothing
 * decrypted is released before the tag is checked.
 */
export function looksLikeStateStart(b: Uint8Array): boolean {
  let i = 0;
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  if (i < b.length && b[i] !== 0x7b) return false;
  for (const c of b) if (!(c === 0x09 || c === 0x0a || c === 0x0d || (c >= 0x20 && c < 0x7f))) return false;
  return true;
}

/** The key (and AAD) one candidate method opens with. */
export interface OpenKey {
  readonly key: Buffer;
  readonly aad: Buffer | undefined;
}

/** Bytes decrypted from the start to choose a key: one AES block. */
export const PROBE_BYTES = 16;

/**
 * Opens `nonce ‖ ciphertext ‖ tag` pushed as base64 characters in pieces. The first
 * {@link PROBE_BYTES} of ciphertext are decrypted with each candidate key in turn (`choose`)
 * until one gives the start of a state; that key decrypts the rest. The last 16 bytes are
 * held back as the tag. `output` receives plaintext pieces, to be used only once {@link end}
 * succeeds.
 */
export class Base64GcmOpener {
  private carry: Buffer = Buffer.alloc(0);
  private decodedBytes = 0;
  /**
   * Decoded bytes wait here until there are enough for one cipher call: each call has a cost
   * of its own, and a state that fits is decrypted in one call, into one buffer that is the
   * result. Reused from one opening to the next (given back at the end).
   */
  private staging = takeScratch(STAGING_BYTES);
  private staged = 0;
  private prefix: Buffer[] = [];
  private prefixBytes = 0;
  private decipher: DecipherGCM | undefined;
  private pending: Buffer = Buffer.alloc(0);
  private failure: OpenFailure | undefined;
  private started = false;

  constructor(
    private readonly choose: (nonce: Buffer, probe: Buffer) => Promise<OpenKey | undefined>,
    private readonly output: (plain: Buffer) => void,
  ) {}

  /** The chosen key could not be found: every candidate's probe failed. */
  noKey = false;

  /** Base64 characters (as bytes) of the data, in order. */
  async push(chars: Uint8Array): Promise<void> {
    const b = Buffer.from(chars.buffer, chars.byteOffset, chars.byteLength);
    for (let at = 0; at < b.length; at += DECODE_CHARS) await this.pushSome(b.subarray(at, Math.min(b.length, at + DECODE_CHARS)));
  }

  private async pushSome(chars: Buffer): Promise<void> {
    if (this.failure !== undefined || this.noKey || chars.length === 0) return;
    // The last group is kept back (in `carry`, with any incomplete one): only the end may
    // carry padding, and only the end knows it is the end.
    let start = 0;
    const c = this.carry;
    if (c.length > 0) {
      const need = (4 - (c.length % 4)) % 4;
      if (chars.length < need + 4) {
        this.carry = Buffer.concat([c, chars]);
        return;
      }
      await this.decode(Buffer.concat([c, chars.subarray(0, need)]), false);
      start = need;
    }
    const rest = chars.length - start;
    const whole = Math.max(0, rest - (rest % 4) - 4);
    this.carry = Buffer.from(chars.subarray(start + whole));
    if (whole > 0) await this.decode(chars.subarray(start, start + whole), false);
  }

  /** Decode base64 characters into the staging buffer (straight from the string, no buffer per piece); full, it goes to the cipher. */
  private async decode(chars: Buffer, last: boolean): Promise<void> {
    const n = chars.length;
    if (this.staged + (n / 4) * 3 > this.staging.length) await this.flush();
    if (this.staging.length < (n / 4) * 3) this.staging = Buffer.allocUnsafe((n / 4) * 3);
    const w = this.staging.write(chars.toString("latin1"), this.staged, "base64");
    // Node skips characters that are not base64; Go refuses them. A length that does not
    // add up means such characters (or padding inside the data).
    const pad = last ? (chars[n - 1] === 0x3d ? (chars[n - 2] === 0x3d ? 2 : 1) : 0) : 0;
    if (n % 4 !== 0 || w !== (n / 4) * 3 - pad || (!last && chars.indexOf(0x3d) !== -1)) this.failure ??= { kind: "not-base64" };
    this.staged += w;
    this.decodedBytes += w;
    if (last) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.staged === 0) return;
    const b = this.staging.subarray(0, this.staged);
    this.staged = 0;
    await this.bytes(b);
  }

  private async bytes(b: Buffer): Promise<void> {
    if (this.failure !== undefined || this.noKey) return;
    if (this.decipher === undefined) {
      if (this.prefix.length === 0 && b.length >= NONCE_BYTES + PROBE_BYTES + TAG_BYTES) return this.start(b, false);
      // The staging buffer is reused: the prefix keeps a copy.
      this.prefix.push(Buffer.from(b));
      this.prefixBytes += b.length;
      if (this.prefixBytes < NONCE_BYTES + PROBE_BYTES + TAG_BYTES) return;
      await this.start(Buffer.concat(this.prefix), false);
      return;
    }
    this.feed(b);
  }

  /** The first bytes (`all`, at least the nonce): the key is chosen, and the rest goes to the cipher. */
  private async start(all: Buffer, atEnd: boolean): Promise<void> {
    this.prefix = [];
    this.started = true;
    if (all.length < NONCE_BYTES + TAG_BYTES) {
      this.failure = { kind: "too-short", bytes: all.length };
      return;
    }
    const nonce = all.subarray(0, NONCE_BYTES);
    // The probe must not reach into the tag when the data is short.
    const probeEnd = Math.min(NONCE_BYTES + PROBE_BYTES, atEnd ? all.length - TAG_BYTES : all.length);
    const chosen = await this.choose(Buffer.from(nonce), Buffer.from(all.subarray(NONCE_BYTES, probeEnd)));
    if (chosen === undefined) {
      this.noKey = true;
      return;
    }
    const d = nodeCrypto().createDecipheriv(cipherName(chosen.key), chosen.key, nonce) as DecipherGCM;
    if (chosen.aad !== undefined && chosen.aad.length > 0) d.setAAD(chosen.aad);
    this.decipher = d;
    this.feed(all.subarray(NONCE_BYTES));
  }

  private feed(b: Buffer): void {
    const d = this.decipher as DecipherGCM;
    if (b.length >= TAG_BYTES) {
      if (this.pending.length > 0) this.output(d.update(this.pending));
      this.output(d.update(b.subarray(0, b.length - TAG_BYTES)));
      this.pending = Buffer.from(b.subarray(b.length - TAG_BYTES));
    } else {
      const t = Buffer.concat([this.pending, b]);
      if (t.length > TAG_BYTES) this.output(d.update(t.subarray(0, t.length - TAG_BYTES)));
      this.pending = Buffer.from(t.subarray(Math.max(0, t.length - TAG_BYTES)));
    }
  }

  /** The staging buffer goes back for the next opening: nothing is staged any more. */
  private release(): void {
    const s = this.staging;
    this.staging = Buffer.alloc(0);
    if (s.length === STAGING_BYTES) giveScratch(s);
  }

  /** Send what is staged to the cipher now, so the key is chosen from the bytes so far (a prefix being checked). */
  async settle(): Promise<void> {
    if (this.failure === undefined && !this.noKey) await this.flush();
  }

  /**
   * The data ended: check the tag. Returns undefined on success, else why it failed
   * (`noKey` set means no candidate key gave the start of a state).
   */
  async end(): Promise<OpenFailure | undefined> {
    if (this.failure === undefined && !this.noKey && this.carry.length > 0) {
      const s = this.carry;
      this.carry = Buffer.alloc(0);
      await this.decode(s, true);
    }
    if (this.failure === undefined && !this.noKey) await this.flush();
    if (this.failure !== undefined) return this.failure;
    if (!this.started) await this.start(Buffer.concat(this.prefix), true);
    if (this.failure !== undefined || this.noKey) return this.failure;
    this.release();
    const d = this.decipher as DecipherGCM;
    if (this.pending.length < TAG_BYTES) return { kind: "too-short", bytes: this.decodedBytes };
    d.setAuthTag(this.pending);
    try {
      this.output(d.final());
    } catch {
      return { kind: "tag" };
    }
    return undefined;
  }
}
