/**
 * Passing a state on while it is read (docs/design.md §11, decisions/044): a large state whose
 * digest the store's MD5 agrees with goes to a {@link StateSink} as it arrives, but its last bytes
 * wait until the read proved the whole. Wrong bytes or a new attempt cut the sink off: short, never wrong.
 */

/** What a reader passing the bytes on is told. */
export interface ReadHooks {
  /** At most once per attempt, before the bytes are checked: the digest and the store's record agree on `md5`. */
  vouched(md5: string): void;
  /** The buffer being filled and how much of it arrived (a new attempt: a new buffer). */
  data(body: Buffer, filled: number): void;
  /** An attempt's bytes did not match the digest, before the read looks again (or fails). */
  mismatch(): void;
}

/** Where `ObjectStoreBackend.streamState` sends a state while it is read (a server's response). */
export interface StateSink {
  /** The bytes start: `size` of them, whose MD5 (hex) the digest and the store agree on. At most once. */
  start(size: number, md5: string): void;
  /** The next bytes: a view of the read's buffer, never written again, so a socket's queue may keep it. */
  write(chunk: Buffer): void;
  /** What was sent cannot be made whole: cut it off. At most once, only after `start`. */
  abort(): void;
}

/** Options of `ObjectStoreBackend.streamState`. */
export interface StreamOptions {
  /** Smaller states are not streamed: the read returns them whole (default 256 KiB). */
  readonly minBytes?: number | undefined;
  /** Bytes held back until the read proved the state (default 64 KiB). */
  readonly holdBackBytes?: number | undefined;
  /** Smallest piece handed to `write` at once, except the last ones (default 1 MiB). */
  readonly chunkBytes?: number | undefined;
}

export class StreamedRead implements ReadHooks {
  started = false;
  private recorded: string | undefined;
  private body: Buffer | undefined;
  private arrived: { body: Buffer; filled: number } | undefined;
  private sent = 0;
  private dead = false;

  constructor(
    private readonly sink: StateSink,
    private readonly options: StreamOptions,
  ) {}

  vouched(md5: string): void {
    // A second vouch is a second attempt: what went out belongs to the first.
    if (this.started) return this.abandon();
    this.recorded = md5;
    // The vouch may come after the bytes: start from what arrived.
    if (this.arrived !== undefined) this.data(this.arrived.body, this.arrived.filled);
  }

  data(body: Buffer, filled: number): void {
    if (this.dead) return;
    if (!this.started) {
      this.arrived = { body, filled };
      if (this.recorded === undefined || body.length < (this.options.minBytes ?? 256 * 1024)) return;
      this.started = true;
      this.body = body;
      this.sink.start(body.length, this.recorded);
    } else if (body !== this.body) return this.abandon();
    const last = body.length - (this.options.holdBackBytes ?? 64 * 1024);
    const upTo = Math.min(filled, last);
    if (upTo - this.sent >= (this.options.chunkBytes ?? 1024 * 1024) || upTo === last) this.send(upTo);
  }

  mismatch(): void {
    this.abandon();
  }

  /** The read is done (the backend's `StateRead`): send the rest when it proved these very bytes; the MD5, or undefined (cut off). */
  finish(found: { readonly body: Buffer; readonly etag?: string | undefined; readonly md5?: string | undefined } | null): string | undefined {
    if (this.dead || found === null || found.body !== this.body || found.md5 === undefined || found.md5 !== this.recorded) {
      this.abandon();
      return undefined;
    }
    this.send(found.body.length);
    return found.md5;
  }

  /** Cut the sink off. */
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
