/** A command's parsed options, typed (program.ts casts commander's once): the settings table's flags, the field flags and the commands' own. */
import type { COMMON_FIELDS } from "../config/fields.js";
import type { SettingFlags } from "../config/settings-table.js";

/** One flag per field: text, or a switch for a boolean field (`--encrypt` / `--no-encrypt`). */
type FieldFlags = { readonly [F in (typeof COMMON_FIELDS)[number] as F["name"]]?: F["kind"] extends "boolean" ? boolean : string };

/** The options of the commands themselves (not settings), by commander's attribute name. */
interface CommandFlags {
  readonly config?: string;
  readonly workspace?: string;
  readonly defaults?: string;
  readonly json?: boolean;
  readonly force?: boolean;
  readonly yes?: boolean;
  readonly lock?: "true" | "false";
  readonly lockId?: string;
  readonly limit?: string;
  readonly from?: string;
  readonly to?: string;
  readonly version?: string;
  readonly versionId?: string;
  readonly olderThan?: string;
  readonly operation?: string;
  readonly info?: string;
  readonly raw?: boolean;
  readonly rawEnvelope?: boolean;
  readonly all?: boolean;
  readonly showSensitive?: boolean;
  readonly createBucket?: boolean;
  readonly createTable?: boolean;
  readonly versioning?: boolean;
  readonly keepDays?: string;
  readonly keepVersions?: string;
  readonly for?: "s3" | "oss" | "http";
  readonly serveUrl?: string;
  readonly username?: string;
  readonly user?: string;
  readonly role?: string[];
  readonly ttl?: string;
}

export type Opts = Omit<FieldFlags, keyof CommandFlags> & SettingFlags & CommandFlags;
