// Writes docs/fields.md from the field table and docs/settings.md from the settings table (run through `npm run docs`).
import { mkdirSync, writeFileSync } from "node:fs";
import { fieldReferenceMarkdown } from "../dist/src/config/docs.js";
import { settingsReferenceMarkdown } from "../dist/src/config/settings-docs.js";

mkdirSync(new URL("../docs/", import.meta.url), { recursive: true });
writeFileSync(new URL("../docs/fields.md", import.meta.url), fieldReferenceMarkdown());
console.log("wrote docs/fields.md");
writeFileSync(new URL("../docs/settings.md", import.meta.url), settingsReferenceMarkdown());
console.log("wrote docs/settings.md");
