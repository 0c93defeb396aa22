/** Parsers of the settings table's values (durations in ms, sizes in bytes); a bad value's error starts with where it came from. */
import { ObjstateError, type ErrorCode } from "../errors.js";
import { isLayoutName, LAYOUT_EXPECTED, type LayoutName } from "./layout.js";

/** Where a setting's value came from. */
export type SettingOrigin =
  | { readonly kind: "flag"; readonly flag: string }
  | { readonly kind: "file"; readonly file: string; readonly key: string }
  | { readonly kind: "env"; readonly variable: string }
  | { readonly kind: "default" };

/** How an origin is named in messages: `--timeout`, `c.json: objstate.timeout`, `OBJSTATE_TIMEOUT`, `the default`. */
export function originLabel(o: SettingOrigin): string {
  return o.kind === "flag" ? o.flag : o.kind === "file" ? `${o.file}: ${o.key}` : o.kind === "env" ? o.variable : "the default";
}

/** A bad value, naming where it came from; `details` say which flag, key or variable. */
export function settingError(code: ErrorCode, at: SettingOrigin, problem: string): ObjstateError {
  const where =
    at.kind === "flag" ? { flag: at.flag } : at.kind === "file" ? { file: at.file, key: at.key } : at.kind === "env" ? { variable: at.variable } : {};
  return new ObjstateError(code, `${originLabel(at)} ${problem}`, { details: where });
}

const got = (v: unknown): string => JSON.stringify(v) ?? String(v);

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** Milliseconds in `text` (`0s`, `500ms`, `30s`, `5m`, `1h30m`: Go style, and `30d` days), or undefined when it is not a duration. A bare `0` is zero. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (t === "0") return 0;
  if (!WHOLE.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(PART)) ms += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

/** A duration in ms, at least `minMs`. */
export function durationOf(raw: unknown, at: SettingOrigin, minMs = 0): number {
  const ms = typeof raw === "string" ? parseDuration(raw) : undefined;
  if (ms === undefined) throw settingError("INVALID_DURATION", at, `must be a duration such as 0s, 30s, 5m or 1h30m, got ${got(raw)}`);
  if (ms < minMs) throw settingError("INVALID_DURATION", at, `must be ${minMs === 1 ? "more than 0s" : `at least ${minMs / 1000}s`}, got ${got(raw)}`);
  return ms;
}

/** A lease: a duration of at least 1 s (a lease's expiry is stored in whole seconds). */
export function leaseOf(raw: unknown, at: SettingOrigin): number {
  const ms = typeof raw === "string" ? parseDuration(raw) : undefined;
  if (ms === undefined) throw settingError("INVALID_DURATION", at, `must be a duration such as 30s, 5m or 1h30m, got ${got(raw)}`);
  if (ms < 1000) throw settingError("INVALID_LOCK_TTL", at, `must be at least 1s (a lease's expiry is stored in whole seconds), got ${got(raw)}`);
  return ms;
}

const SIZE_UNITS: Readonly<Record<string, number>> = { "": 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, kb: 1000, mb: 1000 ** 2, gb: 1000 ** 3 };

/** `512MiB` → bytes (a JSON number is bytes). */
export function sizeOf(raw: unknown, at: SettingOrigin): number {
  const text = typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw : "";
  const m = /^(\d+)\s*([a-z]*)$/i.exec(text.trim());
  const unit = m === null ? undefined : SIZE_UNITS[(m[2] as string).toLowerCase()];
  if (m === null || unit === undefined || Number(m[1]) <= 0)
    throw settingError("INVALID_SIZE", at, `must be a size such as 1048576, 64KiB, 512MiB or 1GiB, got ${got(raw)}`);
  return Number(m[1]) * unit;
}

/** A whole number of at least 1 (text on the command line, a number or text in a file). */
export function countOf(raw: unknown, at: SettingOrigin): number {
  const text = typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw.trim() : "";
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1)
    throw settingError("INVALID_COUNT", at, `must be a whole number of at least 1, got ${got(raw)}`);
  return n;
}

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** `host:port`, `[::1]:port` or `:port` (loopback). */
export function listenOf(raw: unknown, at: SettingOrigin): ListenAddress {
  const m = typeof raw === "string" ? /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(raw.trim()) : null;
  const port = m === null ? NaN : Number(m[3]);
  if (m === null || port > 65535) throw settingError("INVALID_LISTEN", at, `must be HOST:PORT (127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080), got ${got(raw)}`);
  const host = m[1] ?? m[2] ?? "";
  return Object.freeze({ host: host === "" ? "127.0.0.1" : host, port });
}

export function layoutOf(raw: unknown, at: SettingOrigin): LayoutName {
  if (!isLayoutName(raw)) throw settingError("INVALID_LAYOUT", at, `${LAYOUT_EXPECTED}, got ${got(raw)}`);
  return raw;
}

/** One of `choices`. */
export function choiceOf<C extends string>(choices: readonly C[]): (raw: unknown, at: SettingOrigin) => C {
  return (raw, at) => {
    if (typeof raw !== "string" || !(choices as readonly string[]).includes(raw))
      throw settingError("INVALID_VALUE", at, `must be one of ${choices.join(", ")}, got ${got(raw)}`);
    return raw as C;
  };
}

/** A switch: true or false (`--x` / `--no-x`, a JSON boolean, or `true`/`false` in a variable). */
export function switchOf(raw: unknown, at: SettingOrigin): boolean {
  if (typeof raw === "boolean") return raw;
  if (at.kind === "env" && (raw === "true" || raw === "false")) return raw === "true";
  throw settingError("INVALID_VALUE", at, `must be true or false, got ${got(raw)}`);
}

/** A file path (read by the command that uses it, which names it in its own errors). */
export function pathOf(raw: unknown, at: SettingOrigin): string {
  if (typeof raw !== "string" || raw === "") throw settingError("INVALID_VALUE", at, `must be the path of a file, got ${got(raw)}`);
  return raw;
}

/** A list of texts (a repeatable flag; an array of strings, or one string, in a file). */
export function textsOf(raw: unknown, at: SettingOrigin): readonly string[] {
  const list = typeof raw === "string" ? [raw] : raw;
  if (!Array.isArray(list) || list.some((x) => typeof x !== "string")) throw settingError("INVALID_VALUE", at, `must be a list of strings, got ${got(raw)}`);
  return Object.freeze([...(list as string[])]);
}
