/**
 * Top-level members of a JSON document (the state's `outputs`, `version`) without parsing
 * the rest of it.
 *
 * A large state is mostly `resources`; parsing all of it to read a few outputs costs a
 * UTF-8 decode of the whole text and a full `JSON.parse` that builds every object. The
 * scanner here walks the bytes once instead:
 *
 * - At the top level (depth 1) it follows the grammar strictly: `{`, then `"key" : value`
 *   members separated by `,`, then `}` and only whitespace to the end. Keys are compared
 *   as decoded strings (`"out\u0070uts"` is `outputs`); a key seen twice keeps its last
 *   value, as `JSON.parse` does.
 * - A nested value (object or array) is skipped by a byte loop that tracks only string
 *   state (a `"` starts or ends a string unless escaped; a `\` escapes the next byte) and
 *   the nesting of `{}` / `[]` (brackets must pair up by kind). A raw `"`, `\`, `{`, `}`,
 *   `[` or `]` byte is never part of a multi-byte UTF-8 sequence, so working on bytes is
 *   the same as working on the decoded text.
 * - Only the values of the wanted members are decoded and handed to `JSON.parse`.
 *
 * Anything unusual (the top level is not an object, a top-level syntax error, an
 * unterminated string or bracket, a wanted value that does not parse) falls back to a full
 * `JSON.parse` of the whole document, which then either throws its own `SyntaxError` or
 * gives the answer. So for every valid JSON document the result is exactly that of
 * `JSON.parse`; what the scan does not do is check the *inside* of the members it skips
 * (a stray `tru` deep inside `resources` goes unnoticed, a truncated or unbalanced document
 * never does). The backend's digest check is what guards a state's bytes.
 *
 * Below {@link DEFAULT_SCAN_THRESHOLD} the full parse is used: for small documents it is as
 * fast, and the scanner's first run is cold code.
 */
import { Buffer } from "node:buffer";

/**
 * Documents smaller than this are parsed whole. Measured in fresh processes (the scanner then
 * runs as cold code; `BENCH_CROSSOVER=1 npm run bench:outputs`): at 1 MiB a full parse is still
 * faster, at 2 MiB the scan takes about half the time.
 */
export const DEFAULT_SCAN_THRESHOLD = 1536 * 1024;

/** The JSON type of a document's top-level value. */
export type TopLevelKind = "object" | "array" | "string" | "number" | "boolean" | "null";

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

/**
 * The members `names` of the top-level object of the JSON document `bytes` (UTF-8).
 * Same answer as `JSON.parse(text)` would give for every valid document.
 *
 * @throws SyntaxError (from `JSON.parse`) when the document is not valid JSON.
 */
export function extractTopLevel(bytes: Uint8Array, names: readonly string[], options: ExtractOptions = {}): Extracted {
  const threshold = options.scanThreshold ?? DEFAULT_SCAN_THRESHOLD;
  if (bytes.length >= threshold) {
    const spans = scanTopLevel(bytes, names);
    if (spans !== null) {
      const members = parseSpans(bytes, spans);
      if (members !== null) return { kind: "object", members, method: "scan" };
    }
  }
  return parseWhole(bytes, names);
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

function decode(bytes: Uint8Array, start: number, end: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString("utf8");
}

function parseWhole(bytes: Uint8Array, names: readonly string[]): Extracted {
  const doc: unknown = JSON.parse(decode(bytes, 0, bytes.length));
  const kind: TopLevelKind = doc === null ? "null" : Array.isArray(doc) ? "array" : (typeof doc as "object" | "string" | "number" | "boolean");
  const members = new Map<string, unknown>();
  if (kind === "object") {
    const obj = doc as Record<string, unknown>;
    for (const name of names) if (Object.hasOwn(obj, name)) members.set(name, obj[name]);
  }
  return { kind, members, method: "parse" };
}

/** Parse the wanted values; null when one does not parse (the caller falls back). */
export function parseSpans(bytes: Uint8Array, spans: ReadonlyMap<string, readonly [number, number]>): Map<string, unknown> | null {
  const members = new Map<string, unknown>();
  try {
    for (const [name, [start, end]] of spans) members.set(name, JSON.parse(decode(bytes, start, end)));
  } catch {
    return null;
  }
  return members;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

export function isWs(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export function skipWs(b: Uint8Array, i: number): number {
  while (isWs(b[i])) i++;
  return i;
}

/** Bytes that may follow `\` in a JSON string (`u` is checked separately). */
const SIMPLE_ESCAPES = new Set([QUOTE, BACKSLASH, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
}

/**
 * A string at the top level, checked strictly (control characters, escapes). `i` is just
 * past the opening quote; returns the index of the closing quote, or -1.
 */
export function strictString(b: Uint8Array, i: number): number {
  const n = b.length;
  while (i < n) {
    const c = b[i] as number;
    if (c === QUOTE) return i;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) {
      i++;
      continue;
    }
    const e = b[i + 1];
    if (e === 0x75) {
      if (!(isHex(b[i + 2]) && isHex(b[i + 3]) && isHex(b[i + 4]) && isHex(b[i + 5]))) return -1;
      i += 6;
    } else if (e !== undefined && SIMPLE_ESCAPES.has(e)) {
      i += 2;
    } else {
      return -1;
    }
  }
  return -1;
}

/** A number or literal at the top level (checked by {@link SCALAR}). */
export const SCALAR = /^(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)$/;

/**
 * Skip the object or array starting at `b[i]` (`{` or `[`): returns the index just past its
 * closing bracket, or -1 when the brackets do not pair up or the input ends first. Tracks
 * strings and nesting only; this loop is where a large state's time goes.
 */
function skipContainer(b: Uint8Array, i: number): number {
  const n = b.length;
  /** Kinds of the open brackets (grows as needed). */
  let st = new Uint8Array(64);
  let depth = 0;
  while (i < n) {
    const c = b[i++];
    if (c === 0x20) {
      // Indentation: runs of spaces are most of a pretty-printed state's structure.
      while (b[i] === 0x20) i++;
    } else if (c === QUOTE) {
      for (;;) {
        let d = b[i++];
        while (d !== QUOTE && d !== BACKSLASH && d !== undefined) d = b[i++];
        if (d === QUOTE) break;
        if (d === undefined) return -1;
        i++; // the escaped byte, whatever it is
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth === st.length) {
        const bigger = new Uint8Array(st.length * 2);
        bigger.set(st);
        st = bigger;
      }
      st[depth++] = c;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      // `{` + 2 is `}`, `[` + 2 is `]`.
      if (depth === 0 || st[--depth] !== c - 2) return -1;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/** Each wanted name as UTF-8 bytes, for comparing keys without decoding them. */
export function encodeNames(names: readonly string[]): { name: string; bytes: Buffer }[] {
  return names.map((name) => ({ name, bytes: Buffer.from(name, "utf8") }));
}

export function keyName(b: Uint8Array, start: number, end: number, wanted: readonly { name: string; bytes: Buffer }[]): string | undefined {
  if (b.subarray(start, end).includes(BACKSLASH)) {
    const key = JSON.parse(decode(b, start - 1, end + 1)) as string;
    return wanted.find((w) => w.name === key)?.name;
  }
  const len = end - start;
  outer: for (const w of wanted) {
    if (w.bytes.length !== len) continue;
    for (let k = 0; k < len; k++) if (b[start + k] !== w.bytes[k]) continue outer;
    return w.name;
  }
  return undefined;
}

/**
 * Byte spans `[start, end)` of the wanted top-level members' values (the last occurrence of
 * each), or null when the document is not a top-level object that scans cleanly.
 */
export function scanTopLevel(b: Uint8Array, names: readonly string[]): Map<string, readonly [number, number]> | null {
  const wanted = encodeNames(names);
  const spans = new Map<string, readonly [number, number]>();
  const n = b.length;
  let i = skipWs(b, 0);
  if (b[i] !== OPEN_BRACE) return null;
  i = skipWs(b, i + 1);
  if (b[i] === CLOSE_BRACE) {
    i++;
  } else {
    for (;;) {
      if (b[i] !== QUOTE) return null;
      const keyEnd = strictString(b, i + 1);
      if (keyEnd < 0) return null;
      const name = keyName(b, i + 1, keyEnd, wanted);
      i = skipWs(b, keyEnd + 1);
      if (b[i] !== COLON) return null;
      const start = skipWs(b, i + 1);
      const c = b[start];
      let end: number;
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        end = skipContainer(b, start);
      } else if (c === QUOTE) {
        const close = strictString(b, start + 1);
        end = close < 0 ? -1 : close + 1;
      } else {
        end = start;
        while (end < n && !isWs(b[end]) && b[end] !== COMMA && b[end] !== CLOSE_BRACE) end++;
        if (end === start || !SCALAR.test(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString("latin1"))) end = -1;
      }
      if (end < 0) return null;
      if (name !== undefined) spans.set(name, [start, end]);
      i = skipWs(b, end);
      if (b[i] === COMMA) {
        i = skipWs(b, i + 1);
        continue;
      }
      if (b[i] !== CLOSE_BRACE) return null;
      i++;
      break;
    }
  }
  return skipWs(b, i) === n ? spans : null;
}
