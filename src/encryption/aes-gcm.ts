/**
 * Method `aes_gcm` as OpenTofu applies it: `encrypted_data = base64(nonce(12) ‖ AES-GCM ‖ tag(16))`,
 * with the optional AAD. Both directions work in pieces: a large state never has a second whole copy.
 */
import type { DecipherGCM } from "node:crypto";
import { nodeCrypto } from "../util/builtins.js";
import { giveScratch, takeScratch } from "../util/scratch.js";

export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
export const KEY_LENGTHS: readonly number[] = [16, 24, 32];

/** Plaintext bytes per cipher call when sealing: a multiple of 3, so each piece's base64 needs no padding. */
const PIECE_BYTES = 3 * 16 * 1024;
/** Base64 characters decoded at a time: small strings are freed young, large ones pile up until a full collection. */
const DECODE_CHARS = 64 * 1024;
/** Bytes decoded before a cipher call (see `Base64GcmOpener`). */
const STAGING_BYTES = 4 * 1024 * 1024;

/** An AES-GCM decipher (the key's length picks AES-128, -192 or -256); a probe needs no AAD: it never reaches the tag. */
export function gcmDecipher(key: Uint8Array, nonce: Uint8Array, aad?: Uint8Array): DecipherGCM {
  const d = nodeCrypto().createDecipheriv(`aes-${key.length * 8}-gcm` as "aes-256-gcm", key, nonce);
  if (aad !== undefined && aad.length > 0) d.setAAD(aad);
  return d;
}

/** Write the base64 of `nonce ‖ AES-GCM(plain) ‖ tag` into `out` at `at`, a piece at a time; the offset after it. */
export function sealBase64Into(out: Buffer, at: number, key: Uint8Array, aad: Uint8Array | undefined, plain: Uint8Array, nonce: Uint8Array): number {
  const c = nodeCrypto().createCipheriv(`aes-${key.length * 8}-gcm` as "aes-256-gcm", key, nonce);
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

/** Why an AES-GCM opening failed (`tag`: the data was altered). */
export type OpenFailure = { readonly kind: "not-base64" } | { readonly kind: "too-short"; readonly bytes: number } | { readonly kind: "tag" };

/**
 * Does a decrypted prefix look like a state's start (`{` after whitespace, printable)? A wrong key
 * passes with a chance near 10⁻⁹: this picks among fallbacks and tells a wrong key from altered data.
 */
export function looksLikeStateStart(b: Buffer): boolean {
  return /^[\t\n\r ]*(?:\{[\t\n\r\x20-\x7e]*)?$/.test(b.toString("latin1"));
}

export interface OpenKey {
  readonly key: Buffer;
  readonly aad: Buffer | undefined;
}

/** Bytes decrypted from the start to choose a key: one AES block. */
const PROBE_BYTES = 16;

/**
 * Opens `nonce ‖ ciphertext ‖ tag` pushed as base64 in pieces: `choose` picks the key by the first
 * {@link PROBE_BYTES}. `output` gets plaintext pieces, to be used only once {@link end} succeeds.
 */
export class Base64GcmOpener {
  private carry: Buffer = Buffer.alloc(0);
  private decodedBytes = 0;
  /** Decoded bytes wait here for one cipher call per staging buffer (reused). */
  private staging = takeScratch(STAGING_BYTES);
  private staged = 0;
  private prefix = Buffer.alloc(0);
  private decipher: DecipherGCM | undefined;
  private pending: Buffer = Buffer.alloc(0);
  private failure: OpenFailure | undefined;

  constructor(
    private readonly choose: (nonce: Buffer, probe: Buffer) => Promise<OpenKey | undefined>,
    private readonly output: (plain: Buffer) => void,
  ) {}

  /** Every candidate key's probe failed. */
  noKey = false;

  async push(chars: Uint8Array): Promise<void> {
    const b = Buffer.from(chars.buffer, chars.byteOffset, chars.byteLength);
    for (let at = 0; at < b.length; at += DECODE_CHARS) await this.pushSome(b.subarray(at, Math.min(b.length, at + DECODE_CHARS)));
  }

  private async pushSome(chars: Buffer): Promise<void> {
    if (this.failure !== undefined || this.noKey || chars.length === 0) return;
    // Whole groups but the last are decoded; the rest waits in `carry`: only the end may be padded.
    const all = this.carry.length === 0 ? chars : Buffer.concat([this.carry, chars]);
    const whole = Math.max(0, all.length - (all.length % 4) - 4);
    this.carry = Buffer.from(all.subarray(whole));
    if (whole > 0) await this.decode(all.subarray(0, whole), false);
  }

  private async decode(chars: Buffer, last: boolean): Promise<void> {
    const n = chars.length;
    if (this.staged + (n / 4) * 3 > this.staging.length) await this.flush();
    if (this.staging.length < (n / 4) * 3) this.staging = Buffer.allocUnsafe((n / 4) * 3);
    const w = this.staging.write(chars.toString("latin1"), this.staged, "base64");
    // Node skips what is not base64 and Go refuses it: a length that does not add up is that (or inner padding).
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
    if (this.decipher !== undefined) return this.feed(b);
    // The staging buffer is reused: the prefix is a copy.
    this.prefix = Buffer.concat([this.prefix, b]);
    if (this.prefix.length >= NONCE_BYTES + PROBE_BYTES + TAG_BYTES) await this.start(this.prefix, false);
  }

  private async start(all: Buffer, atEnd: boolean): Promise<void> {
    this.prefix = Buffer.alloc(0);
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
    this.decipher = gcmDecipher(chosen.key, nonce, chosen.aad);
    this.feed(all.subarray(NONCE_BYTES));
  }

  private feed(b: Buffer): void {
    const d = this.decipher as DecipherGCM;
    // The last TAG_BYTES seen may be the tag: they wait in `pending`; a large piece is not copied to join them.
    if (b.length >= TAG_BYTES && this.pending.length > 0) this.output(d.update(this.pending));
    const t = b.length >= TAG_BYTES ? b : Buffer.concat([this.pending, b]);
    if (t.length > TAG_BYTES) this.output(d.update(t.subarray(0, t.length - TAG_BYTES)));
    this.pending = Buffer.from(t.subarray(Math.max(0, t.length - TAG_BYTES)));
  }

  /** Send what is staged to the cipher, so a prefix chooses the key. */
  async settle(): Promise<void> {
    if (this.failure === undefined && !this.noKey) await this.flush();
  }

  /** The data ended: undefined when the tag checks out, else why not (or `noKey`). */
  async end(): Promise<OpenFailure | undefined> {
    if (this.failure === undefined && !this.noKey && this.carry.length > 0) await this.decode(this.carry, true);
    await this.settle();
    if (this.failure !== undefined) return this.failure;
    if (this.decipher === undefined) await this.start(this.prefix, true);
    if (this.failure !== undefined || this.noKey) return this.failure;
    if (this.staging.length === STAGING_BYTES) giveScratch(this.staging);
    this.staging = Buffer.alloc(0);
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
