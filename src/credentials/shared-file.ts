/** The shared credentials file (docs/design.md §4): `{"current", "profiles": [{"name", "mode", …}]}`; only the `profile` setting selects one, never `current`. */
import * as path from "node:path";
import { COMMON_FIELDS } from "../config/fields.js";
import { checkValue } from "../config/validate.js";
import { ObjstateError } from "../errors.js";
import { nodeOs } from "../util/builtins.js";
import { jsonSyntaxProblem } from "../json/syntax-error.js";
import { FILE_LIMITS, ReadFileError, readBoundedFile } from "../io/read-file.js";
import { resolveSettings, type Env, type ProfileLayer, type ResolvedBackendSettings } from "../resolve/settings.js";
import type { ObjectStoreBackendConfig } from "../config/backend-config.js";
import type { DataRemoteStateObjectStoreConfig } from "../config/remote-state-config.js";

/** Which file keys each mode lets count, and the field each one supplies. */
const FILE_KEYS = {
  access_key_id: { field: "accessKey", kind: "string" },
  access_key_secret: { field: "secretKey", kind: "string" },
  sts_token: { field: "securityToken", kind: "string" },
  ram_role_arn: { field: "assumeRoleRoleArn", kind: "string" },
  ram_session_name: { field: "assumeRoleSessionName", kind: "string" },
  expired_seconds: { field: "assumeRoleSessionExpiration", kind: "number" },
  ram_role_name: { field: "computeRoleName", kind: "string" },
  region_id: { field: "region", kind: "string" },
  name: { field: undefined, kind: "string" },
  mode: { field: undefined, kind: "string" },
} as const;
type FileKey = keyof typeof FILE_KEYS;

const MODES: Record<string, readonly FileKey[]> = {
  AK: ["access_key_id", "access_key_secret"],
  StsToken: ["access_key_id", "access_key_secret", "sts_token"],
  RamRoleArn: ["access_key_id", "access_key_secret", "ram_role_arn", "ram_session_name", "expired_seconds"],
  EcsRamRole: ["ram_role_name"],
};

/** `~` and `~/…` expanded against HOME (from the env map, else the OS). */
export function expandHome(p: string, env: Env): string {
  if (p !== "~" && !p.startsWith("~/")) return p;
  const home = env["HOME"] !== undefined && env["HOME"] !== "" ? env["HOME"] : nodeOs().homedir();
  return path.join(home, p.slice(1));
}

function fail(file: string, problem: string, cause?: unknown): never {
  throw new ObjstateError("CREDENTIALS_FILE_INVALID", `shared credentials file ${file}: ${problem}`, { cause, details: { file } });
}

/** The file's text and mode, bounded: a FIFO, a device or a file over `FILE_LIMITS.credentials` is refused at once. */
function readText(file: string, name: string): { text: string; mode: number | undefined } {
  try {
    const { bytes, mode } = readBoundedFile(file === "-" ? "./-" : file, FILE_LIMITS.credentials);
    return { text: bytes.toString("utf8"), mode };
  } catch (e) {
    if (!(e instanceof ReadFileError)) throw e;
    fail(file, e.kind === "missing" ? `does not exist (profile "${name}" was asked for)` : e.reason, e);
  }
}

function readProfile(file: string, text: string, name: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    const { problem, at } = jsonSyntaxProblem(e, text);
    // The cause stays off: JSON.parse's message may quote the file, and the file holds secrets.
    fail(file, `is not valid JSON${at === "" ? "" : ` ${at}`}: ${problem}`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) fail(file, 'must hold a JSON object with a "profiles" array');
  const profiles = (doc as { profiles?: unknown }).profiles;
  if (!Array.isArray(profiles)) fail(file, '"profiles" must be an array of profile objects');
  const names: string[] = [];
  let found: Record<string, unknown> | undefined;
  profiles.forEach((p: unknown, i) => {
    if (typeof p !== "object" || p === null || Array.isArray(p)) fail(file, `profiles[${i}] must be an object`);
    const n = (p as { name?: unknown }).name;
    if (typeof n !== "string") fail(file, `profiles[${i}].name must be a string`);
    names.push(n);
    if (n === name) found = p as Record<string, unknown>;
  });
  if (found === undefined) fail(file, `has no profile "${name}" (profiles there: ${names.length === 0 ? "none" : names.join(", ")})`);
  return found;
}

/** The settings a profile supplies, mode rules applied and values validated. */
function profileValues(file: string, name: string, profile: Record<string, unknown>): Record<string, unknown> {
  const where = `profile "${name}"`;
  const mode = profile["mode"];
  if (mode === undefined || mode === null || mode === "") fail(file, `${where} has no "mode" (one of ${Object.keys(MODES).join(", ")})`);
  if (typeof mode !== "string" || MODES[mode] === undefined)
    fail(file, `${where} has mode ${JSON.stringify(mode)}; expected one of ${Object.keys(MODES).join(", ")}`);
  const values: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(profile)) {
    const spec = FILE_KEYS[key as FileKey];
    if (spec === undefined || raw === undefined || raw === null || raw === "") continue;
    if (typeof raw !== spec.kind) fail(file, `${where}: "${key}" must be a ${spec.kind}, got ${Array.isArray(raw) ? "an array" : typeof raw}`);
    // region_id counts in any mode; the rest only in the modes that use them.
    if (spec.field === undefined || (key !== "region_id" && !(MODES[mode] as readonly FileKey[]).includes(key as FileKey))) continue;
    const field = COMMON_FIELDS.find((f) => f.name === spec.field);
    if (field === undefined) continue;
    try {
      checkValue(field, raw, field.name);
    } catch (e) {
      fail(file, `${where}: "${key}" ${(e as Error).message.replace(/^\S+ /, "")}`, e);
    }
    values[spec.field] = raw;
  }
  return values;
}

/** Settings with the selected profile: explicit > env > profile > default, with provenance; `onWarning`: a file other users can read or change. */
export function resolveEffectiveSettings(
  config: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig,
  env: Env = process.env,
  options: { onWarning?: ((message: string, code: string) => void) | undefined } = {},
): ResolvedBackendSettings {
  const profileLoader = (name: string, fileSetting: string): ProfileLayer => {
    const file = expandHome(fileSetting, env);
    const { text, mode } = readText(file, name);
    const profile = readProfile(file, text, name);
    // Group or others: readable leaks the keys; writable lets another user swap in their own.
    const readable = mode !== undefined && (mode & 0o044) !== 0;
    const writable = mode !== undefined && (mode & 0o022) !== 0;
    if (readable || writable) {
      const how = readable && writable ? "read and changed" : readable ? "read" : "changed";
      options.onWarning?.(
        `shared credentials file ${file} can be ${how} by other users; restrict it with chmod 600 ${file}`,
        readable ? "OBJSTATE_CREDENTIALS_FILE_READABLE" : "OBJSTATE_CREDENTIALS_FILE_WRITABLE",
      );
    }
    return { name, values: profileValues(file, name, profile) };
  };
  return resolveSettings(config as ObjectStoreBackendConfig, env, { profileLoader });
}
