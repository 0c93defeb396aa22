/**
 * Shared memory for the bodies of large reads whose outputs a worker scans, reused: a
 * SharedArrayBuffer does not count towards the memory that starts a garbage collection, so one
 * per read grew a server by a state per request. One idle buffer is kept, the largest given back.
 */
let idle: SharedArrayBuffer | undefined;

/** `length` bytes of shared memory, the caller's until it gives them back (their content is whatever was there). */
export function takeShared(length: number): Buffer {
  const spare = idle;
  if (spare !== undefined && spare.byteLength >= length) {
    idle = undefined;
    return Buffer.from(spare, 0, length);
  }
  return Buffer.from(new SharedArrayBuffer(length));
}

/** Give back bytes {@link takeShared} gave (nothing may use them afterwards); an ordinary buffer is left alone. */
export function giveShared(bytes: Uint8Array): void {
  const memory = bytes.buffer;
  if (!(memory instanceof SharedArrayBuffer)) return;
  if (idle === undefined || memory.byteLength > idle.byteLength) idle = memory;
}
