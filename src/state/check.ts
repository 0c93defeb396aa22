/**
 * The one rule for what a writer may store as a state (docs/decisions/089): one JSON object as
 * `JSON.parse` reads it, with the format `version` the tool reads first (a whole number above
 * 0), or an OpenTofu encryption envelope (`encryption_version`, no `version`). Checked as the
 * bytes stream past, never held.
 */
import { ObjstateError } from "../errors.js";
import { JsonScanner, scanJson } from "../json/scan.js";
import { describeFailure, positionAt } from "../json/syntax-error.js";
import { isByteSource, wrapSource } from "../store/byte-source.js";
import type { ByteSource } from "../store/types.js";

const FIELDS = ["version", "encryption_version"];

/** `STATE_INVALID` unless the bytes fed to `scan` are a state, placed (line and column) by reading them `again` up to the fault. */
async function verdict(scan: JsonScanner, again: () => AsyncIterable<Uint8Array> | Iterable<Uint8Array>, what: string): Promise<void> {
  const f = scan.end();
  if (f?.kind === "syntax") {
    const at = await positionAt(again(), f.offset);
    const problem = `is not valid JSON at line ${at.line}, column ${at.column}: ${describeFailure(f, at.char)}`;
    throw new ObjstateError("STATE_INVALID", `${what} ${problem}; nothing was written`, { details: { line: at.line, column: at.column } });
  }
  const version = scan.values.get("version")?.toString("latin1");
  const envelope = scan.values.get("encryption_version")?.[0] === 0x22;
  let why: string | undefined;
  if (f !== undefined) why = `expected a JSON object, not ${f.what}`;
  else if (version === undefined) why = envelope ? undefined : 'it has no format "version" (nor is it an encryption envelope)';
  else if (!/^[1-9][0-9]*$/.test(version)) why = 'its format "version" is not a whole number above 0';
  if (why !== undefined) throw new ObjstateError("STATE_INVALID", `${what} is not a state: ${why}; nothing was written`);
}

/**
 * The state a write to `workspace` brings, held to the rule: bytes in memory checked now; a
 * source checked by each read, which fails (`STATE_INVALID`) before yielding its last chunk, so
 * a store never completes a write of a non-state. After one whole read passed, reads are not
 * checked again (changed bytes fail the write's MD5).
 */
export async function checkState(data: Buffer | ByteSource, workspace: string): Promise<Buffer | ByteSource> {
  const what = `the state to write to workspace "${workspace}"`;
  if (!isByteSource(data)) {
    await verdict(scanJson(data, FIELDS), () => [data], what);
    return data;
  }
  let proven = false;
  return wrapSource(data, async function* () {
    if (proven) return yield* data.open();
    const scan = new JsonScanner(FIELDS);
    let held: Uint8Array | undefined;
    for await (const chunk of data.open()) {
      // False once the bytes are known to be no JSON object.
      if (!scan.feed(chunk)) break;
      if (held !== undefined) yield held;
      held = chunk;
    }
    await verdict(scan, () => data.open(), what);
    proven = true;
    if (held !== undefined) yield held;
  });
}
