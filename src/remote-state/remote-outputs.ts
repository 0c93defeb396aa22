/** The outputs of a remote state read at run time (docs/design.md §6); reading lives in `fetch-outputs.ts`. */
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

export type { JsonValue, JsonType } from "../json/exact-json.js";

/** Options of `DataRemoteStateObjectStore.fetchOutputs`. */
export interface FetchOutputsOptions extends Pick<
  ConnectOptions,
  "env" | "cwd" | "digestRetry" | "s3" | "onWarning" | "clock" | "timeouts" | "layout" | "encryption" | "encryptionTarget"
> {
  /** States of at least this many bytes are scanned for their outputs, not parsed whole (default 1.5 MiB; 0 always scans). */
  readonly scanThreshold?: number | undefined;
}

/** Where the outputs came from, for messages. */
export interface OutputsSource {
  /** `data.tool_remote_state.NAME`. */
  readonly name?: string | undefined;
  readonly workspace?: string | undefined;
  /** `bucket/path` of the state object. */
  readonly location?: string | undefined;
  /** `streamed`: the scan ran as the state downloaded. */
  readonly method?: "scan" | "parse" | undefined;
  readonly streamed?: boolean | undefined;
}

/** Marks an output of a format 1-3 state, typed as the tool's upgrade types it. @internal */
export const UPGRADED: unique symbol = Symbol("upgraded from a format 1-3 state");

/** @internal */
export function withArticle(t: JsonType): string {
  return t === "null" ? "null" : t === "object" ? "an object" : `a ${t}`;
}

/**
 * Output values by name, numbers as written in the state: {@link numberText} and {@link bigint}
 * are exact; {@link number}, {@link get} and {@link list} round as `JSON.parse` does; {@link toJSON}
 * gives a number no JS number holds as its text. Values from `get` are frozen.
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
  /** As the state recorded it, or {@link UPGRADED}; none (a default): implied from the value. */
  private readonly types = new Map<string, ExactJson | typeof UPGRADED>();
  private readonly plain = new Map<string, JsonValue>();

  /** Outputs from a name → value record (copied); `sensitive` names the sensitive ones. */
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

  /** Outputs from exact values (numbers as written), as read from a state. @internal */
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

  names(): string[] {
    return [...this.values.keys()].sort();
  }

  has(name: string): boolean {
    return this.values.has(name);
  }

  /** Is it marked `"sensitive": true` in the state (defaults never are)? @throws ObjstateError `OUTPUT_NOT_FOUND` */
  isSensitive(name: string): boolean {
    this.exact(name);
    return this.sensitive.has(name);
  }

  /** Any output's value (frozen; numbers as JS numbers). @throws ObjstateError `OUTPUT_NOT_FOUND` */
  get(name: string): JsonValue {
    let v = this.plain.get(name);
    if (v === undefined) this.plain.set(name, (v = toJs(this.exact(name), "js", true)));
    return v;
  }

  /** A string output. @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH` */
  string(name: string): string {
    return this.typed(name, "string") as string;
  }

  /** A number output, rounded to the nearest double. @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH` */
  number(name: string): number {
    return this.typed(name, "number") as number;
  }

  /**
   * A number output as written in the state (`"1e400"`); a default as `JSON.stringify` writes it.
   * @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH`
   */
  numberText(name: string): string {
    this.typed(name, "number");
    return (this.exact(name) as JsonNumber).text;
  }

  /**
   * A whole-number output, exactly (`1e3` is 1000n).
   * @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH`, `OUTPUT_NOT_INTEGER` (a fraction, or over 100,000 digits)
   */
  bigint(name: string): bigint {
    const text = this.numberText(name);
    const v = toBigInt(text);
    if (typeof v === "bigint") return v;
    const why = v === "not-whole" ? "is not a whole number" : `has more than ${MAX_DECIMAL_DIGITS} digits`;
    const message = `output "${name}" (${text.length > 40 ? `${text.slice(0, 40)}…` : text}) ${why}, so it has no bigint value${this.where()}`;
    throw new ObjstateError("OUTPUT_NOT_INTEGER", message, { details: { output: name } });
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
   * The output's type as the tool's `output -json` prints it (`"string"`, `["list","string"]`, …),
   * as the state records it or the tool implies it. A fresh, unfrozen copy.
   * @throws ObjstateError `OUTPUT_NOT_FOUND`
   */
  toolType(name: string): JsonValue {
    return toJs(this.exactToolType(name), "lossless", false);
  }

  /** {@link toolType} as JSON text (`space` as in `JSON.stringify`). @throws ObjstateError `OUTPUT_NOT_FOUND` */
  toolTypeText(name: string, space = 0): string {
    return stringifyExact(this.exactToolType(name), space);
  }

  /** Every output, sensitive ones included, as a fresh object; a number no JS number holds exactly (`1e400`) is its text. */
  toJSON(): Record<string, JsonValue> {
    return toJs(this.values, "lossless", false) as Record<string, JsonValue>;
  }

  /** JSON text of every output (or of `name`), numbers as written, sensitive ones included. @throws ObjstateError `OUTPUT_NOT_FOUND` */
  toJSONText(name?: string, space = 0): string {
    if (name !== undefined) return stringifyExact(this.exact(name), space);
    return stringifyExact(new Map(this.names().map((k) => [k, this.values.get(k) as ExactJson])), space);
  }

  private exactToolType(name: string): ExactJson {
    const value = this.exact(name);
    const recorded = this.types.get(name);
    if (recorded === undefined || recorded === UPGRADED) return impliedToolType(value, recorded === UPGRADED);
    return recorded;
  }

  private exact(name: string): ExactJson {
    const value = this.values.get(name);
    if (value !== undefined) return value;
    const names = this.names();
    const available = names.length === 0 ? "there are no outputs" : `available: ${names.join(", ")}`;
    throw new ObjstateError("OUTPUT_NOT_FOUND", `no output "${name}"${this.where()}; ${available}`, { details: { output: name, available: names } });
  }

  private typed(name: string, expected: JsonType): JsonValue {
    const actual = exactType(this.exact(name));
    if (actual === expected) return this.get(name);
    const message = `output "${name}" is ${withArticle(actual)}, not ${withArticle(expected)}${this.where()}`;
    throw new ObjstateError("OUTPUT_TYPE_MISMATCH", message, { details: { output: name, expected, actual } });
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
