/**
 * Synthesis (docs/design.md §7): pure functions from config objects to the tool's JSON. Keys are the field table's
 * JSON keys, in table order; unset fields are absent; `defaults` keys are kept verbatim.
 */
import { ConfigError } from "./errors.js";
import { nameTable, type NameTable } from "./rules.js";
import { ASSUME_ROLE_FIELDS, COMMON_FIELDS, type FieldSpec } from "./fields.js";
import type { TerraformBackendJson, TerraformRemoteStateJson } from "./terraform-json.js";
import type { BackendConfigValues, JsonObject, RemoteStateConfigValues } from "./types.js";

/** The backend document: `{"tool": {"backend": {"objectstore": {...}}}}`. */
export interface BackendToolJson {
  tool: { backend: { objectstore: JsonObject } };
}

/** One remote state's block inside `data.tool_remote_state`. */
export interface RemoteStateBlock {
  backend: "objectstore";
  config: JsonObject;
  defaults?: JsonObject;
  workspace?: string;
}

/** The remote-state document: `{"data": {"tool_remote_state": {NAME: {...}}}}`. */
export interface RemoteStateToolJson {
  data: { tool_remote_state: { [name: string]: RemoteStateBlock } };
}

/** A whole document: at most one backend (the seed's `tool` or the real tool's `terraform`), any number of remote states. */
export interface ToolJson {
  tool?: BackendToolJson["tool"];
  terraform?: TerraformBackendJson["terraform"];
  data?: {
    tool_remote_state?: RemoteStateToolJson["data"]["tool_remote_state"];
    terraform_remote_state?: TerraformRemoteStateJson["data"]["terraform_remote_state"];
  };
}

/** The set fields of `config` under their JSON keys, in table order (the nested block's likewise). */
function block(config: object, fields: readonly FieldSpec[] = COMMON_FIELDS): JsonObject {
  const out: JsonObject = {};
  for (const f of fields) {
    const v = (config as Record<string, unknown>)[f.name];
    if (v !== undefined) out[f.jsonKey] = f.kind === "assumeRole" ? block(v as object, ASSUME_ROLE_FIELDS) : v;
  }
  return out;
}

/** The backend document of a config. */
export function backendToolJson(config: BackendConfigValues): BackendToolJson {
  return { tool: { backend: { objectstore: block(config) } } };
}

const NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Throw unless `name` can be used as a block or output name in the tool's references. */
export function checkName(name: unknown, what: string): asserts name is string {
  if (typeof name !== "string" || !NAME.test(name)) {
    const got = typeof name === "string" ? JSON.stringify(name) : typeof name;
    throw new ConfigError("INVALID_NAME", `${what} must start with a letter or '_' and contain only letters, digits, '_' and '-', got ${got}`, { field: what });
  }
}

/** The remote-state document for one named remote state. */
export function remoteStateToolJson(name: string, config: RemoteStateConfigValues): RemoteStateToolJson {
  checkName(name, "remote state name");
  const entry: RemoteStateBlock = { backend: "objectstore", config: block(config) };
  if (config.defaults !== undefined) entry.defaults = config.defaults as JsonObject;
  if (config.workspace !== undefined) entry.workspace = config.workspace;
  return { data: { tool_remote_state: nameTable((t) => (t[name] = entry)) } };
}

const DATA_KINDS = ["tool_remote_state", "terraform_remote_state"] as const;

/** Merge documents into one: at most one backend (`tool` or `terraform`), remote-state names unique within their kind (a {@link ConfigError} otherwise). */
export function mergeToolJson(...docs: ToolJson[]): ToolJson {
  const out: ToolJson = {};
  const data: Record<string, NameTable<unknown>> = {};
  for (const d of docs) {
    for (const kind of ["tool", "terraform"] as const) {
      if (d[kind] === undefined) continue;
      if (out.tool !== undefined || out.terraform !== undefined)
        throw new ConfigError("INVALID_PROPS", "a tool document can hold only one backend; two were given");
      // The one backend is the document's first key, whichever kind it is.
      (out as Record<string, unknown>)[kind] = d[kind];
    }
    for (const kind of DATA_KINDS) {
      const blocks = (d.data?.[kind] ?? {}) as NameTable<unknown>;
      for (const name of Object.keys(blocks)) {
        // Placed at its first name: `data` keeps its place among the document's keys, each kind its place in `data`.
        const states = (data[kind] ??= Object.create(null) as NameTable<unknown>); // as in nameTable
        out.data ??= data;
        if (name in states) throw new ConfigError("INVALID_NAME", `remote state "${name}" is defined twice`, { field: "remote state name" });
        states[name] = blocks[name];
      }
    }
  }
  for (const t of Object.values(data)) Object.setPrototypeOf(t, Object.prototype);
  return out;
}

/** Print a tool document: two-space indent, stable key order, trailing newline. */
export function formatToolJson(doc: ToolJson): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** Warnings for secrets a config would write into a file, each naming the variable to use instead (never the secret). */
export function secretWarnings(config: BackendConfigValues, where = "the tool JSON"): string[] {
  const values = config as unknown as Record<string, unknown>;
  return COMMON_FIELDS.filter((f) => f.secret && values[f.name] !== undefined).map(
    (f) => `${f.name} is written in plain text into ${where}; leave it out and set ${f.env[0] ?? "it in the environment"} instead`,
  );
}
