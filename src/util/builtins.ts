/** Node built-ins loaded on first use, synchronously: importing the package for configs and synthesis must not pay for them. */
import { createRequire } from "node:module";

const load = createRequire(import.meta.url);

function lazy<T>(name: string): () => T {
  let module: T | undefined;
  return () => (module ??= load(name) as T);
}

export const nodeCrypto = lazy<typeof import("node:crypto")>("node:crypto");
export const nodeWorkers = lazy<typeof import("node:worker_threads")>("node:worker_threads");
export const nodeOs = lazy<typeof import("node:os")>("node:os");
/** It loads net, dgram and streams: only `objstate lock -- command` runs one. */
export const nodeChildProcess = lazy<typeof import("node:child_process")>("node:child_process");
/** Through require: an ESM import of it reads every export, `fs.promises` (and streams) included. */
export const nodeFs = lazy<typeof import("node:fs")>("node:fs");
