/**
 * The one way objstate reads a file a person named (config, props, state, credentials): a FIFO,
 * a device or an oversized file is refused before a byte is read, instead of hanging on a pipe
 * or filling memory from /dev/zero. A path is checked with stat, opened non-blocking (a FIFO
 * swapped in cannot block the open) and checked again on the descriptor.
 */
import { nodeFs } from "../util/builtins.js";

/** A file that could not be read: `reason` says why in words (e.g. `is a FIFO (named pipe), not a regular file`). */
export class ReadFileError extends Error {
  constructor(
    readonly file: string,
    readonly kind: "missing" | "directory" | "not-regular" | "too-large" | "unreadable",
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot read ${file}: ${reason}`, options);
    this.name = "ReadFileError";
  }
}

/** Limits are whole MiB or GiB, else bytes. */
function tooLarge(file: string, size: number, limit: number): ReadFileError {
  const mib = 1024 * 1024;
  const max = limit % (1024 * mib) === 0 ? `${limit / (1024 * mib)} GiB` : limit % mib === 0 ? `${limit / mib} MiB` : `${limit} bytes`;
  return new ReadFileError(file, "too-large", `is larger than the limit of ${max}${size > limit ? ` (${size} bytes)` : ""}`);
}

function notRegular(file: string, what: string): ReadFileError {
  return new ReadFileError(file, "not-regular", `is ${what}, not a regular file`);
}

function checkStats(file: string, st: import("node:fs").Stats, limit: number): void {
  if (st.isDirectory()) throw new ReadFileError(file, "directory", "is a directory");
  if (st.isFIFO()) throw notRegular(file, "a FIFO (named pipe)");
  if (st.isCharacterDevice()) throw notRegular(file, "a character device");
  if (st.isBlockDevice()) throw notRegular(file, "a block device");
  if (st.isSocket()) throw notRegular(file, "a socket");
  if (!st.isFile()) throw notRegular(file, "not a regular file");
  if (st.size > limit) throw tooLarge(file, st.size, limit);
}

function failed(file: string, e: unknown): ReadFileError {
  const code = (e as NodeJS.ErrnoException).code ?? "error";
  if (code === "ENOENT" || code === "ENOTDIR") return new ReadFileError(file, "missing", "no such file", { cause: e });
  if (code === "EISDIR") return new ReadFileError(file, "directory", "is a directory", { cause: e });
  const why = code === "EACCES" || code === "EPERM" ? "permission denied" : `cannot be read (${code})`;
  return new ReadFileError(file, "unreadable", why, { cause: e });
}

/** Read from `fd` until end of file, refusing more than `limit` bytes. */
function readAll(file: string, fd: number, limit: number, sizeHint: number): Buffer {
  const fs = nodeFs();
  const chunks: Buffer[] = [];
  let total = 0;
  // One read of the expected size, plus one byte to see whether the file grew past the limit.
  let chunk = Buffer.allocUnsafe(Math.min(limit, Math.max(sizeHint, 64 * 1024)) + 1);
  for (;;) {
    let n: number;
    try {
      n = fs.readSync(fd, chunk, 0, chunk.length, null);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // Standard input in non-blocking mode (set so by a parent): wait briefly.
      if (code === "EAGAIN") {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
        continue;
      }
      if (code === "EOF") break;
      throw failed(file, e);
    }
    if (n === 0) break;
    total += n;
    if (total > limit) throw tooLarge(file, total, limit);
    chunks.push(chunk.subarray(0, n));
    chunk = Buffer.allocUnsafe(Math.min(limit - total, 1024 * 1024) + 1);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total);
}

/** A whole regular file (a link to one is fine) of at most `limit` bytes and its mode for permission warnings (`-`: standard input). @throws ReadFileError */
export function readBoundedFile(file: string, limit: number): { readonly bytes: Buffer; readonly mode: number | undefined } {
  if (file === "-") return { bytes: readAll("standard input", 0, limit, 0), mode: undefined };
  const opened = openBoundedFile(file, limit);
  try {
    return { bytes: readAll(file, opened.fd, limit, opened.size), mode: opened.mode };
  } finally {
    nodeFs().closeSync(opened.fd);
  }
}

/** Open a regular file of at most `limit` bytes for positional reads (`-` is refused); close it with `closeSync(fd)`. @throws ReadFileError */
export function openBoundedFile(file: string, limit: number): { readonly fd: number; readonly size: number; readonly mode: number } {
  const fs = nodeFs();
  if (file === "-") throw notRegular("standard input", "standard input");
  let st: import("node:fs").Stats;
  try {
    st = fs.statSync(file);
  } catch (e) {
    throw failed(file, e);
  }
  checkStats(file, st, limit);
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (e) {
    throw failed(file, e);
  }
  try {
    const fst = fs.fstatSync(fd);
    checkStats(file, fst, limit);
    return { fd, size: fst.size, mode: fst.mode };
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/** Limits for each kind of file objstate reads. */
export const FILE_LIMITS = {
  /** A state on standard input: it cannot be read twice, so it is held in memory, and bounded. */
  state: 500 * 1024 * 1024,
  /** A state file, streamed: the most one S3 PutObject stores (a state is one conditional request). */
  stateFile: 5 * 1024 * 1024 * 1024,
  /** `--config` and `synth FILE`. */
  config: 16 * 1024 * 1024,
  credentials: 1024 * 1024,
} as const;
