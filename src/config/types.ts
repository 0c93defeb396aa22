/**
 * TypeScript types derived from the field table, so a new row is a new typed setter,
 * getter and prop without further edits.
 */
import type { FieldKind, FieldSpec } from "./fields.js";
import type { ObjectStoreAssumeRole, ObjectStoreAssumeRoleProps } from "./assume-role.js";

/** What a setter or props key accepts, by field kind. */
export interface KindInput {
  string: string;
  number: number;
  boolean: boolean;
  map: Readonly<Record<string, unknown>>;
  assumeRole: ObjectStoreAssumeRole | ObjectStoreAssumeRoleProps;
}

/** What a getter returns, by field kind (the deprecated block is always an object of its class). */
export interface KindValue {
  string: string;
  number: number;
  boolean: boolean;
  map: Readonly<Record<string, unknown>>;
  assumeRole: ObjectStoreAssumeRole;
}

type Fields = readonly FieldSpec[];
type Input<F extends FieldSpec> = KindInput[F["kind"] & FieldKind];
type Value<F extends FieldSpec> = KindValue[F["kind"] & FieldKind];
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** Props accepted by `from()`: required fields must be present; `null`/`undefined` mean unset. */
export type PropsOf<T extends Fields> = Simplify<
  { [F in T[number] as F["required"] extends true ? F["name"] : never]: Input<F> } & {
    [F in T[number] as F["required"] extends true ? never : F["name"]]?: Input<F> | null | undefined;
  }
>;

/** The readonly properties of a built object. */
export type ValuesOf<T extends Fields> = {
  readonly [F in T[number] as F["name"]]: F["required"] extends true ? Value<F> : Value<F> | undefined;
};

/** One `getX()` per field. */
export type GettersOf<T extends Fields> = {
  [F in T[number] as `get${Capitalize<F["name"]>}`]: () => F["required"] extends true ? Value<F> : Value<F> | undefined;
};

/** One setter per field, named as the field, plus `build()`. */
export type BuilderOf<T extends Fields, R> = {
  [F in T[number] as F["name"]]: (value: Input<F> | null | undefined) => BuilderOf<T, R>;
} & {
  /** Validate and return the immutable object; throws {@link ConfigError} when invalid. */
  build(): R;
};
