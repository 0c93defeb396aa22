/**
 * File-system primitives of the embedded store and lock table: no symbolic link below the
 * endpoint directory is followed (`lstat`, `O_NOFOLLOW`; Node has no `openat`, so only a link
 * swapped in between a check and a call escapes), everything is created owner-only whatever
 * the umask, and errno failures become typed errors naming the path. The metadata primitives
 * are synchronous: on a local disk an `lstat` takes less than a trip through libuv's pool.
 */
import { randomUUID } from "node:crypto";
import { constants as C, closeSync, fstatSync, lstatSync, openSync, readFileSync } from "node:fs";
import type { BigIntStats } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { ObjstateError, type ErrorCode } from "../errors.js";

/** Owner-only: locks, digests and states may hold secrets. */
export const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** The errno code of a Node file-system error. */
export function errno(e: unknown): string | undefined {
  return typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined;
}

/** A symbolic link (or another non-regular entry) where objstate expects its own file or directory. */
function unsafePath(at: string, what: string): ObjstateError {
  return new ObjstateError("UNSAFE_PATH", `refusing ${at}: it is ${what}, and objstate never follows links or opens special files inside a store; remove it`, {
    details: { path: at },
  });
}

/**
 * A typed error for a failed file-system call: full disk, read-only file system and permission
 * get their own codes; anything else `fallback`. `what` e.g. `cannot write x in file:/b`.
 */
export function fsFailure(e: unknown, what: string, fallback: ErrorCode, at?: string): ObjstateError {
  if (e instanceof ObjstateError) return e;
  const code = errno(e);
  const p = typeof e === "object" && e !== null && "path" in e ? e.path : undefined;
  const where = at ?? (typeof p === "string" ? p : "?");
  if (code === "ELOOP") return unsafePath(where, "a symbolic link");
  const known = code === undefined ? undefined : FS_ERRORS[code];
  const message = known === undefined ? `${what}${code === undefined ? "" : ` (${code} at ${where})`}` : `${what}: ${known[1]} at ${where}; ${known[2]}`;
  return new ObjstateError(known?.[0] ?? fallback, message, { details: { path: where, errno: code }, cause: e });
}

const PERMISSION = ["STORE_PERMISSION", "permission denied", "run as the directory's owner or give this user write access to it"] as const;
/** errno: the code, what it is and what to do. */
const FS_ERRORS: Readonly<Record<string, readonly [ErrorCode, string, string] | undefined>> = {
  ENOSPC: ["STORE_NO_SPACE", "no space left on device", "free space there or move the store"],
  EDQUOT: ["STORE_NO_SPACE", "disk quota exceeded", "free space there or raise the quota"],
  EROFS: ["STORE_READ_ONLY", "read-only file system", "mount it read-write or point the endpoint at a writable directory"],
  EACCES: PERMISSION,
  EPERM: PERMISSION,
};

/** Is `dir` one of our directories? false when absent; `UNSAFE_PATH` for a link or a non-directory. */
export async function checkDir(dir: string): Promise<boolean> {
  return ownEntry(dir, true) !== null;
}

/** Create `dir` owner-only (its parent must exist), or accept a real directory; true when created here. */
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
  return ownEntry(file, false);
}

/** The lstat of our directory (`dir`) or regular file at `at`: null when absent, `UNSAFE_PATH` when a link or another kind. */
function ownEntry(at: string, dir: boolean): BigIntStats | null {
  let st: BigIntStats;
  try {
    st = lstatSync(at, { bigint: true });
  } catch (e) {
    if (errno(e) === "ENOENT") return null;
    throw e;
  }
  if (st.isSymbolicLink()) throw unsafePath(at, "a symbolic link");
  if (dir ? !st.isDirectory() : !st.isFile()) throw unsafePath(at, dir ? "not a directory" : "not a regular file");
  return st;
}

/** Open a regular file to read, no link followed (`O_NONBLOCK`: a planted FIFO cannot hang it); null when absent. */
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

/** Create `file` exclusively (no link followed), owner-only, write `body` (chunks as they come) and fsync; the stat of the result. */
export async function createFile(file: string, body: Buffer | string | AsyncIterable<Uint8Array>): Promise<BigIntStats> {
  const handle = await fs.open(file, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, FILE_MODE);
  try {
    await handle.chmod(FILE_MODE);
    await fs.writeFile(handle, body);
    await handle.sync();
    return await handle.stat({ bigint: true });
  } finally {
    await handle.close();
  }
}

/**
 * Put `content` at `file` whole: a fsynced temp file beside it (named `temp`, default `.tmp-<uuid>`)
 * renamed over it, or with `link` linked only if `file` is absent (false when it exists).
 */
export async function writeWhole(file: string, content: Buffer | string, options: { link?: boolean; temp?: string } = {}): Promise<boolean> {
  const dir = path.dirname(file);
  const temp = path.join(dir, options.temp ?? `.tmp-${randomUUID()}`);
  try {
    await createFile(temp, content);
    await (options.link === true ? fs.link(temp, file) : fs.rename(temp, file));
    await fsyncDir(dir);
    return true;
  } catch (e) {
    if (options.link === true && errno(e) === "EEXIST") return false;
    throw e;
  } finally {
    await removeFile(temp).catch(() => undefined);
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
