/** The `encryption` setting: OpenTofu's JSON encryption block from the `--config` file or `TF_ENCRYPTION`, merged as OpenTofu merges them. */
import { checkEncryptionConfig, encryptionConfigFromEnv, mergeEncryptionConfigs, parseEncryptionConfig, type EncryptionConfig } from "../encryption/index.js";
import { originLabel, type SettingOrigin } from "./setting-parsers.js";

/** `TF_ENCRYPTION`'s text; undefined when blank. `partial`: references are checked after a merge. */
export function encryptionFromEnvText(raw: unknown, partial: boolean): EncryptionConfig | undefined {
  const cfg = encryptionConfigFromEnv({ ...process.env, TF_ENCRYPTION: typeof raw === "string" ? raw : JSON.stringify(raw) }, partial);
  return cfg === undefined || partial ? cfg : checkEncryptionConfig(cfg, "TF_ENCRYPTION");
}

/** The file's `objstate.encryption` object. */
export function encryptionFromFile(raw: unknown, at: SettingOrigin, partial: boolean): EncryptionConfig {
  const source = originLabel(at);
  const cfg = parseEncryptionConfig(raw, { source, literalSecrets: false, partial });
  return partial ? cfg : checkEncryptionConfig(cfg, source);
}

/** Both given: the variable's blocks and chains over the file's, then the references checked. */
export function mergeEncryptionSettings(file: { raw: unknown; at: SettingOrigin }, env: { raw: unknown; at: SettingOrigin }): EncryptionConfig | undefined {
  const merged = mergeEncryptionConfigs(encryptionFromFile(file.raw, file.at, true), encryptionFromEnvText(env.raw, true));
  return merged === undefined ? undefined : checkEncryptionConfig(merged, `${originLabel(file.at)} with TF_ENCRYPTION over it`);
}

/** One line for `objstate config`: the state's methods in order and where each passphrase comes from, never its value. */
export function describeEncryption(cfg: EncryptionConfig | undefined): string {
  if (cfg === undefined || cfg.state === undefined) return "off (states are stored as they are)";
  const chain = cfg.state.methods.join(", then ");
  const keys = [...cfg.keyProviders.values()].map((kp) =>
    kp.type === "pbkdf2" ? `${kp.address} passphrase <redacted> (${kp.passphrase.source})` : kp.address,
  );
  return `state: ${chain}${cfg.state.enforced ? " (enforced)" : ""}${keys.length === 0 ? "" : `; ${keys.join("; ")}`}`;
}
