import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { it } from "node:test";
import { fieldReferenceMarkdown } from "../../../src/config/docs.js";
import { COMMON_FIELDS } from "../../../src/index.js";

it("docs/fields.md is generated from the current field table (run `npm run docs`)", () => {
  const text = readFileSync(new URL("../../../../docs/fields.md", import.meta.url), "utf8");
  assert.equal(text, fieldReferenceMarkdown());
  for (const f of COMMON_FIELDS) assert.match(text, new RegExp(`\\| \`${f.name}\` \\| \`${f.jsonKey}\` \\|`));
});
