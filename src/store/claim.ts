/**
 * Per-key mutual exclusion between processes, for the embedded store and lock table:
 * conditional writes need "check, then replace" to be one step.
 *
 * A claim is an empty file `.claim-<host>-<boot>-<pid>-<start>-<uuid>` in a directory that
 * belongs to one key. A caller creates its own claim file, then lists the directory: when no
 * other live claim is there, it holds the key; otherwise it removes its file, backs off for a
 * random moment and tries again. Two callers can never both hold: each creates before it
 * lists, so of two overlapping callers the later lister always sees the earlier one's file.
 * Only names are ever removed that were judged dead, and every name is used once (a fresh one
 * per attempt), so breaking a dead claim can never remove a live one.
 *
 * A claim is never broken because it is old. Its holder may be stopped for any length of
 * time between its check and its commit (SIGSTOP, a frozen VM, a machine swapping); breaking
 * the claim then lets another writer go ahead, and the holder's late commit overwrites that
 * writer's acknowledged write. A claim is dead only when its process provably is:
 * - same host and pid namespace (`<host>`), and the machine has restarted since (`<boot>`);
 * - or its pid no longer runs, runs another program (its start time, `<start>`, differs: the
 *   pid was reused), or is a zombie.
 * A claim of another host (a shared file system) or of a process this host cannot judge is
 * never broken automatically: waiters give up after the wait limit with `STORE_BUSY`, which
 * names the file for the operator to delete when no objstate process is running there.
 * Claims named by older objstate versions (`.claim-<host>-<pid>-<uuid>`) are judged by pid.
 *
 * Full disks: each claim directory keeps one empty `.spare-<uuid>` file, made while there is
 * room. When no new file can be created (no inode left), a caller takes its claim by renaming
 * a spare to its claim name and gives it back by renaming it to a fresh spare name, so a
 * release (an unlink under a claim) needs no new block or inode.
 */
import { createHash, randomUUID } from "node:crypto";
import { constants as C, readFileSync, readlinkSync } from "node:fs";
import * as fs from "node:fs/promises";
import { hostname } from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ObjstateError } from "../errors.js";
import { errno, FILE_MODE, removeFile } from "../io/local-fs.js";

export const CLAIM_PREFIX = ".claim-";
/** An empty file kept in a claim directory, to be renamed into a claim on a full disk. */
export const SPARE_PREFIX = ".spare-";
/**
 * Give up waiting after this long. Test-only override: `OBJSTATE_TEST_CLAIM_WAIT_MS`, read
 * once at load (the fault tests freeze a holder for longer than every claim timeout).
 */
const WAIT_MS = Number(process.env["OBJSTATE_TEST_CLAIM_WAIT_MS"] ?? "") || 45_000;
const NAME = /^\.claim-([0-9a-f]{12})-([0-9a-f]{8})-(\d+)-(\d+)-[0-9a-f-]{36}$/;
const OLD_NAME = /^\.claim-([0-9a-f]{12})-(\d+)-[0-9a-f-]{36}$/;

const tag = (s: string): string => createHash("sha256").update(s).digest("hex").slice(0, 12);
/** Processes in another pid namespace (a container with the same host name) count as another host. */
const HOST_TAG = tag(`${hostname()}\0${readOr(() => readlinkSync("/proc/self/ns/pid"), "")}`);
/** What older objstate versions put in their claim names. */
const OLD_HOST_TAG = tag(hostname());
/** `00000000` where the platform has no boot ID (the pid and start time still decide). */
const BOOT_TAG = readOr(
  () =>
    readFileSync("/proc/sys/kernel/random/boot_id", "utf8")
      .replace(/[^0-9a-f]/g, "")
      .slice(0, 8),
  "",
).padEnd(8, "0");
/** This process's start time in clock ticks since boot; 0 where the platform does not tell. */
const START = procStat(process.pid)?.start ?? "0";

/** A held claim; release it in a `finally`. */
export interface Claim {
  release(): Promise<void>;
}

export interface ClaimOptions {
  /** Make sure the directory exists (called again when someone removed it meanwhile). */
  readonly prepare: () => Promise<void>;
  /** For messages: what the claim protects, e.g. `object tool.tfstate in file:/x/b`. */
  readonly what: string;
  /** How long to wait for a live holder before `STORE_BUSY` (default 45 s). */
  readonly waitMs?: number | undefined;
}

/** Take the claim on `dir`; waits while another live process holds it. */
export async function acquireClaim(dir: string, options: ClaimOptions): Promise<Claim> {
  const deadline = Date.now() + (options.waitMs ?? WAIT_MS);
  for (let attempt = 0; ; attempt++) {
    // A new name for every attempt: another process may have judged this attempt's name
    // dead from a listing made while it was briefly absent (between our removal and our
    // next create) and remove it late; a name used twice would lose a live claim that way.
    const mine = `${CLAIM_PREFIX}${HOST_TAG}-${BOOT_TAG}-${process.pid}-${START}-${randomUUID()}`;
    const file = path.join(dir, mine);
    await options.prepare();
    let placed: Placed;
    try {
      placed = await place(dir, file);
    } catch (e) {
      // The directory went away under us: prepare it again (a prepare that cannot is a bug).
      if (errno(e) === "ENOENT" && Date.now() <= deadline) continue;
      throw e;
    }
    const { holder, spares } = await scan(dir, mine);
    if (placed.kind !== "none" && holder === undefined) {
      if (spares === 0 && placed.kind === "created") await addSpare(dir).catch(() => undefined);
      return { release: placed.kind === "spare" ? () => giveBack(dir, file) : () => removeFile(file) };
    }
    // No room for a claim file and every spare in use: wait for its holder to give it back;
    // with no holder at all, the full disk is the answer.
    if (placed.kind === "none" && holder === undefined) throw placed.error;
    if (placed.kind === "spare") await giveBack(dir, file);
    else if (placed.kind === "created") await removeFile(file);
    if (Date.now() > deadline) throw busy(options.what, dir, holder as string);
    await sleep(Math.random() * Math.min(50, 2 ** attempt));
  }
}

/** Put an empty spare into claim directory `dir` (see the module comment). */
export async function addSpare(dir: string): Promise<void> {
  const handle = await fs.open(path.join(dir, `${SPARE_PREFIX}${randomUUID()}`), C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, FILE_MODE);
  try {
    await handle.chmod(FILE_MODE); // owner-only whatever the umask, like every file of a store
  } finally {
    await handle.close();
  }
}

type Placed = { readonly kind: "created" | "spare" } | { readonly kind: "none"; readonly error: unknown };

/** Create the claim file `file`, or on a full disk rename a spare to it. */
async function place(dir: string, file: string): Promise<Placed> {
  try {
    await (await fs.open(file, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, FILE_MODE)).close();
    return { kind: "created" };
  } catch (e) {
    if (errno(e) !== "ENOSPC" && errno(e) !== "EDQUOT") throw e;
    for (const name of await fs.readdir(dir)) {
      if (!name.startsWith(SPARE_PREFIX)) continue;
      try {
        await fs.rename(path.join(dir, name), file);
        return { kind: "spare" };
      } catch (e2) {
        if (errno(e2) !== "ENOENT") throw e2; // another caller took this one first
      }
    }
    return { kind: "none", error: e };
  }
}

/** Turn a claim taken from a spare back into a spare (under a name never used before). */
async function giveBack(dir: string, file: string): Promise<void> {
  try {
    await fs.rename(file, path.join(dir, `${SPARE_PREFIX}${randomUUID()}`));
  } catch {
    await removeFile(file);
  }
}

/** Another live claim in `dir` (dead ones are removed on the way), and how many spares it holds. */
async function scan(dir: string, mine: string): Promise<{ holder: string | undefined; spares: number }> {
  let holder: string | undefined;
  let spares = 0;
  for (const name of await fs.readdir(dir)) {
    if (name.startsWith(SPARE_PREFIX)) spares++;
    if (name === mine || !name.startsWith(CLAIM_PREFIX)) continue;
    if (claimIsDead(name)) await removeFile(path.join(dir, name));
    else holder ??= name;
  }
  return { holder, spares };
}

/**
 * Is the claim file `name` provably dead (see the module comment)? Never true only because
 * it is old, nor for a claim of another host or a name this version cannot read.
 */
export function claimIsDead(name: string): boolean {
  const m = NAME.exec(name);
  if (m !== null) {
    const [, host, boot, pid, start] = m as unknown as [string, string, string, string, string];
    if (host !== HOST_TAG) return false;
    if (boot !== BOOT_TAG) return true;
    return !processRuns(Number(pid), start === "0" || START === "0" ? undefined : start);
  }
  const old = OLD_NAME.exec(name);
  return old !== null && old[1] === OLD_HOST_TAG && !processRuns(Number(old[2]), undefined);
}

/** Who holds claim `name`, for the `STORE_BUSY` message. */
function holderOf(name: string): { pid: number | undefined; here: boolean } {
  const m = NAME.exec(name);
  if (m !== null) return { pid: Number(m[3]), here: m[1] === HOST_TAG };
  const old = OLD_NAME.exec(name);
  return old === null ? { pid: undefined, here: false } : { pid: Number(old[2]), here: old[1] === OLD_HOST_TAG };
}

function busy(what: string, dir: string, holder: string): ObjstateError {
  const file = path.join(dir, holder);
  const { pid, here } = holderOf(holder);
  const who = pid === undefined ? "of an unknown process" : here ? `of process ${pid} on this host` : `of process ${pid} on another host`;
  return new ObjstateError(
    "STORE_BUSY",
    `${what} is held by another writer (claim ${file}, ${who}); objstate never breaks the claim of a process that may still run: if no objstate process is running there, delete that file`,
    { details: { path: file, pid, host: here ? "this" : "other" } },
  );
}

/**
 * Does `pid` run (and, when `start` is given, is it the process that started then)? A zombie
 * does not run. Without `/proc`, `kill(pid, 0)` decides alone.
 */
function processRuns(pid: number, start: string | undefined): boolean {
  const st = procStat(pid);
  if (st !== undefined) return st.state !== "Z" && st.state !== "X" && (start === undefined || st.start === start);
  try {
    process.kill(pid, 0);
    return true; // exists but hidden from this user's /proc (hidepid), or no /proc here
  } catch (e) {
    return errno(e) === "EPERM"; // exists, but belongs to another user
  }
}

/**
 * State and start time (field 22, clock ticks since boot) of `pid` from `/proc/<pid>/stat`;
 * undefined when that cannot be read (no such process, hidden, or no `/proc` here).
 */
function procStat(pid: number): { state: string; start: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  const start = fields[19];
  return state === undefined || start === undefined || !/^\d+$/.test(start) ? undefined : { state, start };
}

function readOr(read: () => string, fallback: string): string {
  try {
    return read();
  } catch {
    return fallback;
  }
}
