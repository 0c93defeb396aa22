/**
 * The one rule for what a writer may store as a state (docs/decisions/089): one JSON object as
 * `JSON.parse` reads it, with the format `version` the tool reads first (a whole number above
 * 0), or an OpenTofu encryption envelope (`encryption_version`, no `version`). Checked as the
 * bytes stream past, never held.
 */
import { ObjstateError } from "../errors.js";
import { TopLevelScanner } from "../encryption/scan.js";
import { describeFailure, JsonObjectStreamCheck, positionAt } from "../json/stream-check.js";
import type { ByteSource } from "../store/types.js";

/** Bytes kept of the last chunk: a `version` value longer than this is no whole number anyway. */
const CARRY = 32;

class StateCheck {
  private readonly json = new JsonObjectStreamCheck();
  private readonly top = new TopLevelScanner();
  private version: string | undefined;
  private envelope = false;
  private carry = Buffer.alloc(0);

  /** False once the bytes are known to be no JSON object. */
  feed(chunk: Uint8Array): boolean {
    if (!this.json.feed(chunk)) return false;
    // The tool writes `version` first: the scan of the top level stops there.
    if (this.version !== undefined) return true;
    const from = this.top.offset - this.carry.length;
    this.top.scan(chunk);
    for (const m of this.top.members) {
      if (m.key !== "version" && m.key !== "encryption_version") continue;
      const text = m.start < from ? "" : Buffer.concat([this.carry, chunk]).toString("utf8", m.start - from, m.end - from);
      if (m.key === "version") this.version = text;
      else this.envelope = text.startsWith('"');
    }
    this.top.members.length = 0;
    this.carry = Buffer.concat([this.carry, chunk.subarray(-CARRY)]).subarray(-CARRY);
    return true;
  }

  /** `STATE_INVALID` unless the bytes fed are a state, placed (line and column) by reading them `again` up to the fault. */
  async verdict(again: () => AsyncIterable<Uint8Array>, what: string): Promise<void> {
    const f = this.json.end();
    if (f?.kind === "syntax") {
      const at = await positionAt(again(), f.offset);
      const problem = `is not valid JSON at line ${at.line}, column ${at.column}: ${describeFailure(f, at.char)}`;
      throw new ObjstateError("STATE_INVALID", `${what} ${problem}; nothing was written`, { details: { line: at.line, column: at.column } });
    }
    let why: string | undefined;
    if (f !== undefined) why = `expected a JSON object, not ${f.what}`;
    else if (this.version === undefined) why = this.envelope ? undefined : 'it has no format "version" (nor is it an encryption envelope)';
    else if (!/^[1-9][0-9]*$/.test(this.version)) why = 'its format "version" is not a whole number above 0';
    if (why !== undefined) throw new ObjstateError("STATE_INVALID", `${what} is not a state: ${why}; nothing was written`);
  }
}

/** How messages name the state a write to `workspace` brings. */
export const stateToWrite = (workspace: string): string => `the state to write to workspace "${workspace}"`;

/** Read `source` once (each chunk also to `each`): `STATE_INVALID` unless it is a state; reading stops at the fault. */
export async function checkSource(source: ByteSource, what: string, each?: (chunk: Uint8Array) => void): Promise<void> {
  const check = new StateCheck();
  for await (const chunk of source.open()) {
    if (!check.feed(chunk)) break;
    each?.(chunk);
  }
  await check.verdict(() => source.open(), what);
}

/**
 * `source`, checked by each read: one that finds it is no state fails (`STATE_INVALID`) before
 * yielding its last chunk, so a store never completes a write of it. After one whole read
 * passed, reads are not checked again (changed bytes fail the write's MD5).
 */
export function checkedSource(source: ByteSource, what: string): ByteSource {
  let proven = false;
  return {
    size: source.size,
    async *open() {
      if (proven) return yield* source.open();
      const check = new StateCheck();
      let held: Uint8Array | undefined;
      for await (const chunk of source.open()) {
        if (!check.feed(chunk)) break;
        if (held !== undefined) yield held;
        held = chunk;
      }
      await check.verdict(() => source.open(), what);
      proven = true;
      if (held !== undefined) yield held;
    },
  };
}
