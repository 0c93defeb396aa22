/**
 * The machinery shared by the three value objects: validation of props against a field
 * table, getters and builders generated from the table, redacted printing.
 */
import { ConfigError } from "./errors.js";
import type { FieldSpec } from "./fields.js";
import { isPlainObject } from "./rules.js";
import { checkValue, describeValue, nearest } from "./validate.js";

const INSPECT = Symbol.for("nodejs.util.inspect.custom");
/** What secrets print as. */
export const REDACTED = "<redacted>";

/** Turns the props of a nested object field (the deprecated block) into its object. */
export type NestedNormalizer = (value: unknown, path: string) => unknown;

/** Describes one value-object class for the shared machinery. */
export interface KindSpec {
  readonly className: string;
  readonly fields: readonly FieldSpec[];
  /** Normalizer for `assumeRole`-kind fields. */
  readonly nested?: NestedNormalizer | undefined;
}

const namesCache = new WeakMap<readonly FieldSpec[], { set: Set<string>; list: string[] }>();
function namesOf(fields: readonly FieldSpec[]): { set: Set<string>; list: string[] } {
  let n = namesCache.get(fields);
  if (n === undefined) {
    const list = fields.map((f) => f.name);
    n = { set: new Set(list), list };
    namesCache.set(fields, n);
  }
  return n;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** A deep copy of JSON data (validated plain objects and arrays only). */
export function copyJson<T>(v: T): T {
  if (Array.isArray(v)) return v.map(copyJson) as T;
  if (typeof v === "object" && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = copyJson(x);
    return out as T;
  }
  return v;
}

/**
 * Validate `input` against the kind's field table and return the stored values: every
 * field present, `undefined` for unset ones. `path` prefixes field names in messages
 * (for the nested block).
 */
export function normalizeProps(spec: KindSpec, input: unknown, path = ""): Record<string, unknown> {
  if (!isPlainObject(input)) {
    throw new ConfigError("INVALID_PROPS", `${spec.className} props must be a plain object, got ${describeValue(input, false)}`, { field: path === "" ? undefined : path.slice(0, -1) });
  }
  const names = namesOf(spec.fields);
  for (const k of Object.keys(input)) {
    if (!names.set.has(k)) {
      const near = nearest(k, names.list);
      throw new ConfigError("UNKNOWN_FIELD", `${path}${k} is not a field of ${spec.className}${near === undefined ? `; the fields are: ${names.list.join(", ")}` : `; did you mean ${path}${near}?`}`, { field: `${path}${k}` });
    }
  }
  const out: Record<string, unknown> = {};
  for (const f of spec.fields) {
    const v = input[f.name];
    const fieldPath = `${path}${f.name}`;
    if (v === undefined || v === null) {
      if (f.required) throw new ConfigError("REQUIRED", `${fieldPath} is required`, { field: fieldPath });
      out[f.name] = undefined;
    } else if (f.kind === "assumeRole") {
      if (spec.nested === undefined) throw new Error(`no normalizer for ${f.name}`);
      checkValue(f, v, fieldPath);
      out[f.name] = spec.nested(v, `${fieldPath}.`);
    } else if (f.kind === "map") {
      checkValue(f, v, fieldPath);
      out[f.name] = deepFreeze(copyJson(v));
    } else {
      checkValue(f, v, fieldPath);
      out[f.name] = v;
    }
  }
  return out;
}

/** Base of the value objects: immutable, printable without secrets. */
export abstract class ConfigObject {
  protected constructor(values: Record<string, unknown>) {
    const self = this as unknown as Record<string, unknown>;
    for (const f of this.fieldSpecs()) self[f.name] = values[f.name];
    Object.freeze(this);
  }

  /** The field table of this object's class. */
  protected fieldSpecs(): readonly FieldSpec[] {
    return (this.constructor as unknown as { readonly fields: readonly FieldSpec[] }).fields;
  }

  private mapSet(fn: (f: FieldSpec, v: unknown) => unknown): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const self = this as unknown as Record<string, unknown>;
    for (const f of this.fieldSpecs()) {
      const v = self[f.name];
      if (v !== undefined) out[f.name] = fn(f, v);
    }
    return out;
  }

  /** The set fields as plain props (secrets included), suitable for `from()`. */
  protected plainProps(): Record<string, unknown> {
    return this.mapSet((_f, v) => (v instanceof ConfigObject ? v.plainProps() : typeof v === "object" ? copyJson(v) : v));
  }

  /** The set fields with secrets replaced by `<redacted>`: `JSON.stringify(config)` is safe to log. */
  toJSON(): Record<string, unknown> {
    return this.mapSet((f, v) => (f.secret ? REDACTED : v instanceof ConfigObject ? v.toJSON() : v));
  }

  /** `ClassName {"bucket":"…",…}` with secrets redacted. */
  toString(): string {
    return `${this.constructor.name} ${JSON.stringify(this.toJSON())}`;
  }

  [INSPECT](_depth: number, options: object, inspect: (v: unknown, o: object) => string): string {
    return `${this.constructor.name} ${inspect(this.toJSON(), options)}`;
  }
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Define `getX()` on a class prototype for every field of its table. */
export function installGetters(proto: object, fields: readonly FieldSpec[]): void {
  for (const f of fields) {
    const name = f.name;
    Object.defineProperty(proto, `get${capitalize(name)}`, {
      value: function (this: Record<string, unknown>): unknown {
        return this[name];
      },
      writable: false,
      enumerable: false,
      configurable: false,
    });
  }
}

/**
 * A builder factory for a field table: one setter per field, named as the field, each
 * returning the builder; `build()` hands the collected props to `make`.
 */
export function builderFactory<B>(fields: readonly FieldSpec[], make: (props: Record<string, unknown>) => unknown): (initial?: Record<string, unknown>) => B {
  const proto: Record<string, unknown> = {
    build(this: { values: Record<string, unknown> }): unknown {
      return make({ ...this.values });
    },
  };
  for (const f of fields) {
    const name = f.name;
    proto[name] = function (this: { values: Record<string, unknown> }, value: unknown): unknown {
      this.values[name] = value;
      return this;
    };
  }
  return (initial = {}) => {
    const b = Object.create(proto) as { values: Record<string, unknown> };
    b.values = { ...initial };
    return b as B;
  };
}

let assumeRoleWarned = false;
/** The one deprecation warning per process for the `assumeRole` block. */
export function warnAssumeRoleDeprecated(): void {
  if (assumeRoleWarned) return;
  assumeRoleWarned = true;
  process.emitWarning("The assumeRole block is deprecated; use assumeRoleRoleArn, assumeRolePolicy, assumeRoleSessionName and assumeRoleSessionExpiration instead.", {
    type: "DeprecationWarning",
    code: "OBJSTATE_DEP_ASSUME_ROLE",
  });
}
