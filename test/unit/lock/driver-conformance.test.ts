/** The lock-table driver conformance suite on the embedded table (`file:` endpoints). */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { openLockTable } from "../../../src/lock/index.js";
import { lockDriverSuite } from "../../behaviour/lock-driver-suite.js";
import { uniqueName } from "../../support/targets.js";

const root = mkdtempSync(join(tmpdir(), "objstate-lock-conformance-"));
const endpoint = `file://${root}`;
after(() => rmSync(root, { recursive: true, force: true }));

lockDriverSuite("embedded table", () => openLockTable({ table: uniqueName("locks"), endpoint }), {
  absentTable: "created-on-write",
  badTable: (schema) => {
    // The embedded table's key schema is its .schema.json: a wrong one is written by hand.
    const table = uniqueName("bad");
    mkdirSync(join(root, ".kvstore", table), { recursive: true });
    const keys = schema === "other-key" ? [{ name: "Key", type: "S", keyType: "HASH" }] : [{ name: "LockID", type: "N", keyType: "HASH" }];
    writeFileSync(join(root, ".kvstore", table, ".schema.json"), JSON.stringify(keys));
    return openLockTable({ table, endpoint });
  },
});
