/**
 * The bytes `state push` sends, as the library's `writeState` takes them: a file read from its
 * open descriptor each time the write reads it (memory stays bounded, up to the 5 GiB one S3
 * PutObject stores), or standard input, which cannot be read twice, held in memory. Whether
 * they are a state is the library's one rule (state/check.ts), checked as the write reads them.
 */
import { sourceChanged } from "../store/byte-source.js";
import type { ByteSource } from "../store/types.js";
import { nodeFs } from "../util/builtins.js";
import { FILE_LIMITS, openBoundedFile, readBoundedFile, ReadFileError } from "../io/read-file.js";
import { CliError } from "./io.js";

/** Bytes per read of the file: the most of it in memory at once, per pass. */
const CHUNK = 1024 * 1024;

export interface StateInput {
  /** The file's name for messages (`standard input` for `-`). */
  readonly name: string;
  readonly size: number;
  readonly body: Buffer | ByteSource;
  close(): void;
}

/** Open the state to push (`-` is standard input): `FILE_UNREADABLE` or `FILE_TOO_LARGE` (exit 2) when it cannot be read. */
export function openStateInput(file: string): StateInput {
  if (file === "-") {
    const advice =
      "; standard input cannot be read twice (once to check it, once to send it), so it is held in memory: save the state to a file and push the file";
    const bytes = bounded(() => readBoundedFile("-", FILE_LIMITS.state).bytes, advice);
    return { name: "standard input", size: bytes.length, body: bytes, close: () => undefined };
  }
  const { fd, size } = bounded(() => openBoundedFile(file, FILE_LIMITS.stateFile), "");
  return { name: file, size, body: fileSource(fd, size, file), close: () => nodeFs().closeSync(fd) };
}

function bounded<T>(read: () => T, tooLargeAdvice: string): T {
  try {
    return read();
  } catch (e) {
    if (!(e instanceof ReadFileError)) throw e;
    if (e.problem.kind === "too-large") throw new CliError("FILE_TOO_LARGE", `${e.message}${tooLargeAdvice}`, { cause: e });
    throw new CliError("FILE_UNREADABLE", e.message, { cause: e });
  }
}

/**
 * The open file as a source: every read starts at byte 0 of the same descriptor (a file
 * renamed over the path meanwhile changes nothing), in fresh {@link CHUNK}-sized buffers (a
 * consumer may hold one while the next is read). A file that shrank is `INPUT_CHANGED`; bytes
 * changed in place fail the MD5 the store checks.
 */
function fileSource(fd: number, size: number, name: string): ByteSource {
  const fs = nodeFs();
  const readAt = (buf: Buffer, off: number, len: number, pos: number): Promise<number> =>
    new Promise((resolve, reject) => fs.read(fd, buf, off, len, pos, (e, n) => (e ? reject(e) : resolve(n))));
  return {
    size,
    async *open() {
      for (let pos = 0; pos < size;) {
        const n = Math.min(CHUNK, size - pos);
        const buf = Buffer.allocUnsafe(n);
        for (let got = 0; got < n;) {
          const r = await readAt(buf, got, n - got, pos + got);
          if (r === 0) throw sourceChanged(name, size, pos + got);
          got += r;
        }
        pos += n;
        yield buf;
      }
    },
  };
}
