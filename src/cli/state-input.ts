/**
 * The state `state push` writes, checked before anything connects: one streamed pass over
 * the file holds it to the library's rule of what a state is (state/check.ts, without ever
 * making it a string) and hashes it; the upload then reads the file again. Memory stays
 * bounded whatever the size, up to the 5 GiB one S3 PutObject stores. Standard input
 * cannot be read twice, so it is held in memory, with a smaller limit.
 */
import { isObjstateError } from "../errors.js";
import { bufferSource, sourceChanged } from "../store/byte-source.js";
import type { ByteSource } from "../store/types.js";
import { nodeCrypto, nodeFs } from "../util/builtins.js";
import { checkSource, stateToWrite } from "../state/check.js";
import { FILE_LIMITS, openBoundedFile, readBoundedFile, ReadFileError } from "../io/read-file.js";
import { CliError } from "./io.js";

/** Bytes per read of the file: the most of it in memory at once, per pass. */
const CHUNK = 1024 * 1024;

/** A checked state, ready to write. */
export interface StateInput {
  /** The file's name for messages (`standard input` for `-`). */
  readonly name: string;
  readonly size: number;
  /** Hex MD5 of the bytes checked; the store refuses bytes that no longer match it. */
  readonly md5: string;
  /** Standard input's bytes, or a file read again for the upload. */
  readonly body: Buffer | ByteSource;
  /** Release the file. */
  close(): void;
}

/**
 * Open and check the state to push to `workspace` (`-` is standard input): `FILE_UNREADABLE`
 * or `FILE_TOO_LARGE` when it cannot be read, the library's `STATE_INVALID` when it is no
 * state; all exit 2.
 */
export async function openStateInput(file: string, workspace: string, onRead?: (read: number, size: number) => void): Promise<StateInput> {
  if (file === "-") {
    const bytes = readStdin();
    const source = bufferSource(bytes);
    const md5 = await checkInput(source, workspace, onRead);
    return { name: "standard input", size: bytes.length, md5, body: bytes, close: () => undefined };
  }
  let opened: { fd: number; size: number };
  try {
    opened = openBoundedFile(file, FILE_LIMITS.stateFile);
  } catch (e) {
    throw inputError(e, file, "");
  }
  const fd = opened.fd;
  const close = (): void => nodeFs().closeSync(fd);
  try {
    const source = fileSource(fd, opened.size, file);
    const md5 = await checkInput(source, workspace, onRead);
    return { name: file, size: opened.size, md5, body: source, close };
  } catch (e) {
    close();
    throw e;
  }
}

function readStdin(): Buffer {
  try {
    return readBoundedFile("-", FILE_LIMITS.state).bytes;
  } catch (e) {
    throw inputError(
      e,
      "standard input",
      "; standard input cannot be read twice (once to check it, once to send it), so it is held in memory: save the state to a file and push the file",
    );
  }
}

function inputError(e: unknown, file: string, tooLargeAdvice: string): unknown {
  if (!(e instanceof ReadFileError)) return e;
  if (e.problem.kind === "too-large") return new CliError("FILE_TOO_LARGE", `${e.message}${tooLargeAdvice}`, { cause: e });
  return new CliError("FILE_UNREADABLE", e.message, { cause: e });
}

/** One pass: the library's check and the MD5 together (reading stops at the first fault). */
async function checkInput(source: ByteSource, workspace: string, onRead?: (read: number, size: number) => void): Promise<string> {
  const hash = nodeCrypto().createHash("md5");
  let read = 0;
  try {
    await checkSource(source, stateToWrite(workspace), (chunk) => {
      hash.update(chunk);
      read += chunk.length;
      onRead?.(read, source.size);
    });
  } catch (e) {
    throw isObjstateError(e, "INPUT_CHANGED") ? new CliError("INPUT_CHANGED", e.message, { cause: e }) : e;
  }
  return hash.digest("hex");
}

/**
 * The open file as a source: every read starts at byte 0 of the same descriptor (a file
 * renamed over the path meanwhile changes nothing), in fresh {@link CHUNK}-sized buffers
 * (a consumer may hold one while the next is read). A file that shrank is an error; bytes
 * changed in place are caught by the MD5 the store checks.
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
