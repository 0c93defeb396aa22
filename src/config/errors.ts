import { ObjstateError } from "../errors.js";

/** Stable codes of {@link ConfigError}. */
export type ConfigErrorCode =
  | "REQUIRED"
  | "INVALID_TYPE"
  | "INVALID_VALUE"
  | "OUT_OF_RANGE"
  | "UNKNOWN_FIELD"
  | "INVALID_VERSION"
  | "INVALID_NAME"
  | "INVALID_PROPS"
  /** A set field the chosen backend of the tool has no argument for (`computeRoleName` with s3). */
  | "UNSUPPORTED_FIELD"
  /** A value the chosen backend of the tool cannot express (a `file:` endpoint with s3). */
  | "UNSUPPORTED_VALUE"
  /** Two set fields that would write the same argument of the tool's backend. */
  | "CONFLICTING_FIELDS";

/** A configuration value was missing or wrong (from `build()`, `from()`, `resolveSettings()`, synthesis); never carries a secret. */
export class ConfigError extends ObjstateError {
  declare readonly code: ConfigErrorCode;
  /** Field the error is about (`bucket`, `assumeRole.roleArn`, …); undefined for whole-object errors. */
  readonly field: string | undefined;
  /** Environment variable the bad value came from, when it came from one. */
  readonly variable: string | undefined;

  constructor(code: ConfigErrorCode, message: string, options: { field?: string | undefined; variable?: string | undefined; cause?: unknown } = {}) {
    super(code, message, { cause: options.cause, details: { field: options.field, variable: options.variable } });
    this.name = "ConfigError";
    this.field = options.field;
    this.variable = options.variable;
  }
}
