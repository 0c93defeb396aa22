/**
 * Reading a remote state's outputs at run time (DESIGN §6). Loaded on demand by
 * `DataRemoteStateObjectStore.fetchOutputs`, so that importing the package for synthesis
 * never loads the backend, the drivers or the extractor.
 *
 * A read is only a read: no lock is taken, and nothing is created — no bucket, no lock
 * table, no lock item (the backend is connected `readOnly`).
 */
import { ObjectStoreBackend } from "../backend/backend.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { ObjstateError, isObjstateError } from "../errors.js";
import { jsonSyntaxProblem } from "../util/json-error.js";
import { resolveSettings } from "../resolve/settings.js";
import { DEFAULT_SCAN_THRESHOLD, extractTopLevel, parseSpans, type Extracted } from "./extract-outputs.js";
import { RemoteOutputs, type FetchOutputsOptions, type JsonValue } from "./remote-outputs.js";
import { StreamingTopLevelScan } from "./stream-scan.js";

/** The top-level members a read needs. */
const MEMBERS = ["version", "outputs"];

/** The state format whose root outputs are read (`outputs: {NAME: {value, type}}`). */
const STATE_VERSION = 4;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}


/**
 * The outputs of the state of `config.workspace` (default `default`), merged over
 * `config.defaults`. See `DataRemoteStateObjectStore.fetchOutputs`.
 */
export async function fetchRemoteOutputs(name: string | undefined, config: DataRemoteStateObjectStoreConfig, options: FetchOutputsOptions = {}): Promise<RemoteOutputs> {
  const env = options.env ?? process.env;
  const settings = resolveSettings(config, env);
  const workspace = settings.workspace.value ?? "default";
  const backend = await ObjectStoreBackend.connect(config, {
    env,
    cwd: options.cwd,
    readOnly: true,
    digestRetry: options.digestRetry,
    s3: options.s3,
    clock: options.clock,
    timeouts: options.timeouts,
    onWarning: options.onWarning,
  });
  const location = backend.describe(workspace);
  // Large states are scanned for their top-level members while they download.
  const threshold = options.scanThreshold ?? DEFAULT_SCAN_THRESHOLD;
  let scan: StreamingTopLevelScan | undefined;
  let scanning: Buffer | undefined;
  const onData = (body: Buffer, filled: number): void => {
    if (body.length < threshold) return;
    if (scanning !== body) {
      scan = new StreamingTopLevelScan(MEMBERS);
      scanning = body;
    }
    scan?.feed(body, filled);
  };
  let bytes: Buffer | null;
  try {
    bytes = await backend.readState(workspace, { onData });
  } catch (e) {
    if (isObjstateError(e, "BUCKET_NOT_FOUND")) {
      throw new ObjstateError("STATE_NOT_FOUND", `no stored state for workspace ${workspace} at ${location}: ${e.message}`, { cause: e, details: { workspace, location } });
    }
    throw e;
  } finally {
    backend.close();
  }
  if (bytes === null) {
    throw new ObjstateError("STATE_NOT_FOUND", `no stored state for workspace ${workspace} at ${location}`, { details: { workspace, location } });
  }
  const state = bytes;

  const invalid = (problem: string): ObjstateError =>
    new ObjstateError("STATE_INVALID", `the state of workspace ${workspace} at ${location} ${problem}`, { details: { workspace, location } });
  let extracted: Extracted | undefined;
  const spans = scan !== undefined && scanning === state ? scan.finish(state) : null;
  const members = spans === null ? null : parseSpans(state, spans);
  if (members !== null) extracted = { kind: "object", members, method: "scan" };
  try {
    extracted ??= extractTopLevel(state, MEMBERS, { scanThreshold: options.scanThreshold });
  } catch (e) {
    // The cause is left off on purpose: V8's message quotes the text around the error.
    const { problem, at } = jsonSyntaxProblem(e, (p) => state.subarray(0, p).toString("utf8"));
    throw invalid(`is not valid JSON: ${problem}${at === "" ? "" : ` ${at}`}`);
  }
  if (extracted.kind !== "object") throw invalid(`is not a state: its top level is ${extracted.kind === "array" ? "an array" : `a ${extracted.kind}`}, not an object`);
  const version = extracted.members.get("version");
  if (version !== undefined && version !== STATE_VERSION) {
    throw invalid(`has format version ${JSON.stringify(version)}; objstate reads root outputs of version ${STATE_VERSION} states`);
  }

  const merged = Object.create(null) as Record<string, JsonValue>;
  for (const [k, v] of Object.entries(settings.defaults.value ?? {})) merged[k] = v as JsonValue;
  const outputs = extracted.members.get("outputs");
  if (outputs !== undefined) {
    if (!isPlainObject(outputs)) throw invalid(`has malformed outputs: expected an object of {"value": …, "type": …} entries, got ${outputs === null ? "null" : Array.isArray(outputs) ? "an array" : `a ${typeof outputs}`}`);
    for (const [k, o] of Object.entries(outputs)) {
      if (!isPlainObject(o) || !Object.hasOwn(o, "value")) throw invalid(`has a malformed output "${k}": expected an object with a "value" member`);
      merged[k] = o["value"] as JsonValue;
    }
  }
  return new RemoteOutputs(merged, { name, workspace, location, method: extracted.method, streamed: members !== null });
}
