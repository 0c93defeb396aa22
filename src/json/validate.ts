/**
 * A resumable, byte-level JSON grammar check of one object or array (a large state's
 * `resources`), used by the top-level scanners to skip a member's value.
 *
 * Skipping must refuse exactly what `JSON.parse` refuses (trailing commas, `NaN`, `01`,
 * bad escapes, raw control characters in strings, unbalanced brackets…), or a state would
 * be accepted or refused depending on its size (large states are scanned, small ones
 * parsed). It works on UTF-8 bytes: bytes of 0x80 and above are only valid inside strings,
 * and an invalid UTF-8 sequence, which `JSON.parse` sees as U+FFFD after decoding, is
 * accepted there too. It also enforces the tool's nesting limit, which `JSON.parse` does
 * not have.
 *
 * No recursion: nesting is a byte stack, so 10,000 levels cost 10,000 bytes.
 */
import { ObjstateError } from "../errors.js";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;

/**
 * Deepest nesting the tool's JSON decoder accepts (Go's `encoding/json`: 10,000, the
 * top-level object counting as one level). Deeper documents are refused on both paths.
 */
export const MAX_NESTING = 10000;

/** The container has not ended within the bytes given. */
export const NEED_MORE = -1;
/** Not valid JSON. */
export const INVALID = -2;
/** Valid so far, but nested deeper than allowed. */
export const TOO_DEEP = -3;

const enum Mode {
  /** A value must come (after `:`, or after `,` in an array). */
  Value,
  /** Just after `[`: a value or `]`. */
  ValueOrClose,
  /** Just after `{`: a key or `}`. */
  KeyOrClose,
  /** After `,` in an object: a key. */
  Key,
  /** After a key: `:`. */
  Colon,
  /** After a value: `,` or the closing bracket. */
  After,
  /** Inside a string (`sub`: 0 plain, 1 after `\`, 2–5 hex digits of `\u` still due + 1). */
  Str,
  /** Inside a number (`sub`: a {@link Num} state). */
  Number,
  /** Inside `true`, `false` or `null` (`sub`: bytes matched so far). */
  Literal,
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

const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];

/** Bytes that may follow `\` in a string (`u` is handled apart). */
const SIMPLE_ESCAPE = new Uint8Array(256);
for (const c of [QUOTE, BACKSLASH, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]) SIMPLE_ESCAPE[c] = 1;
const HEX = new Uint8Array(256);
for (let c = 0x30; c <= 0x39; c++) HEX[c] = 1;
for (let c = 0x41; c <= 0x46; c++) HEX[c] = 1;
for (let c = 0x61; c <= 0x66; c++) HEX[c] = 1;
/**
 * Bytes that end the plain run of a string: `"`, `\` and the control characters. One table
 * load per byte instead of three comparisons: the string loop is where most of a state's
 * bytes go by.
 */
const STRING_STOP = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) STRING_STOP[c] = 1;
STRING_STOP[QUOTE] = 1;
STRING_STOP[BACKSLASH] = 1;

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** Where a check of one container stands; pass the same object to every call. */
export class ContainerCheck {
  /** Next byte to look at. */
  i: number;
  /** After {@link INVALID} or {@link TOO_DEEP}: index of the byte that made it so. */
  failedAt = -1;
  private depth = 0;
  private st = new Uint8Array(64);
  private mode = Mode.Value;
  private sub = 0;
  private lit: readonly number[] = TRUE;
  private keyString = false;
  private readonly maxDepth: number;

  /**
   * @param start index of the container's `{` or `[`.
   * @param maxDepth deepest nesting allowed, counting this container as 1.
   */
  constructor(start: number, maxDepth: number) {
    this.i = start;
    this.maxDepth = maxDepth;
  }

  /**
   * Check `b` from where the last call stopped up to `limit`: the index just past the
   * container's closing bracket, {@link NEED_MORE}, {@link INVALID} or {@link TOO_DEEP}.
   *
   * The byte after a token is often taken in the same step as the token (the `:` after a
   * key, the `,` or newline after a value): fewer turns of the loop per line of a
   * pretty-printed state. Such shortcuts only ever look at bytes below `limit`, and end in
   * the mode the plain path would have reached, so where a chunk ends changes nothing.
   */
  run(b: Uint8Array, limit: number): number {
    let { i, depth, st, mode, sub } = this;
    let key = this.keyString;
    let result = NEED_MORE;
    let failedAt = -1;
    loop: while (i < limit) {
      let c = b[i] as number;
      switch (mode) {
        case Mode.Str: {
          if (sub === 0) {
            while (STRING_STOP[c] === 0) {
              if (++i === limit) break loop;
              c = b[i] as number;
            }
            i++;
            if (c === QUOTE) {
              if (!key) {
                mode = Mode.After;
              } else if (i < limit && b[i] === COLON) {
                // `"key":` — the colon taken with the key.
                i++;
                mode = Mode.Value;
              } else {
                mode = Mode.Colon;
              }
            } else if (c === BACKSLASH) {
              sub = 1;
            } else {
              failedAt = i - 1;
              result = INVALID;
              break loop;
            }
          } else if (sub === 1) {
            i++;
            if (c === 0x75) sub = 5;
            else if (SIMPLE_ESCAPE[c] === 1) sub = 0;
            else {
              failedAt = i - 1;
              result = INVALID;
              break loop;
            }
          } else {
            i++;
            if (HEX[c] !== 1) {
              failedAt = i - 1;
              result = INVALID;
              break loop;
            }
            sub = sub === 2 ? 0 : sub - 1;
          }
          continue;
        }
        case Mode.Number: {
          const digit = isDigit(c);
          switch (sub as Num) {
            case Num.Minus:
              if (!digit) {
                failedAt = i;
                result = INVALID;
                break loop;
              }
              sub = c === 0x30 ? Num.Zero : Num.Int;
              i++;
              continue;
            case Num.Zero:
            case Num.Int:
              if (digit && sub === Num.Int) {
                i++;
              } else if (c === 0x2e) {
                sub = Num.Dot;
                i++;
              } else if (c === 0x65 || c === 0x45) {
                sub = Num.E;
                i++;
              } else {
                mode = Mode.After;
              }
              continue;
            case Num.Dot:
            case Num.ESign:
              if (!digit) {
                failedAt = i;
                result = INVALID;
                break loop;
              }
              sub = sub === Num.Dot ? Num.Frac : Num.Exp;
              i++;
              continue;
            case Num.Frac:
              if (digit) {
                i++;
              } else if (c === 0x65 || c === 0x45) {
                sub = Num.E;
                i++;
              } else {
                mode = Mode.After;
              }
              continue;
            case Num.E:
              if (c === 0x2b || c === MINUS) sub = Num.ESign;
              else if (digit) sub = Num.Exp;
              else {
                failedAt = i;
                result = INVALID;
                break loop;
              }
              i++;
              continue;
            case Num.Exp:
              if (digit) i++;
              else mode = Mode.After;
              continue;
          }
          continue;
        }
        case Mode.Literal: {
          if (c !== this.lit[sub]) {
            failedAt = i;
            result = INVALID;
            break loop;
          }
          i++;
          if (++sub === this.lit.length) mode = Mode.After;
          continue;
        }
        default:
          break;
      }
      // Structural modes.
      i++;
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        // Indentation: runs of spaces are most of a pretty-printed state's structure.
        while (i < limit && b[i] === 0x20) i++;
        continue;
      }
      switch (mode) {
        case Mode.Value:
        case Mode.ValueOrClose: {
          if (c === QUOTE) {
            mode = Mode.Str;
            sub = 0;
            key = false;
            continue;
          }
          if (c === OPEN_BRACE || c === OPEN_BRACKET) {
            if (depth >= this.maxDepth) {
              failedAt = i - 1;
              result = TOO_DEEP;
              break loop;
            }
            if (depth === st.length) {
              const bigger = new Uint8Array(st.length * 2);
              bigger.set(st);
              st = bigger;
            }
            st[depth++] = c;
            mode = c === OPEN_BRACE ? Mode.KeyOrClose : Mode.ValueOrClose;
            continue;
          }
          if (c === CLOSE_BRACKET && mode === Mode.ValueOrClose) {
            if (--depth === 0) {
              result = i;
              break loop;
            }
            mode = Mode.After;
            continue;
          }
          if (c === MINUS || isDigit(c)) {
            mode = Mode.Number;
            sub = c === MINUS ? Num.Minus : c === 0x30 ? Num.Zero : Num.Int;
            continue;
          }
          if (c === 0x74 || c === 0x66 || c === 0x6e) {
            mode = Mode.Literal;
            this.lit = c === 0x74 ? TRUE : c === 0x66 ? FALSE : NULL;
            sub = 1;
            continue;
          }
          failedAt = i - 1;
          result = INVALID;
          break loop;
        }
        case Mode.After: {
          const top = st[depth - 1];
          if (c === COMMA) {
            if (top === OPEN_BRACE) {
              // `,` then a newline, the indentation and the next key's quote, in one step.
              while (i < limit) {
                const w = b[i] as number;
                if (w !== 0x20 && w !== 0x0a && w !== 0x0d && w !== 0x09) break;
                i++;
              }
              if (i < limit && b[i] === QUOTE) {
                i++;
                mode = Mode.Str;
                sub = 0;
                key = true;
              } else {
                mode = Mode.Key;
              }
            } else {
              mode = Mode.Value;
            }
            continue;
          }
          // `{` + 2 is `}`, `[` + 2 is `]`.
          if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && top === c - 2) {
            if (--depth === 0) {
              result = i;
              break loop;
            }
            continue;
          }
          failedAt = i - 1;
          result = INVALID;
          break loop;
        }
        case Mode.Colon:
          if (c !== COLON) {
            failedAt = i - 1;
            result = INVALID;
            break loop;
          }
          mode = Mode.Value;
          continue;
        default:
          // Key or KeyOrClose.
          if (c === QUOTE) {
            mode = Mode.Str;
            sub = 0;
            key = true;
            continue;
          }
          if (c === CLOSE_BRACE && mode === Mode.KeyOrClose) {
            if (--depth === 0) {
              result = i;
              break loop;
            }
            mode = Mode.After;
            continue;
          }
          failedAt = i - 1;
          result = INVALID;
          break loop;
      }
    }
    this.i = i;
    this.depth = depth;
    this.st = st;
    this.mode = mode;
    this.sub = sub;
    this.keyString = key;
    if (failedAt >= 0) this.failedAt = failedAt;
    return result;
  }
}

/**
 * Check the whole container starting at `b[start]`: the index just past it, or
 * {@link INVALID} / {@link TOO_DEEP} (a container cut off by the end of `b` is INVALID).
 */
export function checkContainer(b: Uint8Array, start: number, maxDepth: number): number {
  const r = new ContainerCheck(start, maxDepth).run(b, b.length);
  return r === NEED_MORE ? INVALID : r;
}

/**
 * Index of the first byte of `b` that makes it invalid JSON, as `JSON.parse` places
 * "Unexpected token" errors (its message gives no position for those); `b.length` when it ends too
 * early; undefined when it finds nothing wrong or the top level is not a container.
 */
export function syntaxErrorOffset(b: Uint8Array): number | undefined {
  let i = 0;
  while (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09) i++;
  if (b[i] !== OPEN_BRACE && b[i] !== OPEN_BRACKET) return undefined;
  const check = new ContainerCheck(i, Number.MAX_SAFE_INTEGER);
  const r = check.run(b, b.length);
  if (r === NEED_MORE) return b.length;
  if (r < 0) return check.failedAt;
  i = r;
  while (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09) i++;
  return i < b.length ? i : undefined;
}

/**
 * Refuse a JSON document nested deeper than {@link MAX_NESTING} (`JSON_TOO_DEEP`) before it is
 * parsed: what is accepted is then walked and answered without overflowing the call stack.
 * Anything else wrong with it is left to the parser. `what` names it for the message.
 */
export function checkNesting(b: Uint8Array, what: string): void {
  let i = 0;
  while (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09) i++;
  if ((b[i] === OPEN_BRACE || b[i] === OPEN_BRACKET) && checkContainer(b, i, MAX_NESTING) === TOO_DEEP)
    throw new ObjstateError("JSON_TOO_DEEP", `${what} is nested deeper than ${MAX_NESTING} levels, the most objstate (and the tool) accepts`, {
      details: { maxNesting: MAX_NESTING },
    });
}
