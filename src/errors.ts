/** Every error objstate raises: a stable `code` to branch on, and a message for the person at the terminal, never with a secret. */
import { ERROR_CODES, type ErrorCode } from "./error-codes.js";
import { redactUrl, sanitizeCause } from "./util/redact.js";

export type { ErrorCode } from "./error-codes.js";

export { SanitizedCause } from "./util/redact.js";

export class ObjstateError extends Error {
  /** A key of the table in error-codes.ts, e.g. `STATE_LOCKED`. */
  readonly code: ErrorCode;
  /** Structured details (never secrets). */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  /**
   * `message` and string `details` lose credentials inside URLs; a foreign `cause` is kept only as
   * a {@link SanitizedCause}, since SDK errors carry the signed request on hidden fields.
   */
  constructor(code: ErrorCode, message: string, options?: { details?: Record<string, unknown>; cause?: unknown }) {
    const cause = options?.cause instanceof ObjstateError ? options.cause : sanitizeCause(options?.cause);
    super(redactUrl(message), cause === undefined ? undefined : { cause });
    this.name = "ObjstateError";
    this.code = code;
    const details = options?.details;
    this.details =
      details === undefined ? undefined : Object.fromEntries(Object.entries(details).map(([k, v]) => [k, typeof v === "string" ? redactUrl(v) : v]));
  }
}

export function isObjstateError(e: unknown, code?: ErrorCode): e is ObjstateError {
  return e instanceof ObjstateError && (code === undefined || e.code === code);
}

/** The HTTP status of a failure on every route of `objstate serve`: its code's row, 500 for a non-ObjstateError. */
export function statusOf(e: unknown): number {
  return isObjstateError(e) ? ERROR_CODES[e.code].status : 500;
}

/** The error code of a failure, for logs and JSON bodies (`INTERNAL` when it has none). */
export function codeOf(e: unknown): ErrorCode | "INTERNAL" {
  return isObjstateError(e) ? e.code : "INTERNAL";
}
