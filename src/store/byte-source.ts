/** Helpers around {@link ByteSource}: telling it from a buffer, wrapping, hashing and reading its first bytes, all streamed. */
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

/** One read of `source`, exactly `source.size` bytes: a source that changed under us must not pass for the one that was checked. */
export async function* readExactly(source: ByteSource, what: string): AsyncGenerator<Uint8Array> {
  let total = 0;
  for await (const chunk of source.open()) {
    total += chunk.length;
    if (total > source.size) break;
    yield chunk;
  }
  if (total !== source.size) throw sourceChanged(what, source.size, total);
}

/** {@link readExactly}, calling `each` per chunk. */
export async function readThrough(source: ByteSource, each: (chunk: Uint8Array) => void | Promise<void>, what: string): Promise<void> {
  for await (const chunk of readExactly(source, what)) await each(chunk);
}

/** `source` read through `open`: the same size and verified MD5 (a wrapper that passes every byte on). */
export function wrapSource(source: ByteSource, open: () => AsyncIterable<Uint8Array>): ByteSource {
  return { size: source.size, verifiedMd5: source.verifiedMd5, open };
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

/** Bytes in memory as a source, in slices of `chunk` bytes. */
export function bufferSource(bytes: Uint8Array, chunk = 1024 * 1024): ByteSource {
  return {
    size: bytes.length,
    async *open() {
      for (let off = 0; off < bytes.length; off += chunk) yield bytes.subarray(off, Math.min(bytes.length, off + chunk));
    },
  };
}

/** The error of a source that yielded another number of bytes than it announced. */
export function sourceChanged(what: string, expected: number, actual: number): ObjstateError {
  return new ObjstateError(
    "INPUT_CHANGED",
    `${what} changed while it was being read (${expected} bytes expected, ${actual > expected ? "more" : actual} found); nothing was written: push it again once nothing is writing to it`,
    { details: { expected, actual } },
  );
}
