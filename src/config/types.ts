/** TypeScript types derived from the field table: a new row is a new typed setter, getter and prop. */
import type { ASSUME_ROLE_FIELDS, COMMON_FIELDS, FieldKind, FieldSpec, REMOTE_STATE_FIELDS } from "./fields.js";

/** The types of an `assumeRole`-kind field: its object and its props (passed in: the block's class is built from these types). */
export interface NestedTypes {
  readonly value: object;
  readonly props: object;
}

/** For a table without an `assumeRole`-kind field. */
export interface NoNested extends NestedTypes {
  readonly value: never;
  readonly props: never;
}

/** What a getter returns, by field kind (the deprecated block is always an object of its class). */
export interface KindValue<N extends NestedTypes = NoNested> {
  string: string;
  number: number;
  boolean: boolean;
  map: Readonly<Record<string, unknown>>;
  assumeRole: N["value"];
}

type Fields = readonly FieldSpec[];
/** What a setter or props key accepts: a getter's type, or for the deprecated block also its props. */
type Input<F extends FieldSpec, N extends NestedTypes> = F["kind"] extends "assumeRole" ? N["value"] | N["props"] : KindValue<N>[F["kind"] & FieldKind];
type Value<F extends FieldSpec, N extends NestedTypes> = KindValue<N>[F["kind"] & FieldKind];
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** Props accepted by `from()`: required fields must be present; `null`/`undefined` mean unset. */
export type PropsOf<T extends Fields, N extends NestedTypes = NoNested> = Simplify<
  { [F in T[number] as F["required"] extends true ? F["name"] : never]: Input<F, N> } & {
    [F in T[number] as F["required"] extends true ? never : F["name"]]?: Input<F, N> | null | undefined;
  }
>;

/** The readonly properties of a built object. */
export type ValuesOf<T extends Fields, N extends NestedTypes = NoNested> = {
  readonly [F in T[number] as F["name"]]: F["required"] extends true ? Value<F, N> : Value<F, N> | undefined;
};

/** One `getX()` per field. */
export type GettersOf<T extends Fields, N extends NestedTypes = NoNested> = {
  [F in T[number] as `get${Capitalize<F["name"]>}`]: () => F["required"] extends true ? Value<F, N> : Value<F, N> | undefined;
};

/** One setter per field, named as the field, plus `build()`. */
export type BuilderOf<T extends Fields, R, N extends NestedTypes = NoNested> = {
  [F in T[number] as F["name"]]: (value: Input<F, N> | null | undefined) => BuilderOf<T, R, N>;
} & {
  /** Validate and return the immutable object; throws {@link ConfigError} when invalid. */
  build(): R;
};

/** A JSON object as synthesized. */
export type JsonObject = { [key: string]: unknown };

/** The deprecated block as synthesis reads it: its values. */
interface AssumeRoleValues extends NestedTypes {
  readonly value: ValuesOf<typeof ASSUME_ROLE_FIELDS>;
  readonly props: never;
}

/** What synthesis reads of a backend config: its values, named by shape because the classes call synthesis (docs/decisions/053). */
export type BackendConfigValues = ValuesOf<typeof COMMON_FIELDS, AssumeRoleValues>;

/** What synthesis reads of a {@link DataRemoteStateObjectStoreConfig}: the values of its fields. */
export type RemoteStateConfigValues = ValuesOf<typeof REMOTE_STATE_FIELDS, AssumeRoleValues>;
