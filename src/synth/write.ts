/** Writing a synthesized document to a file. */
import { writeFileSync } from "node:fs";
import { ObjstateError } from "../errors.js";
import { formatToolJson, type ToolJson } from "../config/tool-json.js";

/**
 * Write `doc` to `file` as {@link formatToolJson} prints it, so a program need not import `node:fs` (docs/decisions/026).
 *
 * @throws ObjstateError `WRITE_FAILED`, naming the file and the system's reason.
 * @example writeToolJson("main.tf.json", mergeToolJson(backend.toToolJson(), net.toToolJson()));
 */
export function writeToolJson(file: string, doc: ToolJson): void {
  const text = formatToolJson(doc);
  try {
    writeFileSync(file, text);
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e));
    throw new ObjstateError("WRITE_FAILED", `cannot write the tool document to ${file} (${reason}): check that its directory exists and is writable`, {
      cause: e,
      details: { file },
    });
  }
}
