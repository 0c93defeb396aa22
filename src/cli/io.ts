import { readFileSync } from "node:fs";
import { ObjstateError } from "../errors.js";

/** Documented exit codes of `objstate`. */
export const EXIT = { ok: 0, error: 1, usage: 2, locked: 3, digest: 4 } as const;

/** An error that ends the CLI with a given exit code and a one-line message. */
export class CliError extends ObjstateError {
  readonly exitCode: number;
  constructor(code: string, message: string, exitCode: number, cause?: unknown) {
    super(code, message, { cause });
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

function lineCol(text: string, pos: number): { line: number; col: number } {
  const before = text.slice(0, pos);
  const line = before.split("\n").length;
  return { line, col: pos - before.lastIndexOf("\n") };
}

/** Read and parse a JSON file; errors name the file and, for broken JSON, the line. */
export function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = file === "-" ? readFileSync(0, "utf8") : readFileSync(file, "utf8");
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message;
    throw new CliError("FILE_UNREADABLE", `cannot read ${file}: ${reason}`, EXIT.usage, e);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    const msg = (e as Error).message;
    const m = /position (\d+)/.exec(msg);
    const at = m === null ? "" : (({ line, col }) => ` at line ${line}, column ${col}`)(lineCol(text, Number(m[1])));
    throw new CliError("INVALID_JSON", `${file} is not valid JSON${at}: ${msg.replace(/ in JSON at position \d+.*$/, "")}`, EXIT.usage, e);
  }
}
