/**
 * objstate: keep an infrastructure tool's state in an object-storage bucket, lock it in a
 * key-value table, and read the outputs of remote state.
 *
 * @packageDocumentation
 */
export * from "./config-entry.js";
export { ObjectStoreBackend, type ConnectOptions, type LockOptions, type LockInfo, type ReadOptions, type WriteOptions } from "./backend/backend.js";
export type { Credentials, CredentialsProvider, Acl } from "./store/types.js";
export { DEFAULT_TIMEOUTS, type Timeouts } from "./util/sdk-client.js";
