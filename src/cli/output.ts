/**
 * `objstate output [NAME] [--json|--raw]`: the outputs of a workspace's state, merged over
 * `--defaults`, read through `DataRemoteStateObjectStore.fetchOutputs()` (digest-checked,
 * no lock taken, nothing created).
 */
import { DataRemoteStateObjectStore } from "../remote-state/data-remote-state.js";
import type { JsonValue } from "../remote-state/remote-outputs.js";
import { CliError, EXIT, usageError } from "./io.js";
import { cliTimeouts, warn } from "./runtime.js";
import { gatherSettings, remoteStateConfigOf } from "./settings.js";
import { printJson } from "./term.js";

/** Name under which the CLI reads the remote state (appears in library messages). */
const REMOTE_NAME = "objstate_output";

function typeName(v: JsonValue): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** `objstate output`. */
export async function outputAction(name: string | undefined, opts: Record<string, unknown>): Promise<void> {
  const raw = opts["raw"] === true;
  const json = opts["json"] === true;
  if (raw && name === undefined) throw usageError("--raw prints one string output: give its NAME (objstate output NAME --raw)");
  const input = gatherSettings(opts);
  const config = remoteStateConfigOf(input);
  const outputs = await new DataRemoteStateObjectStore(REMOTE_NAME, config).fetchOutputs({ env: process.env, onWarning: warn, timeouts: cliTimeouts() });
  const workspace = input.workspace ?? "default";
  const where = outputs.source.location === undefined ? `workspace ${workspace}` : `workspace ${workspace} at ${outputs.source.location}`;

  if (name === undefined) {
    const all = outputs.toJSON();
    if (json) return printJson(all);
    const names = outputs.names();
    if (names.length === 0) {
      process.stderr.write(`objstate: the state of ${where} has no outputs\n`);
      return;
    }
    for (const n of names) process.stdout.write(`${n} = ${JSON.stringify(all[n])}\n`);
    return;
  }

  if (!outputs.has(name)) {
    const names = outputs.names();
    throw new CliError("OUTPUT_NOT_FOUND", `no output "${name}" in ${where}; ${names.length === 0 ? "there are no outputs" : `available: ${names.join(", ")}`}`, EXIT.error);
  }
  const value = outputs.get(name);
  if (raw) {
    if (typeof value !== "string") {
      throw new CliError("OUTPUT_NOT_STRING", `output "${name}" is ${typeName(value)}, not a string: --raw prints only strings (use --json)`, EXIT.error);
    }
    // As `terraform output -raw`: the bare string, no quotes and no trailing newline.
    process.stdout.write(value);
    return;
  }
  if (json) return printJson(value);
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
