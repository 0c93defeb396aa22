/**
 * Helpers around {@link ByteSource}: telling it from a buffer, hashing it and reading its
 * first bytes, all streamed.
 */
import { ObjstateError } from "../errors.js";
import { nodeCrypto } from "../util/builtins.js";
import { hasherFor } from "../util/md5.js";
import type { ByteSource, MadeMd5, OpenOptions, PutBody } from "./types.js";

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
export async function readThrough(source: ByteSource, each: (chunk: Uint8Array) => void | Promise<void>, what: string, options?: OpenOptions): Promise<void> {
  let total = 0;
  for await (const chunk of source.open(options)) {
    total += chunk.length;
    if (total > source.size) break;
    await each(chunk);
  }
  if (total !== source.size) throw sourceChanged(what, source.size, total);
}

/** Hex MD5 of a source, streamed. */
export async function md5OfSource(source: ByteSource, what: string): Promise<string> {
  const h = nodeCrypto().createHash("md5");
  await readThrough(source, (c) => void h.update(c), what, { reusable: true });
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

/** Bytes hashed between two turns of the event loop, and the size of the pieces a read yields. */
const TURN_BYTES = 1024 * 1024;

/** Bytes in a piece: a buffer's, or a text's characters taken as bytes (latin1: base64 is ASCII). */
type Piece = Uint8Array | string;

/**
 * A source of exactly `size` bytes that `pieces` makes afresh on each iteration, the same
 * bytes every time (an envelope under its one nonce): nothing holds them whole. A piece is
 * bytes, or text whose characters are its bytes (written with `latin1`, no buffer of its
 * own). A read yields them in pieces of 1 MiB as they are made, so whatever consumes them
 * (a driver writing them to its store) works beside the making.
 *
 * The MD5 ({@link ByteSource.madeMd5}) is taken by a read, of the very pieces it yields (in
 * the MD5 worker thread when large): the bytes are made once, not once for the store and
 * again for the hash. That read keeps at most the hash's window ahead of it, so the store is
 * written at the pace of the hash, which is the slower of the two anyway. A read that stops
 * early (a look at the first bytes) leaves the MD5 to the next; a caller that needs it before
 * any read has it taken by a pass of its own (`now()`). A making that fails, or makes another
 * number of bytes, fails the reads and the MD5.
 */
export function madeSource(size: number, pieces: Iterable<Piece>, what: string): ByteSource & { readonly madeMd5: MadeMd5 } {
  let resolve!: (md5: string) => void;
  let reject!: (e: unknown) => void;
  const settled = new Promise<string>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  settled.catch(() => undefined); // a read or the caller's await reports it
  /** Who is taking the MD5: a read, a pass of its own, or nobody yet (or any more). */
  let taking: "read" | "own" | undefined;
  let done = false;
  const settle = (md5: string | undefined, e?: unknown): void => {
    if (done) return;
    done = true;
    taking = undefined;
    if (md5 !== undefined) resolve(md5);
    else reject(e);
  };
  const ownPass = (): void => {
    if (done || taking !== undefined) return;
    taking = "own";
    void (async (): Promise<string> => {
      const hash = hasherFor(size);
      try {
        // Text is written into this buffer to be hashed (the hash copies what it keeps before it resolves).
        let scratch: Buffer | undefined;
        let n = 0;
        let turn = 0;
        for (const piece of pieces) {
          n += piece.length;
          if (n > size) throw sourceChanged(what, size, n);
          if (typeof piece !== "string") await hash.write(piece);
          else {
            scratch ??= Buffer.allocUnsafe(TURN_BYTES);
            for (let at = 0; at < piece.length; at += scratch.length) {
              const k = scratch.write(at === 0 ? piece : piece.slice(at), 0, "latin1");
              await hash.write(scratch.subarray(0, k));
            }
          }
          turn += piece.length;
          if (turn >= TURN_BYTES) {
            turn = 0;
            await new Promise<void>((r) => setImmediate(r));
          }
        }
        if (n !== size) throw sourceChanged(what, size, n);
        return await hash.digest();
      } catch (e) {
        await Promise.resolve(hash.digest()).catch(() => undefined); // ends the worker's job
        throw e;
      }
    })().then(
      (md5) => settle(md5),
      (e: unknown) => settle(undefined, e),
    );
  };
  return {
    size,
    madeMd5: {
      settled,
      now(): Promise<string> {
        ownPass(); // unless a read is taking it
        return settled;
      },
    },
    async *open(options?: OpenOptions): AsyncIterable<Uint8Array> {
      // One buffer for the whole read when the reader is done with each chunk before the next
      // (1 MiB a chunk of fresh memory was most of what made V8 collect during a push).
      const reused = options?.reusable === true ? Buffer.allocUnsafe(TURN_BYTES) : undefined;
      // A read takes the MD5 of what it yields, unless one is already taking it (or it is taken).
      const hash = !done && taking === undefined ? hasherFor(size) : undefined;
      if (hash !== undefined) taking = "read";
      let complete = false;
      try {
        let n = 0;
        let chunk: Buffer | undefined;
        let filled = 0;
        for (const piece of pieces) {
          let at = 0;
          while (at < piece.length) {
            // Else a fresh buffer per chunk yielded: the reader may still hold the last (a socket's queue).
            chunk ??= reused ?? Buffer.allocUnsafe(TURN_BYTES);
            const take = Math.min(piece.length - at, chunk.length - filled);
            if (typeof piece === "string") chunk.write(at === 0 && take === piece.length ? piece : piece.slice(at, at + take), filled, "latin1");
            else chunk.set(piece.subarray(at, at + take), filled);
            filled += take;
            at += take;
            if (filled === chunk.length) {
              n += filled;
              if (n > size) throw sourceChanged(what, size, n);
              await hash?.write(chunk);
              yield chunk;
              chunk = undefined;
              filled = 0;
            }
          }
        }
        if (chunk !== undefined && filled > 0) {
          n += filled;
          if (n > size) throw sourceChanged(what, size, n);
          await hash?.write(chunk.subarray(0, filled));
          yield chunk.subarray(0, filled);
        }
        if (n !== size) throw sourceChanged(what, size, n);
        complete = true;
      } catch (e) {
        // The making failed: so does the MD5, whoever waits for it.
        if (hash !== undefined) settle(undefined, e);
        throw e;
      } finally {
        if (hash !== undefined) {
          if (complete) {
            try {
              settle(await hash.digest());
            } catch (e) {
              settle(undefined, e);
            }
          } else {
            await Promise.resolve(hash.digest()).catch(() => undefined); // ends the worker's job
            // Stopped early by its consumer (a look at the first bytes, a failed upload): the
            // next read takes the MD5, or now() a pass of its own.
            if (taking === "read") taking = undefined;
          }
        }
      }
    },
  };
}
