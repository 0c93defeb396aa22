/**
 * What a `JSON.parse` SyntaxError says, made safe to show: the problem and where (line and
 * column), without the excerpt of the text V8 puts in some messages (config, credentials
 * and state files hold secrets).
 */

export interface JsonSyntaxProblem {
  /** e.g. `Expected ',' or '}' after property value`. */
  readonly problem: string;
  /** `at line L, column C`, or "" when the message gives no position. */
  readonly at: string;
}

/**
 * @param textBefore the document's text before a byte or character position (a function,
 *   so a large document is not decoded whole just to count lines).
 * @param length the document's length: when given, "end of input" errors are placed there.
 */
export function jsonSyntaxProblem(e: unknown, textBefore: (position: number) => string, length?: number): JsonSyntaxProblem {
  const message = e instanceof Error ? e.message : String(e);
  const problem = message
    .replace(/, (?:\.\.\.)?".*$/s, "")
    .replace(/ (?:in JSON )?at position \d+.*$/s, "")
    .replace(/ \(line \d+ column \d+\)$/, "");
  const m = /at position (\d+)/.exec(message);
  const position = m !== null ? Number(m[1]) : length !== undefined && /end of JSON input/i.test(message) ? length : undefined;
  if (position === undefined) return { problem, at: "" };
  const before = textBefore(position);
  return { problem, at: `at line ${before.split("\n").length}, column ${before.length - before.lastIndexOf("\n")}` };
}
