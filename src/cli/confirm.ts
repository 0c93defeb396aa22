/** Asking the person at the terminal before a destructive command (force-unlock, rollback). */

/** Can we ask? Standard input must be a terminal to answer, standard error one to ask on. */
export function interactive(): boolean {
  return process.stdin.isTTY === true && process.stderr.isTTY === true;
}

/** Ask `question` on standard error; true only for the answer `yes`. */
export async function confirm(question: string): Promise<boolean> {
  // terminal: false — the terminal echoes the answer itself; readline's line editing would
  // write ANSI cursor codes (and NO_COLOR asks for none).
  // Loaded here: every command loads its module, few ask a question (start-up, issue 14).
  const { createInterface } = await import("node:readline/promises");
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: false });
  try {
    return (await rl.question(question)).trim() === "yes";
  } finally {
    rl.close();
  }
}
