/** Worker side of {@link ParallelMd5}: hashes the slices it is sent, one hash per job id. */
import { createHash, type Hash } from "node:crypto";
import { parentPort } from "node:worker_threads";

interface Message {
  readonly id: number;
  readonly data?: ArrayBuffer;
  readonly end?: boolean;
}

const jobs = new Map<number, Hash>();
const port = parentPort;
if (port === null) throw new Error("md5-worker must run in a worker thread");
port.on("message", (m: Message) => {
  let h = jobs.get(m.id);
  if (h === undefined) {
    h = createHash("md5");
    jobs.set(m.id, h);
  }
  if (m.data !== undefined) {
    h.update(new Uint8Array(m.data));
    // Handed back for reuse: no garbage piles up on either side.
    port.postMessage({ id: m.id, ack: true, data: m.data }, [m.data]);
  }
  if (m.end === true) {
    jobs.delete(m.id);
    port.postMessage({ id: m.id, digest: h.digest("hex") });
  }
});
