import type { ConfigObject } from "./base.js";
import { ConfigError } from "./errors.js";
import type { FieldSpec } from "./fields.js";

function parseVersion(v: string, label: string): [number, number, number] {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(v.trim());
  if (m === null) throw new ConfigError("INVALID_VERSION", `${label} must be a version such as 1.1.0, got ${JSON.stringify(v)}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

const older = (a: [number, number, number], b: [number, number, number]): boolean => (a[0] - b[0] || a[1] - b[1] || a[2] - b[2]) < 0;

/**
 * Names of the fields set on `config` that the given tool version does not know yet (the seed's "Available from" column).
 * @example checkToolVersion(config, "0.12.7") // → ["profile"] when profile is set
 */
export function checkToolVersion(config: ConfigObject, toolVersion: string): string[] {
  const target = parseVersion(toolVersion, "tool version");
  const fields = (config.constructor as unknown as { readonly fields: readonly FieldSpec[] }).fields;
  const values = config as unknown as Record<string, unknown>;
  return fields.filter((f) => f.since !== undefined && values[f.name] !== undefined && older(target, parseVersion(f.since, f.name))).map((f) => f.name);
}
