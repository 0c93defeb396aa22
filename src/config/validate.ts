import { redactUrl } from "../util/redact.js";
import { ConfigError } from "./errors.js";
import type { FieldSpec } from "./fields.js";

/** How a value is shown in an error: secrets by type only, others briefly. */
export function describeValue(value: unknown, secret: boolean): string {
  const kind = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : `a ${typeof value}`;
  if (secret) return kind;
  if (typeof value === "string") {
    // Credentials in a URL go before truncation, which could cut the text mid-password.
    const shown = redactUrl(value);
    return JSON.stringify(shown.length > 60 ? `${shown.slice(0, 57)}...` : shown);
  }
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value);
  return kind;
}

function typeMatches(type: FieldSpec["rule"]["type"], value: unknown): boolean {
  if (type === "object") return typeof value === "object" && value !== null && !Array.isArray(value);
  return typeof value === type;
}

/**
 * Throw a {@link ConfigError} unless `value` (already known to be set) satisfies the
 * field's rule. `path` names the field (`assumeRole.roleArn` inside the block); when the
 * value came from the environment, `variable` names the variable in the message too.
 */
export function checkValue(field: FieldSpec, value: unknown, path: string = field.name, variable?: string): void {
  const rule = field.rule;
  const typeOk = typeMatches(rule.type, value);
  const valid = rule.valid as ((v: unknown) => boolean) | undefined;
  if (typeOk && (valid === undefined || valid(value))) return;
  // Messages are built only on failure: this runs for every field of every object.
  const label = variable === undefined ? path : `${variable} (for ${path})`;
  const code = typeOk ? (rule.code ?? "INVALID_VALUE") : "INVALID_TYPE";
  throw new ConfigError(code, `${label} must be ${rule.expected}, got ${describeValue(value, field.secret)}`, { field: path, variable });
}

/**
 * Turn an environment variable's text into the field's type, or throw a
 * {@link ConfigError} naming the variable. Numbers must be written as integers.
 */
export function parseEnvValue(field: FieldSpec, variable: string, text: string): unknown {
  let value: unknown = text;
  if (field.kind === "number") {
    const t = text.trim();
    if (!/^[+-]?\d+$/.test(t)) {
      const shown = field.secret ? "a string" : JSON.stringify(text);
      throw new ConfigError("INVALID_VALUE", `${variable} (for ${field.name}) must be ${field.rule.expected}, got ${shown}`, { field: field.name, variable });
    }
    value = Number(t);
  } else if (field.kind === "boolean") {
    const t = text.trim().toLowerCase();
    if (t === "true" || t === "1") value = true;
    else if (t === "false" || t === "0") value = false;
    else
      throw new ConfigError("INVALID_VALUE", `${variable} (for ${field.name}) must be true or false, got ${field.secret ? "a string" : JSON.stringify(text)}`, {
        field: field.name,
        variable,
      });
  }
  checkValue(field, value, field.name, variable);
  return value;
}

/** Levenshtein distance, for "did you mean" suggestions. */
export function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0] as number;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j] as number;
      prev[j] = Math.min(up + 1, (prev[j - 1] as number) + 1, diag + (a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length] as number;
}

/** The candidate nearest to `name`, when it is near enough to be a likely typo. */
export function nearest(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}
