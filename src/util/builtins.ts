/** Node built-ins loaded on first use, synchronously: importing the package for configs and synthesis must not pay for them. */
import { createRequire } from "node:module";

const load = createRequire(import.meta.url);

let crypto: typeof import("node:crypto") | undefined;
export function nodeCrypto(): typeof import("node:crypto") {
  return (crypto ??= load("node:crypto") as typeof import("node:crypto"));
}

let workers: typeof import("node:worker_threads") | undefined;
export function nodeWorkers(): typeof import("node:worker_threads") {
  return (workers ??= load("node:worker_threads") as typeof import("node:worker_threads"));
}

let os: typeof import("node:os") | undefined;
export function nodeOs(): typeof import("node:os") {
  return (os ??= load("node:os") as typeof import("node:os"));
}

let childProcess: typeof import("node:child_process") | undefined;
/** `node:child_process` (it loads net, dgram and streams): only `objstate lock -- command` runs one. */
export function nodeChildProcess(): typeof import("node:child_process") {
  return (childProcess ??= load("node:child_process") as typeof import("node:child_process"));
}

let fs: typeof import("node:fs") | undefined;
/** `node:fs` through require: an ESM import of it reads every export, `fs.promises` (and streams) included. */
export function nodeFs(): typeof import("node:fs") {
  return (fs ??= load("node:fs") as typeof import("node:fs"));
}
