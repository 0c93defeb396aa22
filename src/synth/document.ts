import { ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../config/backend-config.js";
import { ConfigError } from "../config/errors.js";
import { isPlainObject } from "../config/rules.js";
import { suggestion } from "../config/validate.js";
import { DataRemoteStateObjectStoreConfig, type DataRemoteStateObjectStoreConfigProps } from "../config/remote-state-config.js";
import { checkName, mergeToolJson, remoteStateToolJson, secretWarnings, type ToolJson } from "../config/tool-json.js";
import {
  checkTerraformOptions,
  remoteStateTerraformJson,
  terraformWarnings,
  type TerraformBackendOptions,
  type TerraformRemoteStateOptions,
} from "../config/terraform-json.js";

/** The props document `objstate synth` reads: one backend, any number of named remote states. */
export interface SynthInput {
  backend?: ObjectStoreBackendConfigProps;
  remoteStates?: Record<string, DataRemoteStateObjectStoreConfigProps>;
}

const TOP_KEYS = ["backend", "remoteStates"];

function within<T>(where: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof ConfigError)
      throw new ConfigError(e.code, `${where}: ${e.message}`, { field: e.field === undefined ? where : `${where}.${e.field}`, variable: e.variable, cause: e });
    throw e;
  }
}

/** The options of a remote state read through the same backend as `target` (its workspace is the config's own). */
function remoteTarget(target: TerraformBackendOptions): TerraformRemoteStateOptions {
  return target.backend === "http"
    ? { backend: "http", serveUrl: target.serveUrl, username: target.username }
    : { backend: target.backend, layout: target.layout };
}

/**
 * Build every config in a {@link SynthInput}: the merged document (the real tool's with `target`,
 * else the seed's tool JSON) and warnings; errors name their block (`backend`, `remoteStates.net`).
 */
export function synthesizeProps(input: unknown, target?: TerraformBackendOptions): { doc: ToolJson; warnings: string[] } {
  if (target !== undefined) checkTerraformOptions(target);
  if (!isPlainObject(input)) throw new ConfigError("INVALID_PROPS", `the document must be a JSON object with "backend" and/or "remoteStates"`);
  for (const k of Object.keys(input)) {
    if (!TOP_KEYS.includes(k)) {
      const hint = suggestion(k, TOP_KEYS, `expected "backend" and/or "remoteStates"`, (n) => `"${n}"`);
      throw new ConfigError("UNKNOWN_FIELD", `"${k}" is not a key of the document${hint}`, { field: k });
    }
  }
  const docs: ToolJson[] = [];
  const warnings: string[] = [];
  if (input["backend"] !== undefined) {
    const config = within("backend", () => ObjectStoreBackendConfig.from(input["backend"] as ObjectStoreBackendConfigProps));
    docs.push(target === undefined ? config.toToolJson() : within("backend", () => config.toTerraformJson(target)));
    warnings.push(...(target === undefined ? secretWarnings(config) : terraformWarnings(config, target)).map((w) => `backend: ${w}`));
  }
  const remotes = input["remoteStates"];
  if (remotes !== undefined) {
    if (!isPlainObject(remotes)) throw new ConfigError("INVALID_PROPS", `remoteStates must be an object of name → props`, { field: "remoteStates" });
    for (const [name, props] of Object.entries(remotes)) {
      // What `new DataRemoteStateObjectStore(name, props).toToolJson()` does, without the
      // construct, which lives above (it also reads outputs at run time).
      const config = within(`remoteStates.${name}`, () => {
        checkName(name, "remote state name");
        return DataRemoteStateObjectStoreConfig.from(props as DataRemoteStateObjectStoreConfigProps);
      });
      const t = target === undefined ? undefined : remoteTarget(target);
      docs.push(t === undefined ? remoteStateToolJson(name, config) : within(`remoteStates.${name}`, () => remoteStateTerraformJson(name, config, t)));
      warnings.push(...(t === undefined ? secretWarnings(config) : terraformWarnings(config, t)).map((w) => `remoteStates.${name}: ${w}`));
    }
  }
  return { doc: mergeToolJson(...docs), warnings };
}
