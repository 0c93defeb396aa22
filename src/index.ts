/**
 * objstate: keep an infrastructure tool's state in an object-storage bucket, lock it in a
 * key-value table, and read the outputs of remote state.
 * @packageDocumentation
 */
// The public types use Node's: docs/decisions/051-public-types-reference-node.md.
/// <reference types="node" preserve="true" />
export * from "./config-entry.js";
export {
  LockHandle,
  NO_LOCK_ID,
  ObjectStoreBackend,
  type ConnectOptions,
  type LockListing,
  type LockOptions,
  type LockInfo,
  type ReleasedLock,
  type ProbeVerdict,
  type ReadOptions,
  type RepairOptions,
  type RepairReport,
  type RepairEvent,
  type WriteOptions,
  type WriteResult,
  type BackendRollbackOptions,
  type HistoryOptions,
  type RollbackResult,
  type StateVersion,
  type VersioningStatus,
  type UnlockOptions,
  type Principal,
  type PrincipalVia,
  type WorkspaceStatus,
  type LockWait,
  type WithLockOptions,
  type LockScope,
  type UnderLockOptions,
  type CreateWorkspaceOptions,
  type DeleteWorkspaceOptions,
  type DiffOptions,
  type VersionDiff,
  type StateSink,
  type StreamOptions,
  type StreamResult,
  type StateRead,
  type LastWrite,
  type WorkspaceObject,
  type DigestStatus,
  AuditLog,
  parseSince,
  type AuditAction,
  type AuditEntry,
  type AuditLogOptions,
  type AuditOutcome,
  type AuditPage,
  type AuditPrincipal,
  type AuditRecord,
  type AuditReadOptions,
  type RekeyOptions,
  type RekeyResult,
  type StateReadEncryption,
} from "./backend/backend.js";
export { encryptionConfigFromEnv, isEnvelope, mergeEncryptionConfigs, parseEncryptionConfig } from "./encryption/index.js";
export type { EncryptionConfig, EncryptionTarget } from "./encryption/index.js";
export {
  historyEntryJson,
  lastWriteJson,
  lockJson,
  outputsJsonText,
  principalJson,
  rollbackJson,
  versionDiffJson,
  workspaceJson,
  type HistoryEntryJson,
  type LastWriteJson,
  type LockJson,
  type OutputsJson,
  type PrincipalJson,
  type RollbackJson,
  type VersionDiffJson,
  type WorkspaceJson,
} from "./wire/shapes.js";
export type { ByteSource, Leftover, Acl } from "./store/types.js";
export type { Credentials, CredentialsProvider } from "./credentials/types.js";
export { DEFAULT_TIMEOUTS, type Timeouts } from "./io/sdk-client.js";
