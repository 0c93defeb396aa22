/** The settings table as text: docs/settings.md (scripts/gen-docs.mjs) and the `objstate help settings` topic. */
import { SETTINGS_TABLE, type SettingSpec } from "./settings-table.js";

function flagText(r: SettingSpec): string {
  if (r.flag === undefined) return "(no flag)";
  return `${r.short === undefined ? "" : `${r.short}, `}${r.flag}${r.arg === undefined ? "" : ` ${r.arg}`}${r.repeatable === true ? " (repeatable)" : ""}`;
}

const cell = (text: string): string => text.replace(/\|/g, "\\|");

/** docs/settings.md: one table row per setting. */
export function settingsReferenceMarkdown(): string {
  const lines = [
    "# Settings that are not fields",
    "",
    "<!-- Generated from src/config/settings-table.ts by `npm run docs`; do not edit. -->",
    "",
    "objstate's own settings, beside the seed's fields (docs/fields.md). Each is a flag on the commands listed, a key of the",
    '`objstate` section of a `--config` file (`{"bucket": …, "objstate": {"lockTtl": "1m"}}`) and, for some, an',
    "environment variable. Precedence: flag > `--config` file > environment > default. A bad value is refused",
    "(exit 2) with a message naming the flag, the file and key, or the variable.",
    "",
    "| Setting | Flag | File key | Variable | Default | Commands | Description |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of SETTINGS_TABLE as readonly SettingSpec[]) {
    const env = r.env === undefined ? "" : `\`${r.env}\``;
    const def = r.defaultText === undefined ? "" : `\`${r.defaultText}\``;
    lines.push(`| \`${r.name}\` | \`${flagText(r)}\` | \`objstate.${r.name}\` | ${env} | ${def} | ${cell(r.commands.join(", "))} | ${cell(r.doc)} |`);
  }
  return `${lines.join("\n")}\n`;
}

/** `objstate help settings`: every setting once, with its flag, file key, variable, default and commands. */
export function settingsTopicText(): string {
  const out = [
    "Settings that are not fields of the backend config (the field flags, such as --bucket, are in each command's --help).",
    'Each is a flag on the commands named, a key of the --config file\'s "objstate" section, and for some an environment',
    "variable. Precedence: flag > --config file > environment > default.",
    "",
  ];
  for (const group of ["shared", "server"] as const) {
    out.push(group === "shared" ? "Shared settings:" : "Server (objstate serve):");
    for (const r of (SETTINGS_TABLE as readonly SettingSpec[]).filter((x) => x.group === group)) {
      out.push(`  ${flagText(r)}`);
      out.push(`      ${r.doc}`);
      const facts = [
        `file: objstate.${r.name}`,
        r.env === undefined ? undefined : `env: ${r.env}`,
        r.defaultText === undefined ? undefined : `default: ${r.defaultText}`,
      ].filter((x) => x !== undefined);
      out.push(`      [${facts.join("; ")}]`);
      if (group === "shared") out.push(`      on: ${r.commands.join(", ")}`);
    }
    out.push("");
  }
  return out.join("\n");
}
