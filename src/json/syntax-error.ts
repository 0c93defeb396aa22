/**
 * A JSON syntax error made safe to show: the problem and its line and column, never any of
 * the text (files hold secrets), not even the one character the parser quotes. Characters
 * an editor does not show (a byte-order mark, a zero-width space) are named instead.
 */
import { Buffer, isAscii } from "node:buffer";
import { MAX_NESTING, syntaxErrorOffset, type ScanFailure } from "./scan.js";

/** Characters that look like nothing, or a plain space, in most editors. */
const INVISIBLE: Readonly<Record<string, string>> = {
  "\u00a0": "no-break space",
  "\u00ad": "soft hyphen",
  "\u180e": "Mongolian vowel separator",
  "\u2000": "en quad",
  "\u2001": "em quad",
  "\u2002": "en space",
  "\u2003": "em space",
  "\u2007": "figure space",
  "\u2009": "thin space",
  "\u200a": "hair space",
  "\u200b": "zero-width space",
  "\u200c": "zero-width non-joiner",
  "\u200d": "zero-width joiner",
  "\u200e": "left-to-right mark",
  "\u200f": "right-to-left mark",
  "\u2028": "line separator",
  "\u2029": "paragraph separator",
  "\u202f": "narrow no-break space",
  "\u2060": "word joiner",
  "\u3000": "ideographic space",
  "\ufeff": "byte-order mark",
};

/** `a zero-width space (U+200B)` for an invisible character, else undefined. */
export function invisibleCharacterName(ch: string | undefined): string | undefined {
  if (ch === undefined || ch === "") return undefined;
  const cp = ch.codePointAt(0) as number;
  const u = `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
  const name = INVISIBLE[ch];
  if (name !== undefined) return `a ${name} (${u})`;
  if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) return `a control character (${u})`;
  return undefined;
}

/**
 * `e` from `JSON.parse` of `source` (its text, or its UTF-8 bytes: not decoded whole to count lines) as
 * `problem` (`Expected ',' or '}' after property value`) and `at` (`at line L, column C`, or "").
 */
export function jsonSyntaxProblem(e: unknown, source: string | Uint8Array): { readonly problem: string; readonly at: string } {
  const bytes = typeof source === "string" ? undefined : Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  const textBefore = (p: number): string => (bytes === undefined ? (source as string).slice(0, p) : bytes.toString("utf8", 0, p));
  const total = source.length;
  const locate = (): number | undefined => {
    if (bytes !== undefined) return syntaxErrorOffset(bytes);
    const b = Buffer.from(source as string);
    const offset = syntaxErrorOffset(b);
    return offset === undefined ? undefined : b.toString("utf8", 0, offset).length;
  };
  const message = e instanceof Error ? e.message : String(e);
  const unexpectedToken = /^Unexpected token/.test(message);
  const m = /at position (\d+)/.exec(message);
  let position: number | undefined;
  if (m !== null) position = Number(m[1]);
  else if (unexpectedToken) position = locate();
  else if (/end of JSON input/i.test(message)) position = total;

  // The character at the error, only to name it when it is invisible; never shown itself.
  let ch: string | undefined;
  if (position !== undefined && position !== total) {
    ch = textBefore(position + 1).slice(-1);
  } else if (unexpectedToken) {
    ch = /^Unexpected token '(.+?)'/su.exec(message)?.[1];
  }
  const invisible = invisibleCharacterName(ch);
  let problem: string;
  if (unexpectedToken) problem = unexpected(invisible) ?? "unexpected character";
  else {
    problem = message
      .replace(/, (?:\.\.\.)?".*$/s, "")
      .replace(/ (?:in JSON )?at position \d+.*$/s, "")
      .replace(/ \(line \d+ column \d+\)$/, "");
    if (invisible !== undefined) problem += `; the character there is ${invisible}, which most editors do not show`;
  }
  if (position === undefined) return { problem, at: "" };
  const before = textBefore(position);
  return { problem, at: `at line ${before.split("\n").length}, column ${before.length - before.lastIndexOf("\n")}` };
}

/**
 * Line and column (UTF-16 units from 1, as editors count) of byte `offset`, and the character
 * there (only ever named when invisible), read again up to it: a pass only when something is wrong.
 */
export async function positionAt(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  offset: number,
): Promise<{ readonly line: number; readonly column: number; readonly char: string | undefined }> {
  let line = 1;
  let column = 1;
  let seen = 0;
  const tail: number[] = [];
  for await (const chunk of chunks) {
    const upTo = Math.min(chunk.length, offset - seen);
    if (upTo > 0) {
      let lineStart = 0;
      for (let nl = chunk.indexOf(0x0a); nl !== -1 && nl < upTo; nl = chunk.indexOf(0x0a, nl + 1)) {
        line++;
        column = 1;
        lineStart = nl + 1;
      }
      column += utf16Units(chunk.subarray(lineStart, upTo));
    }
    for (let k = Math.max(0, offset - seen); k < chunk.length && tail.length < 4; k++) tail.push(chunk[k] as number);
    seen += chunk.length;
    if (seen >= offset + 4) break;
  }
  // A byte that is not UTF-8 decodes to U+FFFD, which names nothing.
  const char = [...Buffer.from(tail).toString("utf8")][0];
  return { line, column, char: char === "\ufffd" ? undefined : char };
}

/** UTF-16 code units of UTF-8 bytes. */
function utf16Units(b: Uint8Array): number {
  if (isAscii(b)) return b.length;
  let units = b.length;
  for (const c of b) {
    if (c >= 0x80 && c < 0xc0) units--;
    else if (c >= 0xf0) units++;
  }
  return units;
}

/** A scan's syntax failure in words. */
export function describeFailure(f: Extract<ScanFailure, { kind: "syntax" }>, char: string | undefined): string {
  if (f.reason === "end") return "unexpected end of input";
  if (f.reason === "too-deep") return `nested deeper than ${MAX_NESTING} levels, the tool's limit`;
  return unexpected(invisibleCharacterName(char)) ?? (f.reason === "after" ? "unexpected character after the end of the JSON object" : "unexpected character");
}

function unexpected(invisible: string | undefined): string | undefined {
  return invisible === undefined ? undefined : `unexpected ${invisible.replace(/^an? /, "")}, which most editors do not show: delete it`;
}
