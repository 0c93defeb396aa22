/** Scratch buffers reused from one read to the next, a few idle ones kept per size: each dropped one brought a full collection closer. */
const KEEP = 2;
const idle = new Map<number, Buffer[]>();

/** `size` bytes, the caller's until it gives them back (their content is whatever was there). */
export function takeScratch(size: number): Buffer {
  return idle.get(size)?.pop() ?? Buffer.allocUnsafeSlow(size);
}

/** Give back a buffer {@link takeScratch} gave, whole: nothing may read or write it afterwards. */
export function giveScratch(b: Buffer): void {
  const list = idle.get(b.length) ?? [];
  if (list.length >= KEEP || b.byteOffset !== 0 || b.buffer.byteLength !== b.length) return;
  list.push(b);
  idle.set(b.length, list);
}
