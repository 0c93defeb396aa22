/**
 * Helpers around {@link ByteSource}: telling it from a buffer, hashing it and reading its
 * first bytes, all streamed.
 */
import { ObjstateError } from "../errors.js";
import { nodeCrypto } from "../util/builtins.js";
import type { ByteSource, PutBody } from "./types.js";

/** Is `body` a {@link ByteSource} (rather than bytes in memory)? */
export function isByteSource(body: PutBody | Uint8Array | string): body is ByteSource {
  return typeof body === "object" && !(body instanceof Uint8Array) && typeof (body as ByteSource).open === "function";
}

/** Bytes in `body`. */
export function sizeOf(body: PutBody): number {
  return isByteSource(body) ? body.size : body.length;
}

/**
 * Read `source` once, calling `each` per chunk, and check it yielded exactly `source.size`
 * bytes (a source that changed under us must not pass for the one that was checked).
 */
export async function readThrough(source: ByteSource, each: (chunk: Uint8Array) => void | Promise<void>, what: string): Promise<void> {
  let total = 0;
  for await (const chunk of source.open()) {
    total += chunk.length;
    if (total > source.size) break;
    await each(chunk);
  }
  if (total !== source.size) throw sourceChanged(what, source.size, total);
}

/**
 * Writes chunks in order with at most one write in flight: chunks added while a write runs
 * go out together in the next one (a single `writev`). A source whose bytes are all there
 * already (a request body that arrived faster than the disk takes it) then costs a few
 * writes, not one trip through the thread pool per chunk. Chunks are held, not copied (a
 * source's chunks stay as they were once yielded). `add` waits while more than `maxQueued`
 * bytes wait for their write.
 */
export class GatheringWriter {
  private queued: Uint8Array[] = [];
  private queuedBytes = 0;
  private running: Promise<void> | undefined;
  private failure: { readonly error: unknown } | undefined;

  constructor(
    private readonly writev: (chunks: readonly Uint8Array[]) => Promise<void>,
    private readonly maxQueued: number,
  ) {}

  /** Queue a chunk (written soon, with whatever else is queued by then). */
  async add(chunk: Uint8Array): Promise<void> {
    this.check();
    if (chunk.length === 0) return;
    this.queued.push(chunk);
    this.queuedBytes += chunk.length;
    this.running ??= this.drain();
    while (this.queuedBytes > this.maxQueued && this.running !== undefined) await this.running;
    this.check();
  }

  /** Resolves once every chunk added is written; rejects with the first write's failure. */
  async end(): Promise<void> {
    while (this.running !== undefined) await this.running;
    this.check();
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }

  private async drain(): Promise<void> {
    try {
      // The first chunk goes out at once; the rest gather while it is written.
      while (this.queued.length > 0 && this.failure === undefined) {
        const batch = this.queued;
        this.queued = [];
        this.queuedBytes = 0;
        await this.writev(batch);
      }
    } catch (e) {
      this.failure = { error: e };
      this.queued = [];
      this.queuedBytes = 0;
    } finally {
      this.running = undefined;
    }
  }
}

/** Hex MD5 of a source, streamed. */
export async function md5OfSource(source: ByteSource, what: string): Promise<string> {
  const h = nodeCrypto().createHash("md5");
  await readThrough(source, (c) => void h.update(c), what);
  return h.digest("hex");
}

/** The first `n` bytes of a source (fewer when it is shorter); reading stops there. */
export async function prefixOf(source: ByteSource, n: number): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let have = 0;
  if (n > 0) {
    for await (const chunk of source.open()) {
      const take = Math.min(chunk.length, n - have);
      parts.push(chunk.subarray(0, take));
      have += take;
      if (have >= n) break;
    }
  }
  return Buffer.concat(parts, have);
}

/** The error of a source that yielded another number of bytes than it announced. */
export function sourceChanged(what: string, expected: number, actual: number): ObjstateError {
  return new ObjstateError(
    "INPUT_CHANGED",
    `${what} changed while it was being read (${expected} bytes expected, ${actual > expected ? "more" : actual} found); nothing was written: push it again once nothing is writing to it`,
    { details: { expected, actual } },
  );
}
