import { ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../config/backend-config.js";
import { ConfigError } from "../config/errors.js";
import { isPlainObject } from "../config/rules.js";
import { nearest } from "../config/validate.js";
import { DataRemoteStateObjectStore } from "../remote-state/data-remote-state.js";
import type { DataRemoteStateObjectStoreConfigProps } from "../config/remote-state-config.js";
import { mergeToolJson, secretWarnings, type ToolJson } from "./tool-json.js";

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
    if (e instanceof ConfigError) {
      throw new ConfigError(e.code, `${where}: ${e.message}`, { field: e.field === undefined ? where : `${where}.${e.field}`, variable: e.variable, cause: e });
    }
    throw e;
  }
}

/**
 * Build every config in a {@link SynthInput} and return the merged tool document plus
 * warnings about secrets written in plain text. Errors name the block they are in
 * (`backend`, `remoteStates.net`).
 */
export function synthesizeProps(input: unknown): { doc: ToolJson; warnings: string[] } {
  if (!isPlainObject(input)) throw new ConfigError("INVALID_PROPS", `the document must be a JSON object with "backend" and/or "remoteStates"`);
  for (const k of Object.keys(input)) {
    if (!TOP_KEYS.includes(k)) {
      const near = nearest(k, TOP_KEYS);
      throw new ConfigError("UNKNOWN_FIELD", `"${k}" is not a key of the document${near === undefined ? `; expected "backend" and/or "remoteStates"` : `; did you mean "${near}"?`}`, { field: k });
    }
  }
  const docs: ToolJson[] = [];
  const warnings: string[] = [];
  if (input["backend"] !== undefined) {
    const config = within("backend", () => ObjectStoreBackendConfig.from(input["backend"] as ObjectStoreBackendConfigProps));
    docs.push(config.toToolJson());
    warnings.push(...secretWarnings(config).map((w) => `backend: ${w}`));
  }
  const remotes = input["remoteStates"];
  if (remotes !== undefined) {
    if (!isPlainObject(remotes)) throw new ConfigError("INVALID_PROPS", `remoteStates must be an object of name → props`, { field: "remoteStates" });
    for (const [name, props] of Object.entries(remotes)) {
      const remote = within(`remoteStates.${name}`, () => new DataRemoteStateObjectStore(name, props as DataRemoteStateObjectStoreConfigProps));
      docs.push(remote.toToolJson());
      warnings.push(...secretWarnings(remote.config).map((w) => `remoteStates.${name}: ${w}`));
    }
  }
  return { doc: mergeToolJson(...docs), warnings };
}
