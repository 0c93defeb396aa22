/**
 * `state rekey` (issue 26): the current state written again under the primary method, as a
 * new version with serial + 1, so the tool sees a newer state and old versions stay readable
 * through the fallback that read them.
 */
import type { StateEncryption } from "../encryption/index.js";
import { ObjstateError } from "../errors.js";
import type { BackendContext } from "./context.js";
import type { UnderLockOptions } from "./options.js";
import type { Principal } from "./principal.js";
import { readCommitted } from "./read.js";
import { scanHeader } from "./state-header.js";

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
  const h = scanHeader(d.state.subarray(0, HEADER_BYTES));
  if (h?.serialAt === undefined || h.serial === undefined) {
    throw new ObjstateError(
      "STATE_INVALID",
      `the state of workspace "${workspace}" has no top-level serial in its first ${HEADER_BYTES / 1024} KiB, so it cannot be written again as a newer version; nothing was written`,
      { details: { workspace } },
    );
  }
  const serial = h.serial + 1;
  const [at, end] = h.serialAt;
  const body = Buffer.concat([d.state.subarray(0, at), Buffer.from(String(serial), "utf8"), d.state.subarray(end)]);
  const result = await write(body, found.etag);
  return { workspace, rekeyed: true, from: d.method, to, serial, md5: result.md5 };
}
