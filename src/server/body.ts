/**
 * Request bodies: refused above the size limit before a byte is read (Content-Length) or as
 * soon as the count passes it (chunked), dropped when the client falls below the minimum
 * rate ({@link MIN_BODY_BYTES_PER_WINDOW} per window), hashed while
 * they arrive (large ones in the MD5 worker, on another core than the one receiving), and
 * held as the socket's own chunks (never copied until a caller needs them joined).
 */
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { ObjstateError } from "../errors.js";
import type { ByteSource } from "../store/types.js";
import { LENT_MAX, LENT_MIN, type BodyBuffers } from "./body-buffers.js";
import { md5Hex, PARALLEL_MD5_MIN, ParallelMd5 } from "../util/md5.js";

/**
 * The minimum rate of a request body: at least this many bytes in every window of the
 * client timeout, or the request is dropped (docs/decisions/006). A rate, not a deadline:
 * an upload of any size on a slow link that keeps moving is never cut, while a client that
 * drips a byte now and then to hold the connection is. 4 KiB is about three TCP segments:
 * in the default 30 s window a link with any data to send moves that much even through
 * retransmission back-offs (~137 bytes/s).
 */
export const MIN_BODY_BYTES_PER_WINDOW = 4 * 1024;

/** Limits on a request body. */
export interface BodyLimits {
  /** Largest body accepted, in bytes. */
  readonly maxBytes: number;
  /** The window of the minimum-rate rule: a body that brings fewer than {@link MIN_BODY_BYTES_PER_WINDOW} in this long is dropped. */
  readonly idleMs: number;
  /** What sets `maxBytes`, for the message of a body over it (default `--max-state-size`). */
  readonly maxBytesName?: string | undefined;
}

/** Requests whose body {@link receiveBody} is reading (and timing) now. */
const receiving = new WeakSet<IncomingMessage>();

/** Is a body reader of this module timing the request's body (so that nothing else need)? */
export function isReceiving(req: IncomingMessage): boolean {
  return receiving.has(req);
}

/** A body read whole, with its MD5 (hex). */
export interface Body {
  readonly bytes: Buffer;
  readonly md5: string;
  /**
   * Give the buffer `bytes` lies in back to the server's {@link BodyBuffers}, once nothing will
   * read `bytes` again: after a write that succeeded, never after one that failed (a store call
   * may still be reading it). A no-op for a body that was not lent a buffer.
   */
  release(): void;
}

const keepIt = (): void => undefined;

export function tooLarge(size: number | undefined, max: number, name = "--max-state-size"): ObjstateError {
  return new ObjstateError(
    "BODY_TOO_LARGE",
    `the request body${size === undefined ? "" : ` (${size} bytes)`} is larger than this server accepts (${max} bytes, ${name})`,
    { details: { max } },
  );
}

/** Refuse at once a body whose announced length is over the limit. */
export function checkDeclaredLength(req: IncomingMessage, limits: BodyLimits): void {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limits.maxBytes) throw tooLarge(Number(declared), limits.maxBytes, limits.maxBytesName);
}

/**
 * Read the body whole. With `buffers`, a body whose Content-Length is between `LENT_MIN` and
 * `LENT_MAX` is copied as it arrives into a buffer lent for the request (see
 * {@link Body.release}); any other is kept as the chunks that arrived, joined once at the end.
 */
export function readBody(req: IncomingMessage, limits: BodyLimits, buffers?: BodyBuffers): Promise<Body> {
  try {
    const arrived = arrivedBody(req, limits);
    if (arrived !== undefined) return Promise.resolve(arrived);
  } catch (e) {
    return Promise.reject(e as Error);
  }
  const declared = req.headers["content-length"] === undefined ? NaN : Number(req.headers["content-length"]);
  if (buffers !== undefined && Number.isSafeInteger(declared) && declared >= LENT_MIN && declared <= Math.min(LENT_MAX, limits.maxBytes)) {
    const lent = buffers.lend(declared);
    const r = receiveBody(req, limits, undefined, lent);
    return r.done.then((md5) => {
      if (r.filled() !== declared) throw new ObjstateError("BAD_REQUEST", "the request body is shorter than its Content-Length");
      return { bytes: lent.subarray(0, declared), md5, release: () => buffers.giveBack(lent) };
    });
  }
  const r = receiveBody(req, limits);
  return r.done.then((md5) => ({
    bytes: r.chunks.length === 1 ? (r.chunks[0] as Buffer) : Buffer.concat(r.chunks, r.filled()),
    md5,
    release: keepIt,
  }));
}

/**
 * The body when all of it has arrived and nothing read it yet (a small request comes in the
 * same socket read as its headers: the tool's LOCK, UNLOCK and small POSTs), taken from the
 * request's buffer at once: no rate timer, listeners or ticks of waiting for it. All of it:
 * the request is complete, or its buffer holds the whole Content-Length (the parser passes
 * on no more). Undefined when some of it is still to come.
 */
export function arrivedBody(req: IncomingMessage, limits: BodyLimits): Body | undefined {
  if (req.readableFlowing !== null || req.readableDidRead) return undefined;
  const declared = req.headers["content-length"] === undefined ? undefined : Number(req.headers["content-length"]);
  if (req.complete !== true && (declared === undefined || req.readableLength !== declared)) return undefined;
  checkDeclaredLength(req, limits);
  if (req.readableLength > limits.maxBytes) throw tooLarge(undefined, limits.maxBytes, limits.maxBytesName);
  const read: unknown = req.readableLength === 0 ? null : req.read();
  const bytes = Buffer.isBuffer(read) ? read : Buffer.alloc(0);
  return { bytes, md5: md5Hex(bytes), release: keepIt };
}

/** Socket reads shorter than this are copied into a shared {@link GATHER} buffer instead of kept as they are. */
const SMALL_READ = 16 * 1024;
const GATHER = 64 * 1024;

/** A body being received (see {@link receiveBody}). */
export interface Receiving {
  /**
   * What arrived so far, in order: the socket's own buffers, kept as they are (small ones
   * gathered). Each read of the socket is a buffer of its own, so holding them costs nothing,
   * where gathering them into one buffer of the announced size cost a copy of every byte and
   * the page faults of a fresh allocation of that size, on the thread that also receives.
   */
  readonly chunks: Buffer[];
  /** Bytes received (all of them in {@link chunks} once the body ended). */
  filled(): number;
  /** The MD5 (hex) of the whole body, once it has all arrived. */
  readonly done: Promise<string>;
}

/**
 * Receive a body: checked against the limits, hashed as it arrives, kept as the socket's
 * reads (small ones gathered), or copied into `into` as they arrive (then `chunks` stays
 * empty; a body longer than `into` is refused as longer than its Content-Length). `onChunk`
 * is called after each read.
 */
export function receiveBody(req: IncomingMessage, limits: BodyLimits, onChunk?: () => void, into?: Buffer): Receiving {
  checkDeclaredLength(req, limits);
  const declared = req.headers["content-length"] === undefined ? undefined : Number(req.headers["content-length"]);
  const chunks: Buffer[] = [];
  let filled = 0;
  // Small reads (a client that writes in small pieces) are gathered into shared buffers and
  // listed once a buffer is full (or a large read or the end comes), so the list holds few
  // objects per byte whatever the client does. Listed entries never change.
  let gather: Buffer | undefined;
  let gathered = 0;
  let runStart = 0;
  const seal = (): void => {
    if (gather === undefined || gathered === runStart) return;
    chunks.push(gather.subarray(runStart, gathered));
    runStart = gathered;
  };
  const keep = (chunk: Buffer): void => {
    if (into !== undefined) {
      // Checked by the caller: `filled + chunk.length` is within the Content-Length, and `into` holds it.
      chunk.copy(into, filled);
      return;
    }
    if (chunk.length >= SMALL_READ) {
      seal();
      chunks.push(chunk);
      return;
    }
    if (gather === undefined || gathered + chunk.length > gather.length) {
      seal();
      // No larger than what is still to come: a small body (lock info) costs no 64 KiB.
      gather = Buffer.allocUnsafe(declared === undefined ? GATHER : Math.max(chunk.length, Math.min(GATHER, declared - filled)));
      gathered = 0;
      runStart = 0;
    }
    chunk.copy(gather, gathered);
    gathered += chunk.length;
    if (gathered === gather.length) seal();
  };
  const done = new Promise<string>((resolve, reject) => {
    const hash = hasher(declared);
    let timer: NodeJS.Timeout | undefined;
    const fail = (e: ObjstateError): void => {
      clearTimeout(timer);
      receiving.delete(req);
      hash.digest().catch(() => undefined); // releases the worker's job
      req.removeAllListeners("data");
      req.pause();
      reject(e);
    };
    // One timer per window, not one per chunk: the rate rule looks at what a whole window brought.
    let windowBytes = 0;
    const judge = (): void => {
      if (windowBytes < MIN_BODY_BYTES_PER_WINDOW) {
        const what = windowBytes === 0 ? "nothing" : `only ${windowBytes} bytes`;
        return fail(
          new ObjstateError(
            "CLIENT_TIMEOUT",
            `the client sent ${what} of its request body in ${limits.idleMs} ms; a body must keep up at least ${MIN_BODY_BYTES_PER_WINDOW} bytes per --client-timeout`,
          ),
        );
      }
      windowBytes = 0;
      timer = setTimeout(judge, limits.idleMs);
    };
    timer = setTimeout(judge, limits.idleMs);
    receiving.add(req);
    req.on("data", (chunk: Buffer) => {
      if (filled + chunk.length > limits.maxBytes) return fail(tooLarge(undefined, limits.maxBytes, limits.maxBytesName));
      if ((declared !== undefined && filled + chunk.length > declared) || (into !== undefined && filled + chunk.length > into.length))
        return fail(new ObjstateError("BAD_REQUEST", "the request body is longer than its Content-Length"));
      keep(chunk);
      filled += chunk.length;
      windowBytes += chunk.length;
      hash.update(chunk);
      onChunk?.();
    });
    req.on("end", () => {
      clearTimeout(timer);
      receiving.delete(req);
      seal();
      hash.digest().then(resolve, reject);
    });
    req.on("error", () => fail(new ObjstateError("BAD_REQUEST", "the request body ended early (the client went away)")));
  });
  return { chunks, filled: () => filled, done };
}

/**
 * Bytes held back from a {@link streamBody} source until the whole body has arrived and
 * matched its Content-MD5: a store cannot complete a write without them.
 */
export const HOLD_BACK = 64 * 1024;

/** A body passed on while it arrives (see {@link streamBody}). */
export interface StreamedBody {
  /** Re-readable from the first byte; each read follows the arrival of the rest. */
  readonly source: ByteSource;
  /** The whole body's MD5 (hex) once it arrived and matched; rejects as `source` does when the body fails. */
  readonly done: Promise<string>;
  /** The whole body in one buffer (a copy: only for a body that must be looked at whole). */
  whole(): Promise<Buffer>;
}

/**
 * Receive a body with a Content-Length and a Content-MD5 (`md5Hex`) and let a store write
 * it while it arrives: `source` yields what has arrived and waits for the rest, all but the
 * last {@link HOLD_BACK} bytes, which come only once the whole body hashed to `md5Hex`.
 * When it does not (`MD5_MISMATCH`), or the client stalls or goes away, every read of
 * `source` fails, so the write never completes and nothing is stored. The body is held as
 * the socket's chunks; reads yield them (no copy), so the store may read it again (a retry).
 */
export function streamBody(req: IncomingMessage, limits: BodyLimits, md5Hex: string): StreamedBody {
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (!Number.isSafeInteger(declared)) throw new ObjstateError("BAD_REQUEST", "a streamed request body needs a Content-Length");
  let verdict: "pending" | "ok" | Error = "pending";
  let waiters: (() => void)[] = [];
  const wake = (): void => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  const received = receiveBody(req, limits, wake);
  const done = received.done.then((md5) => {
    checkContentMd5(Buffer.from(md5Hex, "hex").toString("base64"), md5);
    // A body that ended short of its Content-Length is no body (the client went away).
    if (received.filled() !== declared) throw new ObjstateError("BAD_REQUEST", "the request body is shorter than its Content-Length");
    return md5;
  });
  done
    .then(
      () => (verdict = "ok"),
      (e: unknown) => (verdict = e instanceof Error ? e : new Error(String(e))),
    )
    .finally(wake);
  const { chunks } = received;
  const size = declared;
  return {
    done,
    whole: () => done.then(() => Buffer.concat(chunks, size)),
    source: {
      size,
      async *open(): AsyncIterable<Uint8Array> {
        let i = 0; // next chunk
        let at = 0; // bytes yielded
        let into = 0; // bytes of chunk i already yielded
        for (;;) {
          if (verdict instanceof Error) throw verdict;
          const limit = verdict === "ok" ? size : size - HOLD_BACK;
          const chunk = chunks[i];
          if (at < limit && chunk !== undefined) {
            const take = Math.min(chunk.length - into, limit - at);
            yield into === 0 && take === chunk.length ? chunk : chunk.subarray(into, into + take);
            at += take;
            into += take;
            if (into === chunk.length) {
              i += 1;
              into = 0;
            }
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
    throw new ObjstateError(
      "MD5_MISMATCH",
      `the body does not match its Content-MD5 header (header ${header}, body ${Buffer.from(md5Hex, "hex").toString("base64")}): it was damaged on the way; send it again`,
    );
  }
}
