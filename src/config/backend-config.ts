import { ObjectStoreAssumeRole, type AssumeRoleTypes } from "./assume-role.js";
import { ConfigObject, defineKind, type KindSpec } from "./base.js";
import { COMMON_FIELDS } from "./fields.js";
import { backendToolJson, type BackendToolJson } from "./tool-json.js";
import { backendTerraformJson, type TerraformBackendJson, type TerraformBackendOptions } from "./terraform-json.js";
import type { BuilderOf, GettersOf, PropsOf, ValuesOf } from "./types.js";

type Fields = typeof COMMON_FIELDS;

/** Props of {@link ObjectStoreBackendConfig}: `bucket` is required, everything else optional. */
export type ObjectStoreBackendConfigProps = PropsOf<Fields, AssumeRoleTypes>;
/** Builder of {@link ObjectStoreBackendConfig}. */
export type ObjectStoreBackendConfigBuilder = BuilderOf<Fields, ObjectStoreBackendConfig, AssumeRoleTypes>;

const SPEC: KindSpec = { className: "ObjectStoreBackendConfig", fields: COMMON_FIELDS, nested: ObjectStoreAssumeRole.normalize };

/**
 * Settings of a remote state backend that keeps the state file in an object-storage
 * bucket, optionally locked through a key-value table. Immutable; getters return exactly
 * what was set (defaults are applied by `resolveSettings`).
 *
 * @example
 * const config = ObjectStoreBackendConfig.builder().bucket("my-state").kvstoreTable("locks").build();
 */
export class ObjectStoreBackendConfig extends ConfigObject<ObjectStoreBackendConfigProps, ObjectStoreBackendConfigBuilder> {
  static readonly fields = COMMON_FIELDS;

  constructor(props: ObjectStoreBackendConfigProps) {
    super(SPEC, props);
  }

  static builder(): ObjectStoreBackendConfigBuilder {
    return newBuilder();
  }

  /** Build from plain props; throws {@link ConfigError} when invalid. */
  static from(props: ObjectStoreBackendConfigProps): ObjectStoreBackendConfig {
    return new ObjectStoreBackendConfig(props);
  }

  /** The tool JSON `{"tool": {"backend": {"objectstore": {…}}}}` with every set field. */
  toToolJson(): BackendToolJson {
    return backendToolJson(this);
  }

  /**
   * The real tool's backend configuration, `{"terraform": {"backend": {TYPE: {…}}}}`: `s3` or
   * `oss` for this bucket and table, or `http` for `objstate serve`, through the mapping table
   * (src/config/mapping.ts); `terraformWarnings` lists the secrets it writes.
   *
   * @throws ConfigError `UNSUPPORTED_FIELD` (`computeRoleName` with s3), `UNSUPPORTED_VALUE` (a
   *   `file:` endpoint with s3 or oss), `CONFLICTING_FIELDS`, `REQUIRED` (`serveUrl` for http).
   * @example
   * config.toTerraformJson({ backend: "s3" });
   * config.toTerraformJson({ backend: "http", serveUrl: "http://127.0.0.1:8080", username: "ci", workspace: "prod" });
   */
  toTerraformJson(options: TerraformBackendOptions): TerraformBackendJson {
    return backendTerraformJson(this, options);
  }
}

export interface ObjectStoreBackendConfig extends ValuesOf<Fields, AssumeRoleTypes>, GettersOf<Fields, AssumeRoleTypes> {}

const newBuilder = defineKind<ObjectStoreBackendConfigBuilder>(ObjectStoreBackendConfig, SPEC);
