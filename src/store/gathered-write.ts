/**
 * Writing a {@link ByteSource} whose chunks never change once yielded (`stable`, a request
 * body held as the socket's reads) to a file: the chunks that arrive while one write is under
 * way go out together in the next `writev`: a large body arrives as many small reads, and a
 * write per read was work for the server's main thread and thread pool each time (docs/decisions/082).
 */
import { readThrough } from "./byte-source.js";
import type { ByteSource } from "./types.js";

/** Bytes queued before the reader waits for the write under way (backpressure). */
export const GATHER_MAX = 4 * 1024 * 1024;

/** What {@link writeGathered} needs of a file: `FileHandle.writev` at the file's offset. */
export interface GatherTarget {
  writev(buffers: readonly Uint8Array[]): Promise<{ bytesWritten: number }>;
}

/**
 * Read `source` once, calling `each` on every chunk in order as it comes, and write the
 * chunks to `file` in order, each batch in one `writev`; `onWritten` gets the total written
 * after each batch. Resolves once every byte is written; rejects with the first failure of
 * the read or a write, and in either case only once no write is under way (the caller may
 * close the file at once).
 */
export async function writeGathered(
  file: GatherTarget,
  source: ByteSource,
  what: string,
  each: (chunk: Uint8Array) => void,
  onWritten: (total: number) => void,
): Promise<void> {
  let queued: Uint8Array[] = [];
  let queuedBytes = 0;
  let total = 0;
  let writing: Promise<void> | undefined;
  let failure: { readonly error: unknown } | undefined;
  const drain = async (): Promise<void> => {
    while (queued.length > 0) {
      const batch = queued;
      const bytes = queuedBytes;
      queued = [];
      queuedBytes = 0;
      await writeAll(file, batch, bytes);
      total += bytes;
      onWritten(total);
    }
  };
  const start = (): void => {
    writing ??= drain().then(
      () => void (writing = undefined),
      (e: unknown) => {
        failure ??= { error: e };
        writing = undefined;
      },
    );
  };
  try {
    await readThrough(
      source,
      async (chunk) => {
        if (failure !== undefined) throw failure.error;
        each(chunk);
        queued.push(chunk);
        queuedBytes += chunk.length;
        start();
        if (queuedBytes >= GATHER_MAX) await writing;
      },
      what,
    );
  } finally {
    // Never hand the file back with a write still under way.
    while (writing !== undefined) await writing;
  }
  // Chunks queued as the last write ended (it had left its loop) go now.
  while (failure === undefined && queued.length > 0) {
    start();
    await writing;
  }
  if (failure !== undefined) throw failure.error;
}

/** One batch, all of it: a file write may take fewer bytes than asked. */
async function writeAll(file: GatherTarget, batch: Uint8Array[], bytes: number): Promise<void> {
  let left = batch;
  for (let done = 0; done < bytes;) {
    const n = (await file.writev(left)).bytesWritten;
    // A regular file takes at least one byte or fails (ENOSPC): never spin on nothing.
    if (n <= 0) throw Object.assign(new Error("the file took none of the bytes written to it"), { code: "EIO" });
    done += n;
    if (done < bytes) left = dropFront(left, n);
  }
}

function dropFront(buffers: Uint8Array[], n: number): Uint8Array[] {
  let skip = n;
  let i = 0;
  while (i < buffers.length && skip >= (buffers[i] as Uint8Array).length) skip -= (buffers[i++] as Uint8Array).length;
  const rest = buffers.slice(i);
  if (skip > 0 && rest.length > 0) rest[0] = (rest[0] as Uint8Array).subarray(skip);
  return rest;
}
