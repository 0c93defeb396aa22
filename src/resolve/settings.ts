/**
 * Resolution (docs/design.md §4): every field's effective value and source. Precedence: explicit > environment
 * > the deprecated `assumeRole` block (without a flattened role ARN) > the profile > the standard AWS variables > default.
 */
import type { AssumeRoleTypes } from "../config/assume-role.js";
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { FieldSpec } from "../config/fields.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";
import type { KindValue } from "../config/types.js";
import { parseEnvValue } from "../config/validate.js";
import { printSafely, shownValue } from "../util/redact.js";

/** Where an effective value came from. */
export type SettingSource = "explicit" | `env:${string}` | `profile:${string}` | `aws:env:${string}` | "default" | "unset";

/** One effective value with its provenance; `value` is undefined exactly when `source` is `unset`. */
export interface ResolvedSetting<T> {
  readonly value: T | undefined;
  readonly source: SettingSource;
  /** Set when an explicit value came from inside the deprecated block (`assumeRole.roleArn`). */
  readonly via?: string;
}

type Fields = readonly FieldSpec[];
type ResolvedOf<T extends Fields> = {
  readonly [F in T[number] as F["name"]]: ResolvedSetting<KindValue<AssumeRoleTypes>[F["kind"]]>;
};

/** Effective settings of a backend config. */
export type ResolvedBackendSettings = ResolvedOf<typeof ObjectStoreBackendConfig.fields>;
/** Effective settings of a remote-state config (adds `defaults` and `workspace`). */
export type ResolvedRemoteStateSettings = ResolvedOf<typeof DataRemoteStateObjectStoreConfig.fields>;

/** Values a shared-credentials profile supplies, by field name (the credentials layer provides the loader). */
export interface ProfileLayer {
  readonly name: string;
  readonly values: Readonly<Record<string, unknown>>;
}

/** Loads the profile's values given the resolved profile name and credentials file path. */
export type ProfileLoader = (profile: string, sharedCredentialsFile: string) => ProfileLayer | undefined;

export interface ResolveOptions {
  /** Consulted only when a profile is set (explicitly or through `PROVIDER_PROFILE`). */
  readonly profileLoader?: ProfileLoader | undefined;
}

/** Environment map: `process.env` or any record of strings. */
export type Env = Readonly<Record<string, string | undefined>>;

type Mutable = Record<string, ResolvedSetting<unknown>>;

/** The standard AWS variables for fields the seed's sources leave unset, the service's own before the general one; validated when used. */
export const AWS_ENV: Readonly<Record<string, readonly string[]>> = {
  region: ["AWS_REGION", "AWS_DEFAULT_REGION"],
  endpoint: ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"],
  kvstoreEndpoint: ["AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"],
  stsEndpoint: ["AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL"],
};

/**
 * STS goes to the object-store endpoint when stsEndpoint is unset (credentials/chain.ts): an AWS
 * variable must not take that over from an http(s) endpoint of the seed's own sources.
 */
function seedStsFallback(out: Mutable): boolean {
  const store = out["endpoint"];
  return store !== undefined && !store.source.startsWith("aws:") && typeof store.value === "string" && !/^file:/i.test(store.value.trim());
}

/** The first of `names` set non-empty in `env`, its value parsed for `f`; `label` prefixes the source. */
function fromEnv(f: FieldSpec, names: readonly string[], env: Env, label: "env" | "aws:env"): ResolvedSetting<unknown> | undefined {
  const name = names.find((n) => (env[n] ?? "") !== "");
  return name === undefined ? undefined : { value: parseEnvValue(f, name, env[name] as string), source: `${label}:${name}` };
}

/**
 * The effective settings of `config` under `env`: every field with its value and provenance.
 * Environment values are validated like explicit ones (a bad one throws a {@link ConfigError}
 * naming the variable). The result and its entries print with secrets redacted; read a secret
 * through `.value`.
 */
export function resolveSettings(config: ObjectStoreBackendConfig, env?: Env, options?: ResolveOptions): ResolvedBackendSettings;
export function resolveSettings(config: DataRemoteStateObjectStoreConfig, env?: Env, options?: ResolveOptions): ResolvedRemoteStateSettings;
export function resolveSettings(
  config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig,
  env: Env = process.env,
  options: ResolveOptions = {},
): ResolvedBackendSettings | ResolvedRemoteStateSettings {
  const fields = (config.constructor as unknown as { readonly fields: Fields }).fields;
  const values = config as unknown as Record<string, unknown>;
  const out: Mutable = {};
  for (const f of fields) {
    const r = values[f.name] !== undefined ? { value: values[f.name], source: "explicit" as const } : fromEnv(f, f.env, env, "env");
    if (r !== undefined) out[f.name] = r;
  }
  const flatArn = out["assumeRoleRoleArn"];
  // The flattened fields win when a non-empty role ARN was given flattened (explicit or env).
  if (config.assumeRole !== undefined && (flatArn === undefined || flatArn.value === "")) {
    for (const [inner, v] of Object.entries(config.assumeRole)) {
      if (v !== undefined) out[`assumeRole${inner.charAt(0).toUpperCase()}${inner.slice(1)}`] = { value: v, source: "explicit", via: `assumeRole.${inner}` };
    }
  }

  const profile = out["profile"]?.value as string | undefined;
  if (profile !== undefined && profile !== "") {
    out["sharedCredentialsFile"] ??= { value: fields.find((f) => f.name === "sharedCredentialsFile")?.default, source: "default" };
    const layer = options.profileLoader?.(profile, out["sharedCredentialsFile"].value as string);
    for (const f of fields) {
      const v = layer?.values[f.name];
      if (v !== undefined) out[f.name] ??= { value: v, source: `profile:${layer?.name}` };
    }
  }
  for (const f of fields) {
    const names = AWS_ENV[f.name];
    const r =
      names === undefined || out[f.name] !== undefined || (f.name === "stsEndpoint" && seedStsFallback(out)) ? undefined : fromEnv(f, names, env, "aws:env");
    if (r !== undefined) out[f.name] = r;
  }
  for (const f of fields) {
    // sharedCredentialsFile's default applies only when a profile is given (above).
    out[f.name] ??=
      f.default !== undefined && f.name !== "sharedCredentialsFile" ? { value: f.default, source: "default" } : { value: undefined, source: "unset" };
    printSafely(out[f.name] as ResolvedSetting<unknown>, "ResolvedSetting", (r) => shownSetting(r, f.secret));
  }
  const secret = new Set(fields.filter((f) => f.secret).map((f) => f.name));
  printSafely(out, "ResolvedSettings", (all) => Object.fromEntries(Object.entries(all).map(([name, r]) => [name, shownSetting(r, secret.has(name))])));
  return out as unknown as ResolvedBackendSettings;
}

/** A setting as it may be printed: secret values redacted, URL credentials removed. */
function shownSetting(r: ResolvedSetting<unknown>, secret: boolean): Record<string, unknown> {
  const value = r.value !== null && typeof r.value === "object" ? ((r.value as { toJSON?: () => unknown }).toJSON?.() ?? r.value) : shownValue(r.value, secret);
  return { value, source: r.source, ...(r.via === undefined ? {} : { via: r.via }) };
}
