/** State encryption in OpenTofu's format (issue 26): the configuration, and per target a {@link StateEncryption}. */
export { checkEncryptionConfig, encryptionConfigFromEnv, mergeEncryptionConfigs, parseEncryptionConfig, Secret } from "./config.js";
export type { EncryptionConfig, Pbkdf2ProviderConfig } from "./config.js";
export { pbkdf2Derivations } from "./pbkdf2.js";
export { isEnvelope, StateEncryption } from "./state-encryption.js";
export type { Decrypted, EncryptionTarget } from "./state-encryption.js";
