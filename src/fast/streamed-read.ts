/**
 * Passing a state on while it is read, without ever passing on a wrong one whole
 * (docs/design.md §11, docs/decisions/044): a large state whose recorded digest the store's
 * own MD5 record agrees with goes to a {@link StateSink} as it arrives, from the read's own
 * buffer (no copy), except its last bytes, which wait until the read proved the whole
 * against the digest. Bytes that turn out wrong, or a read that starts over, cut the sink
 * off; the receiver then has a body shorter than announced, never a complete wrong state.
 */

/** What a reader that passes the bytes on as they arrive is told (see {@link StreamedRead}). */
export interface ReadHooks {
  /**
   * At most once per attempt, before the bytes are checked (usually before most of them
   * arrive): the digest recorded for the state and the store's own MD5 record of the object
   * agree on this MD5, so the bytes will very likely match it.
   */
  vouched(md5: string): void;
  /** The buffer being filled, and how many bytes of it arrived (a new attempt: a new buffer). */
  data(body: Buffer, filled: number): void;
  /** An attempt's bytes did not match the digest, before the read looks again (or fails). */
  mismatch(): void;
}

/** Where `ObjectStoreBackend.streamState` sends a state while it is read (a server's response). */
export interface StateSink {
  /** The bytes start: `size` of them, whose MD5 (hex) the digest and the store agree on. At most once. */
  start(size: number, md5: string): void;
  /**
   * The next bytes, in order: a view of the read's buffer, which is not written again, so
   * it can be kept (a socket's queue) without a copy. Sent now, they travel while the read
   * goes on hashing them.
   */
  write(chunk: Buffer): void;
  /** What was sent cannot be made whole: cut it off. At most once, only after `start`. */
  abort(): void;
}

/** Options of `ObjectStoreBackend.streamState`. */
export interface StreamOptions {
  /** Smaller states are not streamed: the read returns them whole (default 256 KiB). */
  readonly minBytes?: number | undefined;
  /** Bytes held back until the read proved the state (default 64 KiB): the receiver cannot take a body for complete without them. */
  readonly holdBackBytes?: number | undefined;
  /** Smallest piece handed to `write` at once, except the last ones (default 1 MiB): a write per 64 KiB chunk costs more than the bytes. */
  readonly chunkBytes?: number | undefined;
  /** See `ReadOptions.sharedBody`. */
  readonly sharedBody?: boolean | undefined;
}

/** What the read returned (the backend's `StateRead`): the bytes and the MD5 it proved them by. */
export interface FinishedRead {
  readonly body: Buffer;
  readonly etag?: string | undefined;
  readonly md5?: string | undefined;
}

/**
 * One streamed read: which attempt's buffer goes out, how far, and whether it died. The
 * read calls its {@link ReadHooks}; exported for tests of a sink.
 */
export class StreamedRead implements ReadHooks {
  started = false;
  private recorded: string | undefined;
  private body: Buffer | undefined;
  /** The newest attempt's buffer and how full it is, before the sink started. */
  private arrived: { body: Buffer; filled: number } | undefined;
  private sent = 0;
  private dead = false;
  private readonly minBytes: number;
  private readonly holdBack: number;
  private readonly chunk: number;

  constructor(
    private readonly sink: StateSink,
    options: StreamOptions,
  ) {
    this.minBytes = options.minBytes ?? 256 * 1024;
    this.holdBack = options.holdBackBytes ?? 64 * 1024;
    this.chunk = options.chunkBytes ?? 1024 * 1024;
  }

  vouched(md5: string): void {
    // A second vouch is a second attempt: what went out belongs to the first.
    if (this.started) return this.abandon();
    this.recorded = md5;
    // The vouch may come after the bytes (the lock table answered after the store): start from what arrived.
    if (this.arrived !== undefined) this.data(this.arrived.body, this.arrived.filled);
  }

  data(body: Buffer, filled: number): void {
    if (this.dead) return;
    if (!this.started) {
      this.arrived = { body, filled };
      if (this.recorded === undefined || body.length < this.minBytes) return;
      this.started = true;
      this.body = body;
      this.sink.start(body.length, this.recorded);
    } else if (body !== this.body) return this.abandon();
    const upTo = Math.min(filled, body.length - this.holdBack);
    if (upTo - this.sent >= this.chunk || upTo === body.length - this.holdBack) this.send(upTo);
  }

  mismatch(): void {
    this.abandon();
  }

  /** The read is done: send the rest when it proved these very bytes; the MD5, or undefined (cut off). */
  finish(found: FinishedRead | null): string | undefined {
    if (this.dead || found === null || found.body !== this.body || found.md5 === undefined || found.md5 !== this.recorded) {
      this.abandon();
      return undefined;
    }
    this.send(found.body.length);
    return found.md5;
  }

  /** Take back what was sent: cut the sink off (nothing more goes to it). */
  abandon(): void {
    if (this.dead) return;
    this.dead = true;
    if (this.started) this.sink.abort();
  }

  private send(upTo: number): void {
    if (upTo <= this.sent) return;
    this.sink.write((this.body as Buffer).subarray(this.sent, upTo));
    this.sent = upTo;
  }
}
