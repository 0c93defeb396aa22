/**
 * MD5 off the main thread, so that hashing a large state overlaps its transfer: one shared
 * worker hashes copied 1 MiB slices, a few in flight at most, so memory stays bounded.
 */
import type { Worker } from "node:worker_threads";
import { nodeCrypto, nodeWorkers } from "./builtins.js";

const SLICE = 1024 * 1024;
const WINDOW = 4;
/** Below this, hashing inline is cheaper than the round trips to the worker. */
export const PARALLEL_MD5_MIN = 4 * 1024 * 1024;

/** `data`: a slice coming back for reuse. */
interface Reply {
  readonly id: number;
  readonly ack?: boolean;
  readonly data?: ArrayBuffer;
  readonly digest?: string;
}

/** Slices the worker gave back, reused as staging buffers. */
const pool: ArrayBuffer[] = [];
function takeSlice(): Uint8Array {
  const ab = pool.pop();
  return ab !== undefined && ab.byteLength === SLICE ? new Uint8Array(ab) : new Uint8Array(SLICE);
}

let worker: Worker | undefined;
let nextId = 1;
const jobs = new Map<number, ParallelMd5>();

function theWorker(): Worker {
  if (worker === undefined) {
    const w = new (nodeWorkers().Worker)(new URL("./md5-worker.js", import.meta.url));
    w.on("message", (r: Reply) => {
      const job = jobs.get(r.id);
      if (job === undefined) return;
      if (r.data !== undefined && pool.length < 2 * WINDOW) pool.push(r.data);
      if (r.ack === true) {
        job.inFlight -= 1;
        const wake = job.wake;
        job.wake = undefined;
        wake?.();
      }
      if (r.digest !== undefined) {
        jobs.delete(r.id);
        if (jobs.size === 0) w.unref();
        job.done?.(r.digest);
      }
    });
    w.on("error", (e) => {
      for (const job of jobs.values()) job.done?.(`error:${e.message}`);
      jobs.clear();
      worker = undefined;
    });
    w.unref();
    worker = w;
  }
  return worker;
}

/** An MD5 computed in the worker from bytes written in order. */
class ParallelMd5 {
  inFlight = 0;
  wake: (() => void) | undefined;
  done: ((digest: string) => void) | undefined;
  private readonly id = nextId++;
  private staging = takeSlice();
  private filled = 0;
  private readonly worker = theWorker();

  constructor() {
    jobs.set(this.id, this);
    this.worker.ref();
  }

  /** Add bytes; resolves when the worker has room for more (backpressure). */
  async write(bytes: Uint8Array): Promise<void> {
    let off = 0;
    while (off < bytes.length) {
      const n = Math.min(SLICE - this.filled, bytes.length - off);
      this.staging.set(bytes.subarray(off, off + n), this.filled);
      this.filled += n;
      off += n;
      if (this.filled === SLICE) await this.flush();
    }
  }

  private async flush(): Promise<void> {
    if (this.filled === 0) return;
    while (this.inFlight >= WINDOW) await new Promise<void>((resolve) => (this.wake = resolve));
    const data = this.filled === SLICE ? (this.staging.buffer as ArrayBuffer) : this.staging.slice(0, this.filled).buffer;
    this.inFlight += 1;
    this.worker.postMessage({ id: this.id, data }, [data]);
    this.staging = takeSlice();
    this.filled = 0;
  }

  async digest(): Promise<string> {
    await this.flush();
    const digest = await new Promise<string>((resolve) => {
      this.done = resolve;
      this.worker.postMessage({ id: this.id, end: true });
    });
    if (digest.startsWith("error:")) throw new Error(`md5 worker failed: ${digest.slice(6)}`);
    return digest;
  }
}

/** An MD5 taken as bytes are read, in order. */
export interface Hasher {
  write(bytes: Uint8Array): Promise<void> | void;
  digest(): Promise<string> | string;
}

/** In the worker when `size` is large, inline when small or unknown. */
export function hasherFor(size: number | undefined): Hasher {
  if (size !== undefined && size >= PARALLEL_MD5_MIN) return new ParallelMd5();
  const h = nodeCrypto().createHash("md5");
  return { write: (b) => void h.update(b), digest: () => h.digest("hex") };
}

export function md5Hex(bytes: Uint8Array): string {
  return nodeCrypto().createHash("md5").update(bytes).digest("hex");
}

/** Inline when small, in the worker (overlapping other work) when large. */
export async function md5Of(bytes: Uint8Array): Promise<string> {
  const h = hasherFor(bytes.length);
  await h.write(bytes);
  return h.digest();
}
