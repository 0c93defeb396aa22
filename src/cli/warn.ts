/**
 * The command's warning channel, in a module of its own: main and the command tree need it
 * before they know which command runs, and runtime.ts (the backend, drivers, credentials)
 * would make `--help` load all of that.
 */
import { paint } from "./term.js";
import { printable } from "../util/printable.js";

const warned = new Set<string>();

/** Print a warning on stderr (`objstate: warning: …`), once per code. */
export function warn(message: string, code = message): void {
  if (warned.has(code)) return;
  warned.add(code);
  process.stderr.write(`${paint(process.stderr).yellow("objstate: warning:")} ${printable(message)}\n`);
}
