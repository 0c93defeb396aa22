/**
 * Text from a store, a lock or a state (written by anyone) made safe for a terminal: control
 * characters (C0, DEL, C1), line and paragraph separators and bidi controls shown escaped, so
 * a lock's `Who` cannot move the cursor, rewrite a line or forge a table row. JSON output
 * needs none of this: JSON escaping already covers it.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `s` with every character a terminal would act on written as an escape (`\x1b`, `\r`, `\u202e`). */
export function printable(s: string): string {
  return s.replace(UNSAFE, (c) => {
    const n = c.charCodeAt(0);
    return NAMED[c] ?? (n <= 0xff ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u${n.toString(16).padStart(4, "0")}`);
  });
}
