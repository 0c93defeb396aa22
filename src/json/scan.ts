/**
 * The one JSON scanner (docs/decisions/110): a resumable, byte-level check of a whole
 * document against the grammar `JSON.parse` accepts, with the tool's nesting bound, that also
 * notes where each top-level member's value lies and keeps the bytes of the members asked
 * for. Fed chunk by chunk as bytes arrive, or a whole buffer at once, it builds nothing, so
 * a state of any size is checked in bounded memory without ever becoming a string.
 *
 * It must refuse exactly what `JSON.parse` refuses, or a state would be judged by how it was
 * read. Bytes of 0x80 and above are only valid inside strings, where an invalid UTF-8
 * sequence passes as the U+FFFD `JSON.parse` sees after decoding. No recursion: nesting is
 * a byte stack, so 10,000 levels cost 10,000 bytes.
 */
import { Buffer } from "node:buffer";
import { ObjstateError } from "../errors.js";

/** Deepest nesting the tool's JSON decoder accepts (Go's `encoding/json`; the top level counts as one). */
export const MAX_NESTING = 10000;

/** Why a document is not one JSON object. */
export type ScanFailure =
  /** Not valid JSON: `offset` is the byte the problem is at (the length when it ended too early). */
  | { readonly kind: "syntax"; readonly offset: number; readonly reason: "unexpected" | "end" | "after" | "too-deep" }
  /** Not an object: an array (valid), or a document that starts like a string, number or literal. */
  | { readonly kind: "not-object"; readonly what: string };

const enum Mode {
  /** A value must come (after `:`, after `,` in an array, or at the start). */
  Value,
  /** Just after `[`: a value or `]`. */
  ValueOrClose,
  /** Just after `{`: a key or `}`. */
  KeyOrClose,
  /** After `,` in an object: a key. */
  Key,
  Colon,
  /** After a value: `,` or the closing bracket. */
  After,
  /** In a string (`sub`: 0 plain, 1 after `\`, 2–5 hex digits of `\u` still due + 1). */
  Str,
  /** In a number (`sub`: a {@link Num} state). */
  Number,
  /** In `true`, `false` or `null` (`sub`: bytes matched so far). */
  Literal,
  /** After the top-level value: only whitespace. */
  Trail,
}

const enum Num {
  Minus,
  Zero,
  Int,
  Dot,
  Frac,
  E,
  ESign,
  Exp,
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];

const table = (bytes: Iterable<number>): Uint8Array => {
  const t = new Uint8Array(256);
  for (const c of bytes) t[c] = 1;
  return t;
};
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, k) => from + k);
const SIMPLE_ESCAPE = table([QUOTE, BACKSLASH, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);
const HEX = table([...range(0x30, 0x39), ...range(0x41, 0x46), ...range(0x61, 0x66)]);
/** Bytes that end the plain run of a string: one table load per byte where most of a state's bytes go by. */
const STRING_STOP = table([...range(0, 0x1f), QUOTE, BACKSLASH]);

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Scans one JSON document fed in order; {@link end} gives the verdict. */
export class JsonScanner {
  /** Bytes fed so far. */
  offset = 0;
  /** Each kept member's value (the last occurrence, as `JSON.parse` keeps): `[start, end)` in the whole document. */
  readonly spans = new Map<string, readonly [number, number]>();
  /** Each kept member's value bytes (a copy). */
  readonly values = new Map<string, Buffer>();
  /** The top-level container, once it has begun. */
  top: "object" | "array" | undefined;
  private failure: ScanFailure | undefined;
  private depth = 0;
  private st = new Uint8Array(64);
  private mode = Mode.Value;
  private sub = 0;
  private lit = TRUE;
  private inKey = false;
  /** The top-level member being read, and where its value began. */
  private member: string | undefined;
  private valueAt = 0;
  /** A top-level key or kept value being copied: where it began in this chunk (-1: none), and the pieces of earlier chunks. */
  private capFrom = -1;
  private parts: Uint8Array[] = [];

  /**
   * @param keep the top-level members whose value spans and bytes are kept.
   * @param maxDepth deepest nesting allowed, the top level counting as 1.
   */
  constructor(
    private readonly keep: readonly string[] = [],
    private readonly maxDepth = MAX_NESTING,
  ) {}

  /** The top-level value has ended (whitespace may still follow). */
  get complete(): boolean {
    return this.mode === Mode.Trail;
  }

  /** Check the next chunk; false once the document is known to be wrong (feeding more does nothing). */
  feed(b: Uint8Array): boolean {
    if (this.failure !== undefined) return false;
    const n = b.length;
    let { depth, st, mode, sub } = this;
    let key = this.inKey;
    let i = 0;
    let failedAt = -1;
    let reason: "unexpected" | "after" | "too-deep" = "unexpected";
    loop: while (i < n) {
      let c = b[i] as number;
      switch (mode) {
        case Mode.Str:
          if (sub === 0) {
            while (STRING_STOP[c] === 0) {
              if (++i === n) break loop;
              c = b[i] as number;
            }
            i++;
            if (c === QUOTE) {
              mode = key ? Mode.Colon : Mode.After;
              if (depth === 1) this.topEvent(b, i, key);
            } else if (c === BACKSLASH) sub = 1;
            else {
              failedAt = i - 1;
              break loop;
            }
          } else {
            // In an escape: just after `\` (1), or a hex digit of `\u` due.
            if (sub === 1 ? c !== 0x75 && SIMPLE_ESCAPE[c] !== 1 : HEX[c] !== 1) {
              failedAt = i;
              break loop;
            }
            i++;
            sub = sub === 1 ? (c === 0x75 ? 5 : 0) : sub === 2 ? 0 : sub - 1;
          }
          continue;
        case Mode.Number: {
          const digit = isDigit(c);
          let next: number;
          if (sub === Num.Minus || sub === Num.Dot || sub === Num.ESign) next = digit ? (sub === Num.Minus ? (c === 0x30 ? Num.Zero : Num.Int) : sub + 1) : -1;
          else if (sub === Num.E) next = c === 0x2b || c === MINUS ? Num.ESign : digit ? Num.Exp : -1;
          else if (digit && sub !== Num.Zero) next = sub;
          else if (c === 0x2e && (sub === Num.Zero || sub === Num.Int)) next = Num.Dot;
          else if ((c === 0x65 || c === 0x45) && sub !== Num.Exp) next = Num.E;
          else {
            // The number ended before this byte.
            mode = Mode.After;
            if (depth === 1) this.topEvent(b, i, false);
            continue;
          }
          if (next < 0) {
            failedAt = i;
            break loop;
          }
          sub = next;
          i++;
          continue;
        }
        case Mode.Literal:
          if (c !== this.lit[sub]) {
            failedAt = i;
            break loop;
          }
          i++;
          if (++sub === this.lit.length) {
            mode = Mode.After;
            if (depth === 1) this.topEvent(b, i, false);
          }
          continue;
        default:
          break;
      }
      // Structural bytes.
      i++;
      if (isWs(c)) {
        // Indentation: runs of spaces are most of a pretty-printed state's structure.
        while (i < n && b[i] === 0x20) i++;
        continue;
      }
      if (mode === Mode.Value || mode === Mode.ValueOrClose) {
        if (c === CLOSE_BRACKET && mode === Mode.ValueOrClose) {
          mode = --depth === 0 ? Mode.Trail : Mode.After;
          if (depth === 1) this.topEvent(b, i, false);
          continue;
        }
        if (depth === 0 && c !== OPEN_BRACE && c !== OPEN_BRACKET) {
          const what = c === QUOTE ? "a string" : c === 0x74 || c === 0x66 ? "a boolean" : c === 0x6e ? "null" : c === MINUS || isDigit(c) ? "a number" : "";
          if (what !== "") this.failure = { kind: "not-object", what };
          failedAt = i - 1;
          break;
        }
        if (depth === 1 && mode === Mode.Value) this.valueStart(i - 1);
        if (c === QUOTE) {
          mode = Mode.Str;
          sub = 0;
          key = false;
        } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
          if (depth >= this.maxDepth) {
            failedAt = i - 1;
            reason = "too-deep";
            break;
          }
          if (depth === st.length) {
            const bigger = new Uint8Array(st.length * 2);
            bigger.set(st);
            st = bigger;
          }
          if (depth === 0) this.top = c === OPEN_BRACE ? "object" : "array";
          st[depth++] = c;
          mode = c === OPEN_BRACE ? Mode.KeyOrClose : Mode.ValueOrClose;
        } else if (c === MINUS || isDigit(c)) {
          mode = Mode.Number;
          sub = c === MINUS ? Num.Minus : c === 0x30 ? Num.Zero : Num.Int;
        } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
          mode = Mode.Literal;
          this.lit = c === 0x74 ? TRUE : c === 0x66 ? FALSE : NULL;
          sub = 1;
        } else {
          failedAt = i - 1;
          break;
        }
      } else if (mode === Mode.After) {
        const top = st[depth - 1];
        if (c === 0x2c) mode = top === OPEN_BRACE ? Mode.Key : Mode.Value;
        // `{` + 2 is `}`, `[` + 2 is `]`.
        else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && top === c - 2) {
          mode = --depth === 0 ? Mode.Trail : Mode.After;
          if (depth === 1) this.topEvent(b, i, false);
        } else {
          failedAt = i - 1;
          break;
        }
      } else if (mode === Mode.Colon) {
        if (c !== 0x3a) {
          failedAt = i - 1;
          break;
        }
        mode = Mode.Value;
      } else if (mode === Mode.Trail) {
        failedAt = i - 1;
        reason = "after";
        break;
      } else if (c === QUOTE) {
        // Key or KeyOrClose.
        mode = Mode.Str;
        sub = 0;
        key = true;
        if (depth === 1) this.capture(i - 1);
      } else if (c === CLOSE_BRACE && mode === Mode.KeyOrClose) {
        mode = --depth === 0 ? Mode.Trail : Mode.After;
        if (depth === 1) this.topEvent(b, i, false);
      } else {
        failedAt = i - 1;
        break;
      }
    }
    Object.assign(this, { depth, st, mode, sub, inKey: key });
    if (failedAt >= 0) this.failure ??= { kind: "syntax", offset: this.offset + failedAt, reason };
    else if (this.capFrom >= 0) {
      this.parts.push(Uint8Array.prototype.slice.call(b, this.capFrom));
      this.capFrom = 0;
    }
    this.offset += n;
    return this.failure === undefined;
  }

  /** After the last chunk: undefined when the document is one JSON object, else why not. */
  end(): ScanFailure | undefined {
    if (this.failure !== undefined) return this.failure;
    if (this.mode !== Mode.Trail) return { kind: "syntax", offset: this.offset, reason: "end" };
    return this.top === "object" ? undefined : { kind: "not-object", what: "an array" };
  }

  private capture(at: number): void {
    this.capFrom = at;
    this.parts = [];
  }

  private captured(b: Uint8Array, end: number): Buffer {
    this.parts.push(b.subarray(this.capFrom, end));
    this.capFrom = -1;
    return Buffer.concat(this.parts);
  }

  private valueStart(at: number): void {
    if (this.top !== "object") return;
    this.valueAt = this.offset + at;
    if (this.member !== undefined && this.keep.includes(this.member)) this.capture(at);
  }

  /** A top-level key ended at `end` (a key), or a top-level value did. */
  private topEvent(b: Uint8Array, end: number, key: boolean): void {
    if (this.top !== "object") return;
    if (key) {
      this.member = JSON.parse(this.captured(b, end).toString("utf8")) as string;
      return;
    }
    const name = this.member;
    this.member = undefined;
    if (name === undefined || !this.keep.includes(name)) return;
    this.spans.set(name, [this.valueAt, this.offset + end]);
    this.values.set(name, this.captured(b, end));
  }
}

/** A whole document scanned. */
export function scanJson(b: Uint8Array, keep: readonly string[] = [], maxDepth = MAX_NESTING): JsonScanner {
  const s = new JsonScanner(keep, maxDepth);
  s.feed(b);
  return s;
}

/**
 * The byte offset of the first problem in `b`, as `JSON.parse` would place its "Unexpected
 * token" errors (its message gives no position): `b.length` when it ends too early;
 * undefined when nothing is wrong or the top level is not a container.
 */
export function syntaxErrorOffset(b: Uint8Array): number | undefined {
  const f = scanJson(b, [], Infinity).end();
  return f?.kind === "syntax" ? f.offset : undefined;
}

/**
 * Refuse a JSON document nested deeper than {@link MAX_NESTING} (`JSON_TOO_DEEP`) before it is
 * parsed, so what is accepted is walked without overflowing the call stack. Anything else
 * wrong with it is left to the parser; `what` names it for the message; `scan`: of `b`, made already.
 */
export function checkNesting(b: Uint8Array, what: string, scan = scanJson(b)): void {
  const f = scan.end();
  if (f?.kind === "syntax" && f.reason === "too-deep")
    throw new ObjstateError("JSON_TOO_DEEP", `${what} is nested deeper than ${MAX_NESTING} levels, the most objstate (and the tool) accepts`, {
      details: { maxNesting: MAX_NESTING },
    });
}
