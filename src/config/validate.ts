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

/** Throw a {@link ConfigError} unless `value` (set) satisfies the field's rule; `path` names the field, `variable` the variable it came from. */
export function checkValue(field: FieldSpec, value: unknown, path: string = field.name, variable?: string): void {
  const rule = field.rule;
  const typeOk = rule.type === "object" ? typeof value === "object" && value !== null && !Array.isArray(value) : typeof value === rule.type;
  const valid = rule.valid as ((v: unknown) => boolean) | undefined;
  if (typeOk && (valid === undefined || valid(value))) return;
  const label = variable === undefined ? path : `${variable} (for ${path})`;
  const code = typeOk ? (rule.code ?? "INVALID_VALUE") : "INVALID_TYPE";
  throw new ConfigError(code, `${label} must be ${rule.expected}, got ${describeValue(value, field.secret)}`, { field: path, variable });
}

/** An environment variable's text as the field's type (numbers written as integers), or a {@link ConfigError} naming the variable. */
export function parseEnvValue(field: FieldSpec, variable: string, text: string): unknown {
  const t = text.trim();
  const refuse = (expected: string): never => {
    const got = field.secret ? "a string" : JSON.stringify(text);
    throw new ConfigError("INVALID_VALUE", `${variable} (for ${field.name}) must be ${expected}, got ${got}`, { field: field.name, variable });
  };
  let value: unknown = text;
  if (field.kind === "number") value = /^[+-]?\d+$/.test(t) ? Number(t) : refuse(field.rule.expected);
  else if (field.kind === "boolean") value = /^(true|1)$/i.test(t) ? true : /^(false|0)$/i.test(t) ? false : refuse("true or false");
  checkValue(field, value, field.name, variable);
  return value;
}

/** Levenshtein distance, for "did you mean" suggestions. */
function editDistance(a: string, b: string): number {
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

/** `; did you mean X?` for the candidate nearest to `name` (shown by `show`) when it is a likely typo, else `; ${otherwise}`. */
export function suggestion(name: string, candidates: readonly string[], otherwise: string, show = (n: string): string => n): string {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? `; did you mean ${show(best)}?` : `; ${otherwise}`;
}
