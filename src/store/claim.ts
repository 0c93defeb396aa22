/**
 * Per-key mutual exclusion between processes (embedded store and lock table; decision 011): a
 * claim is an empty file `.claim-<host>-<boot>-<pid>-<start>-<uuid>` in the key's directory. A
 * caller creates its own, then lists the directory: with no other live claim there it holds the
 * key, else it removes its file, backs off and tries again under a fresh name. A claim is never
 * broken for its age (its holder may be stopped between check and commit), only when its process
 * provably is dead: same host and pid namespace, and another boot, or the pid gone, reused or a
 * zombie. Waiters give up with `STORE_BUSY` naming the file. On a full disk a `.spare-*` file is
 * renamed into the claim and back.
 */
import { createHash, randomUUID } from "node:crypto";
import { constants as C, readFileSync, readlinkSync } from "node:fs";
import * as fs from "node:fs/promises";
import { hostname } from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ObjstateError } from "../errors.js";
import { createFile, errno, FILE_MODE, removeFile } from "../io/local-fs.js";

export const CLAIM_PREFIX = ".claim-";
export const SPARE_PREFIX = ".spare-";
/** Give up waiting after this long (the fault tests' override is read once at load). */
const WAIT_MS = Number(process.env["OBJSTATE_TEST_CLAIM_WAIT_MS"] ?? "") || 45_000;
const NAME = /^\.claim-([0-9a-f]{12})-([0-9a-f]{8})-(\d+)-(\d+)-[0-9a-f-]{36}$/;

const tag = (s: string): string => createHash("sha256").update(s).digest("hex").slice(0, 12);
/** Processes in another pid namespace (a container with the same host name) count as another host. */
const HOST_TAG = tag(`${hostname()}\0${readOr(() => readlinkSync("/proc/self/ns/pid"), "")}`);
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

interface ClaimOptions {
  /** Make sure the directory exists (called again when someone removed it meanwhile). */
  readonly prepare: () => Promise<unknown>;
  /** For messages, e.g. `object tool.tfstate in file:/x/b`. */
  readonly what: string;
  readonly waitMs?: number | undefined;
}

/** Take the claim on `dir`; waits while another live process holds it. */
export async function acquireClaim(dir: string, options: ClaimOptions): Promise<Claim> {
  const deadline = Date.now() + (options.waitMs ?? WAIT_MS);
  for (let attempt = 0; ; attempt++) {
    // A new name per attempt: another process may remove a name it judged dead late.
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
    // No room and every spare in use: wait for its holder; with no holder, the full disk is the answer.
    if (placed.kind === "none" && holder === undefined) throw placed.error;
    if (placed.kind === "spare") await giveBack(dir, file);
    else if (placed.kind === "created") await removeFile(file);
    if (Date.now() > deadline) throw busy(options.what, dir, holder as string);
    await sleep(Math.random() * Math.min(50, 2 ** attempt));
  }
}

/** Put an empty spare into claim directory `dir`. */
export async function addSpare(dir: string): Promise<void> {
  await createFile(path.join(dir, `${SPARE_PREFIX}${randomUUID()}`), "");
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

/** Is the claim file `name` provably dead? Never for another host's or a name this version cannot read. */
export function claimIsDead(name: string): boolean {
  const m = NAME.exec(name);
  if (m === null) return false;
  const [, host, boot, pid, start] = m as unknown as [string, string, string, string, string];
  if (host !== HOST_TAG) return false;
  if (boot !== BOOT_TAG) return true;
  return !processRuns(Number(pid), start === "0" || START === "0" ? undefined : start);
}

function busy(what: string, dir: string, holder: string): ObjstateError {
  const file = path.join(dir, holder);
  const m = NAME.exec(holder);
  const pid = m === null ? undefined : Number(m[3]);
  const here = m?.[1] === HOST_TAG;
  const who = pid === undefined ? "of an unknown process" : here ? `of process ${pid} on this host` : `of process ${pid} on another host`;
  const why = `${what} is held by another writer (claim ${file}, ${who}); objstate never breaks the claim of a process that may still run: if no objstate process is running there, delete that file`;
  return new ObjstateError("STORE_BUSY", why, { details: { path: file, pid, host: here ? "this" : "other" } });
}

/** Does `pid` run (and is it the one started at `start`)? Without `/proc`, `kill(pid, 0)` decides. */
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

/** State and start time (field 22) of `pid` from `/proc/<pid>/stat`; undefined when unreadable. */
function procStat(pid: number): { state: string; start: string } | undefined {
  const text = readOr(() => readFileSync(`/proc/${pid}/stat`, "utf8"), "");
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
