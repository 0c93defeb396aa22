/**
 * The machinery shared by the three value objects: validation of props against a field
 * table, getters and builders generated from the table, redacted printing.
 */
import { inspect } from "node:util";
import { printSafely, REDACTED, shownValue } from "../util/redact.js";
import { ConfigError } from "./errors.js";
import type { FieldSpec } from "./fields.js";
import { frozenJsonCopy, isPlainObject, NOT_JSON } from "./rules.js";
import { checkValue, describeValue, nearest } from "./validate.js";

export { REDACTED };

/** Turns the props of a nested object field (the deprecated block) into its object. */
export type NestedNormalizer = (value: unknown, path: string) => unknown;

/** Describes one value-object class for the shared machinery. */
export interface KindSpec {
  readonly className: string;
  readonly fields: readonly FieldSpec[];
  /** Normalizer for `assumeRole`-kind fields. */
  readonly nested?: NestedNormalizer | undefined;
}

/** Each field's last value found valid: configs built in a loop repeat most of their values. */
const lastValid = new Map<FieldSpec, unknown>();

/** The value to store for `v` (set, not null); throws the field's problem. */
function stored(spec: KindSpec, f: FieldSpec, v: unknown, fieldPath: string): unknown {
  if (f.kind === "map") {
    const copy = isPlainObject(v) ? frozenJsonCopy(v) : NOT_JSON;
    if (copy !== NOT_JSON) return copy;
  }
  if (f.kind === "assumeRole") {
    checkValue(f, v, fieldPath);
    if (spec.nested === undefined) throw new Error(`no normalizer for ${f.name}`);
    return spec.nested(v, `${fieldPath}.`);
  }
  if (lastValid.get(f) === v) return v;
  checkValue(f, v, fieldPath); // throws: wrong type or a value its rule refuses
  lastValid.set(f, v);
  return v;
}

/**
 * Throw the first problem of `input`: props that are no plain object, an unknown key, then
 * field by field in table order. `path` prefixes field names in messages (the nested block).
 */
function throwFirstProblem(spec: KindSpec, input: unknown, path: string): never {
  if (!isPlainObject(input)) {
    throw new ConfigError("INVALID_PROPS", `${spec.className} props must be a plain object, got ${describeValue(input, false)}`, {
      field: path === "" ? undefined : path.slice(0, -1),
    });
  }
  const names = spec.fields.map((f) => f.name);
  for (const k in input) {
    if (names.includes(k)) continue;
    const near = nearest(k, names);
    throw new ConfigError(
      "UNKNOWN_FIELD",
      `${path}${k} is not a field of ${spec.className}${near === undefined ? `; the fields are: ${names.join(", ")}` : `; did you mean ${path}${near}?`}`,
      { field: `${path}${k}` },
    );
  }
  for (const f of spec.fields) {
    const v = input[f.name];
    if (v !== undefined && v !== null) stored(spec, f, v, `${path}${f.name}`);
    else if (f.required) throw new ConfigError("REQUIRED", `${path}${f.name} is required`, { field: `${path}${f.name}` });
  }
  throw new Error(`${spec.className}: props judged invalid, but no field is`);
}

/** A kind's fields by name, and every field unset in table order: worked out once per kind. */
interface Shape {
  readonly byName: ReadonlyMap<string, FieldSpec>;
  readonly blank: Readonly<Record<string, undefined>>;
}
const shapes = new WeakMap<KindSpec, Shape>();

/**
 * Every field's stored value, in table order (unset ones undefined). Only the props given are
 * visited, into a copy of the kind's blank so that all its objects share one shape; on any
 * problem {@link throwFirstProblem} finds the one to report.
 */
function checkedValues(spec: KindSpec, input: unknown, path: string): Record<string, unknown> {
  let shape = shapes.get(spec);
  if (shape === undefined) {
    shape = { byName: new Map(spec.fields.map((f) => [f.name, f])), blank: Object.fromEntries(spec.fields.map((f) => [f.name, undefined])) };
    shapes.set(spec, shape);
  }
  if (isPlainObject(input)) {
    const values: Record<string, unknown> = { ...shape.blank };
    let valid = true;
    try {
      for (const k in input) {
        const f = shape.byName.get(k);
        const v = input[k];
        if (f === undefined) valid = false;
        else if (v !== undefined && v !== null) values[k] = stored(spec, f, v, `${path}${k}`);
      }
    } catch {
      valid = false;
    }
    if (valid && spec.fields.every((f) => !f.required || values[f.name] !== undefined)) return values;
  }
  return throwFirstProblem(spec, input, path);
}

/** The fields set in `values`, in table order, secrets redacted and URL credentials removed. */
function shownFields(fields: readonly FieldSpec[], values: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.name];
    if (v !== undefined) out[f.name] = v instanceof ConfigObject ? v.toJSON() : shownValue(v, f.secret);
  }
  return out;
}

/** Base of the value objects: immutable, printable without secrets. */
export abstract class ConfigObject {
  /** Validates `props` against `spec`, then sets every field (unset ones undefined) in table order and freezes. */
  protected constructor(spec: KindSpec, props: unknown, path = "") {
    Object.freeze(Object.assign(this, checkedValues(spec, props, path)));
  }

  /** The field table of this object's class. */
  protected fieldSpecs(): readonly FieldSpec[] {
    return (this.constructor as unknown as { readonly fields: readonly FieldSpec[] }).fields;
  }

  /** The set fields as plain props (secrets included), suitable for `from()`. */
  protected plainProps(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const { name } of this.fieldSpecs()) {
      const v = (this as unknown as Record<string, unknown>)[name];
      if (v !== undefined) out[name] = v instanceof ConfigObject ? v.plainProps() : typeof v === "object" ? structuredClone(v) : v;
    }
    return out;
  }

  /** The set fields with secrets replaced by `<redacted>` and URL credentials removed: `JSON.stringify(config)` is safe to log. */
  toJSON(): Record<string, unknown> {
    return shownFields(this.fieldSpecs(), this as unknown as Record<string, unknown>);
  }

  /** `ClassName {"bucket":"…",…}` with secrets redacted. */
  toString(): string {
    return `${this.constructor.name} ${JSON.stringify(this.toJSON())}`;
  }

  /** `util.inspect` shows what `toJSON` shows. */
  [inspect.custom](_depth: number, options: object, show: (v: unknown, o: object) => string = inspect): string {
    return `${this.constructor.name} ${show(this.toJSON(), options)}`;
  }
}

/** Define `getX()` on a class prototype for every field of its table. */
export function installGetters(proto: object, fields: readonly FieldSpec[]): void {
  for (const { name } of fields) {
    Object.defineProperty(proto, `get${name.charAt(0).toUpperCase()}${name.slice(1)}`, {
      value: function (this: Record<string, unknown>): unknown {
        return this[name];
      },
    });
  }
}

/**
 * A builder factory for a kind: one setter per field, named as the field, each returning the
 * builder; `build()` hands the values set to `make`. The values live in a private field, so
 * no property of a builder can show a secret; it prints (`util.inspect`, `JSON.stringify`,
 * `String()`) as `<className>Builder {…}`, secrets redacted, the fields set in table order.
 */
export function builderFactory<B>(spec: KindSpec, make: (props: Record<string, unknown>) => unknown): (initial?: Record<string, unknown>) => B {
  let valuesOf: (builder: object) => Record<string, unknown> = () => ({});
  class Builder {
    readonly #values: Record<string, unknown>;
    constructor(initial: Record<string, unknown> | undefined) {
      this.#values = { ...initial };
    }
    static {
      valuesOf = (builder) => (builder as Builder).#values; // a TypeError for anything else
      const proto = this.prototype as unknown as Record<string, unknown>;
      for (const { name } of spec.fields) {
        proto[name] = function (this: Builder, value: unknown): Builder {
          this.#values[name] = value;
          return this;
        };
      }
      proto["build"] = function (this: Builder): unknown {
        return make({ ...this.#values });
      };
    }
  }
  printSafely(Builder.prototype, `${spec.className}Builder`, (self) => shownFields(spec.fields, valuesOf(self)));
  return (initial) => new Builder(initial) as B;
}

let assumeRoleWarned = false;
/** The one deprecation warning per process for the `assumeRole` block. */
export function warnAssumeRoleDeprecated(): void {
  if (assumeRoleWarned) return;
  assumeRoleWarned = true;
  process.emitWarning(
    "The assumeRole block is deprecated; use assumeRoleRoleArn, assumeRolePolicy, assumeRoleSessionName and assumeRoleSessionExpiration instead.",
    { type: "DeprecationWarning", code: "OBJSTATE_DEP_ASSUME_ROLE" },
  );
}
