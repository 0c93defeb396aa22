/** The machinery shared by the three value objects: validation, getters and builders from the field table, redacted printing. */
import { inspect } from "node:util";
import { printSafely, shownValue } from "../util/redact.js";
import { ConfigError } from "./errors.js";
import type { FieldSpec } from "./fields.js";
import { frozenJsonCopy, isPlainObject, NOT_JSON } from "./rules.js";
import { checkValue, describeValue, suggestion } from "./validate.js";

/** Describes one value-object class for the shared machinery. */
export interface KindSpec {
  readonly className: string;
  readonly fields: readonly FieldSpec[];
  /** Turns the props of the `assumeRole`-kind field (the deprecated block) into its object. */
  readonly nested?: ((value: unknown, path: string) => unknown) | undefined;
}

let assumeRoleWarned = false;

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
    return (spec.nested as NonNullable<KindSpec["nested"]>)(v, `${fieldPath}.`);
  }
  if (lastValid.get(f) === v) return v;
  checkValue(f, v, fieldPath); // throws: wrong type or a value its rule refuses
  lastValid.set(f, v);
  return v;
}

/** A kind's field indices by name, and every field unset in table order: worked out once per kind. */
interface Shape {
  readonly index: ReadonlyMap<string, number>;
  readonly blank: Readonly<Record<string, undefined>>;
}
const shapes = new WeakMap<KindSpec, Shape>();

/**
 * Every field's stored value in table order (unset ones undefined), in a copy of the kind's blank so that all its objects
 * share one shape. Throws the first problem: props no plain object, an unknown key, then field by field in table order.
 */
function checkedValues(spec: KindSpec, input: unknown, path: string): Record<string, unknown> {
  if (!isPlainObject(input)) {
    throw new ConfigError("INVALID_PROPS", `${spec.className} props must be a plain object, got ${describeValue(input, false)}`, {
      field: path === "" ? undefined : path.slice(0, -1),
    });
  }
  let shape = shapes.get(spec);
  if (shape === undefined) {
    shape = { index: new Map(spec.fields.map((f, i) => [f.name, i])), blank: Object.fromEntries(spec.fields.map((f) => [f.name, undefined])) };
    shapes.set(spec, shape);
  }
  const values: Record<string, unknown> = { ...shape.blank };
  let first: { at: number; error: unknown } | undefined;
  for (const k in input) {
    const at = shape.index.get(k);
    if (at === undefined) {
      const names = spec.fields.map((f) => f.name);
      const hint = suggestion(k, names, `the fields are: ${names.join(", ")}`, (n) => `${path}${n}`);
      throw new ConfigError("UNKNOWN_FIELD", `${path}${k} is not a field of ${spec.className}${hint}`, { field: `${path}${k}` });
    }
    const v = input[k];
    if (v === undefined || v === null || (first !== undefined && first.at < at)) continue;
    try {
      values[k] = stored(spec, spec.fields[at] as FieldSpec, v, `${path}${k}`);
    } catch (error) {
      first = { at, error };
    }
  }
  spec.fields.forEach((f, i) => {
    if (f.required && values[f.name] === undefined && (first === undefined || i < first.at))
      throw new ConfigError("REQUIRED", `${path}${f.name} is required`, { field: `${path}${f.name}` });
  });
  if (first !== undefined) throw first.error;
  return values;
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

/** Base of the value objects: immutable, printable without secrets; `P` and `B` are its props and builder types. */
export abstract class ConfigObject<P = unknown, B = unknown> {
  /** Validates `props` against `spec`, then sets every field (unset ones undefined) in table order and freezes. */
  protected constructor(spec: KindSpec, props: unknown, path = "") {
    const values = checkedValues(spec, props, path);
    Object.freeze(Object.assign(this, values));
    // One deprecation warning per process.
    if (values["assumeRole"] === undefined || assumeRoleWarned) return;
    assumeRoleWarned = true;
    process.emitWarning(
      "The assumeRole block is deprecated; use assumeRoleRoleArn, assumeRolePolicy, assumeRoleSessionName and assumeRoleSessionExpiration instead.",
      { type: "DeprecationWarning", code: "OBJSTATE_DEP_ASSUME_ROLE" },
    );
  }

  /** The field table of this object's class. */
  protected fieldSpecs(): readonly FieldSpec[] {
    return (this.constructor as unknown as { readonly fields: readonly FieldSpec[] }).fields;
  }

  /** The set fields as plain props (secrets included): `from(config.toProps())` round-trips. */
  toProps(): P {
    const out: Record<string, unknown> = {};
    for (const { name } of this.fieldSpecs()) {
      const v = (this as unknown as Record<string, unknown>)[name];
      if (v !== undefined) out[name] = v instanceof ConfigObject ? v.toProps() : typeof v === "object" ? structuredClone(v) : v;
    }
    return out as P;
  }

  /** A builder holding every set field. */
  toBuilder(): B {
    const b = (this.constructor as unknown as { builder(): Record<string, (v: unknown) => unknown> }).builder();
    for (const [name, v] of Object.entries(this.toProps() as object)) b[name]?.(v);
    return b as B;
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

/**
 * Define `getX()` on `cls` for every field, and return the kind's builder factory. A builder's values live in a
 * private field, so no property of it can show a secret; it prints as `<className>Builder {…}`, secrets redacted.
 */
export function defineKind<B>(cls: new (props: never) => object, spec: KindSpec): () => B {
  for (const { name } of spec.fields) {
    Object.defineProperty(cls.prototype, `get${name.charAt(0).toUpperCase()}${name.slice(1)}`, {
      value: function (this: Record<string, unknown>): unknown {
        return this[name];
      },
    });
  }
  let valuesOf: (builder: object) => Record<string, unknown> = () => ({});
  class Builder {
    readonly #values: Record<string, unknown> = {};
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
        return new cls({ ...this.#values } as never);
      };
    }
  }
  printSafely(Builder.prototype, `${spec.className}Builder`, (self) => shownFields(spec.fields, valuesOf(self)));
  return () => new Builder() as B;
}
