/**
 * `state rekey` (issue 26): the current state written again under the primary method, as a
 * new version with serial + 1, so the tool sees a newer state and old versions stay readable
 * through the fallback that read them.
 */
import type { StateEncryption } from "../encryption/index.js";
import type { BackendContext } from "./context.js";
import type { UnderLockOptions } from "./locks/lock-scope.js";
import type { Principal } from "./principal.js";
import { readCommitted } from "./read.js";
import { scanHeader, withSerial } from "./state-header.js";

/** Options of `ObjectStoreBackend.rekey`. */
export interface RekeyOptions extends UnderLockOptions {
  /** Recorded with the new version, and the owner of the lock the call takes. */
  readonly principal?: Principal | undefined;
}

/** What a rekey did. */
export interface RekeyResult {
  readonly workspace: string;
  /** False: the workspace has no state (nothing was written). */
  readonly rekeyed: boolean;
  /** The method that read the state before (`method.TYPE.NAME`), undefined without a state. */
  readonly from: string | undefined;
  /** The primary method it is written under now. */
  readonly to: string;
  /** The serial the state carries now (undefined without a state). */
  readonly serial: number | undefined;
  readonly md5: string | undefined;
}

const HEADER_BYTES = 64 * 1024;

/** Rekey under the caller's lock; `write` is the guarded write (conditional on the ETag read here). */
export async function rekeyUnderLock(
  ctx: BackendContext,
  enc: StateEncryption,
  workspace: string,
  write: (body: Buffer, ifMatch: string | undefined) => Promise<{ readonly md5: string }>,
): Promise<RekeyResult> {
  const to = (enc.methods[0] as { address: string }).address;
  const found = await readCommitted(ctx, workspace, {});
  if (found === null) return { workspace, rekeyed: false, from: undefined, to, serial: undefined, md5: undefined };
  const d = await enc.decrypt(found.body, { workspace });
  const what = `the state of workspace "${workspace}" has no top-level serial in its first ${HEADER_BYTES / 1024} KiB, so it cannot be written again as a newer version; nothing was written`;
  const next = withSerial(d.state, scanHeader(d.state.subarray(0, HEADER_BYTES)), (n) => n + 1, what, { workspace });
  const result = await write(next.body, found.etag);
  return { workspace, rekeyed: true, from: d.method, to, serial: next.serial, md5: result.md5 };
}
