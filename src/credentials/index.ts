/**
 * The credentials layer's public face: settings resolved with the shared credentials
 * file, and the identity chain.
 */
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { resolveSettings, type Env, type ResolvedBackendSettings } from "../resolve/settings.js";

export { resolveIdentity, type Identity } from "./chain.js";

/**
 * Effective settings including the selected profile of the shared credentials file (DESIGN §4).
 * This is what the backend and the CLI use.
 */
export function resolveEffectiveSettings(config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig, env: Env = process.env): ResolvedBackendSettings {
  return resolveSettings(config as ObjectStoreBackendConfig, env);
}

/**
 * One line saying where the identity will come from, without contacting anything and
 * without values, e.g. `static keys (env:PROVIDER_ACCESS_KEY)`.
 */
export function describeCredentialSource(settings: ResolvedBackendSettings): string {
  const ak = settings.accessKey;
  if (ak.value !== undefined && ak.value !== "") return `static keys (${ak.source})`;
  return "none found";
}
