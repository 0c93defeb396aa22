import { ERROR_CODES, EXIT, type ErrorCode, type UsageCode } from "../error-codes.js";
import { ObjstateError } from "../errors.js";
import { FILE_LIMITS, ReadFileError, readBoundedFile } from "../io/read-file.js";
import { jsonSyntaxProblem } from "../json/syntax-error.js";

/** An error of the command itself: it ends `objstate` with its code's exit code, or with `exitCode` (a signal's). */
export class CliError extends ObjstateError {
  readonly exitCode: number;
  constructor(code: ErrorCode, message: string, options: { cause?: unknown; exitCode?: number | undefined } = {}) {
    super(code, message, { cause: options.cause });
    this.name = "CliError";
    this.exitCode = options.exitCode ?? ERROR_CODES[code].exit;
  }
}

/** A usage / bad-input error (exit 2): its code is one whose row says so. */
export function usageError(message: string, code: UsageCode = "USAGE", cause?: unknown): CliError {
  return new CliError(code, message, { cause });
}

/** The exit code for an error: its code's row in error-codes.ts (see `EXIT` there); 1 for anything else. */
export function exitCodeOf(e: unknown): number {
  if (e instanceof CliError) return e.exitCode;
  return e instanceof ObjstateError ? ERROR_CODES[e.code].exit : EXIT.error;
}

/** `text` parsed; broken JSON is `error(where)`, never JSON.parse's message nor its cause: they quote the text, and these texts hold secrets. */
export function parseJson(text: string, error: (where: string) => CliError): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    const { problem, at } = jsonSyntaxProblem(e, text);
    throw error(`${at === "" ? "" : ` ${at}`}: ${problem}`);
  }
}

/** Read and parse a JSON file (config or props; `-` is standard input): unreadable or oversized is refused at once, naming the file; broken JSON names its line. */
export function readJsonFile(file: string): unknown {
  const text = readingFile(() => readBoundedFile(file, FILE_LIMITS.config).bytes.toString("utf8"));
  return parseJson(text, (where) => new CliError("INVALID_JSON", `${file === "-" ? "standard input" : file} is not valid JSON${where}`));
}

/** Run `read`: a file it cannot read is `FILE_UNREADABLE`, one too large `FILE_TOO_LARGE` (with `tooLargeAdvice`), both exit 2. */
export function readingFile<T>(read: () => T, tooLargeAdvice = ""): T {
  try {
    return read();
  } catch (e) {
    if (!(e instanceof ReadFileError)) throw e;
    if (e.kind === "too-large") throw new CliError("FILE_TOO_LARGE", `${e.message}${tooLargeAdvice}`, { cause: e });
    throw new CliError("FILE_UNREADABLE", e.message, { cause: e });
  }
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
 * The one line the CLI prints for an error: an {@link ObjstateError}'s message; of anything else its name
 * and code, never its message (which may quote a file's text) nor its stack unless OBJSTATE_DEBUG asks.
 */
export function errorLine(e: unknown): string {
  if (e instanceof ObjstateError) return e.message.replace(/\s*\n\s*/g, " ").trim();
  const name = e instanceof Error ? e.name : typeof e;
  const code = (e as { code?: unknown } | undefined)?.code;
  const what = typeof code === "string" && code !== "" ? `${name} ${code}` : name;
  return `unexpected internal error (INTERNAL_ERROR: ${what}); run again with OBJSTATE_DEBUG=1 to see the details, and please report it`;
}

/** Write to standard output, resolved once written (so a closed output is an error the caller sees). */
export function writeOut(bytes: Buffer | string): Promise<void> {
  return new Promise<void>((resolve, reject) => process.stdout.write(bytes, (e) => (e ? reject(e) : resolve())));
}

/** A count flag (`--limit`, `--keep-days`): a whole number from 1; undefined when not given. */
export function countFlag(v: string | undefined, flag: string, code: UsageCode): number | undefined {
  if (v === undefined) return undefined;
  const n = /^\d+$/.test(v.trim()) ? Number(v.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw usageError(`${flag} needs a whole number from 1, got ${JSON.stringify(v)}`, code);
  return n;
}

/** `--lock-id ID`: write under a lock the caller holds (taken with `objstate lock`). */
export function lockIdFlag(id: string | undefined): string | undefined {
  return idFlag(id, "--lock-id needs the ID printed by objstate lock", "INVALID_LOCK_ID");
}

/** A version ID flag (`--version`, `--from`): an ID from `objstate state history`. */
export function versionFlag(v: string | undefined, flag: string): string | undefined {
  return idFlag(v, `${flag} needs a version ID (objstate state history lists them)`, "INVALID_VERSION_ID");
}

/** An ID flag's value, trimmed; an empty one is refused with `message`. */
function idFlag(v: string | undefined, message: string, code: UsageCode): string | undefined {
  if (v === undefined) return undefined;
  if (v.trim() === "") throw usageError(message, code);
  return v.trim();
}
