/**
 * The one table from error codes to HTTP statuses. Every route answers a failure through
 * {@link statusOf}, so a code means the same status on `/state` and on `/api/v1`.
 */
import { isObjstateError } from "../errors.js";

const STATUS: Readonly<Record<string, number>> = {
  // The request itself
  BAD_REQUEST: 400,
  MD5_MISMATCH: 400,
  INVALID_WORKSPACE: 400,
  INVALID_JSON: 400,
  STATE_INVALID: 400,
  CANNOT_DELETE_DEFAULT: 400,
  LOCK_INFO_INVALID: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  // A browser's request from another site (Origin, Sec-Fetch-Site)
  CROSS_SITE_REQUEST: 403,
  // The lock belongs to another principal: the caller's credentials are the problem, not the lock's state
  LOCK_NOT_OWNED: 403,
  NOT_FOUND: 404,
  STATE_NOT_FOUND: 404,
  WORKSPACE_NOT_FOUND: 404,
  VERSION_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CLIENT_TIMEOUT: 408,
  BODY_TOO_LARGE: 413,
  // A diff's two states together do not fit the memory a diff may take
  DIFF_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  // A Host this server does not answer for (DNS rebinding, a wrong name)
  MISDIRECTED_REQUEST: 421,
  TOO_MANY_FAILED_LOGINS: 429,
  // Every place for a diff is taken (429, not 503: the server is well, a retry soon succeeds)
  TOO_MANY_DIFFS: 429,
  // State and locks (the tool's client reads 409/423 bodies as the holder's lock info)
  STATE_CONFLICT: 409,
  LOCK_ID_MISMATCH: 409,
  LOCK_NOT_HELD: 409,
  // The writer's lease ran out and was taken over: retrying cannot help, so not a 5xx
  LOCK_LOST: 409,
  LOCK_NOT_FOUND: 409,
  // A LOCK under the ID of a lock released since (a late copy): its body is no lock info,
  // so the tool's client stops instead of waiting on it
  LOCK_ID_RELEASED: 409,
  // A write without ?ID (the client holds no lock) on a server without --allow-unlocked-writes
  UNLOCKED_WRITE: 409,
  STATE_LOCKED: 423,
  // The bucket keeps no versions: nothing a retry changes, the operator turns it on
  VERSIONING_OFF: 409,
  // The stored state cannot be vouched for and needs the operator (the message names the
  // command): 409, which the tool's client reports at once, instead of a 5xx it retries
  // for nothing (decision 012). The read already waited out a store catching up.
  DIGEST_MISMATCH: 409,
  TORN_WRITE: 409,
  COMMITTED_VERSION_MISSING: 409,
  REPAIR_REFUSED: 409,
  // A lock taken without a lease has none to renew: the caller's request, not the server
  NO_LEASE: 409,
  // The store behind the server: 5xx, which the tool's client retries
  NOT_IMPLEMENTED: 501,
  // The store ignores conditional writes, so lockfiles cannot work there: no retry helps
  LOCKFILE_UNSUPPORTED: 501,
  // The state was stored but not committed: the client's retry of the same body commits it
  DIGEST_WRITE_FAILED: 503,
  // The store or table refused the server's own identity (not the client's: not 401/403)
  ACCESS_DENIED: 502,
  BUCKET_NOT_FOUND: 503,
  TABLE_NOT_FOUND: 503,
  TABLE_NOT_READY: 503,
  ENDPOINT_UNREACHABLE: 503,
  // The AWS credential source behind the server failed on refresh (an expired SSO session, a metadata service down)
  AWS_CREDENTIALS_FAILED: 503,
  SHUTTING_DOWN: 503,
  ENDPOINT_TIMEOUT: 504,
};

/** The HTTP status for a failure: its code's row, else 500. */
export function statusOf(e: unknown): number {
  return isObjstateError(e) ? (STATUS[e.code] ?? 500) : 500;
}

/** The error code of a failure, for logs and JSON bodies (`INTERNAL` when it has none). */
export function codeOf(e: unknown): string {
  return isObjstateError(e) ? e.code : "INTERNAL";
}
