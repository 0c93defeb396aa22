/**
 * The one table of error codes: every code an `ObjstateError` carries, with the HTTP status
 * `objstate serve` answers and the exit code `objstate` ends with; a new code does not compile
 * until it has its row (docs/decisions/054-one-table-of-error-codes.md). Status 500 is the
 * server's own failure, and what a code no request can cause gets.
 */
/**
 * `objstate`'s documented exit codes. 2: usage or bad input, 5: the lineage guard or a
 * conditional write refused (nothing was written in either); 6: the lock was released or
 * force-unlocked; 7: its lease ran out and was taken over, or its renewal refused; 8: the
 * command under `lock -- COMMAND` failed; 129/130/143: SIGHUP/SIGINT/SIGTERM; 141: standard
 * output closed by its reader (`| head`).
 */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  locked: 3,
  digest: 4,
  conflict: 5,
  lockNotHeld: 6,
  lockLost: 7,
  commandFailed: 8,
  hangup: 129,
  interrupted: 130,
  outputClosed: 141,
  terminated: 143,
} as const;

/** Grouped by where the codes arise. */
export const ERROR_CODES = {
  // The request to `objstate serve`
  BAD_REQUEST: { status: 400, exit: EXIT.error },
  MD5_MISMATCH: { status: 400, exit: EXIT.error },
  INVALID_JSON: { status: 400, exit: EXIT.usage },
  UNAUTHORIZED: { status: 401, exit: EXIT.error },
  FORBIDDEN: { status: 403, exit: EXIT.error },
  CROSS_SITE_REQUEST: { status: 403, exit: EXIT.error },
  NOT_FOUND: { status: 404, exit: EXIT.error },
  METHOD_NOT_ALLOWED: { status: 405, exit: EXIT.error },
  CLIENT_TIMEOUT: { status: 408, exit: EXIT.error },
  BODY_TOO_LARGE: { status: 413, exit: EXIT.error },
  DIFF_TOO_LARGE: { status: 413, exit: EXIT.error },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, exit: EXIT.error },
  MISDIRECTED_REQUEST: { status: 421, exit: EXIT.error },
  TOO_MANY_FAILED_LOGINS: { status: 429, exit: EXIT.error },
  IDENTITY_PROVIDER_UNAVAILABLE: { status: 503, exit: EXIT.error },
  // 429, not 503: the server is well, a retry soon succeeds
  TOO_MANY_DIFFS: { status: 429, exit: EXIT.error },
  SHUTTING_DOWN: { status: 503, exit: EXIT.error },
  // State, workspaces and versions
  STATE_INVALID: { status: 400, exit: EXIT.usage },
  JSON_TOO_DEEP: { status: 400, exit: EXIT.error },
  STATE_NOT_FOUND: { status: 404, exit: EXIT.error },
  INVALID_WORKSPACE: { status: 400, exit: EXIT.usage },
  CANNOT_DELETE_DEFAULT: { status: 400, exit: EXIT.usage },
  WORKSPACE_EXISTS: { status: 500, exit: EXIT.error },
  WORKSPACE_NOT_FOUND: { status: 404, exit: EXIT.error },
  VERSION_NOT_FOUND: { status: 404, exit: EXIT.error },
  STATE_CONFLICT: { status: 409, exit: EXIT.conflict },
  UNLOCKED_WRITE: { status: 409, exit: EXIT.error },
  VERSIONING_OFF: { status: 409, exit: EXIT.error },
  // Needs the operator: 409, which the tool's client reports at once, not a 5xx it retries (decision 012)
  DIGEST_MISMATCH: { status: 409, exit: EXIT.digest },
  TORN_WRITE: { status: 409, exit: EXIT.digest },
  COMMITTED_VERSION_MISSING: { status: 409, exit: EXIT.error },
  REPAIR_REFUSED: { status: 409, exit: EXIT.error },
  // Stored but not committed: the client's retry of the same body commits it
  DIGEST_WRITE_FAILED: { status: 503, exit: EXIT.error },
  INVALID_LAYOUT: { status: 500, exit: EXIT.usage },
  INVALID_KEY: { status: 500, exit: EXIT.usage },
  INVALID_LEFTOVER: { status: 500, exit: EXIT.usage },
  INVALID_RETENTION: { status: 500, exit: EXIT.usage },
  RETENTION_UNSUPPORTED: { status: 500, exit: EXIT.error },
  INPUT_CHANGED: { status: 500, exit: EXIT.usage },
  // Locks (the tool's client reads 409/423 bodies as the holder's lock info)
  STATE_LOCKED: { status: 423, exit: EXIT.locked },
  // 423 with that lock's info: the tool's retry under the same ID takes it
  LOCK_LEFT_BEHIND: { status: 423, exit: EXIT.locked },
  LOCK_INFO_INVALID: { status: 400, exit: EXIT.error },
  LOCK_NOT_OWNED: { status: 403, exit: EXIT.error },
  LOCK_ID_MISMATCH: { status: 409, exit: EXIT.locked },
  LOCK_NOT_HELD: { status: 409, exit: EXIT.lockNotHeld },
  // Retrying cannot help, so not a 5xx
  LOCK_LOST: { status: 409, exit: EXIT.lockLost },
  LOCK_NOT_FOUND: { status: 409, exit: EXIT.error },
  // Its body is no lock info, so the tool's client stops instead of waiting on it
  LOCK_ID_RELEASED: { status: 409, exit: EXIT.error },
  LOCK_RELEASED: { status: 500, exit: EXIT.error },
  FORCE_UNLOCK_REPEATED: { status: 409, exit: EXIT.error },
  INVALID_LOCK_WAIT: { status: 500, exit: EXIT.usage },
  LOCK_RELEASE_FAILED: { status: 500, exit: EXIT.error },
  LOCK_ERROR: { status: 500, exit: EXIT.error },
  NO_LEASE: { status: 409, exit: EXIT.error },
  LOCKFILE_UNSUPPORTED: { status: 501, exit: EXIT.error },
  INVALID_LOCK_ID: { status: 500, exit: EXIT.usage },
  INVALID_LOCK_TTL: { status: 500, exit: EXIT.usage },
  NO_LOCK_TABLE: { status: 500, exit: EXIT.usage },
  // The store and the table: 5xx, which the tool's client retries; ACCESS_DENIED is the server's own identity, not 401/403
  ACCESS_DENIED: { status: 502, exit: EXIT.error },
  BUCKET_NOT_FOUND: { status: 503, exit: EXIT.error },
  TABLE_NOT_FOUND: { status: 503, exit: EXIT.error },
  TABLE_NOT_READY: { status: 503, exit: EXIT.error },
  TABLE_SCHEMA_INVALID: { status: 500, exit: EXIT.error },
  ENDPOINT_UNREACHABLE: { status: 503, exit: EXIT.error },
  ENDPOINT_TIMEOUT: { status: 504, exit: EXIT.error },
  AUDIT_UNAVAILABLE: { status: 503, exit: EXIT.error },
  ENDPOINT_PLAIN_HTTP: { status: 500, exit: EXIT.error },
  ENDPOINT_NOT_S3: { status: 500, exit: EXIT.error },
  ENDPOINT_NOT_DYNAMODB: { status: 500, exit: EXIT.error },
  NO_ENDPOINT: { status: 500, exit: EXIT.usage },
  NO_LOCK_ENDPOINT: { status: 500, exit: EXIT.usage },
  INVALID_ENDPOINT: { status: 500, exit: EXIT.usage },
  INVALID_BUCKET: { status: 500, exit: EXIT.usage },
  INVALID_TIMEOUT: { status: 500, exit: EXIT.usage },
  PRECONDITION_FAILED: { status: 500, exit: EXIT.error },
  STORE_ERROR: { status: 500, exit: EXIT.error },
  STORE_BUSY: { status: 500, exit: EXIT.error },
  STORE_INTEGRITY: { status: 500, exit: EXIT.error },
  STORE_NO_SPACE: { status: 500, exit: EXIT.error },
  STORE_PERMISSION: { status: 500, exit: EXIT.error },
  STORE_READ_ONLY: { status: 500, exit: EXIT.error },
  UNSAFE_PATH: { status: 500, exit: EXIT.error },
  LOCK_TABLE_ERROR: { status: 500, exit: EXIT.error },
  WRITE_FAILED: { status: 500, exit: EXIT.error },
  // Credentials
  NO_CREDENTIALS: { status: 500, exit: EXIT.error },
  CREDENTIALS_MISSING: { status: 500, exit: EXIT.error },
  CREDENTIALS_INCOMPLETE: { status: 500, exit: EXIT.usage },
  CREDENTIALS_FILE_INVALID: { status: 500, exit: EXIT.usage },
  AWS_CREDENTIALS_FAILED: { status: 503, exit: EXIT.error },
  ASSUME_ROLE_FAILED: { status: 500, exit: EXIT.error },
  NO_STS_ENDPOINT: { status: 500, exit: EXIT.usage },
  COMPUTE_ROLE_FAILED: { status: 500, exit: EXIT.error },
  COMPUTE_ROLE_UNKNOWN: { status: 500, exit: EXIT.error },
  METADATA_UNREACHABLE: { status: 500, exit: EXIT.error },
  // Configuration (`ConfigError`)
  REQUIRED: { status: 500, exit: EXIT.usage },
  INVALID_TYPE: { status: 500, exit: EXIT.usage },
  INVALID_VALUE: { status: 500, exit: EXIT.usage },
  OUT_OF_RANGE: { status: 500, exit: EXIT.usage },
  UNKNOWN_FIELD: { status: 500, exit: EXIT.usage },
  INVALID_VERSION: { status: 500, exit: EXIT.usage },
  INVALID_NAME: { status: 500, exit: EXIT.usage },
  INVALID_PROPS: { status: 500, exit: EXIT.usage },
  UNSUPPORTED_FIELD: { status: 500, exit: EXIT.usage },
  UNSUPPORTED_VALUE: { status: 500, exit: EXIT.usage },
  CONFLICTING_FIELDS: { status: 500, exit: EXIT.usage },
  // State encryption: a state that cannot be decrypted needs the operator, not a retry (409)
  ENCRYPTION_WRONG_KEY: { status: 409, exit: EXIT.error },
  ENCRYPTION_TAMPERED: { status: 409, exit: EXIT.error },
  ENCRYPTION_UNKNOWN_VERSION: { status: 409, exit: EXIT.error },
  ENCRYPTION_PLAIN_STATE: { status: 409, exit: EXIT.error },
  ENCRYPTION_KDF_OUT_OF_BOUNDS: { status: 409, exit: EXIT.error },
  STATE_ENCRYPTED: { status: 409, exit: EXIT.error },
  ENCRYPTION_CONFIG_INVALID: { status: 500, exit: EXIT.usage },
  ENCRYPTION_KDF_TOO_WEAK: { status: 500, exit: EXIT.usage },
  ENCRYPTION_KEY_PROVIDER_FAILED: { status: 502, exit: EXIT.error },
  // Outputs of remote state
  OUTPUT_NOT_FOUND: { status: 500, exit: EXIT.error },
  OUTPUT_INVALID: { status: 500, exit: EXIT.error },
  OUTPUT_NOT_INTEGER: { status: 500, exit: EXIT.error },
  OUTPUT_NOT_SCALAR: { status: 500, exit: EXIT.error },
  OUTPUT_TOO_LONG: { status: 500, exit: EXIT.error },
  OUTPUT_TYPE_MISMATCH: { status: 500, exit: EXIT.error },
  // `objstate serve`'s own settings
  INVALID_PUBLIC_URL: { status: 500, exit: EXIT.usage },
  PUBLIC_URL_REQUIRED: { status: 500, exit: EXIT.usage },
  AUTH_REQUIRED: { status: 500, exit: EXIT.usage },
  USERS_FILE_INVALID: { status: 500, exit: EXIT.usage },
  USERS_FILE_UNREADABLE: { status: 500, exit: EXIT.usage },
  USERS_FILE_PERMISSIONS: { status: 500, exit: EXIT.usage },
  TOKENS_FILE_INVALID: { status: 500, exit: EXIT.usage },
  TOKENS_FILE_PERMISSIONS: { status: 500, exit: EXIT.usage },
  TOKEN_NOT_FOUND: { status: 404, exit: EXIT.usage },
  SECRET_FILE_UNREADABLE: { status: 500, exit: EXIT.usage },
  SECRET_FILE_OPEN: { status: 500, exit: EXIT.usage },
  SECRET_TOO_SHORT: { status: 500, exit: EXIT.usage },
  TLS_INCOMPLETE: { status: 500, exit: EXIT.usage },
  LISTEN_FAILED: { status: 500, exit: EXIT.usage },
  SERVE_LEASE_UNSUPPORTED: { status: 500, exit: EXIT.usage },
  SERVE_NO_LOCKING: { status: 500, exit: EXIT.usage },
  INVALID_LISTEN: { status: 500, exit: EXIT.usage },
  INVALID_USER: { status: 500, exit: EXIT.usage },
  INVALID_ROLE: { status: 500, exit: EXIT.usage },
  NO_PASSWORD: { status: 500, exit: EXIT.usage },
  PASSWORDS_DIFFER: { status: 500, exit: EXIT.usage },
  // The command line
  USAGE: { status: 500, exit: EXIT.usage },
  INVALID_FLAGS: { status: 500, exit: EXIT.usage },
  INVALID_CONFIG_FILE: { status: 500, exit: EXIT.usage },
  INVALID_COUNT: { status: 500, exit: EXIT.usage },
  INVALID_DURATION: { status: 500, exit: EXIT.usage },
  INVALID_LIMIT: { status: 500, exit: EXIT.usage },
  INVALID_SIZE: { status: 500, exit: EXIT.usage },
  INVALID_VERSION_ID: { status: 500, exit: EXIT.usage },
  FILE_UNREADABLE: { status: 500, exit: EXIT.usage },
  FILE_TOO_LARGE: { status: 500, exit: EXIT.usage },
  CONFIRMATION_REQUIRED: { status: 500, exit: EXIT.usage },
  CANCELLED: { status: 500, exit: EXIT.error },
  // Ends with the command's own exit code when it has one
  COMMAND_FAILED: { status: 500, exit: EXIT.commandFailed },
  DOCTOR_FAILED: { status: 500, exit: EXIT.error },
  INIT_INCOMPLETE: { status: 500, exit: EXIT.error },
  // SIGINT; SIGHUP and SIGTERM end with their own
  INTERRUPTED: { status: 500, exit: EXIT.interrupted },
} as const satisfies Readonly<Record<string, { readonly status: number; readonly exit: (typeof EXIT)[keyof typeof EXIT] }>>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes a usage error (exit 2) may carry. */
export type UsageCode = { [K in ErrorCode]: (typeof ERROR_CODES)[K]["exit"] extends typeof EXIT.usage ? K : never }[ErrorCode];
