/**
 * Every error objstate raises is an {@link ObjstateError}: a value with a stable
 * `code` that programs can branch on, and a message written for the person at the
 * terminal. Messages never contain secret values.
 */
export class ObjstateError extends Error {
  /** Stable machine-readable code, e.g. `STATE_LOCKED`, `BUCKET_NOT_FOUND`. */
  readonly code: string;
  /** Optional structured details (never secrets). */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: string, message: string, options?: { details?: Record<string, unknown>; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ObjstateError";
    this.code = code;
    this.details = options?.details;
  }
}

/** Is `e` an {@link ObjstateError} with the given code? */
export function isObjstateError(e: unknown, code?: string): e is ObjstateError {
  return e instanceof ObjstateError && (code === undefined || e.code === code);
}
