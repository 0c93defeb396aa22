/**
 * State encryption in OpenTofu's format (issue 26): the configuration, and per target a
 * {@link StateEncryption} that writes and reads the v0 envelope. State I/O calls this;
 * nothing here knows of stores, locks or workspaces.
 */
export {
  checkEncryptionConfig,
  encryptionConfigFromEnv,
  mergeEncryptionConfigs,
  MIN_ITERATIONS,
  MIN_PASSPHRASE_LENGTH,
  parseEncryptionConfig,
  PBKDF2_DEFAULTS,
  Secret,
} from "./config.js";
export type {
  AesGcmMethodConfig,
  EncryptionConfig,
  ExternalProviderConfig,
  KeyProviderConfig,
  MethodConfig,
  ParseOptions,
  Pbkdf2ProviderConfig,
  TargetConfig,
  UnencryptedMethodConfig,
} from "./config.js";
export { EXTERNAL_TIMEOUT_MS, HEADER_MAGIC } from "./external.js";
export { pbkdf2Derivations } from "./pbkdf2.js";
export { ENCRYPTION_VERSION, isEnvelope, StateDecryptor, StateEncryption } from "./state-encryption.js";
export type { Decrypted, EncryptionTarget, Envelope, EnvelopeHeader, StateContext, StateEncryptionOptions } from "./state-encryption.js";
