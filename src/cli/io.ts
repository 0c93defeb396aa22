import { ConfigError } from "../config/errors.js";
import { jsonSyntaxProblem } from "../json/syntax-error.js";
import { ObjstateError } from "../errors.js";
import { FILE_LIMITS, ReadFileError, readBoundedFile } from "../io/read-file.js";

/**
 * Documented exit codes of `objstate`: 0 ok, 1 error, 2 usage or bad input (nothing was
 * written), 3 state locked (by another holder), 4 digest mismatch, 5 state conflict (the
 * lineage guard or a conditional write refused: nothing was written), 6 the lock is no
 * longer held by this writer (`LOCK_NOT_HELD`: released or force-unlocked), 7 the lock's
 * lease was lost (`LOCK_LOST`: it ran out and was taken over, or its renewal was refused;
 * nothing more was written); 129 / 130 / 143 interrupted (SIGHUP /
 * SIGINT / SIGTERM); 141 standard output was closed by its reader (`| head`).
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
  hangup: 129,
  interrupted: 130,
  outputClosed: 141,
  terminated: 143,
} as const;

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
  "CREDENTIALS_FILE_INVALID",
  "INVALID_KEY",
]);

/** The exit code for an error (see {@link EXIT}). */
export function exitCodeOf(e: unknown): number {
  if (e instanceof CliError) return e.exitCode;
  if (e instanceof ConfigError) return EXIT.usage;
  if (e instanceof ObjstateError) {
    if (e.code === "STATE_LOCKED" || e.code === "LOCK_ID_MISMATCH") return EXIT.locked;
    if (e.code === "DIGEST_MISMATCH" || e.code === "TORN_WRITE") return EXIT.digest;
    if (e.code === "STATE_CONFLICT") return EXIT.conflict;
    if (e.code === "LOCK_NOT_HELD") return EXIT.lockNotHeld;
    if (e.code === "LOCK_LOST") return EXIT.lockLost;
    // Every INVALID_* code names a value the person gave (a name, a key, a file's content).
    if (USAGE_CODES.has(e.code) || e.code.startsWith("INVALID_")) return EXIT.usage;
  }
  return EXIT.error;
}

/** Parse JSON text; a syntax error names `name` and the line and column. */
export function parseJsonText(text: string, name: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    const { problem, at } = jsonSyntaxProblem(e, text);
    // The cause stays off: V8's message quotes the text, and these files hold secrets.
    throw new CliError("INVALID_JSON", `${name} is not valid JSON${at === "" ? "" : ` ${at}`}: ${problem}`, EXIT.usage);
  }
}

/** Which limit a file read by the CLI gets (see {@link FILE_LIMITS}). */
export type InputKind = "state" | "config";

/**
 * The bytes of a file, or of standard input for `-`, bounded by the limit for its kind:
 * a FIFO, a device, a directory or an oversized file is refused at once (`FILE_UNREADABLE`,
 * `FILE_TOO_LARGE`), naming the file.
 */
export function readInput(file: string, kind: InputKind = "config"): Buffer {
  try {
    return readBoundedFile(file, FILE_LIMITS[kind]).bytes;
  } catch (e) {
    if (!(e instanceof ReadFileError)) throw e;
    const code = e.problem.kind === "too-large" ? "FILE_TOO_LARGE" : "FILE_UNREADABLE";
    throw new CliError(code, e.message, EXIT.usage, e);
  }
}

/** Read and parse a JSON file (config or props); errors name the file and, for broken JSON, the line. */
export function readJsonFile(file: string): unknown {
  return parseJsonText(readInput(file, "config").toString("utf8"), file === "-" ? "standard input" : file);
}

/** Is `e` a write to a stream whose reader has gone (`objstate state pull | head -c1`)? */
export function isClosedOutput(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return code === "EPIPE" || code === "ERR_STREAM_DESTROYED";
}

/** Is OBJSTATE_DEBUG set (to anything but "", "0" or "false")? Then unexpected errors show their stack. */
export function debugEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env["OBJSTATE_DEBUG"];
  return v !== undefined && v !== "" && v !== "0" && v.toLowerCase() !== "false";
}

/**
 * The one line the CLI prints for an error (without the `objstate: error:` prefix). An
 * {@link ObjstateError} says its message, on one line; anything else is a bug or a
 * failure nothing mapped: its name and code, never its message (a foreign message may
 * quote what it was given, such as a file's text) nor its stack unless OBJSTATE_DEBUG asks.
 */
export function errorLine(e: unknown): string {
  if (e instanceof ObjstateError) return e.message.replace(/\s*\n\s*/g, " ").trim();
  const name = e instanceof Error ? e.name : typeof e;
  const code = (e as { code?: unknown } | undefined)?.code;
  const what = typeof code === "string" && code !== "" ? `${name} ${code}` : name;
  return `unexpected internal error (INTERNAL_ERROR: ${what}); run again with OBJSTATE_DEBUG=1 to see the details, and please report it`;
}
