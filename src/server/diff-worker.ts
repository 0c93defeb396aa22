/** Worker side of diff-runner.ts: one diff of two states, its answer's JSON as bytes. */
import { parentPort, workerData } from "node:worker_threads";
import { isObjstateError, type ErrorCode } from "../errors.js";
import { stringifyDeep } from "../json/exact-json.js";
import { diffStates } from "../state/diff.js";

/** The two sides, each in an ArrayBuffer of its own (transferred). */
export type DiffJob = { readonly from: Uint8Array | null; readonly to: Uint8Array | null };

/** The answer's bytes, or the failure (an ObjstateError's code, message and details). */
export type DiffReply =
  | { readonly json: Uint8Array }
  | { readonly error: { readonly code: ErrorCode | undefined; readonly message: string; readonly details: Readonly<Record<string, unknown>> | undefined } };

const port = parentPort;
if (port === null) throw new Error("diff-worker must run in a worker thread");
const job = workerData as DiffJob;
const view = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
let reply: DiffReply;
try {
  // Its own buffer (not the shared pool), so it can be transferred back whole.
  const json = new TextEncoder().encode(`${stringifyDeep(diffStates(job.from === null ? null : view(job.from), job.to === null ? null : view(job.to)))}\n`);
  reply = { json };
  port.postMessage(reply, [json.buffer]);
} catch (e) {
  // Only an ObjstateError's text leaves (it names no secret); anything else stays a bare failure.
  reply = {
    error: isObjstateError(e)
      ? { code: e.code, message: e.message, details: e.details }
      : { code: undefined, message: e instanceof Error ? e.name : typeof e, details: undefined },
  };
  port.postMessage(reply);
}
