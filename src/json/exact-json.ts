/**
 * JSON values whose numbers stay as written, as the tool keeps them (`JSON.parse` makes `1e400`
 * Infinity). Nothing here recurses: values nest 10,000 deep (the tool's limit), past the call stack.
 */
import { Buffer } from "node:buffer";
import { isDeepStrictEqual } from "node:util";

/** A JSON number literal as written. */
export class JsonNumber {
  constructor(readonly text: string) {
    Object.freeze(this);
  }
}

/** A JSON value with exact numbers; objects are Maps (insertion order, any key). */
export type ExactJson = null | boolean | string | JsonNumber | readonly ExactJson[] | ReadonlyMap<string, ExactJson>;

/** Any JSON value as JavaScript holds it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Parse `b[start, end)`, which the scanner or `JSON.parse` accepted, so tokens are taken as they come. */
export function parseExact(b: Uint8Array, start = 0, end = b.length): ExactJson {
  const text = Buffer.from(b.buffer, b.byteOffset + start, end - start).toString("utf8");
  const fail = (at: number): never => {
    throw new SyntaxError(`Unexpected input in JSON at position ${at}`);
  };
  // After whitespace: a bracket or separator, a string's opening quote, a number or a literal.
  const token = /[ \t\n\r]*(?:([[\]{},:])|(")|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null))/y;
  const stack: ({ list: ExactJson[] } | { map: Map<string, ExactJson>; key: string | undefined })[] = [];
  let i = 0;
  for (;;) {
    token.lastIndex = i;
    const [, punct, quote, num, lit] = token.exec(text) ?? fail(i);
    i = token.lastIndex;
    const top = stack[stack.length - 1];
    let value: ExactJson;
    if (punct === "{" || punct === "[") {
      stack.push(punct === "{" ? { map: new Map(), key: undefined } : { list: [] });
      continue;
    } else if (punct === "}" || punct === "]") {
      stack.pop();
      value = top === undefined ? fail(i - 1) : "map" in top ? top.map : top.list;
    } else if (punct !== undefined) {
      continue;
    } else if (quote !== undefined) {
      let close = text.indexOf('"', i);
      // A quote after an odd run of backslashes is escaped.
      for (let k = close; close >= 0; k = close) {
        while (text[k - 1] === "\\") k--;
        if ((close - k) % 2 === 0) break;
        close = text.indexOf('"', close + 1);
      }
      if (close < 0) fail(i - 1);
      value = JSON.parse(text.slice(i - 1, close + 1)) as string;
      i = close + 1;
      if (top !== undefined && "map" in top && top.key === undefined) {
        top.key = value;
        continue;
      }
    } else {
      value = num !== undefined ? new JsonNumber(num) : lit === "true" ? true : lit === "false" ? false : null;
    }
    const parent = stack[stack.length - 1];
    if (parent === undefined) return /^[ \t\n\r]*$/.test(text.slice(i)) ? value : fail(i);
    // Map.set keeps a repeated key's first position and its last value, as JSON.parse does.
    if ("map" in parent) parent.map.set(parent.key as string, value);
    else parent.list.push(value);
    if ("map" in parent) parent.key = undefined;
  }
}

/** A container met by {@link rebuild}: its entries (no key in a list), and how to make it from the converted ones. */
export interface Opened<A, B> {
  readonly entries: readonly (readonly [string | undefined, A])[];
  /** `depth`: the container's own (the root's is 0). */
  readonly make: (kids: [string | undefined, B][], depth: number) => B;
}

/** A tree converted bottom-up with an explicit stack. */
export function rebuild<A, B>(root: A, open: (v: A) => Opened<A, B> | undefined, leaf: (v: A) => B): B {
  type Frame = Opened<A, B> & { kids: [string | undefined, B][] };
  const first = open(root);
  if (first === undefined) return leaf(root);
  const stack: Frame[] = [{ ...first, kids: [] }];
  for (;;) {
    const f = stack[stack.length - 1] as Frame;
    if (f.kids.length === f.entries.length) {
      stack.pop();
      const built = f.make(f.kids, stack.length);
      const parent = stack[stack.length - 1];
      if (parent === undefined) return built;
      parent.kids.push([parent.entries[parent.kids.length]?.[0], built]);
      continue;
    }
    const [k, v] = f.entries[f.kids.length] as readonly [string | undefined, A];
    const g = open(v);
    if (g === undefined) f.kids.push([k, leaf(v)]);
    else stack.push({ ...g, kids: [] });
  }
}

const listEntries = <A>(v: readonly A[]): [undefined, A][] => v.map((x) => [undefined, x]);

/** Exact JSON of a JS value (numbers as `JSON.stringify` writes them); undefined members are left out. */
export function fromJs(value: JsonValue): ExactJson {
  const onPath = new Set<object>();
  const open = (v: unknown): Opened<unknown, ExactJson | undefined> | undefined => {
    if (typeof v !== "object" || v === null) return undefined;
    if (onPath.has(v)) throw new TypeError("a value refers to itself; JSON values cannot");
    onPath.add(v);
    if (Array.isArray(v)) return { entries: listEntries(v as unknown[]), make: (kids) => (onPath.delete(v), kids.map(([, x]) => x ?? null)) };
    return {
      entries: Object.entries(v),
      make: (kids) => (onPath.delete(v), new Map(kids.filter((e): e is [string, ExactJson] => e[1] !== undefined))),
    };
  };
  const leaf = (v: unknown): ExactJson | undefined => {
    if (v === null || typeof v === "string" || typeof v === "boolean") return v;
    if (typeof v === "number") return Number.isFinite(v) ? new JsonNumber(JSON.stringify(v)) : null;
    return undefined;
  };
  return rebuild<unknown, ExactJson | undefined>(value, open, leaf) ?? null;
}

export type JsonType = "string" | "number" | "boolean" | "list" | "object" | "null";

export function exactType(v: ExactJson): JsonType {
  if (v === null) return "null";
  if (v instanceof JsonNumber) return "number";
  if (v instanceof Map) return "object";
  if (Array.isArray(v)) return "list";
  return typeof v as "string" | "boolean";
}

/** The value as plain JavaScript: numbers rounded as `JSON.parse` does (`js`), or their text where no JS number is exact (`lossless`). */
export function toJs(value: ExactJson, numbers: "js" | "lossless", freeze: boolean): JsonValue {
  const done = <T extends object>(o: T): T => (freeze ? Object.freeze(o) : o);
  const open = (v: ExactJson): Opened<ExactJson, JsonValue> | undefined => {
    if (Array.isArray(v)) return { entries: listEntries(v as readonly ExactJson[]), make: (kids) => done(kids.map(([, x]) => x)) };
    if (!(v instanceof Map)) return undefined;
    const make = (kids: [string | undefined, JsonValue][]): JsonValue => {
      const o: Record<string, JsonValue> = {};
      // defineProperty: a name such as "__proto__" stays an ordinary own property.
      for (const [k, x] of kids) Object.defineProperty(o, k as string, { value: x, enumerable: true, writable: true, configurable: true });
      return done(o);
    };
    return { entries: [...v.entries()], make };
  };
  const leaf = (v: ExactJson): JsonValue => {
    if (v instanceof JsonNumber) return numbers === "js" || isExactInJs(v.text) ? Number(v.text) : v.text;
    return v as JsonValue;
  };
  return rebuild(value, open, leaf);
}

/** `JSON.stringify(value)`, without recursion. */
export function stringifyDeep(value: unknown): string {
  return stringifyExact(fromJs(value as JsonValue));
}

/** JSON text of an exact value, numbers as written; `space` indents as `JSON.stringify` does. */
export function stringifyExact(value: ExactJson, space = 0): string {
  const line = (depth: number): string => (space > 0 ? `\n${" ".repeat(space * depth)}` : "");
  const colon = space > 0 ? ": " : ":";
  const open = (v: ExactJson): Opened<ExactJson, string> | undefined => {
    const isMap = v instanceof Map;
    if (!isMap && !Array.isArray(v)) return undefined;
    const entries = isMap ? [...(v as ReadonlyMap<string, ExactJson>).entries()] : listEntries(v as readonly ExactJson[]);
    const make = (kids: [string | undefined, string][], depth: number): string => {
      const sep = `,${line(depth + 1)}`;
      const body = kids.map(([k, x]) => (k === undefined ? x : JSON.stringify(k) + colon + x)).join(sep);
      return kids.length === 0 ? (isMap ? "{}" : "[]") : `${isMap ? "{" : "["}${sep.slice(1)}${body}${line(depth)}${isMap ? "}" : "]"}`;
    };
    return { entries, make };
  };
  return rebuild(value, open, (v) => (v instanceof JsonNumber ? v.text : JSON.stringify(v)));
}

/** ±digits × 10^exp, `digits` without leading or trailing zeros ("" for zero). */
function decimalOf(text: string): { readonly negative: boolean; readonly digits: string; readonly exp: bigint } {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(text);
  if (m === null) throw new TypeError(`not a JSON number: ${text}`);
  const frac = m[3] ?? "";
  let digits = `${m[2] as string}${frac}`.replace(/^0+/, "");
  let exp = BigInt(m[4] ?? "0") - BigInt(frac.length);
  const trimmed = digits.replace(/0+$/, "");
  exp += BigInt(digits.length - trimmed.length);
  digits = trimmed;
  return { negative: m[1] === "-" && digits !== "", digits, exp: digits === "" ? 0n : exp };
}

/** Does `Number(text)` hold exactly the value the literal `text` denotes, as JSON writes it back? */
export function isExactInJs(text: string): boolean {
  const n = Number(text);
  return Number.isFinite(n) && isDeepStrictEqual(decimalOf(text), decimalOf(JSON.stringify(n)));
}

/** Longest decimal expansion {@link decimalForm} and {@link toBigInt} produce. */
export const MAX_DECIMAL_DIGITS = 100_000;

/** The literal in plain notation (`1e3` → `1000`, `-0` → `0`), as `output -raw` prints it; undefined past {@link MAX_DECIMAL_DIGITS}. */
export function decimalForm(text: string): string | undefined {
  const { negative, digits, exp } = decimalOf(text);
  if (digits === "") return "0";
  const len = BigInt(digits.length);
  const size = exp >= 0n ? len + exp : exp + len > 0n ? len : -exp + 1n;
  if (size > BigInt(MAX_DECIMAL_DIGITS)) return undefined;
  const e = Number(exp);
  let s: string;
  if (e >= 0) s = digits + "0".repeat(e);
  else if (-e < digits.length) s = `${digits.slice(0, digits.length + e)}.${digits.slice(digits.length + e)}`;
  else s = `0.${"0".repeat(-e - digits.length)}${digits}`;
  return negative ? `-${s}` : s;
}

/** The literal as a bigint, unless it is not whole or has more than {@link MAX_DECIMAL_DIGITS} digits. */
export function toBigInt(text: string): bigint | "not-whole" | "too-large" {
  const { negative, digits, exp } = decimalOf(text);
  if (digits === "") return 0n;
  if (exp < 0n) return "not-whole";
  if (BigInt(digits.length) + exp > BigInt(MAX_DECIMAL_DIGITS)) return "too-large";
  const v = BigInt(digits) * 10n ** exp;
  return negative ? -v : v;
}
