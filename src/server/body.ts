/**
 * Request bodies: refused above the size limit before a byte is read (Content-Length) or as
 * soon as the count passes it (chunked), timed out when the client stalls, hashed while
 * they arrive (large ones in the MD5 worker, on another core than the one receiving), and
 * held in one buffer (never copied twice).
 */
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { ObjstateError } from "../errors.js";
import type { ByteSource } from "../store/types.js";
import { PARALLEL_MD5_MIN, ParallelMd5 } from "../util/md5.js";

/** Limits on a request body. */
export interface BodyLimits {
  /** Largest body accepted, in bytes. */
  readonly maxBytes: number;
  /** Longest pause between two chunks of a body before the request is dropped. */
  readonly idleMs: number;
}

/** A body read whole, with its MD5 (hex). */
export interface Body {
  readonly bytes: Buffer;
  readonly md5: string;
}

export function tooLarge(size: number | undefined, max: number): ObjstateError {
  return new ObjstateError("BODY_TOO_LARGE", `the request body${size === undefined ? "" : ` (${size} bytes)`} is larger than this server accepts (${max} bytes, --max-state-size)`, { details: { max } });
}

/** Refuse at once a body whose announced length is over the limit. */
export function checkDeclaredLength(req: IncomingMessage, limits: BodyLimits): void {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limits.maxBytes) throw tooLarge(Number(declared), limits.maxBytes);
}

/**
 * Read the body. With Content-Length, into one buffer of that size; chunked, into a list
 * joined once at the end.
 */
export function readBody(req: IncomingMessage, limits: BodyLimits): Promise<Body> {
  return receive(req, limits).done;
}

/** A body being received: the buffer it fills (with Content-Length), and the whole of it. */
interface Receiving {
  /** The one buffer the body lands in, when its length was announced. */
  readonly buffer: Buffer | undefined;
  readonly done: Promise<Body>;
}

function receive(req: IncomingMessage, limits: BodyLimits, onChunk?: (filled: number) => void): Receiving {
  checkDeclaredLength(req, limits);
  const declared = req.headers["content-length"] === undefined ? undefined : Number(req.headers["content-length"]);
  const fixed = declared !== undefined && Number.isSafeInteger(declared) ? Buffer.allocUnsafe(declared) : undefined;
  const done = new Promise<Body>((resolve, reject) => {
    const hash = hasher(declared);
    const chunks: Buffer[] = [];
    let filled = 0;
    let timer: NodeJS.Timeout | undefined;
    const fail = (e: ObjstateError): void => {
      clearTimeout(timer);
      hash.digest().catch(() => undefined); // releases the worker's job
      req.removeAllListeners("data");
      req.pause();
      reject(e);
    };
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(new ObjstateError("CLIENT_TIMEOUT", `the client sent no data for ${limits.idleMs} ms in the middle of its request body (--client-timeout)`)), limits.idleMs);
    };
    arm();
    req.on("data", (chunk: Buffer) => {
      if (filled + chunk.length > limits.maxBytes) return fail(tooLarge(undefined, limits.maxBytes));
      if (fixed !== undefined) {
        if (filled + chunk.length > fixed.length) return fail(new ObjstateError("BAD_REQUEST", "the request body is longer than its Content-Length"));
        chunk.copy(fixed, filled);
      } else chunks.push(chunk);
      filled += chunk.length;
      hash.update(chunk);
      arm();
      onChunk?.(filled);
    });
    req.on("end", () => {
      clearTimeout(timer);
      const bytes = fixed !== undefined ? fixed.subarray(0, filled) : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, filled);
      hash.digest().then((md5) => resolve({ bytes, md5 }), reject);
    });
    req.on("error", () => fail(new ObjstateError("BAD_REQUEST", "the request body ended early (the client went away)")));
  });
  return { buffer: fixed, done };
}

/**
 * Bytes held back from a {@link streamBody} source until the whole body has arrived and
 * matched its Content-MD5: a store cannot complete a write without them.
 */
export const HOLD_BACK = 64 * 1024;
/** Largest piece a {@link streamBody} source yields at once (a {@link ByteSource} reads in bounded chunks). */
const PIECE = 1024 * 1024;

/** A body passed on while it arrives (see {@link streamBody}). */
export interface StreamedBody {
  /** Re-readable from the first byte; each read follows the arrival of the rest. */
  readonly source: ByteSource;
  /** The whole body and its MD5; rejects as `source` does when the body fails. */
  readonly done: Promise<Body>;
}

/**
 * Receive a body with a Content-Length and a Content-MD5 (`md5Hex`) and let a store write
 * it while it arrives: `source` yields what has arrived and waits for the rest, all but the
 * last {@link HOLD_BACK} bytes, which come only once the whole body hashed to `md5Hex`.
 * When it does not (`MD5_MISMATCH`), or the client stalls or goes away, every read of
 * `source` fails, so the write never completes and nothing is stored. One buffer holds the
 * body; reads yield slices of it (no copy), so the store may read it again (a retry).
 */
export function streamBody(req: IncomingMessage, limits: BodyLimits, md5Hex: string): StreamedBody {
  let filled = 0;
  let verdict: "pending" | "ok" | Error = "pending";
  let waiters: (() => void)[] = [];
  const wake = (): void => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  const { buffer, done: received } = receive(req, limits, (n) => {
    filled = n;
    wake();
  });
  if (buffer === undefined) throw new ObjstateError("BAD_REQUEST", "a streamed request body needs a Content-Length");
  const done = received.then((body) => {
    checkContentMd5(Buffer.from(md5Hex, "hex").toString("base64"), body.md5);
    return body;
  });
  done.then(
    () => (verdict = "ok"),
    (e: unknown) => (verdict = e instanceof Error ? e : new Error(String(e))),
  ).finally(wake);
  const size = buffer.length;
  return {
    done,
    source: {
      size,
      verifiedMd5: md5Hex,
      async *open(): AsyncIterable<Uint8Array> {
        let at = 0;
        for (;;) {
          if (verdict instanceof Error) throw verdict;
          const limit = verdict === "ok" ? size : Math.min(filled, size - HOLD_BACK);
          // Pieces of at least PIECE bytes (unless that is all there will be for now): a
          // store writes each one by itself, and many small writes cost more than the bytes.
          if (at < limit && (limit - at >= PIECE || verdict === "ok" || limit === size - HOLD_BACK)) {
            const end = Math.min(limit, at + PIECE);
            yield buffer.subarray(at, end);
            at = end;
          } else if (at >= size) return;
          else await new Promise<void>((resolve) => waiters.push(resolve));
        }
      },
    },
  };
}

/** The hex MD5 a Content-MD5 header (base64) announces; undefined when it is absent or not an MD5. */
export function declaredMd5(header: string | undefined): string | undefined {
  if (header === undefined || !/^[A-Za-z0-9+/]{22}==$/.test(header.trim())) return undefined;
  return Buffer.from(header.trim(), "base64").toString("hex");
}

interface Hasher {
  update(chunk: Buffer): void;
  digest(): Promise<string>;
}

/** MD5 inline for small bodies; in the worker, fed as chunks arrive, for large ones. */
function hasher(declared: number | undefined): Hasher {
  if (declared === undefined || declared < PARALLEL_MD5_MIN) {
    const h = createHash("md5");
    let result: string | undefined;
    return { update: (c) => void h.update(c), digest: () => Promise.resolve((result ??= h.digest("hex"))) };
  }
  const h = new ParallelMd5();
  // Chunks are fresh buffers from the socket: holding them until the worker has room costs no copy.
  let chain: Promise<void> = Promise.resolve();
  let result: Promise<string> | undefined;
  return {
    update: (c) => void (chain = chain.then(() => h.write(c))),
    digest: () => (result ??= chain.then(() => h.digest())),
  };
}

/**
 * Check the body against a `Content-MD5` header (base64 of the MD5), when there is one:
 * a body damaged on the way is refused, never stored.
 */
export function checkContentMd5(header: string | undefined, md5Hex: string): void {
  if (header === undefined || header === "") return;
  const given = Buffer.from(header, "base64").toString("hex");
  if (given !== md5Hex) {
    throw new ObjstateError("MD5_MISMATCH", `the body does not match its Content-MD5 header (header ${header}, body ${Buffer.from(md5Hex, "hex").toString("base64")}): it was damaged on the way; send it again`);
  }
}
