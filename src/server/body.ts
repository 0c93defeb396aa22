/**
 * Request bodies: refused above the size limit before a byte is read (Content-Length) or as
 * soon as the count passes it (chunked), timed out when the client stalls, hashed while
 * they arrive (large ones in the MD5 worker, on another core than the one receiving), and
 * held in one buffer (never copied twice).
 */
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { ObjstateError } from "../errors.js";
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
  checkDeclaredLength(req, limits);
  const declared = req.headers["content-length"] === undefined ? undefined : Number(req.headers["content-length"]);
  return new Promise<Body>((resolve, reject) => {
    const hash = hasher(declared);
    const fixed = declared !== undefined && Number.isSafeInteger(declared) ? Buffer.allocUnsafe(declared) : undefined;
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
    });
    req.on("end", () => {
      clearTimeout(timer);
      const bytes = fixed !== undefined ? fixed.subarray(0, filled) : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, filled);
      hash.digest().then((md5) => resolve({ bytes, md5 }), reject);
    });
    req.on("error", () => fail(new ObjstateError("BAD_REQUEST", "the request body ended early (the client went away)")));
  });
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
