/** The credentials layer's public face: settings resolved with the shared credentials file, and the identity chain. */
export { resolveIdentity, describeCredentialSource, type Identity, type ChainOptions } from "./chain.js";
export { resolveEffectiveSettings } from "./shared-file.js";
export type { Clock } from "./refresh.js";
