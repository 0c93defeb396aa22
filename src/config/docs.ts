/** The field reference (docs/fields.md), generated from the field table. */
import { ASSUME_ROLE_FIELDS, COMMON_FIELDS, REMOTE_STATE_EXTRA_FIELDS, type FieldSpec } from "./fields.js";

function table(fields: readonly FieldSpec[]): string {
  const rows = fields.map((f) =>
    [
      `\`${f.name}\``,
      `\`${f.jsonKey}\``,
      f.javaType.replace(/^java\.(lang|util)\./, "").replace(/java\.lang\./g, ""),
      f.required ? "yes" : "",
      f.env.map((e) => `\`${e}\``).join(", "),
      f.default === undefined ? "" : `\`${String(f.default)}\``,
      f.since === undefined ? "" : `${f.since}+`,
      [f.secret ? "secret" : "", f.deprecated ? "deprecated" : ""].filter(Boolean).join(", "),
      `${f.doc} Must be ${f.rule.expected}.`,
    ].join(" | "),
  );
  return ["| field | JSON key | type | required | env (first non-empty wins) | default | since | notes | description |", "|---|---|---|---|---|---|---|---|---|", ...rows.map((r) => `| ${r} |`)].join("\n");
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
`;
}
