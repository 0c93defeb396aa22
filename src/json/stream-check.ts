/**
 * Is a document arriving in chunks one JSON object? The check `JSON.parse` would make, done
 * on the bytes as they stream past (json/validate.ts's resumable grammar check), so a
 * state of any size is checked without ever being a string (Node's strings stop short of
 * 2^29 characters), and memory stays bounded.
 *
 * Only the byte offset of a failure is tracked on the hot path; its line and column come
 * from {@link positionAt}, a second pass that runs only when something is wrong.
 */
import { isAscii } from "node:buffer";
import { ContainerCheck, INVALID, MAX_NESTING, NEED_MORE, TOO_DEEP } from "./validate.js";
import { invisibleCharacterName } from "./syntax-error.js";

/** Why a document is not one JSON object. */
export type StreamCheckFailure =
  /** Not valid JSON: `offset` is the byte the problem is at (the length when it ended too early). */
  | { readonly kind: "syntax"; readonly offset: number; readonly reason: "unexpected" | "end" | "after" | "too-deep" }
  /** Valid JSON (or at least not starting like an object), but not an object: `what` it is instead. */
  | { readonly kind: "not-object"; readonly what: string };

const enum Stage {
  /** Before the first byte that is not whitespace. */
  Start,
  /** Inside the top-level container. */
  Inside,
  /** After it: only whitespace may follow. */
  Trail,
  Failed,
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;

function isWs(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Checks a JSON document chunk by chunk; {@link end} gives the verdict. */
export class JsonObjectStreamCheck {
  private stage = Stage.Start;
  /** Bytes of the document in chunks already fed. */
  private base = 0;
  private check: ContainerCheck | undefined;
  private topIsArray = false;
  private failure: StreamCheckFailure | undefined;

  /** Check the next chunk; false once the document is known to be wrong (feeding more does nothing). */
  feed(chunk: Uint8Array): boolean {
    let i = 0;
    const n = chunk.length;
    while (i < n && this.stage !== Stage.Failed) {
      switch (this.stage) {
        case Stage.Start: {
          while (i < n && isWs(chunk[i])) i++;
          if (i === n) break;
          const c = chunk[i] as number;
          if (c === OPEN_BRACE || c === OPEN_BRACKET) {
            this.topIsArray = c === OPEN_BRACKET;
            this.check = new ContainerCheck(i, MAX_NESTING);
            this.stage = Stage.Inside;
          } else if (c === 0x22 || c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e) {
            // A string, number or literal: JSON perhaps, a state never.
            this.fail({ kind: "not-object", what: c === 0x22 ? "a string" : c === 0x74 || c === 0x66 ? "a boolean" : c === 0x6e ? "null" : "a number" });
          } else {
            this.fail({ kind: "syntax", offset: this.base + i, reason: "unexpected" });
          }
          break;
        }
        case Stage.Inside: {
          const check = this.check as ContainerCheck;
          check.i = i;
          const r = check.run(chunk, n);
          if (r === NEED_MORE) {
            i = n;
          } else if (r === INVALID || r === TOO_DEEP) {
            this.fail({ kind: "syntax", offset: this.base + check.failedAt, reason: r === TOO_DEEP ? "too-deep" : "unexpected" });
          } else {
            i = r;
            this.stage = Stage.Trail;
          }
          break;
        }
        case Stage.Trail: {
          while (i < n && isWs(chunk[i])) i++;
          if (i < n) this.fail({ kind: "syntax", offset: this.base + i, reason: "after" });
          break;
        }
      }
    }
    this.base += n;
    return this.stage !== Stage.Failed;
  }

  /** After the last chunk: undefined when the document is one JSON object, else why not. */
  end(): StreamCheckFailure | undefined {
    if (this.failure !== undefined) return this.failure;
    if (this.stage !== Stage.Trail) return { kind: "syntax", offset: this.base, reason: "end" };
    return this.topIsArray ? { kind: "not-object", what: "an array" } : undefined;
  }

  private fail(f: StreamCheckFailure): void {
    this.failure = f;
    this.stage = Stage.Failed;
  }
}

/** Where a byte offset is, for a person: line and column (UTF-16 units, both from 1, as editors count), and the character there. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
  /** The character at the offset (undefined at the end): only ever named when invisible, never shown. */
  readonly char: string | undefined;
}

/**
 * The line and column of byte `offset` of a UTF-8 document read again from its start
 * (stops reading just past it). Lines end at `\n`, like the line numbers of `JSON.parse`
 * errors elsewhere in objstate.
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
  for (let k = 0; k < b.length; k++) {
    const c = b[k] as number;
    if (c >= 0x80 && c < 0xc0) units--;
    else if (c >= 0xf0) units++;
  }
  return units;
}

/** The problem in words (no text of the document: at most the name of an invisible character). */
export function describeFailure(f: Extract<StreamCheckFailure, { kind: "syntax" }>, char: string | undefined): string {
  if (f.reason === "end") return "unexpected end of input";
  if (f.reason === "too-deep") return `nested deeper than ${MAX_NESTING} levels, the tool's limit`;
  const invisible = invisibleCharacterName(char);
  if (invisible !== undefined) return `unexpected ${invisible.replace(/^an? /, "")}, which most editors do not show: delete it`;
  return f.reason === "after" ? "unexpected character after the end of the JSON object" : "unexpected character";
}
