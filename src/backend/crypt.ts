/** State encryption at the backend's edge (docs/decisions/069): sealed on write, opened on read, rekeyed; all between works on the stored bytes. */
import type { Decrypted, StateEncryption } from "../encryption/index.js";
import { isEnvelope } from "../encryption/index.js";
import { ObjstateError } from "../errors.js";
import { md5Hex } from "../util/md5.js";
import type { BackendContext } from "./context.js";
import { normalizeDigest } from "./meta.js";
import { readCommitted } from "./read.js";
import type { ReadOptions, StateRead, UnderLockOptions, WriteOptions } from "./types.js";
import { HEADER_BYTES, scanHeader, stateHeader, withSerial, type StateHeader } from "./state-header.js";

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
  if (h === undefined || h.lineage === undefined) {
    const message = `the state to write to workspace "${workspace}" has no top-level lineage, so it cannot be encrypted: is it a state?`;
    throw new ObjstateError("STATE_INVALID", message, { details: { workspace } });
  }
  return await enc.encrypt(state, { serial: h.serial ?? null, lineage: h.lineage });
}

/** Refuse to write over a stored state this configuration cannot read (decision 064); a small state's header comes back from its content. */
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

/** The state, decrypted when the connection encrypts; with `md5`, the MD5 of an envelope's plaintext too, taken once per version. */
export async function readDecrypted(ctx: BackendContext, workspace: string, options: ReadOptions, md5: boolean): Promise<StateRead | null> {
  const enc = ctx.encryption;
  if (enc === undefined) return readCommitted(ctx, workspace, options);
  // Without a watcher, the stored bytes go straight to the decryptor when the store's record is the digest.
  const sealed = options.onData === undefined ? await readSealed(ctx, enc, workspace) : undefined;
  const found = sealed ?? (await readCommitted(ctx, workspace, options));
  if (found === null) return null;
  const d = sealed?.decrypted ?? (await enc.decrypt(found.body, { workspace }));
  let sum = md5 ? found.md5 : undefined;
  if (md5 && d.encrypted) {
    sum = found.md5 === undefined ? undefined : ctx.plainMd5Of(found.md5);
    sum ??= md5Hex(d.state);
    if (found.md5 !== undefined) ctx.rememberPlainMd5(found.md5, sum);
  }
  return { body: d.state, etag: found.etag, md5: sum, encryption: { encrypted: d.encrypted, method: d.method, migration: d.migration } };
}

/** The fast lane of an encrypted read: the bytes handed to the decryptor as they arrive when the store's MD5 record is the digest (or none); undefined: read the usual way. */
async function readSealed(ctx: BackendContext, enc: StateEncryption, workspace: string): Promise<(StateRead & { decrypted: Decrypted }) | undefined> {
  const [got, item] = await Promise.all([ctx.store.getStream(ctx.statePath(workspace)), ctx.table?.getDigest(ctx.digestId(workspace)) ?? null]);
  if (got === null) return undefined;
  const expected = normalizeDigest(item?.digest);
  const chunks = got.body[Symbol.asyncIterator]();
  if (expected !== undefined && got.recordedMd5 !== expected) {
    await chunks.return?.(); // stop the transfer: the usual read starts again
    return undefined;
  }
  const d = enc.decryptor({ workspace }, got.meta.size, true);
  try {
    for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) await d.push(next.value);
  } catch (e) {
    await chunks.return?.(); // a key or a tag that does not fit ends the transfer too
    throw e;
  }
  const decrypted = await d.end();
  // A plain state (an `unencrypted` fallback) has no tag: its bytes are proven by their MD5.
  if (!decrypted.encrypted && expected !== undefined && md5Hex(decrypted.state) !== expected) return undefined;
  return { body: decrypted.state, etag: got.meta.etag, md5: expected, decrypted };
}

/** Options of `ObjectStoreBackend.rekey`: `principal` as a write's. */
export interface RekeyOptions extends UnderLockOptions, Pick<WriteOptions, "principal"> {}

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
  const next = withSerial(d.state, (n) => n + 1, what, { workspace });
  const result = await write(next.body, found.etag);
  return { workspace, rekeyed: true, from: d.method, to, serial: next.serial, md5: result.md5 };
}
