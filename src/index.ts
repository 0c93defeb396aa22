/**
 * objstate: keep an infrastructure tool's state in an object-storage bucket, lock it in a
 * key-value table, and read the outputs of remote state.
 *
 * @packageDocumentation
 */
export { ObjstateError, isObjstateError } from "./errors.js";
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
  type JsonObject,
} from "./synth/tool-json.js";
export { DataRemoteStateObjectStore } from "./remote-state/data-remote-state.js";
export { RemoteOutputs, type FetchOutputsOptions, type JsonValue, type JsonType, type OutputsSource } from "./remote-state/remote-outputs.js";
export { synthesizeProps, type SynthInput } from "./synth/document.js";
export { ObjectStoreBackend, type ConnectOptions, type LockOptions, type LockInfo, type WriteOptions } from "./backend/backend.js";
export type { Credentials, CredentialsProvider, Acl } from "./store/types.js";
