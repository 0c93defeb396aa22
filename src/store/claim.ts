/**
 * Per-key mutual exclusion between processes on one machine, for the embedded store and
 * lock table: conditional writes need "check, then replace" to be one step.
 *
 * A claim is an empty file `.claim-<host>-<pid>-<uuid>` in a directory that belongs to
 * one key. A caller creates its own claim file, then lists the directory: when no other
 * live claim is there, it holds the key; otherwise it removes its file, backs off for a
 * random moment and tries again. Two callers can never both hold: each creates before it
 * lists, so of two overlapping callers the later lister always sees the earlier one's
 * file. Only names are ever removed that were judged dead, and every name is used once
 * (a fresh one per attempt), so breaking a dead claim can never remove a live one
 * (unlike breaking a shared lock name, which races with its next owner).
 *
 * A claim is dead when its process is gone (same host, pid not running) or it is older
 * than {@link CLAIM_STALE_MS}; a holder only keeps it for a rename and an fsync, so a
 * live one is never that old unless its process is stopped.
 */
import { createHash, randomUUID } from "node:crypto";
import { constants as C } from "node:fs";
import * as fs from "node:fs/promises";
import { hostname } from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ObjstateError } from "../errors.js";
import { errno, FILE_MODE, removeFile } from "./local-fs.js";

export const CLAIM_PREFIX = ".claim-";
/** Older claims belong to a writer that died or hung; they no longer exclude anyone. */
export const CLAIM_STALE_MS = 30_000;
/** Give up waiting after this long: longer than a dead claim takes to go stale. */
const WAIT_MS = 45_000;
const NAME = /^\.claim-([0-9a-f]{12})-(\d+)-[0-9a-f-]{36}$/;

const HOST_TAG = createHash("sha256").update(hostname()).digest("hex").slice(0, 12);

/** A held claim; release it in a `finally`. */
export interface Claim {
  release(): Promise<void>;
}

export interface ClaimOptions {
  /** Make sure the directory exists (called again when someone removed it meanwhile). */
  readonly prepare: () => Promise<void>;
  /** For messages: what the claim protects, e.g. `object tool.tfstate in file:/x/b`. */
  readonly what: string;
  /** Override of {@link CLAIM_STALE_MS} (tests). */
  readonly staleMs?: number | undefined;
  /** Override of the wait limit (tests). */
  readonly waitMs?: number | undefined;
}

/** Take the claim on `dir`; waits while another live process holds it. */
export async function acquireClaim(dir: string, options: ClaimOptions): Promise<Claim> {
  const staleMs = options.staleMs ?? CLAIM_STALE_MS;
  const deadline = Date.now() + (options.waitMs ?? WAIT_MS);
  for (let attempt = 0; ; attempt++) {
    // A new name for every attempt: another process may have judged this attempt's name
    // dead from a listing made while it was briefly absent (between our removal and our
    // next create) and remove it late; a name used twice would lose a live claim that way.
    const mine = `${CLAIM_PREFIX}${HOST_TAG}-${process.pid}-${randomUUID()}`;
    const file = path.join(dir, mine);
    await options.prepare();
    try {
      await (await fs.open(file, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, FILE_MODE)).close();
    } catch (e) {
      // The directory went away under us: prepare it again (a prepare that cannot is a bug).
      if (errno(e) === "ENOENT" && Date.now() <= deadline) continue;
      throw e;
    }
    const holder = await liveOther(dir, mine, staleMs);
    if (holder === undefined) return { release: () => removeFile(file) };
    await removeFile(file);
    if (Date.now() > deadline) {
      throw new ObjstateError(
        "STORE_BUSY",
        `${options.what} is held by another writer (claim ${path.join(dir, holder)}); if no objstate process is running, delete that file`,
        { details: { path: path.join(dir, holder) } },
      );
    }
    await sleep(Math.random() * Math.min(50, 2 ** attempt));
  }
}

/** The name of another live claim in `dir`, removing dead ones on the way; undefined when none. */
async function liveOther(dir: string, mine: string, staleMs: number): Promise<string | undefined> {
  const names = await fs.readdir(dir);
  let live: string | undefined;
  for (const name of names) {
    if (name === mine || !name.startsWith(CLAIM_PREFIX)) continue;
    if (await isDead(path.join(dir, name), name, staleMs)) await removeFile(path.join(dir, name));
    else live ??= name;
  }
  return live;
}

/** Is the claim `name` dead (see the module comment)? A claim gone meanwhile counts as dead. */
export async function isDead(file: string, name: string, staleMs: number = CLAIM_STALE_MS): Promise<boolean> {
  const m = NAME.exec(name);
  if (m !== null && m[1] === HOST_TAG && Number(m[2]) !== process.pid && !processRuns(Number(m[2]))) return true;
  try {
    const st = await fs.lstat(file);
    return Date.now() - st.mtimeMs > staleMs;
  } catch (e) {
    if (errno(e) === "ENOENT") return true;
    throw e;
  }
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errno(e) === "EPERM"; // exists, but belongs to another user
  }
}
