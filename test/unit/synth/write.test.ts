/** writeToolJson: the formatted document into a file; a failure is an ObjstateError naming the file. */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { DataRemoteStateObjectStore, formatToolJson, mergeToolJson, ObjstateError, writeToolJson } from "../../../src/index.js";

describe("writeToolJson", () => {
  it("writes the document as formatToolJson prints it, replacing the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-write-"));
    try {
      const file = join(dir, "main.tf.json");
      const doc = mergeToolJson(new DataRemoteStateObjectStore("net", { bucket: "states" }).toToolJson());
      writeToolJson(file, { tool: { backend: { objectstore: { bucket: "old" } } } });
      writeToolJson(file, doc);
      assert.equal(readFileSync(file, "utf8"), formatToolJson(doc));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fails with WRITE_FAILED naming the file when its directory is missing", () => {
    const file = join(tmpdir(), "objstate-no-such-dir-4f1c", "main.tf.json");
    assert.throws(
      () => writeToolJson(file, {}),
      (e: unknown) =>
        e instanceof ObjstateError && e.code === "WRITE_FAILED" && e.message.includes(file) && e.message.includes("ENOENT") && !e.message.includes("\n"),
    );
  });
});
