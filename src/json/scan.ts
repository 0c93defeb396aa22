/**
 * The one JSON scanner (docs/decisions/110): a resumable byte-level check against the grammar
 * `JSON.parse` accepts (invalid UTF-8 in strings passes, as its U+FFFD) plus the tool's nesting
 * bound, keeping the top-level members asked for. Nesting is a byte stack, never recursion.
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

/** What may come next; `sub` is a string's escape state (1 after `\`, 2–5: hex digits due + 1), the {@link Num} state, or a literal's bytes matched. */
const enum Mode {
  Value,
  /** Just after `[`. */
  ValueOrClose,
  /** Just after `{`. */
  KeyOrClose,
  Key,
  Colon,
  After,
  Str,
  Number,
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
/** Bytes that end a string's plain run: one table load per byte, where most of a state goes by. */
const STRING_STOP = table([...range(0, 0x1f), QUOTE, BACKSLASH]);

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Scans one JSON document fed in order; {@link end} gives the verdict. */
export class JsonScanner {
  offset = 0;
  /** Each kept member's value (the last occurrence, as `JSON.parse` keeps): `[start, end)` in the whole document. */
  readonly spans = new Map<string, readonly [number, number]>();
  /** A copy. */
  readonly values = new Map<string, Buffer>();
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
  /** A top-level key or kept value being copied: its start in this chunk (-1: none), and earlier chunks' pieces. */
  private capFrom = -1;
  private parts: Uint8Array[] = [];
  /** {@link feedUntil}'s member, and where in the chunk its string value began (-1: not yet). */
  private stopKey: string | undefined;
  private stoppedAt = -1;

  /** `keep`: the top-level members whose spans and bytes are kept; `maxDepth` counts the top level as 1. */
  constructor(
    private readonly keep: readonly string[] = [],
    private readonly maxDepth = MAX_NESTING,
  ) {}

  /** The top-level value ended (whitespace may follow). */
  get complete(): boolean {
    return this.mode === Mode.Trail;
  }

  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** False once the document is known to be wrong (feeding more does nothing). */
  feed(b: Uint8Array): boolean {
    this.run(b);
    return this.failure === undefined;
  }

  /** {@link feed} up to just after the opening quote of member `key`'s string: its index, or -1 (all fed); then {@link skipString}. */
  feedUntil(b: Uint8Array, key: string): number {
    this.stopKey = key;
    this.run(b);
    const at = this.stoppedAt;
    this.stopKey = undefined;
    this.stoppedAt = -1;
    return at;
  }

  /** The closing quote's index of the string {@link feedUntil} stopped at, or -1; only for strings without escapes (base64). */
  skipString(b: Uint8Array): { end: number; escapes: boolean } {
    const q = b.indexOf(QUOTE);
    const bs = b.indexOf(BACKSLASH);
    const escapes = bs !== -1 && (q === -1 || bs < q);
    if (q === -1) {
      this.offset += b.length;
      return { end: -1, escapes };
    }
    this.mode = Mode.After;
    this.member = undefined;
    this.offset += q + 1;
    return { end: q, escapes };
  }

  /** After the last chunk: undefined when the document is one JSON object, else why not. */
  end(): ScanFailure | undefined {
    if (this.failure !== undefined) return this.failure;
    if (this.mode !== Mode.Trail) return { kind: "syntax", offset: this.offset, reason: "end" };
    return this.top === "object" ? undefined : { kind: "not-object", what: "an array" };
  }

  private run(b: Uint8Array): void {
    const n = b.length;
    let i = 0;
    while (i < n && this.failure === undefined && this.stoppedAt < 0) {
      if (this.mode === Mode.Str) i = this.string(b, i, n);
      else if (this.mode === Mode.Number) i = this.number(b, i, n);
      else if (this.mode === Mode.Literal) i = this.literal(b, i, n);
      else i = this.structure(b, i, n);
    }
    const end = this.stoppedAt >= 0 ? i : n;
    if (this.failure === undefined && this.capFrom >= 0) {
      this.parts.push(Uint8Array.prototype.slice.call(b, this.capFrom, end));
      this.capFrom = 0;
    }
    this.offset += end;
  }

  private fail(at: number, reason: "unexpected" | "after" | "too-deep" = "unexpected"): number {
    this.failure ??= { kind: "syntax", offset: this.offset + at, reason };
    return at;
  }

  private string(b: Uint8Array, i: number, n: number): number {
    while (i < n) {
      if (this.sub === 0) {
        while (i < n && STRING_STOP[b[i] as number] === 0) i++;
        if (i === n) return n;
        const c = b[i++];
        if (c === QUOTE) {
          this.mode = this.inKey ? Mode.Colon : Mode.After;
          if (this.depth === 1) this.topEvent(b, i, this.inKey);
          return i;
        }
        if (c !== BACKSLASH) return this.fail(i - 1);
        this.sub = 1;
        continue;
      }
      // In an escape: just after `\` (1), or a hex digit of `\u` due.
      const c = b[i] as number;
      const sub = this.sub;
      if (sub === 1 ? c !== 0x75 && SIMPLE_ESCAPE[c] !== 1 : HEX[c] !== 1) return this.fail(i);
      i++;
      this.sub = sub === 1 ? (c === 0x75 ? 5 : 0) : sub === 2 ? 0 : sub - 1;
    }
    return i;
  }

  private number(b: Uint8Array, i: number, n: number): number {
    let sub = this.sub;
    for (; i < n; i++) {
      const c = b[i] as number;
      const digit = isDigit(c);
      let next: number;
      if (sub === Num.Minus || sub === Num.Dot || sub === Num.ESign) next = digit ? (sub === Num.Minus ? (c === 0x30 ? Num.Zero : Num.Int) : sub + 1) : -1;
      else if (sub === Num.E) next = c === 0x2b || c === MINUS ? Num.ESign : digit ? Num.Exp : -1;
      else if (digit && sub !== Num.Zero) next = sub;
      else if (c === 0x2e && (sub === Num.Zero || sub === Num.Int)) next = Num.Dot;
      else if ((c === 0x65 || c === 0x45) && sub !== Num.Exp) next = Num.E;
      else {
        // The number ended before this byte.
        this.mode = Mode.After;
        if (this.depth === 1) this.topEvent(b, i, false);
        return i;
      }
      if (next < 0) return this.fail(i);
      sub = next;
    }
    this.sub = sub;
    return i;
  }

  private literal(b: Uint8Array, i: number, n: number): number {
    for (; i < n; i++) {
      if (b[i] !== this.lit[this.sub]) return this.fail(i);
      if (++this.sub === this.lit.length) {
        this.mode = Mode.After;
        if (this.depth === 1) this.topEvent(b, i + 1, false);
        return i + 1;
      }
    }
    return i;
  }

  /** One structural byte (or a run of whitespace) at `i`. */
  private structure(b: Uint8Array, i: number, n: number): number {
    const c = b[i++] as number;
    if (isWs(c)) {
      // Indentation: runs of spaces are most of a pretty-printed state's structure.
      while (i < n && b[i] === 0x20) i++;
      return i;
    }
    const mode = this.mode;
    if (mode === Mode.Value || mode === Mode.ValueOrClose) return this.value(b, c, i, mode);
    if (mode === Mode.After) {
      const top = this.st[this.depth - 1];
      if (c === 0x2c) this.mode = top === OPEN_BRACE ? Mode.Key : Mode.Value;
      // `{` + 2 is `}`, `[` + 2 is `]`.
      else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && top === c - 2) this.close(b, i);
      else return this.fail(i - 1);
    } else if (mode === Mode.Colon) {
      if (c !== 0x3a) return this.fail(i - 1);
      this.mode = Mode.Value;
    } else if (mode === Mode.Trail) return this.fail(i - 1, "after");
    else if (c === QUOTE) {
      // Key or KeyOrClose.
      this.mode = Mode.Str;
      this.sub = 0;
      this.inKey = true;
      if (this.depth === 1) this.capture(i - 1);
    } else if (c === CLOSE_BRACE && mode === Mode.KeyOrClose) this.close(b, i);
    else return this.fail(i - 1);
    return i;
  }

  /** The first byte `c` of a value (or `]` of an empty array), at `i - 1`. */
  private value(b: Uint8Array, c: number, i: number, mode: Mode): number {
    const depth = this.depth;
    if (c === CLOSE_BRACKET && mode === Mode.ValueOrClose) {
      this.close(b, i);
      return i;
    }
    if (depth === 0 && c !== OPEN_BRACE && c !== OPEN_BRACKET) {
      const what = c === QUOTE ? "a string" : c === 0x74 || c === 0x66 ? "a boolean" : c === 0x6e ? "null" : c === MINUS || isDigit(c) ? "a number" : "";
      if (what !== "") this.failure = { kind: "not-object", what };
      return this.fail(i - 1);
    }
    if (depth === 1 && mode === Mode.Value) this.valueStart(i - 1);
    if (c === QUOTE) {
      this.mode = Mode.Str;
      this.sub = 0;
      this.inKey = false;
      if (depth === 1 && this.stopKey !== undefined && this.member === this.stopKey && this.top === "object") this.stoppedAt = i;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth >= this.maxDepth) return this.fail(i - 1, "too-deep");
      if (depth === this.st.length) {
        const bigger = new Uint8Array(depth * 2);
        bigger.set(this.st);
        this.st = bigger;
      }
      if (depth === 0) this.top = c === OPEN_BRACE ? "object" : "array";
      this.st[this.depth++] = c;
      this.mode = c === OPEN_BRACE ? Mode.KeyOrClose : Mode.ValueOrClose;
    } else if (c === MINUS || isDigit(c)) {
      this.mode = Mode.Number;
      this.sub = c === MINUS ? Num.Minus : c === 0x30 ? Num.Zero : Num.Int;
    } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
      this.mode = Mode.Literal;
      this.lit = c === 0x74 ? TRUE : c === 0x66 ? FALSE : NULL;
      this.sub = 1;
    } else return this.fail(i - 1);
    return i;
  }

  private close(b: Uint8Array, i: number): void {
    this.mode = --this.depth === 0 ? Mode.Trail : Mode.After;
    if (this.depth === 1) this.topEvent(b, i, false);
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

  /** A top-level key or value ended at `end`. */
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
export function scanJson(b: Uint8Array, keep: readonly string[] = [], maxDepth = MAX_NESTING): JsonScanner {
  const s = new JsonScanner(keep, maxDepth);
  s.feed(b);
  return s;
}

/** The byte offset of the first problem in `b` (`b.length`: it ends too early), where `JSON.parse`'s "Unexpected token" gives none. */
export function syntaxErrorOffset(b: Uint8Array): number | undefined {
  const f = scanJson(b, [], Infinity).end();
  return f?.kind === "syntax" ? f.offset : undefined;
}

/** `JSON_TOO_DEEP` for a document nested deeper than {@link MAX_NESTING}, before it is parsed (the rest is the parser's). */
export function checkNesting(b: Uint8Array, what: string, scan = scanJson(b)): void {
  const f = scan.end();
  if (f?.kind === "syntax" && f.reason === "too-deep")
    throw new ObjstateError("JSON_TOO_DEEP", `${what} is nested deeper than ${MAX_NESTING} levels, the most objstate (and the tool) accepts`, {
      details: { maxNesting: MAX_NESTING },
    });
}
