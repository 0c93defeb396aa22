/**
 * Buffers lent to requests for their whole bodies, and taken back once a request is done with
 * its body: a state POST then costs no fresh allocation of its size (two of them per state
 * made a server collect garbage fully every few writes, docs/decisions/081).
 */

/** Bodies larger than this are not lent a buffer (they stream: `POST_STREAM_MIN`). */
export const LENT_MAX = 4 * 1024 * 1024;
/** Bodies smaller than this are not worth a buffer of their own (lock info, small states). */
export const LENT_MIN = 64 * 1024;
/** Idle buffers kept: what concurrent writes of large states use again. */
const KEEP = 2;

/** A server's buffers for request bodies. */
export class BodyBuffers {
  private readonly idle: Buffer[] = [];

  /** A buffer of at least `size` bytes (`LENT_MIN` ≤ size ≤ `LENT_MAX`), idle or new. */
  lend(size: number): Buffer {
    let best = -1;
    for (let i = 0; i < this.idle.length; i++) {
      const b = this.idle[i] as Buffer;
      if (b.length >= size && (best < 0 || b.length < (this.idle[best] as Buffer).length)) best = i;
    }
    if (best >= 0) return this.idle.splice(best, 1)[0] as Buffer;
    // Sized for the request, rounded up to 64 KiB so that the next states of about that size fit it.
    return Buffer.allocUnsafeSlow(Math.min(LENT_MAX, Math.ceil(size / LENT_MIN) * LENT_MIN));
  }

  /**
   * Take a buffer back. Only once nothing can read it any more: a write that failed may have
   * left a store call running on its bytes, so its buffer is never given back.
   */
  giveBack(buffer: Buffer): void {
    if (this.idle.includes(buffer)) return;
    this.idle.push(buffer);
    // The smallest go first: the larger serve every size.
    if (this.idle.length > KEEP) {
      this.idle.sort((a, b) => b.length - a.length);
      this.idle.length = KEEP;
    }
  }
}
