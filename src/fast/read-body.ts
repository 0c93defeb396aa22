/**
 * The fast lane's read of a body (docs/design.md §2): the bytes of a streamed get in one
 * buffer of their size, shown to a watcher as it fills and hashed as they arrive (off the
 * main thread when large), in shared memory for a reader whose worker reads it in place.
 */
import { ObjstateError } from "../errors.js";
import type { StreamedGet } from "../store/types.js";
import { hasherFor } from "../util/md5.js";
import { takeShared } from "../util/shared-memory.js";
import type { ReadHooks } from "./streamed-read.js";

/** Bodies from this size up go into shared memory when the reader asks (`sharedBody`). */
const SHARED_BODY_MIN = 1024 * 1024;

/** How {@link readBody} reads. */
export interface ReadBodyOptions {
  /** Sees the buffer being filled and how many bytes of it arrived. */
  readonly onData?: ((body: Buffer, filled: number) => void) | undefined;
  /** A large body in shared memory (a worker thread reads it while it fills). */
  readonly sharedBody?: boolean | undefined;
  readonly hooks?: ReadHooks | undefined;
  /** Hash the bytes as they arrive. */
  readonly hash?: boolean | undefined;
}

/** The whole body of `got` (of `path`, for messages) and, when asked, its MD5. */
export async function readBody(got: StreamedGet, path: string, options: ReadBodyOptions): Promise<{ body: Buffer; hashed: string | undefined }> {
  const { size } = got.meta;
  const { hooks } = options;
  const hash = options.hash === true ? hasherFor(size) : undefined;
  const watched = options.onData !== undefined || hooks !== undefined;
  let body: Buffer | undefined;
  let filled = 0;
  try {
    for await (const chunk of got.body) {
      if (filled + chunk.length > size) throw new ObjstateError("STORE_ERROR", `the object store sent more than the ${size} bytes of ${path}`);
      // A body that comes whole (the embedded store's) is kept as it is; others fill one buffer.
      if (body === undefined && chunk.length === size && options.sharedBody !== true) body = Buffer.from(chunk.buffer, chunk.byteOffset, size);
      else {
        body ??= options.sharedBody === true && size >= SHARED_BODY_MIN ? takeShared(size) : Buffer.allocUnsafe(size);
        body.set(chunk, filled);
      }
      filled += chunk.length;
      if (watched) {
        options.onData?.(body, filled);
        hooks?.data(body, filled);
      }
      await hash?.write(chunk);
    }
  } catch (e) {
    await Promise.resolve(hash?.digest()).catch(() => undefined); // ends the worker's job
    throw e;
  }
  if (filled !== size) throw new ObjstateError("STORE_ERROR", `the object store sent ${filled} of the ${size} bytes of ${path}`);
  return { body: body ?? Buffer.alloc(0), hashed: await hash?.digest() };
}
