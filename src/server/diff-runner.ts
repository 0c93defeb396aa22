/** Diffs bounded (docs/decisions/007): {@link MAX_CONCURRENT_DIFFS} at once (more: 429), a large one in a worker whose heap is bounded, off the main thread. */
import { once } from "node:events";
import { ObjstateError } from "../errors.js";
import { stringifyDeep } from "../json/exact-json.js";
import type { VersionDiff } from "../backend/types.js";
import { diffStates, type StateDiff } from "../state/diff.js";
import { nodeWorkers } from "../util/builtins.js";
import { versionDiffJson } from "../wire/shapes.js";
import type { DiffJob, DiffReply } from "./diff-worker.js";

/** Largest state a client may send to diff (or --max-state-size, when smaller). */
export const DIFF_MAX_BODY = 64 * 1024 * 1024;
export const MAX_CONCURRENT_DIFFS = 2;
/** Heap of one diff's worker: two 64 MiB states compare in well under 512 MiB. */
const WORKER_HEAP_MB = 1024;
/** Below this (both sides together) a diff runs inline: it takes less than starting a worker. */
const INLINE_MAX = 256 * 1024;
/** What a refused client is told to wait, in seconds (a large diff takes a few). */
const RETRY_AFTER_S = 2;

let running = 0;

export function diffsRunning(): number {
  return running;
}

export function checkDiffRoom(): void {
  if (running >= MAX_CONCURRENT_DIFFS) {
    throw new ObjstateError("TOO_MANY_DIFFS", `this server is computing ${running} diffs, the most it runs at once: try again in ${RETRY_AFTER_S} s`, {
      details: { retryAfter: RETRY_AFTER_S },
    });
  }
}

/** The diff from `from` to `to` as JSON bytes; `TOO_MANY_DIFFS`, `DIFF_TOO_LARGE` (the worker's heap) or `STATE_INVALID`. */
export async function diffJson(from: Buffer | null, to: Buffer | null): Promise<Buffer> {
  if ((from?.length ?? 0) + (to?.length ?? 0) < INLINE_MAX) return Buffer.from(`${stringifyDeep(diffStates(from, to))}\n`);
  checkDiffRoom();
  running += 1;
  try {
    return await inWorker(from, to);
  } finally {
    running -= 1;
  }
}

/** The JSON text each diff of {@link diffInWorker} came as: an answer sends it rather than stringifying again. */
const texts = new WeakMap<StateDiff, Buffer>();

/** The diff of two stored versions (the API's, the console's and its rollback page's), bounded as {@link diffJson}. */
export async function diffInWorker(from: Buffer | null, to: Buffer | null): Promise<StateDiff> {
  const json = await diffJson(from, to);
  const diff = JSON.parse(json.toString("utf8")) as StateDiff;
  texts.set(diff, json);
  return diff;
}

/** `GET …/diff`'s answer, `{"workspace", "from", "to", …the diff}`, splicing in the worker's text when there is one. */
export function versionDiffText(workspace: string, d: VersionDiff): Buffer {
  const head = JSON.stringify({ workspace, from: d.from, to: d.to });
  const json = texts.get(d.diff);
  // The worker's text is `{…}\n` of a diff, which always has members: its `{` gives way to the head's.
  if (json !== undefined) return Buffer.concat([Buffer.from(`${head.slice(0, -1)},`), json.subarray(1)]);
  return Buffer.from(`${stringifyDeep(versionDiffJson(workspace, d))}\n`);
}

async function inWorker(from: Buffer | null, to: Buffer | null): Promise<Buffer> {
  // Copies of their own: a Buffer may be a slice of memory others use, which transferring would take from them.
  const sides = [from, to].map((b) => (b === null ? null : new Uint8Array(b)));
  const job: DiffJob = { from: sides[0] ?? null, to: sides[1] ?? null };
  const transferList = sides.flatMap((b) => (b === null ? [] : [b.buffer as ArrayBuffer]));
  const worker = new (nodeWorkers().Worker)(new URL("./diff-worker.js", import.meta.url), {
    workerData: job,
    transferList,
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
  });
  // `once` rejects on the worker's `error` (its heap exhausted, say) as well.
  const exited = once(worker, "exit").then(([code]) => Promise.reject(new Error(`the diff worker stopped (exit code ${String(code)})`)));
  exited.catch(() => undefined);
  try {
    const [r] = (await Promise.race([once(worker, "message"), exited])) as [DiffReply];
    if ("json" in r) return Buffer.from(r.json.buffer, r.json.byteOffset, r.json.byteLength);
    if (r.error.code === undefined) throw new Error(`diff failed: ${r.error.message}`);
    throw new ObjstateError(r.error.code, r.error.message, r.error.details === undefined ? undefined : { details: { ...r.error.details } });
  } catch (e) {
    if ((e as { code?: unknown }).code !== "ERR_WORKER_OUT_OF_MEMORY") throw e;
    throw new ObjstateError(
      "DIFF_TOO_LARGE",
      `the two states are too large to compare on this server (the comparison needs more than ${WORKER_HEAP_MB} MiB): compare them with objstate state diff on a machine of your own`,
    );
  } finally {
    void worker.terminate();
  }
}
