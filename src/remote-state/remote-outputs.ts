/**
 * The outputs of a remote state as read at run time (DESIGN §6): the state's root outputs
 * merged over the config's `defaults`, with typed accessors whose errors say what is wrong.
 * Loaded with the package, so it stays small; reading lives in `fetch-outputs.ts`.
 */
import type { ConnectOptions } from "../backend/backend.js";
import { ObjstateError } from "../errors.js";

/** Any JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Options of `DataRemoteStateObjectStore.fetchOutputs`: the connect options that matter for a read. */
export interface FetchOutputsOptions extends Pick<ConnectOptions, "env" | "cwd" | "digestRetry" | "s3" | "onWarning" | "clock" | "timeouts"> {
  /**
   * States of at least this many bytes have their outputs picked out by a scan of the bytes
   * instead of a full parse (default 1 MiB). 0 always scans; `Infinity` always parses.
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

/** The JSON type of a value, as the messages name it. */
export type JsonType = "string" | "number" | "boolean" | "list" | "object" | "null";

function jsonType(v: unknown): JsonType {
  if (v === null) return "null";
  if (Array.isArray(v)) return "list";
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return typeof v as JsonType;
  return "object";
}

function withArticle(t: JsonType): string {
  return t === "null" ? "null" : t === "object" ? "an object" : `a ${t}`;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/**
 * Output values by name. Values are frozen; {@link toJSON} gives a fresh plain copy.
 *
 * @example
 * const net = await remote.fetchOutputs();
 * net.string("vpc_id");       // "vpc-0a1b2c"
 * net.number("subnet_count"); // 3; an error (OUTPUT_TYPE_MISMATCH) if it is not a number
 */
export class RemoteOutputs {
  readonly source: OutputsSource;
  private readonly values: ReadonlyMap<string, JsonValue>;

  /** Outputs from a name → value record (own enumerable properties), e.g. a state's outputs merged over defaults. */
  constructor(values: Readonly<Record<string, JsonValue>>, source: OutputsSource = {}) {
    const map = new Map<string, JsonValue>();
    // A private copy: freezing must not reach into the caller's objects.
    for (const [k, v] of Object.entries(values)) map.set(k, deepFreeze(structuredClone(v)));
    this.values = map;
    this.source = Object.freeze({ ...source });
    Object.freeze(this);
  }

  /** Output names, sorted. */
  names(): string[] {
    return [...this.values.keys()].sort();
  }

  /** Is there an output of this name (from the state or the defaults)? */
  has(name: string): boolean {
    return this.values.has(name);
  }

  /** Any output's value. @throws ObjstateError `OUTPUT_NOT_FOUND` */
  get(name: string): JsonValue {
    if (!this.values.has(name)) {
      const names = this.names();
      throw new ObjstateError(
        "OUTPUT_NOT_FOUND",
        `no output "${name}"${this.where()}; ${names.length === 0 ? "there are no outputs" : `available: ${names.join(", ")}`}`,
        { details: { output: name, available: names } },
      );
    }
    return this.values.get(name) as JsonValue;
  }

  /** A string output. @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH` */
  string(name: string): string {
    return this.typed(name, "string") as string;
  }

  /** A number output. @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH` */
  number(name: string): number {
    return this.typed(name, "number") as number;
  }

  /** A boolean output. @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH` */
  boolean(name: string): boolean {
    return this.typed(name, "boolean") as boolean;
  }

  /** A list (array) output; the array is frozen. @throws ObjstateError `OUTPUT_NOT_FOUND`, `OUTPUT_TYPE_MISMATCH` */
  list(name: string): readonly JsonValue[] {
    return this.typed(name, "list") as JsonValue[];
  }

  /** Every output as a plain object (a fresh, unfrozen copy). */
  toJSON(): Record<string, JsonValue> {
    const out: Record<string, JsonValue> = {};
    for (const [k, v] of this.values) {
      // defineProperty: a name such as "__proto__" stays an ordinary own property.
      Object.defineProperty(out, k, { value: structuredClone(v), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }

  private typed(name: string, expected: JsonType): JsonValue {
    const v = this.get(name);
    const actual = jsonType(v);
    if (actual !== expected) {
      throw new ObjstateError("OUTPUT_TYPE_MISMATCH", `output "${name}" is ${withArticle(actual)}, not ${withArticle(expected)}${this.where()}`, {
        details: { output: name, expected, actual },
      });
    }
    return v;
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
