/**
 * Worker side of parallel-scan.ts: runs the streaming top-level scan over a state's bytes
 * while the main thread is still receiving them. The bytes arrive in a SharedArrayBuffer;
 * how many are there is `control[0]`, which the main thread raises after each chunk (and
 * sets to -1 to call the job off). One job at a time: the worker blocks in `Atomics.wait`
 * between chunks, which is what a worker thread may do and the main thread may not.
 */
import { parentPort } from "node:worker_threads";
import { StreamingTopLevelScan } from "./stream-scan.js";

/** A scan to run (see parallel-scan.ts). */
export interface ScanJob {
  readonly id: number;
  readonly body: SharedArrayBuffer;
  /** How many of `body`'s bytes are the state (a reused buffer can be longer); all when absent. */
  readonly length?: number | undefined;
  readonly control: SharedArrayBuffer;
  readonly names: readonly string[];
}

/** What a job came to: the spans (as entries), null when the scan gave up, or called off. */
export interface ScanReply {
  readonly id: number;
  readonly spans: readonly (readonly [string, readonly [number, number]])[] | null;
  readonly cancelled: boolean;
}

const port = parentPort;
if (port === null) throw new Error("scan-worker must run in a worker thread");
port.on("message", (job: ScanJob) => {
  const bytes = Buffer.from(job.body, 0, job.length ?? job.body.byteLength);
  const control = new Int32Array(job.control);
  const scan = new StreamingTopLevelScan(job.names);
  let seen = 0;
  let reply: ScanReply;
  for (;;) {
    const filled = Atomics.load(control, 0);
    if (filled < 0) {
      reply = { id: job.id, spans: null, cancelled: true };
      break;
    }
    if (filled === bytes.length) {
      const spans = scan.finish(bytes);
      reply = { id: job.id, spans: spans === null ? null : [...spans], cancelled: false };
      break;
    }
    if (filled > seen) {
      scan.feed(bytes, filled);
      seen = filled;
    } else {
      Atomics.wait(control, 0, filled);
    }
  }
  port.postMessage(reply);
});
