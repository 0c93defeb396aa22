/**
 * A streamed get read whole (docs/design.md §2): one buffer of the object's size, shown to its
 * watchers as it fills and hashed as the bytes arrive, off the main thread when large.
 */
import { ObjstateError } from "../errors.js";
import { hasherFor } from "../util/md5.js";
import type { StreamedGet } from "./types.js";

export interface ReadWholeOptions {
  /** Hash the bytes as they arrive. */
  readonly hash?: boolean | undefined;
  /** Sees the buffer being filled and how many bytes of it arrived. */
  readonly onData?: ((body: Buffer, filled: number) => void) | undefined;
  /** A second watcher of the same kind (the fast lane's streamed read). */
  readonly hooks?: { data(body: Buffer, filled: number): void } | undefined;
}

/** The whole body of `got` (of `what`, for messages) and, when asked, its hex MD5. */
export async function readWhole(
  got: Pick<StreamedGet, "body"> & { readonly meta: { readonly size: number } },
  what: string,
  options: ReadWholeOptions = {},
): Promise<{ body: Buffer; hashed: string | undefined }> {
  const { size } = got.meta;
  const { onData, hooks } = options;
  const hash = options.hash === true ? hasherFor(size) : undefined;
  let body: Buffer | undefined;
  let filled = 0;
  try {
    for await (const chunk of got.body) {
      if (filled + chunk.length > size) throw new ObjstateError("STORE_ERROR", `the object store sent more than the ${size} bytes of ${what}`);
      // A body that comes whole is kept as it is; others fill one buffer.
      if (body === undefined && chunk.length === size) body = Buffer.from(chunk.buffer, chunk.byteOffset, size);
      else {
        body ??= Buffer.allocUnsafe(size);
        body.set(chunk, filled);
      }
      filled += chunk.length;
      onData?.(body, filled);
      hooks?.data(body, filled);
      await hash?.write(chunk);
    }
  } catch (e) {
    await Promise.resolve(hash?.digest()).catch(() => undefined); // ends the worker's job
    throw e;
  }
  if (filled !== size) throw new ObjstateError("STORE_ERROR", `the object store sent ${filled} of the ${size} bytes of ${what}`);
  return { body: body ?? Buffer.alloc(0), hashed: await hash?.digest() };
}
