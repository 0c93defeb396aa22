import { ObjectStoreAssumeRole, type AssumeRoleTypes } from "./assume-role.js";
import { ConfigObject, defineKind, type KindSpec } from "./base.js";
import { REMOTE_STATE_FIELDS } from "./fields.js";
import { remoteStateTerraformBlock, type TerraformRemoteStateBlock, type TerraformRemoteStateOptions } from "./terraform-json.js";
import type { BuilderOf, GettersOf, PropsOf, ValuesOf } from "./types.js";

type Fields = typeof REMOTE_STATE_FIELDS;

/** Props of {@link DataRemoteStateObjectStoreConfig}: `bucket` is required, everything else optional. */
export type DataRemoteStateObjectStoreConfigProps = PropsOf<Fields, AssumeRoleTypes>;
/** Builder of {@link DataRemoteStateObjectStoreConfig}. */
export type DataRemoteStateObjectStoreConfigBuilder = BuilderOf<Fields, DataRemoteStateObjectStoreConfig, AssumeRoleTypes>;

const SPEC: KindSpec = { className: "DataRemoteStateObjectStoreConfig", fields: REMOTE_STATE_FIELDS, nested: ObjectStoreAssumeRole.normalize };

/**
 * Settings for reading the remote state of another stack: every backend field plus
 * `defaults` (outputs used when the state lacks them) and `workspace` (default `default`).
 * Immutable; getters return exactly what was set.
 *
 * @example
 * const net = DataRemoteStateObjectStoreConfig.builder().bucket("my-state").key("network.tfstate").defaults({ vpc: "none" }).build();
 */
export class DataRemoteStateObjectStoreConfig extends ConfigObject<DataRemoteStateObjectStoreConfigProps, DataRemoteStateObjectStoreConfigBuilder> {
  static readonly fields = REMOTE_STATE_FIELDS;

  constructor(props: DataRemoteStateObjectStoreConfigProps) {
    super(SPEC, props);
  }

  static builder(): DataRemoteStateObjectStoreConfigBuilder {
    return newBuilder();
  }

  /** Build from plain props; throws {@link ConfigError} when invalid. */
  static from(props: DataRemoteStateObjectStoreConfigProps): DataRemoteStateObjectStoreConfig {
    return new DataRemoteStateObjectStoreConfig(props);
  }

  /**
   * The body of a `data.terraform_remote_state` block reading this state through the real
   * tool's `s3`, `oss` or `http` backend: `{backend, config, defaults?, workspace?}` (for
   * http the workspace is part of the address). {@link DataRemoteStateObjectStore} names it.
   *
   * @throws ConfigError as {@link ObjectStoreBackendConfig.toTerraformJson}.
   */
  toTerraformJson(options: TerraformRemoteStateOptions): TerraformRemoteStateBlock {
    return remoteStateTerraformBlock(this, options);
  }
}

export interface DataRemoteStateObjectStoreConfig extends ValuesOf<Fields, AssumeRoleTypes>, GettersOf<Fields, AssumeRoleTypes> {}

const newBuilder = defineKind<DataRemoteStateObjectStoreConfigBuilder>(DataRemoteStateObjectStoreConfig, SPEC);
