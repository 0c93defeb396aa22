/**
 * `objstate output [NAME] [--json|--raw] [--show-sensitive]`: the outputs of a workspace's state over
 * `--defaults`, as the tool's `output` prints them, except that `--json` masks sensitive values too:
 * JSON ends up in CI logs, where a secret should not go unasked. Numbers print exactly as stored.
 */
import { DataRemoteStateObjectStore } from "../remote-state/data-remote-state.js";
import { decimalForm, MAX_DECIMAL_DIGITS } from "../json/exact-json.js";
import type { RemoteOutputs } from "../remote-state/remote-outputs.js";
import { asToolWritesJson, outputsJsonText, SENSITIVE } from "../wire/shapes.js";
import { CliError, usageError } from "./io.js";
import type { Opts } from "./options.js";
import { connectOptionsOf, gatherSettings, remoteStateConfigOf } from "./settings.js";
import { warn } from "./term.js";
import { printable } from "../util/printable.js";

/** Name under which the CLI reads the remote state (appears in library messages). */
const REMOTE_NAME = "objstate_output";

export async function outputAction(name: string | undefined, opts: Opts): Promise<void> {
  const raw = opts.raw === true;
  const json = opts.json === true;
  if (raw && name === undefined) throw usageError("--raw prints one output: give its NAME (objstate output NAME --raw)");
  const input = gatherSettings(opts);
  const remote = new DataRemoteStateObjectStore(REMOTE_NAME, remoteStateConfigOf(input));
  // A read of outputs takes no lock: no lease, no lockfile.
  const { ttl: _ttl, lockfile: _lockfile, ...read } = connectOptionsOf(input.settings);
  // The CLI reads the workspace's own state: the state target's methods, not a data source's.
  const outputs = await remote.fetchOutputs({ env: process.env, onWarning: warn, ...read, encryptionTarget: { kind: "state" } });
  const workspace = input.workspace ?? "default";
  const where = outputs.source.location === undefined ? `workspace ${workspace}` : `workspace ${workspace} at ${outputs.source.location}`;

  if (name === undefined) {
    const names = outputs.names();
    const hidden = (n: string): boolean => opts.showSensitive !== true && outputs.isSensitive(n);
    if (json) return void process.stdout.write(`${outputsJsonText(outputs, hidden)}\n`);
    if (names.length === 0) return void process.stderr.write(`objstate: the state of ${where} has no outputs\n`);
    for (const n of names) process.stdout.write(`${printable(n)} = ${hidden(n) ? SENSITIVE : outputs.toJSONText(n)}\n`);
    return;
  }

  if (!outputs.has(name)) {
    const names = outputs.names();
    throw new CliError(
      "OUTPUT_NOT_FOUND",
      `no output "${name}" in ${where}; ${names.length === 0 ? "there are no outputs" : `available: ${names.join(", ")}`}`,
    );
  }
  // --raw as the tool's `output -raw` (no trailing newline); --json as its `output -json NAME`: the value alone, on one line.
  process.stdout.write(raw ? rawText(outputs, name) : `${json ? asToolWritesJson(outputs.toJSONText(name)) : outputs.toJSONText(name)}\n`);
}

/** What `--raw` prints, as the tool's `output -raw`: a string as is, a number in plain decimal (`1e3` is `1000`), a boolean; nothing else. */
function rawText(outputs: RemoteOutputs, name: string): string {
  const type = outputs.typeOf(name);
  switch (type) {
    case "string":
      return outputs.string(name);
    case "boolean":
      return String(outputs.boolean(name));
    case "number": {
      const text = decimalForm(outputs.numberText(name));
      if (text === undefined) {
        throw new CliError(
          "OUTPUT_TOO_LONG",
          `output "${name}" has more than ${MAX_DECIMAL_DIGITS} digits in plain decimal notation: --raw will not print it (use --json)`,
        );
      }
      return text;
    }
    case "null":
      throw new CliError("OUTPUT_NOT_SCALAR", `output "${name}" is null, so --raw cannot print it (use --json)`);
    default:
      throw new CliError(
        "OUTPUT_NOT_SCALAR",
        `output "${name}" is ${type === "list" ? "a list" : "an object"}, not a string: --raw prints only strings, numbers and booleans (use --json)`,
      );
  }
}
