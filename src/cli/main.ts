#!/usr/bin/env node
/**
 * `objstate`: a thin shell over the library. Exit codes: 0 ok, 1 error, 2 usage or bad
 * input, 3 state locked, 4 digest mismatch.
 */
import { Command, CommanderError } from "commander";
import { ConfigError } from "../config/errors.js";
import { ObjstateError } from "../errors.js";
import { formatToolJson } from "../synth/tool-json.js";
import { synthesizeProps } from "../synth/document.js";
import { CliError, EXIT, readJsonFile } from "./io.js";
import { objstateVersion } from "../version.js";


function program(): Command {
  const cmd = new Command("objstate")
    .description("Keep an infrastructure tool's state in an object-storage bucket, with locking in a key-value table.")
    .version(objstateVersion(), "-V, --version", "print the version")
    .showSuggestionAfterError(true)
    .exitOverride();

  cmd
    .command("synth")
    .description("print the tool JSON for a props file: {\"backend\": {...}, \"remoteStates\": {\"NAME\": {...}}}")
    .argument("<file>", "props file (JSON), or - for standard input")
    .action((file: string) => {
      const { doc, warnings } = synthesizeProps(readJsonFile(file));
      for (const w of warnings) process.stderr.write(`objstate: warning: ${w}\n`);
      process.stdout.write(formatToolJson(doc));
    });
  return cmd;
}

function exitCodeOf(e: unknown): number {
  if (e instanceof CliError) return e.exitCode;
  if (e instanceof ConfigError) return EXIT.usage;
  return EXIT.error;
}

async function main(argv: string[]): Promise<number> {
  try {
    await program().parseAsync(argv);
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander already printed the message (and help / version on request)
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const message = e instanceof ObjstateError ? e.message : e instanceof Error ? e.message : String(e);
    process.stderr.write(`objstate: error: ${message}\n`);
    return exitCodeOf(e);
  }
}

process.exitCode = await main(process.argv);
