/**
 * The one reader of HTTP request bodies (the server's routes, the console's forms): refused above
 * the limit before a byte is read (Content-Length) or once the count passes it, dropped below the
 * minimum rate, hashed as it arrives, kept as the socket's own chunks.
 */
import type { IncomingMessage } from "node:http";
import { ObjstateError } from "../errors.js";
import { hasherFor, md5Hex } from "../util/md5.js";

/** The minimum rate of a body: this many bytes in every window of the client timeout (docs/decisions/006). */
export const MIN_BODY_BYTES_PER_WINDOW = 4 * 1024;

export interface BodyLimits {
  readonly maxBytes: number;
  /** The window of the minimum-rate rule. */
  readonly idleMs: number;
  /** What sets `maxBytes`, for messages (default `--max-state-size`). */
  readonly maxBytesName?: string | undefined;
}

/** A body read whole: the socket's chunks, their size and hex MD5. */
export interface Body {
  readonly chunks: readonly Buffer[];
  readonly size: number;
  readonly md5: string;
  /** The body in one buffer (the chunk itself when there is one). */
  bytes(): Buffer;
}

const receiving = new WeakSet<IncomingMessage>();

/** Has {@link readBody} taken the request's body, timing it or refusing it (then the server answers it: nothing else need time it)? */
export function isReceiving(req: IncomingMessage): boolean {
  return receiving.has(req);
}

function tooLarge(size: number | undefined, max: number, name = "--max-state-size"): ObjstateError {
  const why = `the request body${size === undefined ? "" : ` (${size} bytes)`} is larger than this server accepts (${max} bytes, ${name})`;
  return new ObjstateError("BODY_TOO_LARGE", why, { details: { max } });
}

function declaredLength(req: IncomingMessage): number | undefined {
  const declared = req.headers["content-length"];
  return declared === undefined ? undefined : Number(declared);
}

/** Refuse at once a body whose announced length is over the limit. */
export function checkDeclaredLength(req: IncomingMessage, limits: BodyLimits): void {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limits.maxBytes) throw tooLarge(declared, limits.maxBytes, limits.maxBytesName);
}

function bodyOf(chunks: Buffer[], size: number, md5: string): Body {
  let joined: Buffer | undefined;
  return { chunks, size, md5, bytes: () => (joined ??= chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)) };
}

/** Read the body whole, within `limits`. */
export async function readBody(req: IncomingMessage, limits: BodyLimits): Promise<Body> {
  checkDeclaredLength(req, limits);
  return arrivedBody(req, limits) ?? receiveBody(req, limits);
}

/** The body when all of it came with the headers (LOCK, UNLOCK, small POSTs): taken at once, no timer or listeners. */
function arrivedBody(req: IncomingMessage, limits: BodyLimits): Body | undefined {
  if (req.readableFlowing !== null || req.readableDidRead) return undefined;
  const declared = declaredLength(req);
  if (req.complete !== true && (declared === undefined || req.readableLength !== declared)) return undefined;
  if (req.readableLength > limits.maxBytes) throw tooLarge(undefined, limits.maxBytes, limits.maxBytesName);
  const read: unknown = req.readableLength === 0 ? null : req.read();
  const bytes = Buffer.isBuffer(read) ? read : Buffer.alloc(0);
  return bodyOf([bytes], bytes.length, md5Hex(bytes));
}

function receiveBody(req: IncomingMessage, limits: BodyLimits): Promise<Body> {
  const declared = declaredLength(req);
  const chunks: Buffer[] = [];
  let filled = 0;
  return new Promise<Body>((resolve, reject) => {
    const hash = hasherFor(declared);
    let hashed: Promise<void> = Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const fail = (e: ObjstateError): void => {
      clearTimeout(timer);
      void hashed.then(() => hash.digest()).catch(() => undefined); // releases the worker's job
      req.removeAllListeners("data");
      req.pause();
      reject(e);
    };
    // One timer per window, not one per chunk: the rate rule looks at what a whole window brought.
    let windowBytes = 0;
    const judge = (): void => {
      if (windowBytes < MIN_BODY_BYTES_PER_WINDOW) {
        const what = windowBytes === 0 ? "nothing" : `only ${windowBytes} bytes`;
        const why = `the client sent ${what} of its request body in ${limits.idleMs} ms; a body must keep up at least ${MIN_BODY_BYTES_PER_WINDOW} bytes per --client-timeout`;
        return fail(new ObjstateError("CLIENT_TIMEOUT", why));
      }
      windowBytes = 0;
      timer = setTimeout(judge, limits.idleMs);
    };
    timer = setTimeout(judge, limits.idleMs);
    receiving.add(req);
    req.on("data", (chunk: Buffer) => {
      if (filled + chunk.length > limits.maxBytes) return fail(tooLarge(undefined, limits.maxBytes, limits.maxBytesName));
      if (declared !== undefined && filled + chunk.length > declared)
        return fail(new ObjstateError("BAD_REQUEST", "the request body is longer than its Content-Length"));
      chunks.push(chunk);
      filled += chunk.length;
      windowBytes += chunk.length;
      hashed = hashed.then(() => hash.write(chunk));
    });
    req.on("end", () => {
      clearTimeout(timer);
      receiving.delete(req);
      if (declared !== undefined && filled !== declared) return reject(new ObjstateError("BAD_REQUEST", "the request body is shorter than its Content-Length"));
      hashed.then(() => hash.digest()).then((md5) => resolve(bodyOf(chunks, filled, md5)), reject);
    });
    req.on("error", () => fail(new ObjstateError("BAD_REQUEST", "the request body ended early (the client went away)")));
  });
}

/** A body that does not match its `Content-MD5` header was damaged on the way: refused, never stored. */
export function checkContentMd5(header: string | undefined, md5Hex: string): void {
  if (header === undefined || header === "") return;
  const given = Buffer.from(header, "base64").toString("hex");
  if (given === md5Hex) return;
  const body = Buffer.from(md5Hex, "hex").toString("base64");
  throw new ObjstateError(
    "MD5_MISMATCH",
    `the body does not match its Content-MD5 header (header ${header}, body ${body}): it was damaged on the way; send it again`,
  );
}
