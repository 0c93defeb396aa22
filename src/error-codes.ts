/**
 * The one table of error codes: every code an `ObjstateError` (errors.ts) carries, with the HTTP
 * status `objstate serve` answers it with and the exit code `objstate` ends with. The
 * constructor of `ObjstateError` takes only a code of this table, so a new code does not
 * compile until it has its row (docs/decisions/054-one-table-of-error-codes.md).
 *
 * A status of 500 means "the server's own failure" (what `serve` answers for a code that
 * no request can cause, too). The exit codes are {@link EXIT}'s.
 */
/**
 * Documented exit codes of `objstate`: 0 ok, 1 error, 2 usage or bad input (nothing was
 * written), 3 state locked (by another holder), 4 digest mismatch, 5 state conflict (the
 * lineage guard or a conditional write refused: nothing was written), 6 the lock is no
 * longer held by this writer (`LOCK_NOT_HELD`: released or force-unlocked), 7 the lock's
 * lease was lost (`LOCK_LOST`: it ran out and was taken over, or its renewal was refused;
 * nothing more was written), 8 the command run under `lock -- COMMAND` failed (its own code is in
 * the message); 129 / 130 / 143 interrupted (SIGHUP / SIGINT / SIGTERM); 141
 * standard output was closed by its reader (`| head`).
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

/** One code's row: the HTTP status under `serve` and the exit code of the command. */
interface CodeRow {
  readonly status: number;
  readonly exit: (typeof EXIT)[keyof typeof EXIT];
}

/** Error code → HTTP status and exit code. Grouped by where the codes arise. */
export const ERROR_CODES = {
  // The request to `objstate serve`
  BAD_REQUEST: { status: 400, exit: EXIT.error },
  MD5_MISMATCH: { status: 400, exit: EXIT.error },
  INVALID_JSON: { status: 400, exit: EXIT.usage },
  UNAUTHORIZED: { status: 401, exit: EXIT.error },
  FORBIDDEN: { status: 403, exit: EXIT.error },
  // A browser's request from another site (Origin, Sec-Fetch-Site)
  CROSS_SITE_REQUEST: { status: 403, exit: EXIT.error },
  NOT_FOUND: { status: 404, exit: EXIT.error },
  METHOD_NOT_ALLOWED: { status: 405, exit: EXIT.error },
  CLIENT_TIMEOUT: { status: 408, exit: EXIT.error },
  BODY_TOO_LARGE: { status: 413, exit: EXIT.error },
  // A diff's two states together do not fit the memory a diff may take
  DIFF_TOO_LARGE: { status: 413, exit: EXIT.error },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, exit: EXIT.error },
  // A Host this server does not answer for (DNS rebinding, a wrong name)
  MISDIRECTED_REQUEST: { status: 421, exit: EXIT.error },
  TOO_MANY_FAILED_LOGINS: { status: 429, exit: EXIT.error },
  // An OIDC issuer's discovery or JWKS could not be fetched: no token of it can be checked (never an accept)
  IDENTITY_PROVIDER_UNAVAILABLE: { status: 503, exit: EXIT.error },
  // Every place for a diff is taken (429, not 503: the server is well, a retry soon succeeds)
  TOO_MANY_DIFFS: { status: 429, exit: EXIT.error },
  SHUTTING_DOWN: { status: 503, exit: EXIT.error },
  // State, workspaces and versions
  // Bytes that are no state (state/check.ts), or a stored state that cannot be read as one
  STATE_INVALID: { status: 400, exit: EXIT.usage },
  // A JSON document nested deeper than MAX_NESTING (json/scan.ts), refused before it is parsed
  JSON_TOO_DEEP: { status: 400, exit: EXIT.error },
  STATE_NOT_FOUND: { status: 404, exit: EXIT.error },
  INVALID_WORKSPACE: { status: 400, exit: EXIT.usage },
  CANNOT_DELETE_DEFAULT: { status: 400, exit: EXIT.usage },
  WORKSPACE_EXISTS: { status: 500, exit: EXIT.error },
  WORKSPACE_NOT_FOUND: { status: 404, exit: EXIT.error },
  VERSION_NOT_FOUND: { status: 404, exit: EXIT.error },
  STATE_CONFLICT: { status: 409, exit: EXIT.conflict },
  // A write without ?ID (the client holds no lock) on a server without --allow-unlocked-writes
  UNLOCKED_WRITE: { status: 409, exit: EXIT.error },
  // The bucket keeps no versions: nothing a retry changes, the operator turns it on
  VERSIONING_OFF: { status: 409, exit: EXIT.error },
  // The stored state cannot be vouched for and needs the operator (the message names the
  // command): 409, which the tool's client reports at once, instead of a 5xx it retries
  // for nothing (decision 012). The read already waited out a store catching up.
  DIGEST_MISMATCH: { status: 409, exit: EXIT.digest },
  TORN_WRITE: { status: 409, exit: EXIT.digest },
  COMMITTED_VERSION_MISSING: { status: 409, exit: EXIT.error },
  REPAIR_REFUSED: { status: 409, exit: EXIT.error },
  // The state was stored but not committed: the client's retry of the same body commits it
  DIGEST_WRITE_FAILED: { status: 503, exit: EXIT.error },
  INVALID_LAYOUT: { status: 500, exit: EXIT.usage },
  INVALID_KEY: { status: 500, exit: EXIT.usage },
  INVALID_LEFTOVER: { status: 500, exit: EXIT.usage },
  INVALID_RETENTION: { status: 500, exit: EXIT.usage },
  RETENTION_UNSUPPORTED: { status: 500, exit: EXIT.error },
  // A file given to push changed while it was read (the CLI's check or the upload): bad input
  INPUT_CHANGED: { status: 500, exit: EXIT.usage },
  // Locks (the tool's client reads 409/423 bodies as the holder's lock info)
  STATE_LOCKED: { status: 423, exit: EXIT.locked },
  // A lock request failed and could not learn whether its write was stored: 423 with that lock's
  // info (the tool's retry under the same ID takes it), the message naming the force-unlock
  LOCK_LEFT_BEHIND: { status: 423, exit: EXIT.locked },
  LOCK_INFO_INVALID: { status: 400, exit: EXIT.error },
  // The lock belongs to another principal: the caller's credentials are the problem, not the lock's state
  LOCK_NOT_OWNED: { status: 403, exit: EXIT.error },
  LOCK_ID_MISMATCH: { status: 409, exit: EXIT.locked },
  LOCK_NOT_HELD: { status: 409, exit: EXIT.lockNotHeld },
  // The writer's lease ran out and was taken over: retrying cannot help, so not a 5xx
  LOCK_LOST: { status: 409, exit: EXIT.lockLost },
  LOCK_NOT_FOUND: { status: 409, exit: EXIT.error },
  // A LOCK under the ID of a lock released since (a late copy): its body is no lock info,
  // so the tool's client stops instead of waiting on it
  LOCK_ID_RELEASED: { status: 409, exit: EXIT.error },
  LOCK_RELEASED: { status: 500, exit: EXIT.error },
  // The tool's force-unlock repeated within a minute (taken for its retry): the lock stands, so not a 200
  FORCE_UNLOCK_REPEATED: { status: 409, exit: EXIT.error },
  INVALID_LOCK_WAIT: { status: 500, exit: EXIT.usage },
  LOCK_RELEASE_FAILED: { status: 500, exit: EXIT.error },
  LOCK_ERROR: { status: 500, exit: EXIT.error },
  // A lock taken without a lease has none to renew: the caller's request, not the server
  NO_LEASE: { status: 409, exit: EXIT.error },
  // The store ignores conditional writes, so lockfiles cannot work there: no retry helps
  LOCKFILE_UNSUPPORTED: { status: 501, exit: EXIT.error },
  INVALID_LOCK_ID: { status: 500, exit: EXIT.usage },
  INVALID_LOCK_TTL: { status: 500, exit: EXIT.usage },
  NO_LOCK_TABLE: { status: 500, exit: EXIT.usage },
  // The store and the table behind objstate: 5xx under `serve`, which the tool's client retries;
  // their settings' problems exit 2
  // The store or table refused the server's own identity (not the client's: not 401/403)
  ACCESS_DENIED: { status: 502, exit: EXIT.error },
  BUCKET_NOT_FOUND: { status: 503, exit: EXIT.error },
  TABLE_NOT_FOUND: { status: 503, exit: EXIT.error },
  TABLE_NOT_READY: { status: 503, exit: EXIT.error },
  TABLE_SCHEMA_INVALID: { status: 500, exit: EXIT.error },
  ENDPOINT_UNREACHABLE: { status: 503, exit: EXIT.error },
  ENDPOINT_TIMEOUT: { status: 504, exit: EXIT.error },
  // The audit log's day objects could not be read or appended to within their deadline
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
  // The AWS credential source behind the server failed on refresh (an expired SSO session, a metadata service down)
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
  // State encryption (OpenTofu's format): a state that cannot be decrypted needs the operator,
  // not a retry (409, like DIGEST_MISMATCH); a bad configuration exits 2
  ENCRYPTION_WRONG_KEY: { status: 409, exit: EXIT.error },
  ENCRYPTION_TAMPERED: { status: 409, exit: EXIT.error },
  ENCRYPTION_UNKNOWN_VERSION: { status: 409, exit: EXIT.error },
  ENCRYPTION_PLAIN_STATE: { status: 409, exit: EXIT.error },
  // Stored pbkdf2 parameters outside what the configuration runs (refused before deriving)
  ENCRYPTION_KDF_OUT_OF_BOUNDS: { status: 409, exit: EXIT.error },
  // An envelope where content is wanted and there is no key to open it (a client encrypts
  // itself, the server stores what it is sent): the console and /api/v1 show "encrypted"
  STATE_ENCRYPTED: { status: 409, exit: EXIT.error },
  ENCRYPTION_CONFIG_INVALID: { status: 500, exit: EXIT.usage },
  ENCRYPTION_KDF_TOO_WEAK: { status: 500, exit: EXIT.usage },
  // The external key provider program failed, timed out or broke the protocol
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
  // Bad input given to `serve` (exit 2 like USERS_FILE_PERMISSIONS and SECRET_FILE_*; 1 before the table)
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
  // `lock -- COMMAND`: ends with the command's own exit code when it has one
  COMMAND_FAILED: { status: 500, exit: EXIT.commandFailed },
  DOCTOR_FAILED: { status: 500, exit: EXIT.error },
  INIT_INCOMPLETE: { status: 500, exit: EXIT.error },
  // SIGINT; SIGHUP and SIGTERM end with their own (EXIT.hangup, EXIT.terminated)
  INTERRUPTED: { status: 500, exit: EXIT.interrupted },
} as const satisfies Readonly<Record<string, CodeRow>>;

/** A code an `ObjstateError` may carry: a key of {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes whose exit is usage (2): what a usage error of the command may carry. */
export type UsageCode = { [K in ErrorCode]: (typeof ERROR_CODES)[K]["exit"] extends typeof EXIT.usage ? K : never }[ErrorCode];
