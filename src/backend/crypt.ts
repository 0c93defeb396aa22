/**
 * State encryption at the backend's edge (issue 26, docs/decisions/069): the one place that
 * turns the state a caller writes into what is stored (an envelope, or the state itself
 * without encryption) and what is stored back into the state. Everything between — the
 * guard, fencing, digests, history — works on the stored bytes, whose clear `serial` and
 * `lineage` are the state's.
 */
import type { Decrypted, StateEncryption } from "../encryption/index.js";
import { isEnvelope } from "../encryption/index.js";
import { ObjstateError } from "../errors.js";
import { scanHeader, stateHeader, type StateHeader } from "./state-header.js";

/** How much of a state is scanned for the clear fields an envelope carries. */
const HEADER_BYTES = 64 * 1024;

/** The stored form of `data`: the envelope of the state under the primary method (or the state, `unencrypted` first). */
export async function sealState(enc: StateEncryption, state: Buffer, workspace: string): Promise<Buffer> {
  if (enc.writesPlain) return state;
  if (isEnvelope(state.subarray(0, HEADER_BYTES))) {
    throw new ObjstateError(
      "STATE_INVALID",
      `the state to write to workspace "${workspace}" is already an encryption envelope, and objstate encrypts states itself here: write the decrypted state (or connect without encryption to store envelopes as they are)`,
      { details: { workspace } },
    );
  }
  const h = scanHeader(state.subarray(0, HEADER_BYTES));
  if (h === undefined || h.lineage === undefined)
    throw new ObjstateError(
      "STATE_INVALID",
      `the state to write to workspace "${workspace}" has no top-level lineage, so it cannot be encrypted: is it a state?`,
      {
        details: { workspace },
      },
    );
  return (await enc.encrypt(state, { serial: h.serial ?? null, lineage: h.lineage })).toBuffer();
}

/** The state in `stored` (decrypted under the primary method, then each fallback). */
export function openState(enc: StateEncryption, stored: Buffer, workspace: string): Promise<Decrypted> {
  return enc.decrypt(stored, { workspace });
}

/**
 * Refuse to write over a stored state this configuration cannot read (wrong key, unknown
 * version, plain without an `unencrypted` fallback): the whole object when it is small, else
 * its first bytes, where the key is chosen (decision 064). A small state's header comes back
 * from its decrypted content: an envelope's clear fields cannot say whether it is empty.
 */
export async function checkReadable(enc: StateEncryption, stored: Buffer, whole: boolean, workspace: string): Promise<StateHeader | undefined> {
  if (whole) {
    const d = await enc.decrypt(stored, { workspace });
    try {
      return stateHeader(d.state, true, `the state of workspace "${workspace}"`);
    } catch {
      return undefined;
    }
  }
  const d = enc.decryptor({ workspace });
  await d.push(stored);
  await d.checkPrefix();
  return undefined;
}
