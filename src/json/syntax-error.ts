/**
 * What a `JSON.parse` SyntaxError says, made safe to show: the problem and where (line and
 * column), never any of the text (config, credentials and state files hold secrets): not
 * the parser's excerpt, and not even the one unexpected character it quotes. Characters a person
 * cannot see in an editor (a byte-order mark, a zero-width or no-break space) are named,
 * since "unexpected character" at a place that looks right is otherwise a riddle.
 */
import { Buffer, isAscii } from "node:buffer";
import { MAX_NESTING, syntaxErrorOffset, type ScanFailure } from "./scan.js";

export interface JsonSyntaxProblem {
  /** e.g. `Expected ',' or '}' after property value`, `unexpected character`. */
  readonly problem: string;
  /** `at line L, column C`, or "" when the position is not known. */
  readonly at: string;
}

/** Characters that look like nothing (or like a plain space) in most editors. */
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

/** `a zero-width space (U+200B)` for an invisible character, else undefined (the character is not shown). */
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
 * @param source the whole document: its text, or its UTF-8 bytes (a large document is then
 *   not decoded whole just to count lines). "Unexpected token" errors, which `JSON.parse`
 *   does not place, are placed by the scanner.
 */
export function jsonSyntaxProblem(e: unknown, source: string | Uint8Array): JsonSyntaxProblem {
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
  if (unexpectedToken) {
    problem = invisible === undefined ? "unexpected character" : `unexpected ${invisible.replace(/^an? /, "")}, which most editors do not show: delete it`;
  } else {
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

/** Where a byte offset is, for a person: line and column (UTF-16 units, both from 1, as editors count), and the character there. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
  /** The character at the offset (undefined at the end): only ever named when invisible, never shown. */
  readonly char: string | undefined;
}

/**
 * The line and column of byte `offset` of a UTF-8 document read again from its start (it
 * stops just past it): a second pass that runs only when something is wrong, so the scan
 * itself tracks nothing but the offset. Lines end at `\n`, as elsewhere in objstate.
 */
export async function positionAt(chunks: AsyncIterable<Uint8Array>, offset: number): Promise<TextPosition> {
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
    // The (up to 4) bytes of the character at the offset.
    for (let k = Math.max(0, offset - seen); k < chunk.length && tail.length < 4; k++) tail.push(chunk[k] as number);
    seen += chunk.length;
    if (seen >= offset + 4) break;
  }
  // The first code point of those bytes; a byte that is not UTF-8 decodes to U+FFFD, which names nothing.
  const char = [...Buffer.from(tail).toString("utf8")][0];
  return { line, column, char: char === "\ufffd" ? undefined : char };
}

/** UTF-16 code units of UTF-8 bytes (continuation bytes add nothing, 4-byte sequences count twice). */
function utf16Units(b: Uint8Array): number {
  if (isAscii(b)) return b.length;
  let units = b.length;
  for (const c of b) {
    if (c >= 0x80 && c < 0xc0) units--;
    else if (c >= 0xf0) units++;
  }
  return units;
}

/** A scan's syntax failure in words (no text of the document: at most the name of an invisible character). */
export function describeFailure(f: Extract<ScanFailure, { kind: "syntax" }>, char: string | undefined): string {
  if (f.reason === "end") return "unexpected end of input";
  if (f.reason === "too-deep") return `nested deeper than ${MAX_NESTING} levels, the tool's limit`;
  const invisible = invisibleCharacterName(char);
  if (invisible !== undefined) return `unexpected ${invisible.replace(/^an? /, "")}, which most editors do not show: delete it`;
  return f.reason === "after" ? "unexpected character after the end of the JSON object" : "unexpected character";
}
