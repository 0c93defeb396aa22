/**
 * The outputs of a remote state as read at run time (docs/design.md §6): the state's root outputs
 * merged over the config's `defaults`, with typed accessors whose errors say what is wrong,
 * exact numbers and sensitivity flags.
 * Loaded with the package, so it stays small; reading lives in `fetch-outputs.ts`.
 */
import type { ConnectOptions } from "../backend/backend.js";
import { ObjstateError } from "../errors.js";
import {
  exactType,
  fromJs,
  MAX_DECIMAL_DIGITS,
  stringifyExact,
  toBigInt,
  toJs,
  type ExactJson,
  type JsonNumber,
  type JsonType,
  type JsonValue,
} from "../json/exact-json.js";
import { impliedToolType } from "./tool-type.js";

/** Any JSON value as JavaScript holds it. */
export type { JsonValue, JsonType } from "../json/exact-json.js";

/** Options of `DataRemoteStateObjectStore.fetchOutputs`: the connect options that matter for a read. */
export interface FetchOutputsOptions extends Pick<
  ConnectOptions,
  "env" | "cwd" | "digestRetry" | "s3" | "onWarning" | "clock" | "timeouts" | "layout" | "encryption" | "encryptionTarget"
> {
  /**
   * States of at least this many bytes have their outputs picked out by a scan of the bytes
   * instead of a full parse (default 1.5 MiB). 0 always scans; `Infinity` always parses.
   */
  readonly scanThreshold?: number | undefined;
}

/** Where a set of outputs came from, for messages. */
export interface OutputsSource {
  /** Name of the remote state (`data.tool_remote_state.NAME`). */
  readonly name?: string | undefined;
  readonly workspace?: string | undefined;
  /** `bucket/path` of the state object. */
  readonly location?: string | undefined;
  /** How the outputs were taken out of the state: `scan` (large states) or a full `parse`. */
  readonly method?: "scan" | "parse" | undefined;
  /** True when the scan ran while the state downloaded (S3 stores). */
  readonly streamed?: boolean | undefined;
}

/**
 * Marks an output read from a state of format 1 to 3, whose type is the one the tool's
 * upgrade gives it. @internal
 */
export const UPGRADED: unique symbol = Symbol("upgraded from a format 1-3 state");

function withArticle(t: JsonType): string {
  return t === "null" ? "null" : t === "object" ? "an object" : `a ${t}`;
}

/**
 * Output values by name, with their numbers exact and their `sensitive` flags.
 *
 * Numbers are kept as written in the state (the tool's numbers have arbitrary precision):
 * {@link numberText} and {@link bigint} give them exactly; {@link number}, {@link get} and
 * {@link list} give JS numbers, which round as `JSON.parse` rounds (`12345678901234567890`
 * → 12345678901234567000, `1e400` → Infinity). {@link toJSON} never rounds: a number a
 * JS number cannot hold exactly is given as its text (a string), and {@link toJSONText}
 * writes every number as written. Values from `get` are frozen; `toJSON` gives a fresh
 * plain copy. Nothing here recurses, so values nested as deep as the tool allows work.
 *
 * @example
 * const net = await remote.fetchOutputs();
 * net.string("vpc_id");        // "vpc-0a1b2c"
 * net.number("subnet_count");  // 3; an error (OUTPUT_TYPE_MISMATCH) if it is not a number
 * net.bigint("account");       // 12345678901234567890n, exactly
 * net.numberText("ratio");     // "1e-400", as written
 * net.isSensitive("password"); // true when the state marks it sensitive
 */
export class RemoteOutputs {
  readonly source: OutputsSource;
  private readonly values: ReadonlyMap<string, ExactJson>;
  private readonly sensitive: ReadonlySet<string>;
  /**
   * Where each output's type in the tool's notation comes from: the type its state recorded,
   * or {@link UPGRADED} for an output of a format 1–3 state; none (a default): implied.
   */
  private readonly types = new Map<string, ExactJson | typeof UPGRADED>();
  /** `get` results, converted once (frozen). */
  private readonly plain = new Map<string, JsonValue>();

  /**
   * Outputs from a name → value record (own enumerable properties), e.g. a state's outputs
   * merged over defaults. The values are copied; `sensitive` names the sensitive ones.
   */
  constructor(values: Readonly<Record<string, JsonValue>>, source: OutputsSource = {}, sensitive: Iterable<string> = []) {
    const map = new Map<string, ExactJson>();
    for (const [k, v] of Object.entries(values)) {
      try {
        map.set(k, fromJs(v));
      } catch (e) {
        throw new ObjstateError("OUTPUT_INVALID", `output "${k}" is not a JSON value: ${(e as Error).message}`, { details: { output: k } });
      }
    }
    this.values = map;
    this.sensitive = new Set(sensitive);
    this.source = Object.freeze({ ...source });
    Object.freeze(this);
  }

  /**
   * Outputs from exact values (numbers as written), as read from a state.
   * @internal
   */
  static fromExact(
    values: ReadonlyMap<string, ExactJson>,
    source: OutputsSource,
    sensitive: Iterable<string>,
    types: ReadonlyMap<string, ExactJson | typeof UPGRADED> = new Map(),
  ): RemoteOutputs {
    const out = new RemoteOutputs({}, source, sensitive);
    const map = out.values as Map<string, ExactJson>;
    for (const [k, v] of values) map.set(k, v);
    for (const [k, t] of types) out.types.set(k, t);
    return out;
  }

  /** Output names, sorted. */
  names(): string[] {
    return [...this.values.keys()].sort();
  }

  /** Is there an output of this name (from the state or the defaults)? */
  has(name: string): boolean {
    return this.values.has(name);
  }

  /**
   * Is the output marked `"sensitive": true` in the state? Defaults never are.
   * @throws ObjstateError `OUTPUT_NOT_FOUND`
   */
  isSensitive(name: string): boolean {
    this.exact(name);
    return this.sensitive.has(name);
  }

  /** Any output's value (frozen; numbers as JS numbers). @throws ObjstateError `OUTPUT_NOT_FOUND` */
  get(name: string): JsonValue {
    const cached = this.plain.get(name);
    if (cached !== undefined || this.plain.has(name)) return cached as JsonValue;
    const v = toJs(this.exact(name), "js", true);
    this.plain.set(name, v);
    return v;
  }

  /** A string output. @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH` */
  string(name: string): string {
    return this.typed(name, "string") as string;
  }

  /**
   * A number output as a JS number (rounded to the nearest double; out of range is ±Infinity
   * or 0). {@link numberText} and {@link bigint} are exact.
   * @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH`
   */
  number(name: string): number {
    return this.typed(name, "number") as number;
  }

  /**
   * A number output exactly as written in the state (`"12345678901234567890"`, `"1e400"`);
   * for a default given as a JS number, as `JSON.stringify` writes it.
   * @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH`
   */
  numberText(name: string): string {
    this.typed(name, "number");
    return (this.exact(name) as JsonNumber).text;
  }

  /**
   * A whole-number output as a bigint, exactly (`1e3` is 1000n).
   * @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH`; `OUTPUT_NOT_INTEGER`
   *   when the number has a fractional part or more than 100,000 digits.
   */
  bigint(name: string): bigint {
    const text = this.numberText(name);
    const v = toBigInt(text);
    if (typeof v === "bigint") return v;
    const why = v === "not-whole" ? "is not a whole number" : `has more than ${MAX_DECIMAL_DIGITS} digits`;
    throw new ObjstateError(
      "OUTPUT_NOT_INTEGER",
      `output "${name}" (${text.length > 40 ? `${text.slice(0, 40)}…` : text}) ${why}, so it has no bigint value${this.where()}`,
      {
        details: { output: name },
      },
    );
  }

  /** A boolean output. @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH` */
  boolean(name: string): boolean {
    return this.typed(name, "boolean") as boolean;
  }

  /** A list (array) output; the array is frozen. @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH` */
  list(name: string): readonly JsonValue[] {
    return this.typed(name, "list") as JsonValue[];
  }

  /** The JSON type of an output. @throws ObjstateError `OUTPUT_NOT_FOUND` */
  typeOf(name: string): JsonType {
    return exactType(this.exact(name));
  }

  /**
   * The output's type in the tool's type notation, as the tool's `output -json` prints it:
   * `"string"`, `"number"`, `"bool"`, `["list","string"]`, `["object",{"port":"number"}]`, ….
   * A format-4 state records it beside the value; an output of a format 1–3 state gets
   * the type the tool's upgrade of that state gives it; a default (or an output whose state
   * records none) the type the tool implies from the value (a list is a `["tuple",[…]]`,
   * an object an `["object",{…}]`, null `"dynamic"`). A fresh, unfrozen copy.
   * @throws ObjstateError `OUTPUT_NOT_FOUND`
   */
  toolType(name: string): JsonValue {
    return toJs(this.exactToolType(name), "lossless", false);
  }

  /**
   * {@link toolType} as JSON text (`space` indents as in `JSON.stringify`); no recursion, so
   * the type of a value nested 10,000 levels deep prints too.
   * @throws ObjstateError `OUTPUT_NOT_FOUND`
   */
  toolTypeText(name: string, space = 0): string {
    return stringifyExact(this.exactToolType(name), space);
  }

  /**
   * Every output as a plain object (a fresh, unfrozen copy), sensitive ones included. A
   * number a JS number holds exactly is a number; any other (`12345678901234567890`,
   * `1e400`) is its text, a string, so that `JSON.stringify(outputs)` never rounds.
   */
  toJSON(): Record<string, JsonValue> {
    const out: Record<string, JsonValue> = {};
    for (const [k, v] of this.values) {
      // defineProperty: a name such as "__proto__" stays an ordinary own property.
      Object.defineProperty(out, k, { value: toJs(v, "lossless", false), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }

  /**
   * JSON text of every output (`name` given: of that one), numbers exactly as written,
   * sensitive ones included; `space` indents as in `JSON.stringify`.
   * @throws ObjstateError `OUTPUT_NOT_FOUND` (for `name`)
   */
  toJSONText(name?: string, space = 0): string {
    if (name !== undefined) return stringifyExact(this.exact(name), space);
    const all = new Map<string, ExactJson>();
    for (const k of this.names()) all.set(k, this.values.get(k) as ExactJson);
    return stringifyExact(all, space);
  }

  private exactToolType(name: string): ExactJson {
    const value = this.exact(name);
    const recorded = this.types.get(name);
    if (recorded === undefined || recorded === UPGRADED) return impliedToolType(value, recorded === UPGRADED);
    return recorded;
  }

  private exact(name: string): ExactJson {
    if (!this.values.has(name)) {
      const names = this.names();
      throw new ObjstateError(
        "OUTPUT_NOT_FOUND",
        `no output "${name}"${this.where()}; ${names.length === 0 ? "there are no outputs" : `available: ${names.join(", ")}`}`,
        { details: { output: name, available: names } },
      );
    }
    return this.values.get(name) as ExactJson;
  }

  private typed(name: string, expected: JsonType): JsonValue {
    const actual = exactType(this.exact(name));
    if (actual !== expected) {
      throw new ObjstateError("OUTPUT_TYPE_MISMATCH", `output "${name}" is ${withArticle(actual)}, not ${withArticle(expected)}${this.where()}`, {
        details: { output: name, expected, actual },
      });
    }
    return this.get(name);
  }

  private where(): string {
    const s = this.source;
    const parts: string[] = [];
    if (s.name !== undefined) parts.push(`remote state "${s.name}"`);
    const at = s.location === undefined ? "" : ` at ${s.location}`;
    if (s.workspace !== undefined) parts.push(`workspace ${s.workspace}${at}`);
    else if (s.location !== undefined) parts.push(at.slice(1));
    return parts.length === 0 ? "" : ` (${parts.join(", ")})`;
  }
}
