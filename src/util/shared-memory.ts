/** Shared memory for a large body that a reader asked to have there (`sharedBody`). */
export function takeShared(length: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(length));
}
