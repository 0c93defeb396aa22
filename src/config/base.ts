/**
 * The machinery shared by the three value objects: validation of props against a field
 * table, getters and builders generated from the table, redacted printing.
 */
import { inspect } from "node:util";
import { printSafely, REDACTED, shownValue } from "../util/redact.js";
import { ConfigError } from "./errors.js";
import type { FieldSpec } from "./fields.js";
import { isPlainObject } from "./rules.js";
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

/** A set value's check and copy as one call: the value to store, or INVALID when it is not valid for the field. */
type Take = (v: unknown, spec: KindSpec, fieldPath: string) => unknown;

/** What building an object of a kind needs, worked out once per kind instead of per object. */
interface Plan {
  readonly set: Set<string>;
  readonly list: string[];
  /** Field name → what to store for a value given for it. */
  readonly byName: Map<string, Take>;
  /** Every field unset (`undefined`), in table order: each object starts as a copy of it. */
  readonly blank: Record<string, unknown>;
  readonly required: readonly string[];
}

function taker(f: FieldSpec): Take {
  const type = f.rule.type;
  const valid = f.rule.valid as ((v: unknown) => boolean) | undefined;
  if (f.kind === "map") return (v) => (isPlainObject(v) ? frozenJsonCopy(v, []) : INVALID);
  if (f.kind === "assumeRole") {
    return (v, spec, fieldPath) => {
      if (spec.nested === undefined || typeof v !== "object" || Array.isArray(v)) return INVALID;
      try {
        return spec.nested(v, `${fieldPath}.`);
      } catch {
        return INVALID;
      }
    };
  }
  return valid === undefined ? (v) => (typeof v === type ? v : INVALID) : (v) => (typeof v === type && valid(v) ? v : INVALID);
}

const plans = new WeakMap<readonly FieldSpec[], Plan>();
function planOf(fields: readonly FieldSpec[]): Plan {
  let plan = plans.get(fields);
  if (plan === undefined) {
    const list = fields.map((f) => f.name);
    plan = {
      set: new Set(list),
      list,
      byName: new Map(fields.map((f) => [f.name, taker(f)])),
      // Not filled by `blank[name] = …` in a loop: V8 turns an object that gets more than
      // a dozen properties through computed keys into a hash table, and copies of it are
      // then built key by key (slower than the field-by-field writes this replaces).
      blank: Object.fromEntries(list.map((name) => [name, undefined])),
      required: fields.filter((f) => f.required).map((f) => f.name),
    };
    plans.set(fields, plan);
  }
  return plan;
}

const INVALID = Symbol("invalid");

/** A frozen deep copy of JSON data, or INVALID when `v` is not JSON (function, NaN, cycle, class instance …). */
function frozenJsonCopy(v: unknown, seen: object[]): unknown {
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : INVALID;
  // The containers on the path to `v` (a cycle returns to one): a few, so an array.
  if (typeof v !== "object" || seen.includes(v)) return INVALID;
  seen.push(v);
  let out: unknown[] | Record<string, unknown> | typeof INVALID;
  if (Array.isArray(v)) {
    const arr: unknown[] = new Array<unknown>(v.length);
    out = arr;
    for (let i = 0; i < v.length; i++) {
      const c = frozenJsonCopy(v[i], seen);
      if (c === INVALID) {
        out = INVALID;
        break;
      }
      arr[i] = c;
    }
  } else if (isPlainObject(v)) {
    const obj: Record<string, unknown> = {};
    out = obj;
    for (const k in v) {
      const c = frozenJsonCopy(v[k], seen);
      if (c === INVALID) {
        out = INVALID;
        break;
      }
      obj[k] = c;
    }
  } else {
    out = INVALID;
  }
  seen.pop();
  return out === INVALID ? INVALID : Object.freeze(out);
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
 * Throw the error a field-by-field check of `input` in table order meets first. Called once
 * {@link validValues} found the props invalid: the takers judge each value, this only
 * finds which problem to report and words it. `path` prefixes field names in messages (for
 * the nested block).
 */
function throwFirstProblem(spec: KindSpec, plan: Plan, input: unknown, path: string): never {
  if (!isPlainObject(input)) {
    throw new ConfigError("INVALID_PROPS", `${spec.className} props must be a plain object, got ${describeValue(input, false)}`, { field: path === "" ? undefined : path.slice(0, -1) });
  }
  for (const k in input) {
    if (!plan.set.has(k)) {
      const near = nearest(k, plan.list);
      throw new ConfigError("UNKNOWN_FIELD", `${path}${k} is not a field of ${spec.className}${near === undefined ? `; the fields are: ${plan.list.join(", ")}` : `; did you mean ${path}${near}?`}`, { field: `${path}${k}` });
    }
  }
  for (const f of spec.fields) {
    const v = input[f.name];
    const fieldPath = path === "" ? f.name : `${path}${f.name}`;
    if (v === undefined || v === null) {
      if (f.required) throw new ConfigError("REQUIRED", `${fieldPath} is required`, { field: fieldPath });
      continue;
    }
    if (plan.byName.get(f.name)?.(v, spec, fieldPath) !== INVALID) continue;
    checkValue(f, v, fieldPath); // throws: wrong type or a value its rule refuses
    if (f.kind === "assumeRole") {
      if (spec.nested === undefined) throw new Error(`no normalizer for ${f.name}`);
      spec.nested(v, `${fieldPath}.`); // throws the nested block's own first problem
    }
    // A map of the right type that is not JSON (a function, NaN, a cycle, a class instance …).
    throw new ConfigError("INVALID_VALUE", `${fieldPath} must be ${f.rule.expected}`, { field: fieldPath });
  }
  throw new Error(`${spec.className}: props judged invalid, but no field is`);
}

/**
 * The stored values of valid props, or undefined when anything is wrong (then
 * {@link throwFirstProblem} finds the error it reports, in table order). Visits only the
 * props given: the unset fields come with the copy of the kind's blank.
 */
function validValues(spec: KindSpec, plan: Plan, input: Record<string, unknown>, path: string, proto: object): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = { __proto__: proto, ...plan.blank };
  for (const k in input) {
    const take = plan.byName.get(k);
    if (take === undefined) return undefined;
    const v = input[k];
    if (v === undefined || v === null) continue;
    const stored = take(v, spec, `${path}${k}`);
    if (stored === INVALID) return undefined;
    out[k] = stored;
  }
  for (const name of plan.required) if (out[name] === undefined) return undefined;
  return out;
}

/** Base of the value objects: immutable, printable without secrets. */
export abstract class ConfigObject {
  /**
   * Validates `props` against `spec` and returns the new object (instead of `this`): a copy
   * of the kind's blank made with the class's prototype (in the literal: set afterwards, each
   * frozen object would get a hidden class of its own), with the given values, frozen.
   * Copying one ready-made shape is what makes building cheap while the code is still cold
   * (1,000 objects in a fresh process), where writing every field onto `this` one by one
   * was the largest cost of synthesis.
   */
  protected constructor(spec: KindSpec, props: unknown, path = "") {
    const plan = planOf(spec.fields);
    const proto = new.target.prototype as object;
    const values = isPlainObject(props) ? validValues(spec, plan, props, path, proto) : undefined;
    if (values === undefined) throwFirstProblem(spec, plan, props, path);
    return Object.freeze(values) as unknown as ConfigObject;
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

  /**
   * The set fields with secrets replaced by `<redacted>` and credentials inside endpoint
   * URLs removed: `JSON.stringify(config)` is safe to log.
   */
  toJSON(): Record<string, unknown> {
    return this.mapSet((f, v) => (v instanceof ConfigObject ? v.toJSON() : shownValue(v, f.secret)));
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

// A builder's collected values live here, not on the builder: no property of it, hidden
// or not, can show a secret to `util.inspect` or `JSON.stringify`.
const builderValues = new WeakMap<object, Record<string, unknown>>();

function valuesOf(builder: object): Record<string, unknown> {
  const v = builderValues.get(builder);
  if (v === undefined) throw new TypeError("not a builder");
  return v;
}

/**
 * A builder factory for a field table: one setter per field, named as the field, each
 * returning the builder; `build()` hands the collected props to `make`. A builder prints
 * (`util.inspect`, `JSON.stringify`, `String()`) as `<className>Builder {…}` with secrets
 * redacted.
 */
export function builderFactory<B>(className: string, fields: readonly FieldSpec[], make: (props: Record<string, unknown>) => unknown): (initial?: Record<string, unknown>) => B {
  const proto: Record<string, unknown> = {
    build(this: object): unknown {
      // Not copied: building keeps nothing of the props it is given.
      return make(valuesOf(this));
    },
  };
  for (const f of fields) {
    const name = f.name;
    proto[name] = function (this: object, value: unknown): unknown {
      valuesOf(this)[name] = value;
      return this;
    };
  }
  const secret = new Set(fields.filter((f) => f.secret).map((f) => f.name));
  printSafely(proto, `${className}Builder`, (self) => {
    const shown: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(valuesOf(self))) if (v !== undefined) shown[k] = v instanceof ConfigObject ? v.toJSON() : shownValue(v, secret.has(k));
    return shown;
  });
  return (initial = {}) => {
    const b = Object.create(proto) as object;
    builderValues.set(b, { ...initial });
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
