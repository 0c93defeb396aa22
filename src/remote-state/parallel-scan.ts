/**
 * The top-level scan of a state that is still downloading, run beside the download: the
 * grammar check of a 100 MiB state costs about as much CPU as receiving it, and on the main
 * thread it would hold up the socket. Each chunk is copied into a SharedArrayBuffer that a
 * worker thread scans as it fills (scan-worker.ts); the main thread only copies and signals.
 *
 * Whatever goes wrong on the worker's side (it cannot start, it dies, it is busy with
 * another state) ends in the plain streaming scan on the main thread or in `null`, which
 * sends the caller to the whole-buffer extractor: the answer never depends on the worker.
 */
import type { Worker } from "node:worker_threads";
import { nodeOs, nodeWorkers } from "../util/builtins.js";
import { giveShared, takeShared } from "../util/shared-memory.js";
import type { ScanJob, ScanReply } from "./scan-worker.js";
import { StreamingTopLevelScan } from "./stream-scan.js";

/** Spans `[start, end)` of the wanted top-level members, or null when the scan gave up. */
export type ScanSpans = Map<string, readonly [number, number]> | null;

/** A scan fed with a body as it fills; {@link finish} once the last byte is in. */
export interface TopLevelScanner {
  /** `body` is the whole (partly filled) buffer, always the same one; `filled` only grows. */
  feed(body: Buffer, filled: number): void;
  /** The spans, after the whole body was fed (it is fed here if it was not). */
  finish(body: Buffer): Promise<ScanSpans>;
  /** Call the scan off (the download failed or started over); harmless after {@link finish}. */
  cancel(): void;
}

/** Bodies above this are scanned on the main thread: the worker's fill count is an Int32. */
const MAX_SHARED = 0x7fffffff;

/** The plain streaming scan, on this thread. */
class InlineScan implements TopLevelScanner {
  private readonly scan: StreamingTopLevelScan;
  constructor(names: readonly string[]) {
    this.scan = new StreamingTopLevelScan(names);
  }
  feed(body: Buffer, filled: number): void {
    this.scan.feed(body, filled);
  }
  finish(body: Buffer): Promise<ScanSpans> {
    return Promise.resolve(this.scan.finish(body));
  }
  cancel(): void {}
}

let worker: Worker | undefined;
/** The job the worker is on: one at a time (it blocks between chunks). */
let current: { readonly id: number; readonly settle: (spans: ScanSpans) => void } | undefined;
let nextId = 1;

function settle(reply: ScanReply | undefined): void {
  const job = current;
  if (job === undefined || (reply !== undefined && reply.id !== job.id)) return;
  current = undefined;
  worker?.unref();
  job.settle(reply === undefined ? null : reply.spans === null ? null : new Map(reply.spans));
}

function theWorker(): Worker {
  if (worker === undefined) {
    const w = new (nodeWorkers().Worker)(new URL("./scan-worker.js", import.meta.url));
    w.on("message", (r: ScanReply) => settle(r));
    const gone = (): void => {
      if (worker === w) worker = undefined;
      settle(undefined);
    };
    w.on("error", gone);
    w.on("exit", gone);
    w.unref();
    worker = w;
  }
  return worker;
}

/**
 * A scan in the worker. A body in shared memory (the S3 driver's, see readBody in
 * store/s3.ts) is read where it is; any other is copied chunk by chunk into shared memory.
 */
class WorkerScan implements TopLevelScanner {
  /** Where the bytes are copied to, or undefined when the body itself is shared. */
  private readonly copy: Uint8Array | undefined;
  private readonly control: Int32Array;
  private filled = 0;
  private readonly length: number;
  private readonly result: Promise<ScanSpans>;

  constructor(w: Worker, names: readonly string[], body: Buffer) {
    const shared = body.buffer instanceof SharedArrayBuffer && body.byteOffset === 0 ? body.buffer : undefined;
    const copy = shared === undefined ? takeShared(body.length) : undefined;
    const target = shared ?? ((copy as Buffer).buffer as SharedArrayBuffer);
    this.copy = copy;
    this.length = body.length;
    const control = new SharedArrayBuffer(4);
    this.control = new Int32Array(control);
    const id = nextId++;
    this.result = new Promise<ScanSpans>((resolve) => (current = { id, settle: resolve }));
    // Once the worker has answered (or is gone) it no longer reads the copy.
    if (copy !== undefined) void this.result.then(() => giveShared(copy));
    w.ref();
    const job: ScanJob = { id, body: target, length: body.length, control, names };
    w.postMessage(job);
  }

  feed(body: Buffer, filled: number): void {
    if (filled <= this.filled || this.control[0] === -1) return;
    this.copy?.set(body.subarray(this.filled, filled), this.filled);
    this.filled = filled;
    Atomics.store(this.control, 0, filled);
    Atomics.notify(this.control, 0);
  }

  finish(body: Buffer): Promise<ScanSpans> {
    this.feed(body, body.length);
    return this.result;
  }

  cancel(): void {
    // Once every byte is in, the worker finishes on its own.
    if (this.filled === this.length) return;
    Atomics.store(this.control, 0, -1);
    Atomics.notify(this.control, 0);
  }
}

/** On one core a second thread only takes turns with the download: scan inline there. */
let cores: number | undefined;

/**
 * A scan for the top-level members `names` of `body`, a buffer that is still filling: in
 * the worker thread when it is free and the machine has a core for it (`inWorker` true or
 * false decides instead, for tests), else here.
 */
export function startTopLevelScan(names: readonly string[], body: Buffer, options: { readonly inWorker?: boolean } = {}): TopLevelScanner {
  const worth = options.inWorker ?? (cores ??= nodeOs().availableParallelism()) > 1;
  if (worth && current === undefined && body.length > 0 && body.length <= MAX_SHARED) {
    try {
      return new WorkerScan(theWorker(), names, body);
    } catch {
      // No worker (resource limits, a runtime without threads): scan here.
    }
  }
  return new InlineScan(names);
}
