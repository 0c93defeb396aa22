/**
 * Top-level members of a JSON document (the state's `outputs`, `version`, `modules`)
 * without parsing the rest of it.
 *
 * A large state is mostly `resources`; parsing all of it to read a few outputs costs a
 * UTF-8 decode of the whole text and a full `JSON.parse` that builds every object. The
 * scanner here walks the bytes once instead:
 *
 * - At the top level (depth 1) it follows the grammar strictly: `{`, then `"key" : value`
 *   members separated by `,`, then `}` and only whitespace to the end. Keys are compared
 *   as decoded strings (`"out\u0070uts"` is `outputs`); a key seen twice keeps its last
 *   value, as `JSON.parse` does.
 * - A nested value (object or array) is checked against the JSON grammar by a byte loop
 *   (json/validate.ts) that builds nothing, so a document is refused by the scan exactly
 *   when `JSON.parse` refuses it: a state is accepted or refused the same way whatever its
 *   size. The loop also enforces the tool's nesting limit ({@link MAX_NESTING}).
 * - Only the byte spans of the wanted members are returned; the caller parses those.
 *
 * Anything the scan refuses is handed to `JSON.parse` of the whole document, whose
 * `SyntaxError` (with its position) is what the caller reports.
 *
 * Below {@link DEFAULT_SCAN_THRESHOLD} the document is parsed whole with `JSON.parse`
 * (for small documents it is as fast, and the scanner's first run is cold code) and then
 * scanned for the spans, which for a document `JSON.parse` accepts always succeeds unless
 * it is nested too deep.
 */
import { Buffer } from "node:buffer";
import { decode, encodeNames, isWs, keyName, SCALAR, skipWs, strictString } from "../json/bytes.js";
import { checkContainer, INVALID, MAX_NESTING, TOO_DEEP } from "../json/validate.js";

export { MAX_NESTING } from "../json/validate.js";

const QUOTE = 0x22;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const COLON = 0x3a;

/**
 * Documents smaller than this are parsed whole: below it, a full parse is faster than the
 * scanner running as cold code in a fresh process.
 */
export const DEFAULT_SCAN_THRESHOLD = 1536 * 1024;

/** The JSON type of a document's top-level value. */
export type TopLevelKind = "object" | "array" | "string" | "number" | "boolean" | "null";

/** Where the wanted top-level members' values are. */
export interface Located {
  /** Type of the top-level value. Members are only ever found in an `object`. */
  readonly kind: TopLevelKind;
  /** Byte spans `[start, end)` of the wanted members the top-level object has (last occurrence of each). */
  readonly spans: ReadonlyMap<string, readonly [number, number]>;
  /** `scan` when the scanner found them without a full parse, `parse` when the whole document was parsed. */
  readonly method: "scan" | "parse";
}

/** What {@link extractTopLevel} found. */
export interface Extracted {
  /** Type of the top-level value. Members are only ever found in an `object`. */
  readonly kind: TopLevelKind;
  /** The wanted members the top-level object has (own properties), with their parsed values. */
  readonly members: ReadonlyMap<string, unknown>;
  /** `scan` when the scanner found them, `parse` when the whole document was parsed. */
  readonly method: "scan" | "parse";
}

export interface ExtractOptions {
  /** Documents of at least this many bytes are scanned; smaller ones parsed whole. */
  readonly scanThreshold?: number | undefined;
}

/** A document nested deeper than the tool accepts ({@link MAX_NESTING} levels). */
export class NestingError extends Error {
  constructor() {
    super(`it is nested more than ${MAX_NESTING} levels deep (the tool's limit)`);
    this.name = "NestingError";
  }
}

/**
 * The spans of the members `names` of the top-level object of the JSON document `bytes`
 * (UTF-8). Accepts and refuses exactly the documents `JSON.parse` does (plus the nesting
 * limit), whichever path runs.
 *
 * @throws SyntaxError (from `JSON.parse`) when the document is not valid JSON;
 *   {@link NestingError} when it is nested too deep.
 */
export function locateTopLevel(bytes: Uint8Array, names: readonly string[], options: ExtractOptions = {}): Located {
  const threshold = options.scanThreshold ?? DEFAULT_SCAN_THRESHOLD;
  if (bytes.length >= threshold) {
    const r = scan(bytes, names);
    if (r instanceof Map) return { kind: "object", spans: r, method: "scan" };
    if (r === TOO_DEEP) throw new NestingError();
  }
  const doc: unknown = JSON.parse(decode(bytes, 0, bytes.length));
  const kind: TopLevelKind = doc === null ? "null" : Array.isArray(doc) ? "array" : (typeof doc as "object" | "string" | "number" | "boolean");
  if (kind !== "object") return { kind, spans: new Map(), method: "parse" };
  const r = scan(bytes, names);
  if (r === TOO_DEEP) throw new NestingError();
  // Not expected: the scan follows the same grammar as JSON.parse.
  if (r === INVALID) throw new SyntaxError("the document could not be scanned");
  return { kind, spans: r, method: "parse" };
}

/**
 * The members `names` of the top-level object of the JSON document `bytes` (UTF-8), parsed
 * with `JSON.parse` (numbers become JS numbers). Same answer as `JSON.parse(text)` would
 * give for every valid document nested no deeper than {@link MAX_NESTING}.
 *
 * @throws SyntaxError (from `JSON.parse`) when the document is not valid JSON;
 *   {@link NestingError} when it is nested too deep.
 */
export function extractTopLevel(bytes: Uint8Array, names: readonly string[], options: ExtractOptions = {}): Extracted {
  const { kind, spans, method } = locateTopLevel(bytes, names, options);
  const members = new Map<string, unknown>();
  for (const [name, [start, end]] of spans) members.set(name, JSON.parse(decode(bytes, start, end)));
  return { kind, members, method };
}

/**
 * `JSON.parse(text).outputs` for a document whose top level is an object (undefined when it
 * has no `outputs` member); undefined for other top-level values.
 *
 * @throws SyntaxError when the document is not valid JSON.
 */
export function extractOutputs(bytes: Uint8Array, options: ExtractOptions = {}): unknown {
  return extractTopLevel(bytes, ["outputs"], options).members.get("outputs");
}

/**
 * Byte spans `[start, end)` of the wanted top-level members' values (the last occurrence of
 * each), or null when the document is not a top-level object that scans cleanly (not
 * JSON, or nested too deep).
 */
export function scanTopLevel(b: Uint8Array, names: readonly string[]): Map<string, readonly [number, number]> | null {
  const r = scan(b, names);
  return r instanceof Map ? r : null;
}

/** {@link scanTopLevel}, saying why it failed. */
function scan(b: Uint8Array, names: readonly string[]): Map<string, readonly [number, number]> | typeof INVALID | typeof TOO_DEEP {
  const wanted = encodeNames(names);
  const spans = new Map<string, readonly [number, number]>();
  const n = b.length;
  let i = skipWs(b, 0);
  if (b[i] !== OPEN_BRACE) return INVALID;
  i = skipWs(b, i + 1);
  if (b[i] === CLOSE_BRACE) {
    i++;
  } else {
    for (;;) {
      if (b[i] !== QUOTE) return INVALID;
      const keyEnd = strictString(b, i + 1);
      if (keyEnd < 0) return INVALID;
      const name = keyName(b, i + 1, keyEnd, wanted);
      i = skipWs(b, keyEnd + 1);
      if (b[i] !== COLON) return INVALID;
      const start = skipWs(b, i + 1);
      const c = b[start];
      let end: number;
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        end = checkContainer(b, start, MAX_NESTING - 1);
        if (end === TOO_DEEP) return TOO_DEEP;
      } else if (c === QUOTE) {
        const close = strictString(b, start + 1);
        end = close < 0 ? -1 : close + 1;
      } else {
        end = start;
        while (end < n && !isWs(b[end]) && b[end] !== COMMA && b[end] !== CLOSE_BRACE) end++;
        if (end === start || !SCALAR.test(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString("latin1"))) end = -1;
      }
      if (end < 0) return INVALID;
      if (name !== undefined) spans.set(name, [start, end]);
      i = skipWs(b, end);
      if (b[i] === COMMA) {
        i = skipWs(b, i + 1);
        continue;
      }
      if (b[i] !== CLOSE_BRACE) return INVALID;
      i++;
      break;
    }
  }
  return skipWs(b, i) === n ? spans : INVALID;
}
