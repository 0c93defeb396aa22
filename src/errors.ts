/**
 * Every error objstate raises is an {@link ObjstateError}: a value with a stable
 * `code` that programs can branch on, and a message written for the person at the
 * terminal. Messages never contain secret values.
 */
import { ERROR_CODES, type ErrorCode } from "./error-codes.js";
import { redactUrl, sanitizeCause } from "./util/redact.js";

export type { ErrorCode } from "./error-codes.js";

export { SanitizedCause } from "./util/redact.js";

export class ObjstateError extends Error {
  /** Stable machine-readable code, e.g. `STATE_LOCKED`, `BUCKET_NOT_FOUND`: a key of the table in error-codes.ts. */
  readonly code: ErrorCode;
  /** Optional structured details (never secrets). */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  /**
   * `message` and string `details` lose any credentials inside URLs. A `cause` that is
   * not an ObjstateError is kept only as a {@link SanitizedCause} (name, message without
   * signing material, network code, HTTP status): SDK errors carry the signed request on
   * hidden fields, and `util.inspect(err, { showHidden: true })` would print it. Map a
   * foreign error to a code before wrapping it, not after.
   */
  constructor(code: ErrorCode, message: string, options?: { details?: Record<string, unknown>; cause?: unknown }) {
    const cause = options?.cause instanceof ObjstateError ? options.cause : sanitizeCause(options?.cause);
    super(redactUrl(message), cause === undefined ? undefined : { cause });
    this.name = "ObjstateError";
    this.code = code;
    this.details = options?.details === undefined ? undefined : redactDetails(options.details);
  }
}

function redactDetails(details: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(details)) out[k] = typeof v === "string" ? redactUrl(v) : v;
  return out;
}

/** Is `e` an {@link ObjstateError} with the given code? */
export function isObjstateError(e: unknown, code?: ErrorCode): e is ObjstateError {
  return e instanceof ObjstateError && (code === undefined || e.code === code);
}

/**
 * The HTTP status `objstate serve` answers a failure with: its code's row in the table, and
 * 500 for anything that is not an {@link ObjstateError}. Every route answers through this,
 * so a code means the same status on `/state`, on `/api/v1` and in the console.
 */
export function statusOf(e: unknown): number {
  return isObjstateError(e) ? ERROR_CODES[e.code].status : 500;
}

/** The error code of a failure, for logs and JSON bodies (`INTERNAL` when it has none). */
export function codeOf(e: unknown): ErrorCode | "INTERNAL" {
  return isObjstateError(e) ? e.code : "INTERNAL";
}
