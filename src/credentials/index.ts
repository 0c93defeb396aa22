/**
 * The credentials layer's public face: settings resolved with the shared credentials
 * file, and the identity chain.
 */
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import { resolveSettings, type Env, type ResolvedBackendSettings } from "../resolve/settings.js";
import { describeIdentityPlan } from "./chain.js";
import { sharedFileProfileLoader } from "./shared-file.js";

export { resolveIdentity, describeIdentityPlan, type Identity, type ChainOptions } from "./chain.js";
export type { Clock } from "./refresh.js";

/**
 * Effective settings including the selected profile of the shared credentials file
 * (docs/design.md §4): explicit > env > profile > default, with provenance. This is what the
 * backend and the CLI use.
 */
export function resolveEffectiveSettings(
  config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig,
  env: Env = process.env,
  options: { onWarning?: ((message: string, code: string) => void) | undefined } = {},
): ResolvedBackendSettings {
  return resolveSettings(config as ObjectStoreBackendConfig, env, { profileLoader: sharedFileProfileLoader({ env, onWarning: options.onWarning }) });
}

/**
 * One line saying where the identity will come from, without contacting anything and
 * without values, e.g. `static keys (env:PROVIDER_ACCESS_KEY)` or `aws:profile:dev (…)`.
 * `env` must be the one the settings were resolved with.
 */
export function describeCredentialSource(settings: ResolvedBackendSettings, env: Env = process.env): string {
  return describeIdentityPlan(settings, env);
}
