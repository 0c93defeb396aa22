import { readFileSync } from "node:fs";
import { ConfigError } from "../config/errors.js";
import { jsonSyntaxProblem } from "../util/json-error.js";
import { ObjstateError } from "../errors.js";

/**
 * Documented exit codes of `objstate`: 0 ok, 1 error, 2 usage or bad input (nothing was
 * written), 3 state locked (by another holder), 4 digest mismatch, 5 state conflict (the
 * lineage guard or a conditional write refused: nothing was written), 6 the lock is no
 * longer held by this writer (nothing was written); 130 / 143 interrupted (SIGINT /
 * SIGTERM) before anything was written.
 */
export const EXIT = { ok: 0, error: 1, usage: 2, locked: 3, digest: 4, conflict: 5, lockLost: 6, interrupted: 130 } as const;

/** An error that ends the CLI with a given exit code and a one-line message. */
export class CliError extends ObjstateError {
  readonly exitCode: number;
  constructor(code: string, message: string, exitCode: number, cause?: unknown) {
    super(code, message, { cause });
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** A usage / bad-input error (exit 2). */
export function usageError(message: string, code = "USAGE", cause?: unknown): CliError {
  return new CliError(code, message, EXIT.usage, cause);
}

/** Library error codes that mean the input or configuration was wrong (exit 2). */
const USAGE_CODES = new Set([
  "INVALID_WORKSPACE",
  "CANNOT_DELETE_DEFAULT",
  "NO_ENDPOINT",
  "NO_LOCK_ENDPOINT",
  "NO_STS_ENDPOINT",
  "INVALID_ENDPOINT",
  "INVALID_BUCKET",
  "CREDENTIALS_INCOMPLETE",
]);

/** The exit code for an error (DESIGN: 0 ok, 1 error, 2 usage, 3 locked, 4 digest mismatch). */
export function exitCodeOf(e: unknown): number {
  if (e instanceof CliError) return e.exitCode;
  if (e instanceof ConfigError) return EXIT.usage;
  if (e instanceof ObjstateError) {
    if (e.code === "STATE_LOCKED" || e.code === "LOCK_ID_MISMATCH") return EXIT.locked;
    if (e.code === "DIGEST_MISMATCH" || e.code === "TORN_WRITE") return EXIT.digest;
    if (e.code === "STATE_CONFLICT") return EXIT.conflict;
    if (e.code === "LOCK_NOT_HELD" || e.code === "LOCK_LOST") return EXIT.lockLost;
    if (USAGE_CODES.has(e.code)) return EXIT.usage;
  }
  return EXIT.error;
}

/** Parse JSON text; a syntax error names `name` and the line and column. */
export function parseJsonText(text: string, name: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    const { problem, at } = jsonSyntaxProblem(e, (p) => text.slice(0, p), text.length);
    throw new CliError("INVALID_JSON", `${name} is not valid JSON${at === "" ? "" : ` ${at}`}: ${problem}`, EXIT.usage, e);
  }
}

/** The bytes of a file, or of standard input for `-`; errors name the file. */
export function readInput(file: string): Buffer {
  try {
    return file === "-" ? readFileSync(0) : readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : (e as Error).message;
    throw new CliError("FILE_UNREADABLE", `cannot read ${file === "-" ? "standard input" : file}: ${reason}`, EXIT.usage, e);
  }
}

/** Read and parse a JSON file; errors name the file and, for broken JSON, the line. */
export function readJsonFile(file: string): unknown {
  return parseJsonText(readInput(file).toString("utf8"), file === "-" ? "standard input" : file);
}
