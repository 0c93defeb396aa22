/**
 * What the AWS shared config and credentials files say about one profile, read without
 * running anything: which kind of credentials it holds, in `fromIni`'s order. It names the
 * source for `objstate config` and explains why a profile gave nothing; credentials always
 * come from the SDK's providers (aws-chain.ts). No value is ever shown.
 */
import * as path from "node:path";
import type { Env } from "../resolve/settings.js";
import { describeReadProblem, FILE_LIMITS, ReadFileError, readBoundedFile } from "../io/read-file.js";
import { expandHome } from "./shared-file.js";

/** The two files, as the SDK finds them: `AWS_CONFIG_FILE` / `AWS_SHARED_CREDENTIALS_FILE`, else under `~/.aws`. */
export interface AwsFiles {
  readonly config: string;
  readonly credentials: string;
}

const set = (v: string | undefined): v is string => v !== undefined && v !== "";

/** Where the SDK reads its files under `env` (`~` expanded against HOME, as the SDK does). */
function awsFiles(env: Env): AwsFiles {
  const home = (p: string): string => expandHome(p, env);
  return {
    config: home(set(env["AWS_CONFIG_FILE"]) ? env["AWS_CONFIG_FILE"] : path.join("~", ".aws", "config")),
    credentials: home(set(env["AWS_SHARED_CREDENTIALS_FILE"]) ? env["AWS_SHARED_CREDENTIALS_FILE"] : path.join("~", ".aws", "credentials")),
  };
}

/** The kind of credentials a profile holds, in `fromIni`'s order. */
export type ProfileKind = "role" | "keys" | "web-identity" | "process" | "sso";

export type ProfileView =
  | { readonly found: false; readonly name: string; readonly files: AwsFiles; readonly problems: readonly string[] }
  | {
      readonly found: true;
      readonly name: string;
      readonly files: AwsFiles;
      readonly problems: readonly string[];
      readonly kind: ProfileKind | undefined;
      readonly file: string;
      readonly keys: ReadonlyMap<string, string>;
    };

type Sections = Map<string, Map<string, string>>;

/**
 * The sections of an INI text as the SDK's parser reads them: `#` and `;` start a comment at
 * the start of a line or after a space; `key =` with nothing after it opens a sub-section
 * whose indented lines are `key.sub`.
 */
export function parseIni(text: string): Sections {
  const out: Sections = new Map();
  let current: Map<string, string> | undefined;
  let sub: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = (raw.split(/(^|\s)[;#]/)[0] as string).trim();
    if (line.startsWith("[") && line.endsWith("]")) {
      const name = line.slice(1, -1).trim();
      sub = undefined;
      current = out.get(name) ?? new Map<string, string>();
      out.set(name, current);
      continue;
    }
    const eq = line.indexOf("=");
    if (current === undefined || eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    if (value === "") {
      sub = key;
      continue;
    }
    if (sub !== undefined && raw.trimStart() === raw) sub = undefined;
    current.set(sub === undefined ? key : `${sub}.${key}`, value);
  }
  return out;
}

function readIni(file: string, problems: string[]): Sections {
  try {
    return parseIni(readBoundedFile(file, FILE_LIMITS.credentials).bytes.toString("utf8"));
  } catch (e) {
    // The SDK reads a file it cannot read as empty; say why, so the reason is not a mystery.
    if (e instanceof ReadFileError && e.problem.kind !== "missing") problems.push(`${file} ${describeReadProblem(e.problem)}`);
    else if (!(e instanceof ReadFileError)) problems.push(`${file} could not be read`);
    return new Map();
  }
}

/** The config file's section of a profile: `[default]` (or `[profile default]`), `[profile NAME]`. */
function configSection(sections: Sections, name: string): Map<string, string> | undefined {
  for (const [header, keys] of sections) {
    const m = /^profile\s+(["']?)(.+)\1$/.exec(header);
    if ((m !== null && m[2] === name) || (header === "default" && name === "default")) return keys;
  }
  return undefined;
}

function kindOf(keys: ReadonlyMap<string, string>): ProfileKind | undefined {
  const has = (k: string): boolean => keys.has(k);
  if (has("role_arn") && has("source_profile") !== has("credential_source")) return "role";
  if (has("aws_access_key_id") && has("aws_secret_access_key")) return "keys";
  if (has("web_identity_token_file") && has("role_arn")) return "web-identity";
  if (has("credential_process")) return "process";
  if (["sso_start_url", "sso_account_id", "sso_session", "sso_region", "sso_role_name"].some(has)) return "sso";
  return undefined;
}

/** Read the selected profile from both files (the credentials file's keys win, as in the SDK). */
export function readAwsProfile(env: Env): ProfileView {
  const files = awsFiles(env);
  const name = set(env["AWS_PROFILE"]) ? env["AWS_PROFILE"] : "default";
  const problems: string[] = [];
  const fromConfig = configSection(readIni(files.config, problems), name);
  const fromCredentials = readIni(files.credentials, problems).get(name);
  if (fromConfig === undefined && fromCredentials === undefined) return { found: false, name, files, problems };
  const keys = new Map([...(fromConfig ?? []), ...(fromCredentials ?? [])]);
  // Name the file whose keys decide the kind (the credentials file's, when they do).
  const file = fromCredentials !== undefined && (fromConfig === undefined || kindOf(fromCredentials) !== undefined) ? files.credentials : files.config;
  return { found: true, name, files, problems, kind: kindOf(keys), file, keys };
}
