/**
 * Synthesis for the real tool: the seed's config objects as the configuration of its `s3`, `oss` or `http` backend.
 * Every field goes through its row of the mapping table (src/config/mapping.ts); nothing here knows a field by name.
 */
import { DEFAULT_LAYOUT, isLayoutName, LAYOUT_NAMES, type LayoutName } from "./layout.js";
import { ConfigError } from "./errors.js";
import { ASSUME_ROLE_FIELDS, COMMON_FIELDS, type FieldSpec } from "./fields.js";
import {
  TERRAFORM_BACKEND_SPECS,
  TERRAFORM_BACKENDS,
  TERRAFORM_MAPPING,
  type ArgumentCell,
  type MappingCell,
  type MappingRow,
  type TerraformBackendType,
} from "./mapping.js";
import { nameTable, RULES } from "./rules.js";
import type { BackendConfigValues, JsonObject, RemoteStateConfigValues } from "./types.js";

export type { TerraformBackendType } from "./mapping.js";
export type { LayoutName } from "./layout.js";

interface CommonOptions {
  /** objstate's `--lockfile`: the s3 backend's `use_lockfile` (an error for oss; for http the server holds it). */
  readonly lockfile?: boolean | undefined;
}

/** The s3 or oss backend for the config's bucket and table. */
export interface TerraformStoreBackendOptions extends CommonOptions {
  readonly backend: "s3" | "oss";
  /** objstate's `--layout` with this config: only {@link terraformWarnings} reads it. */
  readonly layout?: LayoutName | undefined;
}

/** The http backend of `objstate serve`, which holds the store settings itself. */
export interface TerraformHttpBackendOptions extends CommonOptions {
  readonly backend: "http";
  /** Where clients reach `objstate serve`: `http(s)://host[:port]`, no credentials. */
  readonly serveUrl: string;
  /** The user to log in as (HTTP Basic). The password is never written: the tool reads `TF_HTTP_PASSWORD`. */
  readonly username?: string | undefined;
  /** The workspace whose address is written (`/state/{workspace}`; default `default`). */
  readonly workspace?: string | undefined;
}

/** Which of the tool's backends to write, and what that backend needs besides the config. */
export type TerraformBackendOptions = TerraformStoreBackendOptions | TerraformHttpBackendOptions;

/** Which backend a `terraform_remote_state` reads through: the workspace is the config's own. */
export type TerraformRemoteStateOptions = Omit<TerraformStoreBackendOptions, "lockfile"> | Omit<TerraformHttpBackendOptions, "workspace" | "lockfile">;

/** `{"terraform": {"backend": {TYPE: {…}}}}`. */
export interface TerraformBackendJson {
  terraform: { backend: { [type: string]: JsonObject } };
}

/** The body of one `data.terraform_remote_state` block. */
export interface TerraformRemoteStateBlock {
  backend: TerraformBackendType;
  config: JsonObject;
  defaults?: JsonObject;
  workspace?: string;
}

/** `{"data": {"terraform_remote_state": {NAME: {…}}}}`. */
export interface TerraformRemoteStateJson {
  data: { terraform_remote_state: { [name: string]: TerraformRemoteStateBlock } };
}

type AnyConfig = BackendConfigValues | RemoteStateConfigValues;

/** The options each backend takes. */
const KEYS: Readonly<Record<string, readonly string[]>> = {
  s3: ["backend", "lockfile", "layout"],
  oss: ["backend", "lockfile", "layout"],
  http: ["backend", "lockfile", "serveUrl", "username", "workspace"],
};

const shown = (v: unknown): string => JSON.stringify(v) ?? String(v);

/** Throw unless `options` names a backend and gives it what it needs (and nothing it does not take). */
export function checkTerraformOptions(options: unknown, remote = false): asserts options is TerraformBackendOptions {
  const refuse = (code: "INVALID_VALUE" | "INVALID_PROPS" | "INVALID_TYPE" | "REQUIRED", field: string, message: string): never => {
    throw new ConfigError(code, message, { field });
  };
  if (typeof options !== "object" || options === null) refuse("INVALID_PROPS", "backend", `options must be an object such as { backend: "s3" }`);
  const o = options as Record<string, unknown>;
  const backend = o["backend"];
  if (typeof backend !== "string" || !(TERRAFORM_BACKENDS as readonly string[]).includes(backend))
    refuse("INVALID_VALUE", "backend", `backend must be one of ${TERRAFORM_BACKENDS.join(", ")}, got ${shown(backend)}`);
  for (const k of Object.keys(o)) {
    const readOnly = remote && (k === "workspace" || k === "lockfile");
    if (o[k] === undefined || (KEYS[backend as string]?.includes(k) === true && !readOnly)) continue;
    const why = readOnly ? "a remote state reads the workspace of its config and takes no lock" : `the ${backend as string} backend does not take it`;
    refuse("INVALID_PROPS", k, `${k} is not an option for backend ${backend as string}: ${why}`);
  }
  if (o["lockfile"] !== undefined && typeof o["lockfile"] !== "boolean") refuse("INVALID_TYPE", "lockfile", `lockfile must be a boolean (true or false)`);
  if (o["layout"] !== undefined && !isLayoutName(o["layout"]))
    refuse("INVALID_VALUE", "layout", `layout must be ${LAYOUT_NAMES.map((n) => JSON.stringify(n)).join(" or ")}, got ${shown(o["layout"])}`);
  if (backend !== "http") return;
  const url = o["serveUrl"];
  if (typeof url !== "string" || url === "")
    refuse("REQUIRED", "serveUrl", `serveUrl is required for the http backend: the URL clients reach objstate serve by, such as http://127.0.0.1:8080`);
  serveBase(url as string);
  const user = o["username"];
  if (user !== undefined && (typeof user !== "string" || !/^[^:\p{Cc}]+$/u.test(user)))
    refuse("INVALID_VALUE", "username", `username must be a non-empty user name without ':' or control characters (HTTP Basic cannot carry them)`);
  const w = o["workspace"];
  if (w !== undefined && (typeof w !== "string" || !RULES.workspace.valid(w)))
    refuse("INVALID_VALUE", "workspace", `workspace must be ${RULES.workspace.expected}, got ${JSON.stringify(w)}`);
}

/** `serveUrl` without a trailing `/`; refuses anything but an http(s) URL without credentials, query or fragment. */
function serveBase(serveUrl: string): string {
  const refuse = (problem: string): never => {
    throw new ConfigError("INVALID_VALUE", `serveUrl must ${problem}`, { field: "serveUrl" });
  };
  const example = "be an http:// or https:// URL of objstate serve, such as http://127.0.0.1:8080, got";
  const u = URL.canParse(serveUrl) ? new URL(serveUrl) : refuse(`${example} ${JSON.stringify(serveUrl)}`);
  if (u.protocol !== "http:" && u.protocol !== "https:") refuse(`${example} a ${u.protocol} URL`);
  // Credentials in the URL would be written into the file in plain text.
  if (u.username !== "" || u.password !== "") refuse(`not carry credentials: give the user as username (--username) and the password in TF_HTTP_PASSWORD`);
  if (u.search !== "" || u.hash !== "") refuse(`have no query or fragment: the tool adds ?ID= to the address when it writes under a lock`);
  return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
}

/** A value as the cell writes it; undefined when it writes nothing. */
function transformed(cell: ArgumentCell, field: string, backend: TerraformBackendType, v: unknown): unknown {
  switch (cell.transform) {
    case undefined:
      return v;
    case "nonEmpty":
      return v === "" ? undefined : v;
    case "list":
      return [v];
    case "seconds":
      return `${String(v)}s`;
    case "path":
      return (v as string).replace(/^\/+|\/+$/g, "");
    case "url":
    case "httpsHost": {
      const e = (v as string).trim().replace(/\/+$/, "");
      const refuse = (why: string): never => {
        throw new ConfigError("UNSUPPORTED_VALUE", `${field} ${JSON.stringify(e)} ${why} (synthesizing for the tool's ${backend} backend)`, { field });
      };
      if (/^file:/i.test(e))
        refuse("is objstate's embedded store, which the tool cannot reach: serve it with objstate serve and synthesize for the http backend");
      const scheme = /^(https?):\/\//i.exec(e);
      if (cell.transform === "url") return scheme === null ? `https://${e}` : e;
      if (scheme?.[1]?.toLowerCase() === "http") refuse("is plain http, but the tool reaches it over https only: give an https:// endpoint or a bare host");
      return scheme === null ? e : e.slice(scheme[0].length);
    }
  }
}

/** The backend's arguments for the store fields of `config`, refusing a set field it has no argument for and two fields writing one. */
function storeArguments(config: AnyConfig | undefined, backend: TerraformBackendType, lockfile: boolean | undefined): JsonObject {
  const out: JsonObject = {};
  const writers = new Map<string, string>(); // argument path → the field that wrote it
  const write = (field: string, cell: ArgumentCell, value: unknown): void => {
    const other = writers.get(cell.argument);
    if (other !== undefined)
      throw new ConfigError(
        "CONFLICTING_FIELDS",
        `${other} and ${field} both set ${cell.argument} of the tool's ${backend} backend: set only one of them (the flattened assumeRole* fields replace the deprecated assumeRole block)`,
        { field },
      );
    writers.set(cell.argument, field);
    for (const [path, x] of [[cell.argument, value], ...Object.entries(cell.alongside ?? {})] as const) {
      const parts = path.split(".");
      const last = parts.pop() as string;
      let at = out;
      for (const p of parts) at = (at[p] ??= {}) as JsonObject;
      at[last] = x;
    }
  };
  /** Write `field` (its row's cell for this backend) with value `v` (undefined: unset). */
  const each = (field: string, spec: FieldSpec | undefined, cell: MappingCell, v: unknown): void => {
    if (v === undefined) {
      if (cell.kind === "argument" && cell.whenUnset !== undefined) write(field, cell, cell.whenUnset === "default" ? spec?.default : cell.whenUnset);
    } else if (cell.kind === "none") {
      throw new ConfigError(
        "UNSUPPORTED_FIELD",
        `${field} is set, but the tool's ${backend} backend has no argument for it: leave ${field} unset to synthesize for ${backend} (${cell.hint})`,
        { field },
      );
    } else if (cell.kind === "argument") {
      const w = transformed(cell, field, backend, v);
      if (w !== undefined) write(field, cell, w);
    }
  };
  const values = (config ?? {}) as unknown as Record<string, unknown>;
  const rows = TERRAFORM_MAPPING as unknown as Readonly<Record<string, MappingRow>>;
  for (const f of COMMON_FIELDS) {
    const row = rows[f.name] as MappingRow;
    const v = values[f.name] as Record<string, unknown> | undefined;
    if (row[backend].kind !== "block" || v === undefined) each(f.name, f, row[backend], v);
    else for (const g of ASSUME_ROLE_FIELDS) each(`${f.name}.${g.name}`, g, (rows[`${f.name}.${g.name}`] as MappingRow)[backend], v[g.name]);
  }
  each("lockfile", undefined, TERRAFORM_MAPPING.lockfile[backend], lockfile === true ? true : undefined);
  // A nested argument written without the member the backend requires in it.
  for (const [parent, member] of Object.entries(TERRAFORM_BACKEND_SPECS[backend].requires)) {
    const nested = out[parent] as JsonObject | undefined;
    if (nested === undefined || nested[member] !== undefined) continue;
    const fields = [...writers].filter(([path]) => path.startsWith(`${parent}.`)).map(([, f]) => f);
    throw new ConfigError(
      "UNSUPPORTED_VALUE",
      `${fields.join(", ")} ${fields.length === 1 ? "is" : "are"} set, but no role ARN: the tool's ${backend} backend needs ${parent}.${member} with them. Set assumeRoleRoleArn, or leave the assume-role fields unset`,
      { field: fields[0] },
    );
  }
  return out;
}

/** The arguments of `options.backend` for `config`'s store (or, for http, for the server); `remoteWorkspace` for a remote state's read. */
function backendArguments(config: AnyConfig | undefined, options: TerraformBackendOptions, remoteWorkspace?: string): JsonObject {
  const out = storeArguments(config, options.backend, options.lockfile);
  if (options.backend !== "http") return out;
  const address = `${serveBase(options.serveUrl)}/state/${encodeURIComponent(remoteWorkspace ?? options.workspace ?? "default")}`;
  out["address"] = address;
  // The http backend has no default for these: unset means no locking at all.
  if (remoteWorkspace === undefined) Object.assign(out, { lock_address: address, unlock_address: address });
  if (options.username !== undefined) out["username"] = options.username;
  return out;
}

/**
 * The tool's backend configuration for `config`: `{"terraform": {"backend": {TYPE: {…}}}}`.
 *
 * @throws ConfigError `UNSUPPORTED_FIELD`, `UNSUPPORTED_VALUE`, `CONFLICTING_FIELDS`; `REQUIRED`,
 *   `INVALID_VALUE`, `INVALID_PROPS` for bad options.
 */
export function backendTerraformJson(config: BackendConfigValues, options: TerraformBackendOptions): TerraformBackendJson {
  checkTerraformOptions(options);
  return { terraform: { backend: { [options.backend]: backendArguments(config, options) } } };
}

/** The http backend of `objstate serve` without a config: the server holds every store setting. */
export function serveBackendTerraformJson(options: TerraformHttpBackendOptions): TerraformBackendJson {
  checkTerraformOptions(options);
  if (options.backend !== "http")
    throw new ConfigError("INVALID_VALUE", `backend must be http without a config: the s3 and oss backends need the config's bucket`, { field: "backend" });
  return { terraform: { backend: { http: backendArguments(undefined, options) } } };
}

/** The body of a `data.terraform_remote_state` block reading `config`'s state. */
export function remoteStateTerraformBlock(config: RemoteStateConfigValues, options: TerraformRemoteStateOptions): TerraformRemoteStateBlock {
  checkTerraformOptions(options, true);
  // The http backend has no workspaces: the workspace is in the address (the read needs no lock addresses).
  const workspace = config.workspace ?? "default";
  const block: TerraformRemoteStateBlock = { backend: options.backend, config: backendArguments(config, options as TerraformBackendOptions, workspace) };
  if (config.defaults !== undefined) block.defaults = config.defaults as JsonObject;
  if (config.workspace !== undefined && options.backend !== "http") block.workspace = config.workspace;
  return block;
}

/** `{"data": {"terraform_remote_state": {NAME: …}}}` for one named remote state (`name` already checked). */
export function remoteStateTerraformJson(name: string, config: RemoteStateConfigValues, options: TerraformRemoteStateOptions): TerraformRemoteStateJson {
  const block = remoteStateTerraformBlock(config, options);
  return { data: { terraform_remote_state: nameTable((t) => (t[name] = block)) } };
}

const defaultOf = (name: string): string => COMMON_FIELDS.find((f) => f.name === name)?.default as string;

/** Where each of the tool's store backends keeps the default workspace, as a layout. */
const BACKEND_LAYOUT: Readonly<Record<"s3" | "oss", LayoutName>> = { s3: "s3", oss: "seed" };

/**
 * Warnings about what synthesizing `config` writes: each secret written in plain text, naming the tool's variable to use
 * instead (never the value); for s3 and oss, a default workspace that is not the object objstate uses with `options.layout`.
 */
export function terraformWarnings(
  config: AnyConfig,
  options: TerraformBackendOptions | TerraformRemoteStateOptions,
  where = "the tool's configuration",
): string[] {
  const out: string[] = [];
  const values = config as unknown as Record<string, unknown>;
  const rows = TERRAFORM_MAPPING as unknown as Readonly<Record<string, MappingRow>>;
  for (const f of COMMON_FIELDS) {
    const cell = (rows[f.name] as MappingRow)[options.backend];
    if (f.secret && values[f.name] !== undefined && cell.kind === "argument")
      out.push(`${f.name} is written in plain text into ${where}; leave it out and set ${cell.env ?? "it in the environment"} instead`);
  }
  if (options.backend === "s3" || options.backend === "oss") {
    const ours = options.layout ?? DEFAULT_LAYOUT;
    const prefix = ((values["prefix"] as string | undefined) ?? defaultOf("prefix")).replace(/^\/+|\/+$/g, "");
    const workspace = "workspace" in config ? config.workspace : undefined;
    if (ours !== BACKEND_LAYOUT[options.backend] && prefix !== "" && (workspace === undefined || workspace === "default")) {
      const key = (values["key"] as string | undefined) ?? defaultOf("key");
      const same = `(other workspaces are the same, ${prefix}/NAME/${key})`;
      out.push(
        options.backend === "s3"
          ? `the tool's s3 backend keeps the default workspace's state at ${key}, objstate at ${prefix}/${key} (its seed layout): they are different objects ${same}. Use objstate with --layout s3 (or "layout": "s3" in the --config file's objstate section) to share them, set prefix to "", or move the state`
          : `the tool's oss backend keeps the default workspace's state at ${prefix}/${key}, objstate at ${key} (its s3 layout): they are different objects ${same}. Use objstate with its seed layout (no --layout s3) to share them, set prefix to "", or move the state`,
      );
    }
  }
  return out;
}
