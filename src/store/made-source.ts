/**
 * A {@link ByteSource} whose bytes are made on each read (an envelope encrypted while it is
 * written), and the MD5 of those bytes taken without making them twice.
 */
import { hasherFor, type Hasher } from "../util/md5.js";
import { sourceChanged } from "./byte-source.js";
import type { ByteSource, MadeMd5, OpenOptions } from "./types.js";

/** The size of the chunks a read yields, and of the making between two turns of the event loop. */
const CHUNK_BYTES = 1024 * 1024;
/**
 * Bytes a pass started by `ahead()` makes, hashes and keeps before a read adopts them: what
 * the MD5 worker can hash while a writer's checks wait on the store, and what a push may hold
 * beside its state.
 */
const LOOKAHEAD_BYTES = 16 * 1024 * 1024;

/** Bytes in a piece: a buffer's, or a text's characters taken as bytes (latin1: base64 is ASCII). */
export type Piece = Uint8Array | string;

/** A source with {@link ByteSource.madeMd5}, and `ahead()` to start on it before it is read. */
export interface MadeSource extends ByteSource {
  readonly madeMd5: MadeMd5;
  /**
   * Start making and hashing now, beside whatever the caller does before it writes (its
   * checks), keeping up to 16 MiB for the next read to adopt: that read yields them, then
   * makes the rest where this left off, so nothing is made twice. Call it after any look at
   * the first bytes (a read that adopts and stops early drops what was kept).
   */
  ahead(): void;
}

/** Is `source` a {@link MadeSource}? */
export function isMadeSource(source: ByteSource): source is MadeSource {
  return source.madeMd5 !== undefined && typeof (source as Partial<MadeSource>).ahead === "function";
}

/** Cuts the pieces of one making into chunks of at most {@link CHUNK_BYTES}, checking the count. */
class Chunker {
  private readonly it: Iterator<Piece>;
  private piece: Piece | undefined;
  private at = 0;
  /** Bytes cut so far. */
  made = 0;

  constructor(
    pieces: Iterable<Piece>,
    private readonly size: number,
    private readonly what: string,
  ) {
    this.it = pieces[Symbol.iterator]();
  }

  /** The next chunk, written into `into` (else a fresh buffer); undefined after the last. */
  next(into: Buffer | undefined): Buffer | undefined {
    const chunk = into ?? Buffer.allocUnsafe(CHUNK_BYTES);
    let filled = 0;
    while (filled < chunk.length) {
      if (this.piece === undefined || this.at >= this.piece.length) {
        const r = this.it.next();
        if (r.done === true) break;
        this.piece = r.value;
        this.at = 0;
        continue;
      }
      const p = this.piece;
      const take = Math.min(p.length - this.at, chunk.length - filled);
      if (typeof p === "string") chunk.write(this.at === 0 && take === p.length ? p : p.slice(this.at, this.at + take), filled, "latin1");
      else chunk.set(p.subarray(this.at, this.at + take), filled);
      filled += take;
      this.at += take;
    }
    this.made += filled;
    if (this.made > this.size) throw sourceChanged(this.what, this.size, this.made);
    if (filled > 0) return chunk.subarray(0, filled);
    if (this.made !== this.size) throw sourceChanged(this.what, this.size, this.made);
    return undefined;
  }
}

/** What a pass started by `ahead()` leaves for a read: chunks made and hashed, and the making where it stopped. */
interface Lookahead {
  readonly kept: Buffer[];
  readonly chunker: Chunker;
  readonly hash: Hasher;
  /** The making failed (after `kept`). */
  failure?: { readonly error: unknown };
  /** The making reached its end (all of it is in `kept`). */
  ended: boolean;
}

/**
 * A source of exactly `size` bytes that `pieces` makes afresh on each iteration, the same
 * bytes every time (an envelope under its one nonce): nothing holds them whole. A piece is
 * bytes, or text whose characters are its bytes (written with `latin1`, no buffer of its
 * own). A read yields them in chunks of 1 MiB as they are made, so whatever consumes them
 * (a driver writing them to its store) works beside the making.
 *
 * The MD5 ({@link ByteSource.madeMd5}) is taken of the very chunks a read yields (in the
 * MD5 worker thread when large): the bytes are made once, not once for the store and again
 * for the hash. That read keeps at most the hash's window ahead of it, so the store is
 * written at the pace of the hash, which is the slower of the two anyway. `ahead()` starts
 * the making and the hash before the read (see {@link MadeSource.ahead}). A read that stops
 * early (a look at the first bytes) leaves the MD5 to the next; a caller that needs it before
 * any read has it taken by a pass of its own (`now()`). A making that fails, or makes another
 * number of bytes, fails the reads and the MD5.
 */
export function madeSource(size: number, pieces: Iterable<Piece>, what: string): MadeSource {
  let resolve!: (md5: string) => void;
  let reject!: (e: unknown) => void;
  const settled = new Promise<string>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  settled.catch(() => undefined); // a read or the caller's await reports it
  /**
   * Who is taking the MD5: a read; the pass `ahead()` started, while it waits to be adopted
   * (`lookahead`) or runs to the end for `now()` (`own`); or nobody yet (or any more).
   */
  let taking: "read" | "lookahead" | "own" | undefined;
  let done = false;
  /** The pass's making, for the first read to adopt (taken at once, or once the pass parks). */
  let lookahead: Promise<Lookahead | undefined> | undefined;
  /** Set by a read (adopt) or by `now()` (finish alone): the pass looks after each chunk. */
  let wake: (() => void) | undefined;
  let adoptWanted = false;
  /** `now()` was called: a read that stops early hands the MD5 over to a pass of its own. */
  let wanted = false;

  const settle = (md5: string | undefined, e?: unknown): void => {
    if (done) return;
    done = true;
    taking = undefined;
    if (md5 !== undefined) resolve(md5);
    else reject(e);
  };
  const digestInto = async (hash: Hasher): Promise<void> => {
    try {
      settle(await hash.digest());
    } catch (e) {
      settle(undefined, e);
    }
  };
  const endHash = (hash: Hasher): Promise<void> =>
    Promise.resolve(hash.digest()).then(
      () => undefined,
      () => undefined,
    ); // ends the worker's job

  /**
   * Make and hash; keep the chunks while `taking` is "lookahead" and they fit, then park
   * until a read adopts them or `now()` asks for the MD5 alone (then go on hashing only).
   */
  const pass = async (): Promise<Lookahead | undefined> => {
    const la: Lookahead = { kept: [], chunker: new Chunker(pieces, size, what), hash: hasherFor(size), ended: false };
    let keptBytes = 0;
    let scratch: Buffer | undefined;
    for (;;) {
      if (adoptWanted && taking === "lookahead") return la;
      if (taking !== "lookahead") la.kept.length = 0; // now() wants the MD5 alone: nobody adopts these
      let chunk: Buffer | undefined;
      const keep = taking === "lookahead";
      try {
        chunk = la.chunker.next(keep ? undefined : (scratch ??= Buffer.allocUnsafe(CHUNK_BYTES)));
      } catch (e) {
        if (keep) {
          la.failure = { error: e };
          return la;
        }
        await endHash(la.hash);
        settle(undefined, e);
        return undefined;
      }
      if (chunk === undefined) {
        la.ended = true;
        if (keep) return la; // all of it kept; the read that adopts it settles the MD5
        await digestInto(la.hash);
        return undefined;
      }
      await la.hash.write(chunk);
      if (keep) {
        la.kept.push(chunk);
        keptBytes += chunk.length;
        if (keptBytes >= LOOKAHEAD_BYTES && taking === "lookahead" && !adoptWanted) {
          // Full: wait for the read (or for now()).
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
      }
      await new Promise<void>((r) => setImmediate(r)); // the writer's own work goes on beside
    }
  };

  /** A pass of its own from the first byte, hashing only (no read takes it any more). */
  const ownPass = (): void => {
    if (done || taking !== undefined) return;
    taking = "own";
    void pass();
  };

  return {
    size,
    madeMd5: {
      settled,
      now(): Promise<string> {
        wanted = true;
        if (taking === "lookahead") {
          // Needed before (or without) a read: the pass goes on alone; what it kept is dropped.
          taking = "own";
          const waiting = lookahead;
          lookahead = undefined;
          wake?.();
          // A pass that had already stopped (all of it kept, or its making failed) ends here.
          void waiting?.then((la) => {
            if (la === undefined || done) return;
            la.kept.length = 0;
            if (la.failure !== undefined) {
              void endHash(la.hash);
              settle(undefined, la.failure.error);
            } else if (la.ended) void digestInto(la.hash);
          });
        } else ownPass();
        return settled;
      },
    },
    ahead(): void {
      if (done || taking !== undefined) return;
      taking = "lookahead";
      lookahead = pass();
    },
    async *open(options?: OpenOptions): AsyncIterable<Uint8Array> {
      // One buffer for the whole read when the reader is done with each chunk before the next
      // (a fresh chunk each time was most of a push's garbage collection).
      const reused = options?.reusable === true ? Buffer.allocUnsafe(CHUNK_BYTES) : undefined;
      let adopted: Lookahead | undefined;
      if (taking === "lookahead" && lookahead !== undefined) {
        const waiting = lookahead;
        lookahead = undefined;
        adoptWanted = true;
        wake?.();
        adopted = await waiting;
        adoptWanted = false;
        if (adopted !== undefined) taking = "read";
      }
      // Else this read takes the MD5 of what it yields, unless one is already taking it (or it is taken).
      const hash = adopted?.hash ?? (!done && taking === undefined ? hasherFor(size) : undefined);
      if (adopted === undefined && hash !== undefined) taking = "read";
      const chunker = adopted?.chunker ?? new Chunker(pieces, size, what);
      let complete = false;
      try {
        if (adopted !== undefined) {
          // Made and hashed already.
          while (adopted.kept.length > 0) yield adopted.kept.shift() as Buffer;
          if (adopted.failure !== undefined) throw adopted.failure.error;
        }
        if (adopted?.ended !== true) {
          for (;;) {
            const chunk = chunker.next(reused);
            if (chunk === undefined) break;
            await hash?.write(chunk);
            yield chunk;
          }
        }
        complete = true;
      } catch (e) {
        // The making failed: so does the MD5, when this read was taking it.
        if (hash !== undefined) settle(undefined, e);
        throw e;
      } finally {
        if (hash !== undefined) {
          // The reader goes on (a file's fsync) while the hash's last window is hashed.
          if (complete) void digestInto(hash);
          else {
            await endHash(hash);
            // Stopped early by its consumer (a look at the first bytes, a failed upload): the
            // next read takes the MD5, or a pass of its own once now() asks (or has asked).
            if (taking === "read") {
              taking = undefined;
              if (wanted) ownPass();
            }
          }
        }
      }
    },
  };
}
