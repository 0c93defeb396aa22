/**
 * The one rule for what may be stored as a state, for every writer (the library, `state push`,
 * `serve`, rollback, rekey): one JSON object as `JSON.parse` (and the tool) read it, with the
 * format `version` the tool reads first (a whole number above 0), or an OpenTofu encryption
 * envelope (`encryption_version`, no `version`). Checked as the bytes stream past, never held.
 */
import { ObjstateError } from "../errors.js";
import { TopLevelScanner } from "../encryption/scan.js";
import { describeFailure, JsonObjectStreamCheck, positionAt, type StreamCheckFailure } from "../json/stream-check.js";
import type { ByteSource } from "../store/types.js";

/** Why bytes are not a state. */
type StateFailure = StreamCheckFailure | { readonly kind: "no-version" } | { readonly kind: "bad-version" };

/** Bytes kept of the last chunk: a `version` value that began there is no longer (else it is no whole number). */
const CARRY = 32;
const SLICE = 1024 * 1024;

/** Checks a state chunk by chunk; {@link end} gives the verdict. */
export class StateCheck {
  private readonly json = new JsonObjectStreamCheck();
  private readonly top = new TopLevelScanner();
  private version: string | undefined;
  private envelope = false;
  private carry: Buffer = Buffer.alloc(0);

  /** False once the bytes are known to be no JSON object. */
  feed(chunk: Uint8Array): boolean {
    if (!this.json.feed(chunk)) return false;
    // The tool writes `version` first: the scan of the top level stops there.
    if (this.version === undefined) this.scan(chunk);
    return true;
  }

  end(): StateFailure | undefined {
    const f = this.json.end();
    if (f !== undefined) return f;
    if (this.version !== undefined) return /^[1-9][0-9]*$/.test(this.version) ? undefined : { kind: "bad-version" };
    return this.envelope ? undefined : { kind: "no-version" };
  }

  private scan(chunk: Uint8Array): void {
    const from = this.top.offset - this.carry.length;
    this.top.scan(chunk);
    for (const m of this.top.members) {
      if (m.key !== "version" && m.key !== "encryption_version") continue;
      const text = m.start < from ? "" : Buffer.concat([this.carry, chunk]).toString("utf8", m.start - from, m.end - from);
      if (m.key === "version") this.version = text;
      else this.envelope = text.startsWith('"');
    }
    this.top.members.length = 0;
    this.carry = Buffer.concat([this.carry, chunk.subarray(Math.max(0, chunk.length - CARRY))]);
    this.carry = this.carry.subarray(Math.max(0, this.carry.length - CARRY));
  }
}

/** How messages name the state a write to `workspace` brings. */
export const stateToWrite = (workspace: string): string => `the state to write to workspace "${workspace}"`;

/** `STATE_INVALID` when the check found no state, placed (line and column) by reading the bytes again up to the fault. */
async function verdict(check: StateCheck, again: () => AsyncIterable<Uint8Array>, what: string): Promise<void> {
  const failure = check.end();
  if (failure === undefined) return;
  if (failure.kind === "syntax") {
    const at = await positionAt(again(), failure.offset);
    throw new ObjstateError(
      "STATE_INVALID",
      `${what} is not valid JSON at line ${at.line}, column ${at.column}: ${describeFailure(failure, at.char)}; nothing was written`,
      { details: { line: at.line, column: at.column } },
    );
  }
  const why =
    failure.kind === "not-object"
      ? `expected a JSON object, not ${failure.what}`
      : failure.kind === "no-version"
        ? 'it has no format "version" (nor is it an encryption envelope)'
        : 'its format "version" is not a whole number above 0';
  throw new ObjstateError("STATE_INVALID", `${what} is not a state: ${why}; nothing was written`);
}

/** `STATE_INVALID` unless `bytes` is a state ({@link StateCheck}); `what` names it in the message. */
export async function checkState(bytes: Uint8Array, what: string): Promise<void> {
  const check = new StateCheck();
  // In slices, so that the scan for `version` stops early in a large buffer too.
  for (let i = 0; i < bytes.length; i += SLICE) if (!check.feed(bytes.subarray(i, i + SLICE))) break;
  await verdict(
    check,
    async function* () {
      yield bytes;
    },
    what,
  );
}

/** Read `source` once (each chunk also to `each`), `STATE_INVALID` unless it is a state: reading stops at the fault. */
export async function checkSource(source: ByteSource, what: string, each?: (chunk: Uint8Array) => void): Promise<void> {
  const check = new StateCheck();
  for await (const chunk of source.open()) {
    if (!check.feed(chunk)) break;
    each?.(chunk);
  }
  await verdict(check, () => source.open(), what);
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
    verifiedMd5: source.verifiedMd5,
    stable: source.stable,
    async *open(options) {
      if (proven) {
        yield* source.open(options);
        return;
      }
      const check = new StateCheck();
      let held: Uint8Array | undefined;
      // Not `reusable`: the chunk held back must stay as it is while the next is read.
      for await (const chunk of source.open()) {
        if (!check.feed(chunk)) break;
        if (held !== undefined) yield held;
        held = chunk;
      }
      await verdict(check, () => source.open(), what);
      proven = true;
      if (held !== undefined) yield held;
    },
  };
}
