/**
 * File-system primitives shared by the embedded store and the embedded lock table: they
 * never follow a symbolic link inside a store directory, create everything owner-only
 * whatever the umask, and turn errno failures into typed errors that name the path.
 *
 * Only the endpoint directory itself may be (or sit below) a symbolic link: that is the
 * operator's choice. Everything objstate creates below it is checked with `lstat` or
 * opened with `O_NOFOLLOW`. A link swapped in between a check and the next call is not
 * caught (Node has no `openat`); a link planted beforehand always is.
 *
 * The metadata primitives ({@link checkDir}, {@link lstatFile}, {@link readSmall}) make
 * their system calls synchronously: on a local disk one `lstat` or a read of a small file
 * takes less than dispatching it to libuv's thread pool and back, and listings make
 * thousands of them. Whole objects are still read and written asynchronously.
 */
import { constants as C, closeSync, fstatSync, lstatSync, openSync, readFileSync } from "node:fs";
import type { BigIntStats } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { ObjstateError, type ErrorCode } from "../errors.js";

/** Owner-only, like state files: locks, digests and states may hold secrets. */
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

/** The errno code of a Node file-system error. */
export function errno(e: unknown): string | undefined {
  return typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined;
}

function errPath(e: unknown): string | undefined {
  return typeof e === "object" && e !== null && "path" in e && typeof e.path === "string" ? e.path : undefined;
}

/** The error for a symbolic link (or other non-regular entry) where objstate expects its own file or directory. */
export function unsafePath(at: string, what: string): ObjstateError {
  return new ObjstateError("UNSAFE_PATH", `refusing ${at}: it is ${what}, and objstate never follows links or opens special files inside a store; remove it`, {
    details: { path: at },
  });
}

/**
 * A typed error for a failed file-system call. Full disk, read-only file system and
 * permission problems get their own codes (`STORE_NO_SPACE`, `STORE_READ_ONLY`,
 * `STORE_PERMISSION`) and name the path; anything else gets `fallback`.
 * @param what what was being done, e.g. `cannot write tool.tfstate in file:/x/b`
 * @param at the path to name when the error carries none (or a better one)
 */
export function fsFailure(e: unknown, what: string, fallback: ErrorCode, at?: string): ObjstateError {
  if (e instanceof ObjstateError) return e;
  const code = errno(e);
  const where = at ?? errPath(e) ?? "?";
  const details = { path: where, errno: code };
  switch (code) {
    case "ENOSPC":
      return new ObjstateError("STORE_NO_SPACE", `${what}: no space left on device at ${where}; free space there or move the store`, { details, cause: e });
    case "EDQUOT":
      return new ObjstateError("STORE_NO_SPACE", `${what}: disk quota exceeded at ${where}; free space there or raise the quota`, { details, cause: e });
    case "EROFS":
      return new ObjstateError(
        "STORE_READ_ONLY",
        `${what}: read-only file system at ${where}; mount it read-write or point the endpoint at a writable directory`,
        { details, cause: e },
      );
    case "EACCES":
    case "EPERM":
      return new ObjstateError(
        "STORE_PERMISSION",
        `${what}: permission denied at ${where}; run as the directory's owner or give this user write access to it`,
        { details, cause: e },
      );
    case "ELOOP":
      return unsafePath(where, "a symbolic link");
    default:
      return new ObjstateError(fallback, `${what}${code === undefined ? "" : ` (${code} at ${where})`}`, { details, cause: e });
  }
}

/**
 * Is `dir` one of our directories? false when absent; throws `UNSAFE_PATH` when it is a
 * symbolic link or not a directory.
 */
export async function checkDir(dir: string): Promise<boolean> {
  let st;
  try {
    st = lstatSync(dir);
  } catch (e) {
    if (errno(e) === "ENOENT") return false;
    throw e;
  }
  if (st.isSymbolicLink()) throw unsafePath(dir, "a symbolic link");
  if (!st.isDirectory()) throw unsafePath(dir, "not a directory");
  return true;
}

/**
 * Create `dir` (its parent must exist) owner-only, or accept it when it already is a real
 * directory. True when this call created it.
 */
export async function makeDir(dir: string): Promise<boolean> {
  try {
    await fs.mkdir(dir, { mode: DIR_MODE });
  } catch (e) {
    if (errno(e) !== "EEXIST") throw e;
    await checkDir(dir);
    return false;
  }
  // mkdir's mode passes through the umask, which may take the owner's own bits away.
  await fs.chmod(dir, DIR_MODE);
  return true;
}

/** Create the operator's endpoint directory (and parents) owner-only when absent; links there are allowed. */
export async function makeRootDir(dir: string): Promise<void> {
  const first = await fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
  if (first === undefined) return;
  // Undo the umask on each directory made here (the first one made and those below it).
  for (let at = dir; ; at = path.dirname(at)) {
    await fs.chmod(at, DIR_MODE);
    if (at === first || path.dirname(at) === at) return;
  }
}

/** lstat that refuses links: null when absent, `UNSAFE_PATH` when a link or not a regular file. */
export async function lstatFile(file: string): Promise<BigIntStats | null> {
  let st: BigIntStats;
  try {
    st = lstatSync(file, { bigint: true });
  } catch (e) {
    if (errno(e) === "ENOENT") return null;
    throw e;
  }
  if (st.isSymbolicLink()) throw unsafePath(file, "a symbolic link");
  if (!st.isFile()) throw unsafePath(file, "not a regular file");
  return st;
}

/**
 * Open a regular file for reading without following a link; null when absent. Returns the
 * file descriptor (the caller closes it) and its stat. `O_NONBLOCK` keeps a planted FIFO
 * from hanging the open; it is refused right after.
 */
export function openRead(file: string): { readonly fd: number; readonly stat: BigIntStats } | null {
  let fd: number;
  try {
    fd = openSync(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (e) {
    if (errno(e) === "ENOENT") return null;
    if (errno(e) === "ELOOP") throw unsafePath(file, "a symbolic link");
    throw e;
  }
  try {
    const stat = fstatSync(fd, { bigint: true });
    if (!stat.isFile()) throw unsafePath(file, "not a regular file");
    return { fd, stat };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** Read a whole small file (metadata, a lock item) without following a link; null when absent. */
export async function readSmall(file: string): Promise<string | null> {
  const opened = openRead(file);
  if (opened === null) return null;
  try {
    return readFileSync(opened.fd, "utf8");
  } finally {
    closeSync(opened.fd);
  }
}

/**
 * Create `file` exclusively (never through a link), owner-only whatever the umask, write
 * `body` and fsync; returns the stat of the durable result.
 */
export async function createFile(file: string, body: Buffer | string): Promise<BigIntStats> {
  const handle = await fs.open(file, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, FILE_MODE);
  try {
    await handle.chmod(FILE_MODE);
    await handle.writeFile(body);
    await handle.sync();
    return await handle.stat({ bigint: true });
  } finally {
    await handle.close();
  }
}

/** Make a rename, link or unlink in `dir` durable. Platforms that cannot fsync a directory only lose durability. */
export async function fsyncDir(dir: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(dir, C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW);
  } catch (e) {
    if (errno(e) === "ELOOP" || errno(e) === "ENOTDIR") throw unsafePath(dir, "not a real directory");
    throw e;
  }
  try {
    await handle.sync();
  } catch (e) {
    // EINVAL/EISDIR/EPERM where directory fsync is unsupported; real I/O errors still surface.
    if (errno(e) === "EIO" || errno(e) === "ENOSPC") throw e;
  } finally {
    await handle.close();
  }
}

/** Remove a file; absent is fine. */
export async function removeFile(file: string): Promise<void> {
  try {
    await fs.unlink(file);
  } catch (e) {
    if (errno(e) !== "ENOENT") throw e;
  }
}
