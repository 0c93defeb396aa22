/** Reading a remote state's outputs (docs/design.md §6), loaded on demand so that synthesis never loads the backend. */
import { ObjectStoreBackend } from "../backend/backend.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { ObjstateError, isObjstateError } from "../errors.js";
import { jsonSyntaxProblem } from "../json/syntax-error.js";
import { resolveSettings } from "../resolve/settings.js";
import { exactType, fromJs, JsonNumber, parseExact, stringifyExact, type ExactJson, type JsonValue } from "../json/exact-json.js";
import { isEnvelope } from "../encryption/index.js";
import { encryptedState } from "../state/document.js";
import { JsonScanner, MAX_NESTING, scanJson } from "../json/scan.js";
import { RemoteOutputs, UPGRADED, withArticle, type FetchOutputsOptions } from "./remote-outputs.js";

/** Smaller states are parsed whole first: `JSON.parse` is as fast there as the scan run cold. */
export const DEFAULT_SCAN_THRESHOLD = 1536 * 1024;

type TopLevelKind = "object" | "array" | "string" | "number" | "boolean" | "null";

/** The wanted members' byte spans (last occurrence); `parse` when the whole document was parsed too. */
export interface Located {
  readonly kind: TopLevelKind;
  readonly spans: ReadonlyMap<string, readonly [number, number]>;
  readonly method: "scan" | "parse";
}

export class NestingError extends Error {
  constructor() {
    super(`it is nested more than ${MAX_NESTING} levels deep (the tool's limit)`);
    this.name = "NestingError";
  }
}

const kindOf = (doc: unknown): TopLevelKind => (doc === null ? "null" : Array.isArray(doc) ? "array" : (typeof doc as TopLevelKind));

/**
 * Top-level members without parsing the rest, refused exactly when `JSON.parse` refuses the document.
 * @throws SyntaxError (from `JSON.parse`) when `bytes` is not JSON; {@link NestingError} when nested too deep.
 */
export function locateTopLevel(bytes: Buffer, names: readonly string[], scanThreshold = DEFAULT_SCAN_THRESHOLD): Located {
  const parseFirst = bytes.length < scanThreshold;
  if (parseFirst) {
    const kind = kindOf(JSON.parse(bytes.toString("utf8")));
    if (kind !== "object") return { kind, spans: new Map(), method: "parse" };
  }
  const s = scanJson(bytes, names);
  const f = s.end();
  if (f === undefined) return { kind: "object", spans: s.spans, method: parseFirst ? "parse" : "scan" };
  if (f.kind === "syntax" && f.reason === "too-deep" && s.top === "object") throw new NestingError();
  // Not JSON, or not an object: JSON.parse says which (and throws the SyntaxError reported).
  const kind = kindOf(JSON.parse(bytes.toString("utf8")));
  if (kind === "object") throw new SyntaxError("the document could not be scanned");
  return { kind, spans: new Map(), method: "parse" };
}

/** The top-level members a read needs. */
const MEMBERS = ["version", "outputs", "modules"];

interface ReadOutputsOptions {
  readonly name?: string | undefined;
  readonly defaults?: Readonly<Record<string, unknown>> | undefined;
  readonly scanThreshold?: number | undefined;
}

/** See `DataRemoteStateObjectStore.fetchOutputs`. */
export async function fetchRemoteOutputs(
  name: string | undefined,
  config: DataRemoteStateObjectStoreConfig,
  options: FetchOutputsOptions = {},
): Promise<RemoteOutputs> {
  const { scanThreshold, ...connect } = options;
  const env = options.env ?? process.env;
  const settings = resolveSettings(config, env);
  const backend = await ObjectStoreBackend.connect(config, {
    ...connect,
    env,
    readOnly: true,
    // As OpenTofu: the data source's own remote_state_data_source block, else the default one.
    encryptionTarget: options.encryptionTarget ?? (name === undefined ? undefined : { kind: "remote", name }),
  });
  try {
    return await readRemoteOutputs(backend, settings.workspace.value ?? "default", { name, defaults: settings.defaults.value, scanThreshold });
  } finally {
    backend.close();
  }
}

/** {@link fetchRemoteOutputs} through a backend already connected (a server's). */
export async function readRemoteOutputs(backend: ObjectStoreBackend, workspace: string, options: ReadOutputsOptions = {}): Promise<RemoteOutputs> {
  const location = backend.describe(workspace);
  // A large plain state is scanned as it downloads; an envelope's members are inside its ciphertext.
  const threshold = options.scanThreshold ?? DEFAULT_SCAN_THRESHOLD;
  let scan: { readonly body: Buffer; readonly scanner: JsonScanner } | undefined;
  const onData = (body: Buffer, filled: number): void => {
    if (backend.encrypts || body.length < threshold) return;
    // A digest retry starts over with a new buffer.
    if (scan?.body !== body) scan = { body, scanner: new JsonScanner(MEMBERS) };
    scan.scanner.feed(body.subarray(scan.scanner.offset, filled));
  };
  const details = { workspace, location };
  const bytes = await backend.readState(workspace, { onData }).catch((e: unknown) => {
    if (!isObjstateError(e, "BUCKET_NOT_FOUND")) throw e;
    throw new ObjstateError("STATE_NOT_FOUND", `no stored state for workspace ${workspace} at ${location}: ${e.message}`, { cause: e, details });
  });
  if (bytes === null || bytes.length === 0) {
    // An empty object is what some tools leave for a workspace with no state: no state.
    const empty = bytes === null ? "" : " (the object is empty)";
    throw new ObjstateError("STATE_NOT_FOUND", `no stored state for workspace ${workspace} at ${location}${empty}`, { details });
  }
  let streamed: Located | undefined;
  if (scan?.body === bytes) {
    scan.scanner.feed(bytes.subarray(scan.scanner.offset));
    if (scan.scanner.end() === undefined) streamed = { kind: "object", spans: scan.scanner.spans, method: "scan" };
  }
  return outputsOf(bytes, streamed, workspace, location, options);
}

/** `streamed`: what the scan fed while the state downloaded found. */
function outputsOf(state: Buffer, streamed: Located | undefined, workspace: string, location: string, options: ReadOutputsOptions): RemoteOutputs {
  const invalid = (problem: string): ObjstateError =>
    new ObjstateError("STATE_INVALID", `the state of workspace ${workspace} at ${location} ${problem}`, { details: { workspace, location } });
  let located = streamed;
  try {
    located ??= locateTopLevel(state, MEMBERS, options.scanThreshold);
  } catch (e) {
    if (e instanceof NestingError) throw invalid(`cannot be read: ${e.message}`);
    // The cause is left off on purpose: JSON.parse's message quotes the text around the error.
    const { problem, at } = jsonSyntaxProblem(e, state);
    throw invalid(`is not valid JSON: ${problem} ${at}`.trimEnd());
  }
  if (located.kind !== "object")
    throw invalid(`is not a state: its top level is ${located.kind === "array" ? "an array" : `a ${located.kind}`}, not an object`);
  const found = located.spans;
  const member = (n: string): ExactJson | undefined => {
    const span = found.get(n);
    return span === undefined ? undefined : parseExact(state, span[0], span[1]);
  };

  const values = new Map<string, ExactJson>();
  for (const [k, v] of Object.entries(options.defaults ?? {})) values.set(k, fromJs(v as JsonValue));
  const sensitive = new Set<string>();
  const types = new Map<string, ExactJson | typeof UPGRADED>();
  if (!found.has("version") && isEnvelope(state)) throw encryptedState(`the state of workspace ${workspace} at ${location}`, { workspace, location });
  for (const [k, o] of rootOutputs(member, invalid)) {
    values.set(k, o.value);
    if (o.sensitive) sensitive.add(k);
    if (o.type !== undefined) types.set(k, o.type);
  }
  const source = { name: options.name, workspace, location, method: located.method, streamed: streamed !== undefined };
  return RemoteOutputs.fromExact(values, source, sensitive, types);
}

function typeName(v: ExactJson | undefined): string {
  return v === undefined ? "nothing" : withArticle(exactType(v));
}

/**
 * The root outputs as the tool reads them: format 4's `outputs`; formats 1-3's module of path
 * `["root"]` (format 1: or without a path), whose outputs are bare values (format 1) or objects.
 * `type`: the one in the tool's notation the state records (format 4), or {@link UPGRADED} (formats 1–3).
 */
function rootOutputs(member: (n: string) => ExactJson | undefined, invalid: (problem: string) => ObjstateError) {
  const version = member("version");
  const versionText = version instanceof JsonNumber ? version.text : undefined;
  if (version === undefined) throw invalid(`is not a state: it has no "version" member (objstate reads state format versions 1 to 4)`);
  if (versionText === undefined || !/^[1-4]$/.test(versionText)) {
    const shown = versionText ?? (typeof version === "string" && version.length <= 20 ? JSON.stringify(version) : typeName(version));
    throw invalid(`has format version ${shown}; objstate reads state format versions 1 to 4`);
  }
  const out = new Map<string, { value: ExactJson; sensitive: boolean; type: ExactJson | typeof UPGRADED | undefined }>();
  if (versionText === "4") {
    const outputs = member("outputs");
    if (outputs === undefined || outputs === null) return out;
    if (!(outputs instanceof Map)) throw invalid(`has malformed outputs: expected an object of {"value": …, "type": …} entries, got ${typeName(outputs)}`);
    for (const [k, o] of outputs) {
      if (!(o instanceof Map) || !o.has("value")) throw invalid(`has a malformed output "${k}": expected an object with a "value" member`);
      out.set(k, { value: o.get("value") as ExactJson, sensitive: o.get("sensitive") === true, type: o.get("type") ?? undefined });
    }
    return out;
  }
  const modules = member("modules");
  if (modules === undefined || modules === null) return out;
  if (!Array.isArray(modules)) throw invalid(`has malformed modules: expected a list of modules, got ${typeName(modules as ExactJson)}`);
  (modules as readonly ExactJson[]).forEach((m, index) => {
    if (!(m instanceof Map)) throw invalid(`has a malformed module (modules[${index}]): expected an object, got ${typeName(m)}`);
    const path = m.get("path");
    const pathless = path === undefined || path === null || (Array.isArray(path) && path.length === 0);
    // The tool's upgrade from format 1 takes a module without a path as the root module.
    if (!pathless || versionText !== "1") {
      if (!Array.isArray(path) || path.length === 0 || !(path as readonly ExactJson[]).every((p) => typeof p === "string")) {
        throw invalid(`has a malformed module (modules[${index}]): its "path" is not a list of names`);
      }
      if (path[0] !== "root") throw invalid(`has an invalid module path ${stringifyExact(path)} (modules[${index}]): paths start with "root"`);
      if (path.length !== 1) return;
    }
    const outputs = m.get("outputs");
    if (outputs === undefined || outputs === null) return;
    if (!(outputs instanceof Map)) throw invalid(`has malformed root module outputs: expected an object, got ${typeName(outputs)}`);
    for (const [k, o] of outputs) {
      const wrapped = o instanceof Map;
      if (wrapped && !o.has("value")) throw invalid(`has a malformed output "${k}": expected a value or an object with a "value" member`);
      // The "type" of these formats says only string, list or map: the tool's upgrade drops it.
      out.set(k, { value: wrapped ? (o.get("value") as ExactJson) : o, sensitive: wrapped && o.get("sensitive") === true, type: UPGRADED });
    }
  });
  return out;
}
