/**
 * The tool's single-dash spellings of the options objstate shares with it (`output -raw`, `-lock=false`),
 * which commander would read as short options (`-r -a -w`): each becomes its `--` form where the command
 * has that option, never after `--` nor as an option's value (`--info -json`).
 */
import type { Command, Option } from "commander";

/** The tool's boolean options: `-NAME` is `--NAME`. */
const FLAGS = new Set(["-raw", "-json", "-force", "-no-color"]);

/** `-lock`, `-lock=BOOL`, `-lock-timeout=D` and `-lock-timeout D`. */
const VALUED = /^-(lock|lock-timeout)(=.*)?$/;

/** The option of `cmd` spelled `flag` (`--json`, `-w`), if any. */
function optionOf(cmd: Command, flag: string): Option | undefined {
  return cmd.options.find((o) => o.long === flag || o.short === flag);
}

/** `args` (the words after `cmd`'s path) with the tool's spellings of `cmd`'s options in `--` form, and whether `--no-color` is among them. */
export function withToolSpellings(cmd: Command, args: readonly string[]): { args: string[]; noColor: boolean } {
  const out: string[] = [];
  let noColor = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") {
      out.push(...args.slice(i));
      break;
    }
    const word = toolSpelling(cmd, arg);
    out.push(word);
    if (word === "--no-color") noColor = true;
    // The next word is this option's value, whatever it looks like.
    const option = word.startsWith("-") && !word.includes("=") ? optionOf(cmd, word) : undefined;
    if (option?.required === true && i + 1 < args.length) out.push(args[++i] as string);
  }
  return { args: out, noColor };
}

function toolSpelling(cmd: Command, arg: string): string {
  if (FLAGS.has(arg)) {
    return optionOf(cmd, `-${arg}`) === undefined ? arg : `-${arg}`;
  }
  const m = VALUED.exec(arg);
  if (m === null || optionOf(cmd, `--${m[1] as string}`) === undefined) return arg;
  // Bare `-lock` is the tool's `-lock=true`: `--lock` takes a value here.
  return m[1] === "lock" && m[2] === undefined ? "--lock=true" : `-${arg}`;
}
