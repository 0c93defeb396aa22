// Writes docs/fields.md from the field table (run through `npm run docs`).
import { mkdirSync, writeFileSync } from "node:fs";
import { fieldReferenceMarkdown } from "../dist/src/config/docs.js";

mkdirSync(new URL("../docs/", import.meta.url), { recursive: true });
writeFileSync(new URL("../docs/fields.md", import.meta.url), fieldReferenceMarkdown());
console.log("wrote docs/fields.md");
