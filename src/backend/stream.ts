/**
 * Passing a state on while it is read, without ever passing on a wrong one whole
 * (docs/design.md §11, docs/decisions/057): a large state whose recorded digest the store's
 * own MD5 record agrees with goes to a {@link StateSink} as it arrives, from the read's own
 * buffer (no copy), except its last bytes, which wait until the read proved the whole
 * against the digest. Bytes that turn out wrong, or a read that starts over, cut the sink
 * off; the receiver then has a body shorter than announced, never a complete wrong state.
 */
import { ObjstateError } from "../errors.js";
import type { BackendContext } from "./context.js";
import { readCommitted, type ReadHooks } from "./read.js";
import type { StateRead } from "./results.js";

/** Where {@link streamState} sends a state while it is read (a server's response). */
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

/** Options of {@link streamState}. */
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

/**
 * What {@link streamState} did: `streamed`, every byte went to the sink (end the answer);
 * otherwise nothing did, and `state` is the read's result, to answer with as usual.
 */
export type StreamResult =
  { readonly streamed: true; readonly size: number; readonly md5: string } | { readonly streamed: false; readonly state: StateRead | null };

/**
 * Read the workspace's state (the digest-checked read, with its retries and repairs),
 * streaming it to `sink` when it qualifies (see the module's header). A failure after the
 * sink started aborts it before the error is thrown; a read whose bytes changed or did not
 * match after they started going out is `DIGEST_MISMATCH`.
 */
export async function streamState(ctx: BackendContext, workspace: string, sink: StateSink, options: StreamOptions = {}): Promise<StreamResult> {
  const out = new StreamedRead(sink, options);
  let found: StateRead | null;
  try {
    found = await readCommitted(ctx, workspace, { sharedBody: options.sharedBody }, out);
  } catch (e) {
    out.abandon();
    throw e;
  }
  if (!out.started) return { streamed: false, state: found };
  const md5 = out.finish(found);
  if (md5 === undefined) {
    throw new ObjstateError(
      "DIGEST_MISMATCH",
      `the state of workspace ${workspace} changed or did not match its digest while it was being sent; the answer was cut off: read it again`,
      { details: { workspace } },
    );
  }
  return { streamed: true, size: (found as StateRead).body.length, md5 };
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
  finish(found: StateRead | null): string | undefined {
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
