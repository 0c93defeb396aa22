/**
 * State encryption at the backend's edge (issue 26, docs/decisions/069): the one place that
 * turns the state a caller writes into what is stored (an envelope, or the state itself
 * without encryption) and what is stored back into the state. Everything between — the
 * guard, fencing, digests, history — works on the stored bytes, whose clear `serial` and
 * `lineage` are the state's.
 */
import type { Decrypted, StateDecryptor, StateEncryption } from "../encryption/index.js";
import { isEnvelope } from "../encryption/index.js";
import { ObjstateError } from "../errors.js";
import { madeSource } from "../store/made-source.js";
import type { ByteSource } from "../store/types.js";
import { PARALLEL_MD5_MIN } from "../util/md5.js";
import type { ReadSink } from "./read.js";
import { scanHeader, stateHeader, type StateHeader } from "./state-header.js";

/** How much of a state is scanned for the clear fields an envelope carries. */
const HEADER_BYTES = 64 * 1024;

/**
 * The stored form of `data`: the envelope of the state under the primary method (or the
 * state, `unencrypted` first). A large envelope is a source encrypted afresh for each read
 * (the same bytes: one nonce), so the cipher and the encoding run beside the write to the
 * store and beside the hash of the bytes, and nothing holds the envelope whole.
 */
export async function sealState(enc: StateEncryption, state: Buffer, workspace: string): Promise<Buffer | ByteSource> {
  if (enc.writesPlain) return state;
  if (isEnvelope(state.subarray(0, HEADER_BYTES))) {
    throw new ObjstateError(
      "STATE_INVALID",
      `the state to write to workspace "${workspace}" is already an encryption envelope, and objstate encrypts states itself here: write the decrypted state (or connect without encryption to store envelopes as they are)`,
      { details: { workspace } },
    );
  }
  const h = scanHeader(state.subarray(0, HEADER_BYTES));
  if (h === undefined || h.lineage === undefined)
    throw new ObjstateError(
      "STATE_INVALID",
      `the state to write to workspace "${workspace}" has no top-level lineage, so it cannot be encrypted: is it a state?`,
      {
        details: { workspace },
      },
    );
  const envelope = await enc.encrypt(state, { serial: h.serial ?? null, lineage: h.lineage });
  if (envelope.byteLength < PARALLEL_MD5_MIN) return envelope.toBuffer();
  return madeSource(envelope.byteLength, envelope.chunks, `the envelope of the state of workspace "${workspace}"`);
}

/** The state in `stored` (decrypted under the primary method, then each fallback). */
export function openState(enc: StateEncryption, stored: Buffer, workspace: string): Promise<Decrypted> {
  return enc.decrypt(stored, { workspace });
}

/**
 * Refuse to write over a stored state this configuration cannot read (wrong key, unknown
 * version, plain without an `unencrypted` fallback): the whole object when it is small, else
 * its first bytes, where the key is chosen (decision 064). A small state's header comes back
 * from its decrypted content: an envelope's clear fields cannot say whether it is empty.
 */
export async function checkReadable(enc: StateEncryption, stored: Buffer, whole: boolean, workspace: string): Promise<StateHeader | undefined> {
  if (whole) {
    const d = await enc.decrypt(stored, { workspace });
    try {
      return stateHeader(d.state, true, `the state of workspace "${workspace}"`);
    } catch {
      return undefined;
    }
  }
  const d = enc.decryptor({ workspace });
  await d.push(stored);
  await d.checkPrefix();
  return undefined;
}

/**
 * Decryption while the stored bytes arrive (the read's `onData`), so the cipher works
 * beside the transfer instead of after it. What it made counts only when the read returns
 * the very buffer it was fed, whole; otherwise (a digest retry, the committed version read
 * instead, a driver that does not report data) the returned bytes are decrypted again.
 * Nothing is released before the read proved the bytes and the tag checked out.
 */
export class EarlyDecryption {
  private fed: { body: Buffer; upTo: number; d: StateDecryptor; chain: Promise<void>; failed: boolean } | undefined;

  constructor(
    private readonly enc: StateEncryption,
    private readonly workspace: string,
    private readonly inner: ((body: Buffer, filled: number) => void) | undefined,
  ) {}

  readonly onData = (body: Buffer, filled: number): void => {
    this.inner?.(body, filled);
    if (this.fed === undefined || this.fed.body !== body)
      this.fed = { body, upTo: 0, d: this.enc.decryptor({ workspace: this.workspace }, body.length), chain: Promise.resolve(), failed: false };
    const f = this.fed;
    const from = f.upTo;
    if (filled <= from || f.failed) return;
    f.upTo = filled;
    f.chain = f.chain
      .then(() => (f.failed ? undefined : f.d.push(body.subarray(from, filled))))
      .catch(() => {
        // Decided again on the whole bytes once the read returns them (its error is the answer then).
        f.failed = true;
      });
  };

  /** The state in the bytes the read returned. */
  async result(stored: Buffer): Promise<Decrypted> {
    const f = this.fed;
    if (f !== undefined && f.body === stored && f.upTo === stored.length) {
      await f.chain;
      if (!f.failed) return f.d.end();
    }
    return openState(this.enc, stored, this.workspace);
  }
}

/**
 * Decryption of the bytes a read hands over as they arrive ({@link ReadSink}): the stored
 * envelope is never held, only the plaintext. Used while the read's first attempt matches
 * the digest (`took`); an error found on the way is the answer only then (bytes that did
 * not match are read again, and decided on, the usual way).
 */
export class ConsumedDecryption implements ReadSink {
  private d: StateDecryptor | undefined;
  private failure: { error: unknown } | undefined;
  /** The read's returned bytes are the ones this took. */
  took = true;

  constructor(
    private readonly enc: StateEncryption,
    private readonly workspace: string,
  ) {}

  readonly consume = async (piece: Buffer, size: number | undefined): Promise<void> => {
    if (this.failure !== undefined) return;
    this.d ??= this.enc.decryptor({ workspace: this.workspace }, size, true);
    try {
      await this.d.push(piece);
    } catch (error) {
      this.failure = { error };
    }
  };

  readonly restart = (): void => {
    this.took = false;
    this.d = undefined;
    this.failure = undefined;
  };

  /** The state in the bytes taken (a read that found an empty object took none). */
  async result(): Promise<Decrypted> {
    if (this.failure !== undefined) throw this.failure.error;
    return (this.d ?? this.enc.decryptor({ workspace: this.workspace })).end();
  }
}
