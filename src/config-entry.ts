/**
 * `objstate/config`: configuration objects, resolution and synthesis, without the runtime's
 * drivers, credentials and backend.
 * @packageDocumentation
 */
/// <reference types="node" preserve="true" />
export { ObjstateError, isObjstateError, type ErrorCode } from "./errors.js";
export { ConfigError, type ConfigErrorCode } from "./config/errors.js";
export { COMMON_FIELDS, REMOTE_STATE_EXTRA_FIELDS, REMOTE_STATE_FIELDS, ASSUME_ROLE_FIELDS, type FieldSpec, type FieldKind } from "./config/fields.js";
export { ObjectStoreAssumeRole, type ObjectStoreAssumeRoleProps, type ObjectStoreAssumeRoleBuilder } from "./config/assume-role.js";
export { ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps, type ObjectStoreBackendConfigBuilder } from "./config/backend-config.js";
export {
  DataRemoteStateObjectStoreConfig,
  type DataRemoteStateObjectStoreConfigProps,
  type DataRemoteStateObjectStoreConfigBuilder,
} from "./config/remote-state-config.js";
export { checkToolVersion } from "./config/version.js";
export {
  resolveSettings,
  type ResolvedSetting,
  type ResolvedBackendSettings,
  type ResolvedRemoteStateSettings,
  type SettingSource,
  type ResolveOptions,
  type ProfileLayer,
  type ProfileLoader,
  type Env,
} from "./resolve/settings.js";
export {
  backendToolJson,
  remoteStateToolJson,
  mergeToolJson,
  formatToolJson,
  secretWarnings,
  type ToolJson,
  type BackendToolJson,
  type RemoteStateToolJson,
  type RemoteStateBlock,
} from "./config/tool-json.js";
export type { JsonObject } from "./config/types.js";
export {
  backendTerraformJson,
  serveBackendTerraformJson,
  remoteStateTerraformBlock,
  remoteStateTerraformJson,
  terraformWarnings,
  type TerraformBackendType,
  type TerraformBackendOptions,
  type TerraformStoreBackendOptions,
  type TerraformHttpBackendOptions,
  type TerraformRemoteStateOptions,
  type TerraformBackendJson,
  type TerraformRemoteStateBlock,
  type TerraformRemoteStateJson,
  type LayoutName,
} from "./config/terraform-json.js";
export * from "./config/mapping.js";
export { DataRemoteStateObjectStore } from "./remote-state/data-remote-state.js";
export { RemoteOutputs, type FetchOutputsOptions, type JsonValue, type JsonType, type OutputsSource } from "./remote-state/remote-outputs.js";
export { synthesizeProps, type SynthInput } from "./synth/document.js";
export { writeToolJson } from "./synth/write.js";
