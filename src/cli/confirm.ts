/** Asking the person at the terminal: before a destructive command (force-unlock, rollback), and for a password. */
import { EXIT } from "../error-codes.js";
import { CliError } from "./io.js";

/** Can we ask? Standard input must be a terminal to answer, standard error one to ask on. */
export function interactive(): boolean {
  return process.stdin.isTTY === true && process.stderr.isTTY === true;
}

/** Ask `question` on standard error; true only for the answer `yes`. */
export async function confirm(question: string): Promise<boolean> {
  // terminal: false: the terminal echoes the answer; readline's line editing would write ANSI codes.
  const { createInterface } = await import("node:readline/promises");
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: false });
  try {
    return (await rl.question(question)).trim() === "yes";
  } finally {
    rl.close();
  }
}

/** A secret typed at the terminal in raw mode, nothing echoed: Backspace edits, Enter ends, Ctrl-C is `CANCELLED`, Ctrl-D on an empty line is "". */
export async function readSecret(prompt: string): Promise<string> {
  const stdin = process.stdin;
  // Echo off before the prompt shows: whoever types as soon as they see it is not echoed.
  stdin.setRawMode(true);
  process.stderr.write(prompt);
  stdin.resume();
  try {
    return await new Promise<string>((resolve, reject) => {
      let typed = "";
      const onData = (chunk: Buffer): void => {
        for (const ch of chunk.toString("utf8")) {
          if (ch === "\r" || ch === "\n" || (ch === "\u0004" && typed === "")) {
            stdin.off("data", onData);
            resolve(typed);
            return;
          }
          if (ch === "\u0003") {
            stdin.off("data", onData);
            reject(new CliError("CANCELLED", "cancelled at the password prompt: nothing was written", { exitCode: EXIT.interrupted }));
            return;
          }
          if (ch === "\u007f" || ch === "\b") typed = [...typed].slice(0, -1).join("");
          else if (ch >= " ") typed += ch;
        }
      };
      stdin.on("data", onData);
    });
  } finally {
    process.stderr.write("\n");
    stdin.setRawMode(false);
    stdin.pause();
  }
}
