import { ConfigObject, defineKind, type KindSpec } from "./base.js";
import { ASSUME_ROLE_FIELDS } from "./fields.js";
import type { BuilderOf, GettersOf, NestedTypes, PropsOf, ValuesOf } from "./types.js";

type Fields = typeof ASSUME_ROLE_FIELDS;

/** Props of the deprecated {@link ObjectStoreAssumeRole} block: `roleArn` is required. */
export type ObjectStoreAssumeRoleProps = PropsOf<Fields>;
/** Builder of {@link ObjectStoreAssumeRole}. */
export type ObjectStoreAssumeRoleBuilder = BuilderOf<Fields, ObjectStoreAssumeRole>;

/** The block's types, for the configs that hold it (see {@link NestedTypes}). */
export interface AssumeRoleTypes extends NestedTypes {
  readonly value: ObjectStoreAssumeRole;
  readonly props: ObjectStoreAssumeRoleProps;
}

const SPEC: KindSpec = { className: "ObjectStoreAssumeRole", fields: ASSUME_ROLE_FIELDS };

/**
 * The deprecated role-assumption block (`assumeRole`). Prefer the flattened
 * `assumeRoleRoleArn`, `assumeRolePolicy`, `assumeRoleSessionName` and
 * `assumeRoleSessionExpiration` fields; when `assumeRoleRoleArn` is set they win.
 */
export class ObjectStoreAssumeRole extends ConfigObject<ObjectStoreAssumeRoleProps, ObjectStoreAssumeRoleBuilder> {
  static readonly fields = ASSUME_ROLE_FIELDS;

  constructor(props: ObjectStoreAssumeRoleProps, /** @internal field-path prefix for messages */ path = "") {
    super(SPEC, props, path);
  }

  static builder(): ObjectStoreAssumeRoleBuilder {
    return newBuilder();
  }

  /** Build from plain props; throws {@link ConfigError} when invalid. */
  static from(props: ObjectStoreAssumeRoleProps): ObjectStoreAssumeRole {
    return new ObjectStoreAssumeRole(props);
  }

  /** @internal Normalizer used by the configs that embed this block. */
  static normalize(value: unknown, path: string): ObjectStoreAssumeRole {
    if (value instanceof ObjectStoreAssumeRole) return value;
    return new ObjectStoreAssumeRole(value as ObjectStoreAssumeRoleProps, path);
  }
}

export interface ObjectStoreAssumeRole extends ValuesOf<Fields>, GettersOf<Fields> {}

const newBuilder = defineKind<ObjectStoreAssumeRoleBuilder>(ObjectStoreAssumeRole, SPEC);
