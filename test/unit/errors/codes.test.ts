/**
 * The one table of error codes (src/error-codes.ts): a code outside it does not compile,
 * every row is a status and a documented exit, the server's and the command's mappings
 * read it, and no row is left that src/ never raises.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { exitCodeOf, usageError } from "../../../src/cli/io.js";
import { ConfigError } from "../../../src/config/errors.js";
import { ERROR_CODES, EXIT, type ErrorCode } from "../../../src/error-codes.js";
import { isObjstateError, ObjstateError, statusOf } from "../../../src/errors.js";

const src = fileURLToPath(new URL("../../../../src/", import.meta.url));
const CODES = Object.keys(ERROR_CODES) as ErrorCode[];

describe("the table of error codes", () => {
  it("takes only its own codes: each line under @ts-expect-error would compile (and fail the build) if it did not", () => {
    // @ts-expect-error: NO_SUCH_CODE has no row in ERROR_CODES
    const e = new ObjstateError("NO_SUCH_CODE", "m");
    // @ts-expect-error: a ConfigError's code is one of ConfigErrorCode, all of them rows of the table
    void new ConfigError("STATE_LOCKED", "m");
    // @ts-expect-error: a usage error's code is one whose row exits 2; STATE_LOCKED exits 3
    void usageError("m", "STATE_LOCKED");
    // @ts-expect-error: asking for a code that does not exist is a typo
    assert.equal(isObjstateError(e, "NO_SUCH_COD"), false);
  });

  it("every row is an HTTP error status and one of the documented exit codes, never 0", () => {
    const exits = new Set<number>(Object.values(EXIT).filter((x) => x !== EXIT.ok));
    for (const code of CODES) {
      const { status, exit } = ERROR_CODES[code];
      assert.ok(status >= 400 && status <= 599, `${code}: status ${status}`);
      assert.ok(exits.has(exit), `${code}: exit ${exit}`);
    }
  });

  it("the server's status and the command's exit of every code are its row", () => {
    for (const code of CODES) {
      const e = new ObjstateError(code, "m");
      assert.equal(statusOf(e), ERROR_CODES[code].status, code);
      assert.equal(exitCodeOf(e), ERROR_CODES[code].exit, code);
    }
    assert.equal(statusOf(new Error("not ours")), 500);
    assert.equal(exitCodeOf(new Error("not ours")), EXIT.error);
  });

  it("keeps the protocol's and the documented exits' contracts", () => {
    const row = (code: ErrorCode): [number, number] => [ERROR_CODES[code].status, ERROR_CODES[code].exit];
    assert.deepEqual(row("STATE_LOCKED"), [423, 3]);
    assert.deepEqual(row("LOCK_ID_MISMATCH"), [409, 3]);
    assert.deepEqual(row("DIGEST_MISMATCH"), [409, 4]);
    assert.deepEqual(row("STATE_CONFLICT"), [409, 5]);
    assert.deepEqual(row("LOCK_NOT_HELD"), [409, 6]);
    assert.deepEqual(row("LOCK_LOST"), [409, 7]);
    assert.deepEqual(row("INVALID_WORKSPACE"), [400, 2]);
    assert.deepEqual(row("ENDPOINT_UNREACHABLE"), [503, 1]);
    assert.deepEqual(row("ENDPOINT_TIMEOUT"), [504, 1]);
    assert.deepEqual(row("ACCESS_DENIED"), [502, 1]);
  });

  it("has no row src/ never raises", () => {
    const text = (dir: string): string =>
      readdirSync(dir, { withFileTypes: true })
        .map((d) =>
          d.isDirectory() ? text(join(dir, d.name)) : d.name.endsWith(".ts") && d.name !== "error-codes.ts" ? readFileSync(join(dir, d.name), "utf8") : "",
        )
        .join("\n");
    const all = text(src);
    assert.deepEqual(
      CODES.filter((code) => !all.includes(`"${code}"`)),
      [],
    );
  });
});
