/**
 * Helpers around {@link ByteSource}: telling it from a buffer, hashing it and reading its
 * first bytes, all streamed.
 */
import { ObjstateError } from "../errors.js";
import { nodeCrypto } from "../util/builtins.js";
import { hasherFor } from "../util/md5.js";
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

/** Bytes made between two turns of the event loop, so a read of them (a write to the store) goes on meanwhile. */
const MADE_PER_TURN = 1024 * 1024;

/**
 * A source of exactly `size` bytes made once from `pieces` (taken on the spot, in order,
 * in turns of about 1 MiB) into one buffer that every read replays: reads yield bytes as
 * soon as they are made, so whatever consumes them (a driver writing them to its store)
 * works beside whatever makes them (encryption). The bytes are hashed as they are made
 * (in the MD5 worker thread when large): {@link ByteSource.madeMd5}. A making that fails,
 * or yields another number of bytes, fails every read and the MD5.
 */
export function madeSource(size: number, pieces: Iterable<Uint8Array>, what: string): ByteSource & { readonly madeMd5: Promise<string> } {
  const buf = Buffer.allocUnsafe(size);
  let made = 0;
  let failure: unknown;
  let done = false;
  let waiters: (() => void)[] = [];
  const wake = (): void => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  const making = (async (): Promise<string> => {
    const hash = hasherFor(size);
    try {
      let hashed = 0;
      let turn = 0;
      for (const piece of pieces) {
        if (made + piece.length > size) throw sourceChanged(what, size, made + piece.length);
        buf.set(piece, made);
        made += piece.length;
        turn += piece.length;
        if (turn >= MADE_PER_TURN) {
          turn = 0;
          wake();
          await hash.write(buf.subarray(hashed, made));
          hashed = made;
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      if (made !== size) throw sourceChanged(what, size, made);
      await hash.write(buf.subarray(hashed, made));
      done = true;
      wake();
      return await hash.digest();
    } catch (e) {
      failure = e;
      await Promise.resolve(hash.digest()).catch(() => undefined); // ends the worker's job
      wake();
      throw e;
    }
  })();
  making.catch(() => undefined); // a read or the caller's await reports it
  return {
    size,
    madeMd5: making,
    async *open(): AsyncIterable<Uint8Array> {
      let at = 0;
      for (;;) {
        if (failure !== undefined) throw failure;
        if (at < made) {
          const to = Math.min(made, at + MADE_PER_TURN);
          yield buf.subarray(at, to);
          at = to;
          continue;
        }
        if (done) return;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
  };
}
