/** A state reduced to what a diff compares: instances by address, root outputs, serial, lineage; formats 1–3 (`modules[]`) and 4. */
import { Buffer } from "node:buffer";
import { ObjstateError } from "../errors.js";
import { fromJs, parseExact, type ExactJson, type JsonValue } from "../json/exact-json.js";
import { jsonSyntaxProblem } from "../json/syntax-error.js";
import { checkNesting, scanJson } from "../json/scan.js";
import { formatAddress, type InstanceAddress, type InstanceKey } from "./address.js";

type StateSide = "from" | "to";

/** Input accepted for one side of a diff; null (or zero bytes) is "no state". */
export type StateInput = Uint8Array | string | object | null;

/** `flat`: the flatmap of formats 1–3 and of states upgraded from them (`tags.%`, `list.0`). */
export type Attributes = { readonly kind: "json" | "flat"; readonly values: Readonly<Record<string, unknown>> };

interface StateInstance {
  readonly address: InstanceAddress;
  readonly attributes: Attributes;
  /** Top-level attributes with a sensitive path under them. */
  readonly sensitive: ReadonlySet<string>;
}

export interface StateOutput {
  /** Numbers as written. */
  readonly exact: ExactJson;
  readonly sensitive: boolean;
}

export interface StateDocument {
  readonly serial: number | null;
  readonly lineage: string | null;
  readonly instances: ReadonlyMap<string, StateInstance>;
  readonly outputs: ReadonlyMap<string, StateOutput>;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

class Reader {
  constructor(readonly side: StateSide) {}

  fail(problem: string): never {
    throw new ObjstateError("STATE_INVALID", `the '${this.side}' state ${problem}`, { details: { side: this.side } });
  }
}

/** `STATE_ENCRYPTED`: `what` is an encryption envelope and there is no key here to show it. */
export function encryptedState(what: string, details: Record<string, unknown> = {}): ObjstateError {
  return new ObjstateError(
    "STATE_ENCRYPTED",
    `${what} is encrypted (an OpenTofu encryption envelope) and there is no key here to open it: its client encrypts it. To read it, configure the same encryption (the encryption setting, or TF_ENCRYPTION)`,
    { details: { ...details, encrypted: true } },
  );
}

/** Parse one side; null when there is no state. Throws `STATE_INVALID` naming the side. */
export function readStateDocument(input: StateInput, side: StateSide): StateDocument | null {
  const r: Reader = new Reader(side);
  const { doc, exact } = parseInput(input, r);
  if (doc === null) return null;
  if (!isObj(doc)) r.fail("is not a state: expected a JSON object");
  if (doc["version"] === undefined && typeof doc["encryption_version"] === "string") throw encryptedState(`the '${side}' state`, { side });
  const version = doc["version"];
  if (typeof version !== "number" || !Number.isInteger(version)) r.fail('has no format "version": expected a number from 1 to 4');
  if (version < 1 || version > 4) r.fail(`has format version ${version}, which objstate cannot read (it reads 1 to 4): compare it with a newer objstate`);
  const serial = typeof doc["serial"] === "number" && Number.isFinite(doc["serial"]) ? doc["serial"] : null;
  const lineage = typeof doc["lineage"] === "string" ? doc["lineage"] : null;
  const instances = new Map<string, StateInstance>();
  const outputs = new Map<string, StateOutput>();
  if (version === 4) readV4(doc, r, instances, outputs, exact);
  else readLegacy(doc, r, instances, outputs);
  return { serial, lineage, instances, outputs };
}

/** The parsed document and, from bytes or text, its `outputs` with numbers as written. */
function parseInput(input: StateInput, r: Reader): { doc: unknown; exact: ExactJson | undefined } {
  if (input === null) return { doc: null, exact: undefined };
  if (typeof input !== "string" && !(input instanceof Uint8Array)) return { doc: input, exact: undefined };
  const bytes = typeof input === "string" ? Buffer.from(input, "utf8") : Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  // A zero-byte object is how an absent state is sometimes stored; the tool reads it as none.
  if (bytes.length === 0) return { doc: null, exact: undefined };
  // One scan refuses a document nested too deep, and finds its outputs.
  const scan = scanJson(bytes, ["outputs"]);
  checkNesting(bytes, `the '${r.side}' state`, scan);
  const text = typeof input === "string" ? input : bytes.toString("utf8");
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    const { problem, at } = jsonSyntaxProblem(e, text);
    return r.fail(`is not valid JSON: ${problem}${at === "" ? "" : ` ${at}`}`);
  }
  const span = scan.spans.get("outputs");
  return { doc, exact: span === undefined ? undefined : parseExact(bytes, span[0], span[1]) };
}

function readV4(doc: Obj, r: Reader, instances: Map<string, StateInstance>, outputs: Map<string, StateOutput>, exact: ExactJson | undefined): void {
  const resources = doc["resources"] ?? [];
  if (!Array.isArray(resources)) r.fail('has "resources" that is not a list');
  resources.forEach((res: unknown, i) => {
    const where = `resources[${i}]`;
    if (!isObj(res) || typeof res["type"] !== "string" || typeof res["name"] !== "string")
      r.fail(`has ${where} that is not a resource: expected an object with string "type" and "name"`);
    const mode = res["mode"] ?? "managed";
    if (mode !== "managed" && mode !== "data") r.fail(`has ${where} with "mode" other than "managed" or "data"`);
    const module = res["module"] ?? "";
    if (typeof module !== "string") r.fail(`has ${where} whose "module" is not a string`);
    const list = res["instances"] ?? [];
    if (!Array.isArray(list)) r.fail(`has ${where} whose "instances" is not a list`);
    list.forEach((inst: unknown, j) => {
      const at = `${where}.instances[${j}]`;
      if (!isObj(inst)) r.fail(`has ${at} that is not an object`);
      const key = inst["index_key"];
      if (key !== undefined && key !== null && typeof key !== "number" && typeof key !== "string")
        r.fail(`has ${at} whose "index_key" is neither a number nor a string`);
      const deposed = inst["deposed"];
      if (deposed !== undefined && deposed !== null && typeof deposed !== "string") r.fail(`has ${at} whose "deposed" is not a string`);
      const address: InstanceAddress = {
        module,
        mode,
        type: res["type"] as string,
        name: res["name"] as string,
        key: key ?? undefined,
        deposed: deposed ?? undefined,
      };
      const json = inst["attributes"];
      const flat = inst["attributes_flat"];
      let attributes: Attributes;
      if (isObj(json)) attributes = { kind: "json", values: json };
      else if (isObj(flat)) attributes = { kind: "flat", values: flat };
      else if ((json === undefined || json === null) && (flat === undefined || flat === null)) attributes = { kind: "json", values: {} };
      else r.fail(`has ${at} whose "attributes" is not an object`);
      instances.set(formatAddress(address), { address, attributes, sensitive: sensitiveNames(inst["sensitive_attributes"]) });
    });
  });
  const outs = doc["outputs"] ?? {};
  if (!isObj(outs)) r.fail('has "outputs" that is not an object');
  readOutputs(outs, outputs, exact instanceof Map ? exact : undefined);
}

/** The top-level attribute of each sensitive path (first step `{"type": "get_attr", "value": NAME}`, or a bare name). */
function sensitiveNames(paths: unknown): Set<string> {
  const names = new Set<string>();
  if (!Array.isArray(paths)) return names;
  for (const path of paths) {
    const first: unknown = Array.isArray(path) ? path[0] : path;
    if (typeof first === "string") names.add(first);
    else if (isObj(first) && typeof first["value"] === "string") names.add(first["value"]);
  }
  return names;
}

/** `exact`: the same outputs with numbers as written, so a change past a double's precision is seen. */
function readOutputs(outs: Obj, outputs: Map<string, StateOutput>, exact?: ReadonlyMap<string, ExactJson>): void {
  for (const [name, o] of Object.entries(outs)) {
    // Format 1 keeps a bare string; later formats {value, type, sensitive}.
    const wrapped = isObj(o) && "value" in o;
    const e = exact?.get(name);
    const value = e === undefined ? fromJs((wrapped ? o["value"] : o) as JsonValue) : e instanceof Map && e.has("value") ? (e.get("value") as ExactJson) : e;
    outputs.set(name, { exact: value, sensitive: wrapped && o["sensitive"] === true });
  }
}

const LEGACY_KEY = /^(?:(data)\.)?([^.]+)\.([^.]+)(?:\.(\d+))?$/;

function readLegacy(doc: Obj, r: Reader, instances: Map<string, StateInstance>, outputs: Map<string, StateOutput>): void {
  const modules = doc["modules"] ?? [];
  if (!Array.isArray(modules)) r.fail('has "modules" that is not a list');
  modules.forEach((m: unknown, i) => {
    const where = `modules[${i}]`;
    if (!isObj(m)) r.fail(`has ${where} that is not an object`);
    const path = m["path"] ?? ["root"];
    if (!Array.isArray(path) || path.some((p) => typeof p !== "string")) r.fail(`has ${where} whose "path" is not a list of names`);
    const module = (path as string[])
      .slice(1)
      .map((p) => `module.${p}`)
      .join(".");
    const resources = m["resources"] ?? {};
    if (!isObj(resources)) r.fail(`has ${where} whose "resources" is not an object`);
    for (const [rkey, res] of Object.entries(resources)) {
      const k = LEGACY_KEY.exec(rkey);
      if (k === null) r.fail(`has a resource key in ${where} that is not "[data.]type.name[.index]"`);
      if (!isObj(res)) r.fail(`has a resource in ${where} that is not an object`);
      const base = {
        module,
        mode: k[1] === "data" ? ("data" as const) : ("managed" as const),
        type: k[2] as string,
        name: k[3] as string,
        key: (k[4] === undefined ? undefined : Number(k[4])) as InstanceKey,
      };
      const add = (obj: unknown, deposed: string | undefined): void => {
        if (!isObj(obj)) return;
        const attrs = obj["attributes"];
        const address: InstanceAddress = { ...base, deposed };
        instances.set(formatAddress(address), { address, attributes: { kind: "flat", values: isObj(attrs) ? attrs : {} }, sensitive: new Set() });
      };
      add(res["primary"], undefined);
      // Formats 1–3 keep deposed objects in a list without keys: their position stands in.
      const deposed = res["deposed"];
      if (Array.isArray(deposed)) deposed.forEach((d, n) => add(d, String(n)));
    }
    if (path.length === 1) {
      const outs = m["outputs"] ?? {};
      if (!isObj(outs)) r.fail(`has ${where} whose "outputs" is not an object`);
      readOutputs(outs, outputs);
    }
  });
}
