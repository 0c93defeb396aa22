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

/** A set value's check and copy as one call: the value to store, or INVALID when it is not valid for the field. */
type Take = (v: unknown, spec: KindSpec, fieldPath: string) => unknown;

/** What building an object of a kind needs, worked out once per kind instead of per object. */
interface Plan {
  readonly set: Set<string>;
  readonly list: string[];
  /** Field name → what to store for a value given for it. */
  readonly byName: Map<string, Take>;
  /** The same takers by field index (table order). */
  readonly takers: readonly Take[];
  /** Field name → its bit in a set mask (see {@link setMaskOf}). */
  readonly bitOf: Map<string, number>;
  /** Every field unset (`undefined`), in table order: each object's values start as a copy of it. */
  readonly blank: Record<string, unknown>;
  readonly required: readonly string[];
}

function taker(f: FieldSpec): Take {
  const type = f.rule.type;
  const valid = f.rule.valid as ((v: unknown) => boolean) | undefined;
  if (f.kind === "map") return (v) => (isPlainObject(v) ? copyOrInvalid(frozenJsonCopy(v)) : INVALID);
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
  if (valid === undefined) return (v) => (typeof v === type ? v : INVALID);
  // The last value found valid: configs built in a loop repeat most of their values, and
  // the same string is then one comparison instead of a pattern match.
  let last: unknown = INVALID;
  return (v) => {
    if (v === last) return v;
    if (typeof v !== type || !valid(v)) return INVALID;
    last = v;
    return v;
  };
}

/** The bit of field `i` in a set mask (see {@link setMaskOf}). */
function bit(i: number): number {
  return 1 << i;
}

const plans = new WeakMap<readonly FieldSpec[], Plan>();
function planOf(fields: readonly FieldSpec[]): Plan {
  let plan = plans.get(fields);
  if (plan === undefined) {
    // Set masks hold 30 bits, so that a mask stays a small integer.
    if (fields.length > 30) throw new Error(`a field table of ${fields.length} fields: set masks hold 30`);
    const list = fields.map((f) => f.name);
    const takers = fields.map(taker);
    plan = {
      set: new Set(list),
      list,
      byName: new Map(list.map((name, i) => [name, takers[i] as Take])),
      takers,
      bitOf: new Map(list.map((name, i) => [name, bit(i)])),
      // Built in one step, not by `blank[name] = …` in a loop, so that its copies stay fast.
      blank: Object.fromEntries(list.map((name) => [name, undefined])),
      required: fields.filter((f) => f.required).map((f) => f.name),
    };
    plans.set(fields, plan);
  }
  return plan;
}

const INVALID = Symbol("invalid");

function copyOrInvalid(copy: unknown): unknown {
  return copy === NOT_JSON ? INVALID : copy;
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
    throw new ConfigError("INVALID_PROPS", `${spec.className} props must be a plain object, got ${describeValue(input, false)}`, {
      field: path === "" ? undefined : path.slice(0, -1),
    });
  }
  for (const k in input) {
    if (!plan.set.has(k)) {
      const near = nearest(k, plan.list);
      throw new ConfigError(
        "UNKNOWN_FIELD",
        `${path}${k} is not a field of ${spec.className}${near === undefined ? `; the fields are: ${plan.list.join(", ")}` : `; did you mean ${path}${near}?`}`,
        { field: `${path}${k}` },
      );
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

/** What a constructor stores: every field's value (a plain object of the kind's shape) and which are set. */
interface Checked {
  readonly values: Record<string, unknown>;
  readonly mask: number;
}

/**
 * The stored values of valid props, or undefined when anything is wrong (then
 * {@link throwFirstProblem} finds the error it reports, in table order). Visits only the
 * props given: the unset fields come with the copy of the kind's blank.
 */
function validValues(spec: KindSpec, plan: Plan, input: Record<string, unknown>, path: string): Checked | undefined {
  // A copy of the kind's blank, its unset fields included: cheaper than adding keys one by one.
  const values: Record<string, unknown> = { ...plan.blank };
  let mask = 0;
  for (const k in input) {
    const take = plan.byName.get(k);
    if (take === undefined) return undefined;
    const v = input[k];
    if (v === undefined || v === null) continue;
    const stored = take(v, spec, `${path}${k}`);
    if (stored === INVALID) return undefined;
    values[k] = stored;
    mask |= plan.bitOf.get(k) as number;
  }
  for (let i = 0; i < plan.required.length; i++) if (values[plan.required[i] as string] === undefined) return undefined;
  return { values, mask };
}

/**
 * The values a builder's `build()` has already checked, for the constructor it calls next
 * (set just before that call, cleared by the constructor): no user code runs in between.
 */
let checked: Checked | undefined;

let maskOf: (config: object) => number = () => -1;
/**
 * The set fields of a config object as bits in table order (bit i = field i, at most 30
 * fields): synthesis visits only these fields. -1 (every field) for an object that is no
 * config object (a caller in plain JavaScript may pass props where a config is typed).
 */
export function setMaskOf(config: object): number {
  return maskOf(config);
}

/** Base of the value objects: immutable, printable without secrets. */
export abstract class ConfigObject {
  /** Which fields are set (a mask as {@link setMaskOf} gives it): private, so no key, print or freeze sees it. */
  readonly #set: number;

  static {
    maskOf = (config) => (#set in config ? config.#set : -1);
  }

  /**
   * Validates `props` against `spec`, then copies the values onto the new object in one
   * `Object.assign` from a plain object of the kind's shape (every field, in table order)
   * and freezes it, so the instances of a class share one shape: cheaper than building each
   * object field by field.
   */
  protected constructor(spec: KindSpec, props: unknown, path = "") {
    let done: Checked | undefined;
    if (checked !== undefined && props === checked.values) {
      done = checked;
      checked = undefined;
    } else {
      const plan = planOf(spec.fields);
      done = isPlainObject(props) ? validValues(spec, plan, props, path) : undefined;
      if (done === undefined) throwFirstProblem(spec, plan, props, path);
    }
    this.#set = done.mask;
    Object.freeze(Object.assign(this, done.values));
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

/**
 * A builder factory for a kind: one setter per field, named as the field, each returning
 * the builder; `build()` checks the collected values and hands them to `make`. A builder
 * prints (`util.inspect`, `JSON.stringify`, `String()`) as `<className>Builder {…}` with
 * secrets redacted, the fields set in table order.
 */
export function builderFactory<B>(spec: KindSpec, make: (props: Record<string, unknown>) => unknown): (initial?: Record<string, unknown>) => B {
  const plan = planOf(spec.fields);
  const { list, takers, blank } = plan;
  const secret = spec.fields.map((f) => f.secret);
  const unset: unknown[] = list.map(() => undefined);
  let valuesOf: (builder: object) => unknown[] = () => [];
  // The values are private fields: one slot per field in table order and a mask of the
  // slots written. No property of a builder, hidden or not, can show a secret to
  // `util.inspect` or `JSON.stringify`; a setter writes its slot with no lookup by name and
  // no new property, and `build()` visits only the fields that were set.
  class Builder {
    readonly #values: unknown[];
    #given = 0;
    constructor(initial: Record<string, unknown> | undefined) {
      const values = unset.slice(); // a copy of a packed array is one step; fill() is a runtime call
      if (initial !== undefined) {
        for (const k in initial) {
          const i = list.indexOf(k);
          values[i] = initial[k];
          this.#given |= bit(i);
        }
      }
      this.#values = values;
    }
    static {
      valuesOf = (builder) => (builder as Builder).#values; // a TypeError for anything else
      const proto = this.prototype as unknown as Record<string, unknown>;
      for (let i = 0; i < list.length; i++) {
        const b = bit(i);
        proto[list[i] as string] = function (this: Builder, value: unknown): Builder {
          this.#values[i] = value;
          this.#given |= b;
          return this;
        };
      }
      proto["build"] = function (this: Builder): unknown {
        const given = this.#values;
        const values: Record<string, unknown> = { ...blank };
        let mask = 0;
        // The fields given, lowest bit (first in the table) first.
        for (let m = this.#given; m !== 0;) {
          const low = m & -m;
          m ^= low;
          const i = 31 - Math.clz32(low);
          const v = given[i];
          if (v !== undefined && v !== null) {
            const stored = (takers[i] as Take)(v, spec, list[i] as string);
            if (stored === INVALID) throwFirstProblem(spec, plan, byName(given), "");
            values[list[i] as string] = stored;
            mask |= low;
          }
        }
        for (let r = 0; r < plan.required.length; r++) if (values[plan.required[r] as string] === undefined) throwFirstProblem(spec, plan, byName(given), "");
        checked = { values, mask };
        try {
          return make(values);
        } finally {
          checked = undefined;
        }
      };
    }
  }
  /** The set values by field name, as props: what the error path reads. */
  function byName(values: readonly unknown[]): Record<string, unknown> {
    const props: Record<string, unknown> = {};
    values.forEach((v, i) => {
      if (v !== undefined) props[list[i] as string] = v;
    });
    return props;
  }
  printSafely(Builder.prototype, `${spec.className}Builder`, (self) => {
    const shown: Record<string, unknown> = {};
    valuesOf(self).forEach((v, i) => {
      if (v !== undefined) shown[list[i] as string] = v instanceof ConfigObject ? v.toJSON() : shownValue(v, secret[i] === true);
    });
    return shown;
  });
  return (initial) => new Builder(initial) as B;
}

let assumeRoleWarned = false;
/** The one deprecation warning per process for the `assumeRole` block. */
export function warnAssumeRoleDeprecated(): void {
  if (assumeRoleWarned) return;
  assumeRoleWarned = true;
  process.emitWarning(
    "The assumeRole block is deprecated; use assumeRoleRoleArn, assumeRolePolicy, assumeRoleSessionName and assumeRoleSessionExpiration instead.",
    {
      type: "DeprecationWarning",
      code: "OBJSTATE_DEP_ASSUME_ROLE",
    },
  );
}
