/** The field reference (docs/fields.md), generated from the field table. */
import { ASSUME_ROLE_FIELDS, COMMON_FIELDS, REMOTE_STATE_EXTRA_FIELDS, type FieldSpec } from "./fields.js";
import { TERRAFORM_BACKEND_SPECS, TERRAFORM_BACKENDS, TERRAFORM_MAPPING, type MappingCell, type MappingRow } from "./mapping.js";

const TRANSFORM_NOTES = {
  url: "URL; a bare host as `https://host`; `file:` refused",
  httpsHost: "host[:port]; `http://` and `file:` refused",
  path: "trimmed of `/`",
  list: "a one-element list",
  seconds: '`"<n>s"`',
  nonEmpty: "not written when empty",
} as const;

const code = (text: string): string => `\`${text}\``;

function cellText(cell: MappingCell): string {
  switch (cell.kind) {
    case "none":
      return "none: an error when set";
    case "server":
      return "held by the server";
    case "block":
      return "its fields' rows below";
    case "argument": {
      const notes = [
        cell.transform === undefined ? "" : TRANSFORM_NOTES[cell.transform],
        cell.whenUnset === undefined ? "" : `written when unset: ${cell.whenUnset === "default" ? "the field's default" : `\`${String(cell.whenUnset)}\``}`,
        cell.alongside === undefined ? "" : `with ${Object.keys(cell.alongside).map(code).join(", ")}`,
        cell.env === undefined ? "" : `env ${code(cell.env)}`,
      ].filter((n) => n !== "");
      return `\`${cell.argument}\`${notes.length === 0 ? "" : ` (${notes.join("; ")})`}`;
    }
  }
}

function mappingTable(): string {
  const rows = Object.entries(TERRAFORM_MAPPING as unknown as Record<string, MappingRow>).map(
    ([field, row]) => `| \`${field}\` | ${TERRAFORM_BACKENDS.map((b) => cellText(row[b])).join(" | ")} |`,
  );
  return [`| field | ${TERRAFORM_BACKENDS.join(" | ")} |`, `|---|${TERRAFORM_BACKENDS.map(() => "---").join("|")}|`, ...rows].join("\n");
}

function table(fields: readonly FieldSpec[]): string {
  const rows = fields.map((f) =>
    [
      `\`${f.name}\``,
      `\`${f.jsonKey}\``,
      f.javaType.replace(/^java\.(lang|util)\./, "").replace(/java\.lang\./g, ""),
      f.required ? "yes" : "",
      f.env.map(code).join(", "),
      f.default === undefined ? "" : `\`${String(f.default)}\``,
      f.since === undefined ? "" : `${f.since}+`,
      [f.secret ? "secret" : "", f.deprecated ? "deprecated" : ""].filter(Boolean).join(", "),
      `${f.doc} Must be ${f.rule.expected}.`,
    ].join(" | "),
  );
  return [
    "| field | JSON key | type | required | env (first non-empty wins) | default | since | notes | description |",
    "|---|---|---|---|---|---|---|---|---|",
    ...rows.map((r) => `| ${r} |`),
  ].join("\n");
}

/** Markdown reference of every field; `npm run docs` writes it to docs/fields.md. */
export function fieldReferenceMarkdown(): string {
  return `<!-- generated from src/config/fields.ts by \`npm run docs\`; do not edit -->
# Field reference

## ObjectStoreBackendConfig (and DataRemoteStateObjectStoreConfig)

${table(COMMON_FIELDS)}

## DataRemoteStateObjectStoreConfig only

${table(REMOTE_STATE_EXTRA_FIELDS)}

## ObjectStoreAssumeRole (the deprecated \`assumeRole\` block)

${table(ASSUME_ROLE_FIELDS)}

Defaults are applied when settings are resolved, never stored in the objects: getters
return exactly what was set. \`sharedCredentialsFile\` defaults only when a profile is given.

## The tool's own backends (\`objstate synth --for\`, \`toTerraformJson\`)

Generated from the mapping table (\`src/config/mapping.ts\`). \`lockfile\` is objstate's own
setting (\`--lockfile\`, the config file's \`objstate.lockfile\`). For \`http\` the document holds
the address, lock and unlock address of \`objstate serve\` and the user; the password never.
A remote state also writes \`defaults\` and \`workspace\` (for \`http\`, the workspace is in the address).

${mappingTable()}

${TERRAFORM_BACKENDS.map((b) => `- \`${b}\` is read by ${TERRAFORM_BACKEND_SPECS[b].versions}.`).join("\n")}
`;
}
