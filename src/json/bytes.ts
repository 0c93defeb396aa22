/**
 * Byte-level pieces of JSON for scanners that read only the top level of a document (a
 * state's `outputs`, its `lineage` and `serial`) without decoding the rest: whitespace,
 * strings checked strictly, scalars, and keys compared without decoding them.
 */
import { Buffer } from "node:buffer";

/** The UTF-8 text of `bytes[start, end)`. */
export function decode(bytes: Uint8Array, start: number, end: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString("utf8");
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

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
