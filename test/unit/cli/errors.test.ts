/**
 * Every failure at the CLI is one line a person can act on: typed endpoint errors, JSON
 * errors that show none of the text, a closed stdout that ends quietly, and a last-resort
 * line with a code (a stack only on request).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ConfigError } from "../../../src/config/errors.js";
import { ObjstateError } from "../../../src/errors.js";
import { EXIT } from "../../../src/error-codes.js";
import { debugEnabled, errorLine, exitCodeOf } from "../../../src/cli/io.js";
import { parseEndpoint } from "../../../src/io/endpoint.js";
import { invisibleCharacterName, jsonSyntaxProblem } from "../../../src/json/syntax-error.js";
import { CLI, cliEnv, runCli } from "../../support/cli.js";
import { assertOneLineError } from "./suite.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-errors-"));
let n = 0;
function file(text: string): string {
  const p = join(dir, `f${++n}.json`);
  writeFileSync(p, text);
  return p;
}
const store = ["--bucket", "err-bucket", "--endpoint", `file://${dir}/store`];

describe("endpoints", () => {
  it("a file: endpoint with a bad % escape is INVALID_ENDPOINT, not a raw URIError", () => {
    assert.throws(
      () => parseEndpoint("file:%zz"),
      (e: unknown) => e instanceof ObjstateError && e.code === "INVALID_ENDPOINT" && /a % must start an escape/.test(e.message),
    );
    const r = runCli(["state", "pull", "--bucket", "err-bucket", "--endpoint", "file:%zz"]);
    assert.equal(r.code, 2, r.stderr);
    assertOneLineError(r, /endpoint "file:%zz" is not a valid file URL: a % must start an escape such as %20/);
  });
});

function parseProblem(text: string): string {
  try {
    JSON.parse(text);
  } catch (e) {
    const { problem, at } = jsonSyntaxProblem(e, text);
    return `${at}: ${problem}`;
  }
  return "parsed";
}

describe("JSON syntax errors", () => {
  it("never show any of the text, not even the one unexpected character, and still say where", () => {
    assert.equal(parseProblem('{"password": hunter2}'), "at line 1, column 14: unexpected character");
    assert.equal(parseProblem('{"a": 1,\n "b": tru}'), "at line 2, column 10: unexpected character");
    assert.equal(parseProblem("x"), "at line 1, column 1: unexpected character");
    assert.equal(parseProblem('{"a": 1} trailing'), "at line 1, column 10: Unexpected non-whitespace character after JSON");
    assert.equal(parseProblem('{"a": "b'), "at line 1, column 9: Unterminated string");
    assert.equal(parseProblem(""), "at line 1, column 1: Unexpected end of JSON input");
  });

  it("name invisible characters: byte-order mark, zero-width space, no-break space", () => {
    assert.equal(parseProblem('\ufeff{"a": 1}'), "at line 1, column 1: unexpected byte-order mark (U+FEFF), which most editors do not show: delete it");
    assert.equal(
      parseProblem('{"a": 1}\u200b'),
      "at line 1, column 9: Unexpected non-whitespace character after JSON; the character there is a zero-width space (U+200B), which most editors do not show",
    );
    assert.equal(parseProblem('{"a":\u00a01}'), "at line 1, column 6: unexpected no-break space (U+00A0), which most editors do not show: delete it");
    assert.equal(
      parseProblem('{\u00a0"a": 1}'),
      "at line 1, column 2: Expected property name or '}'; the character there is a no-break space (U+00A0), which most editors do not show",
    );
    assert.equal(invisibleCharacterName("x"), undefined);
    assert.equal(invisibleCharacterName("\u0007"), "a control character (U+0007)");
  });

  it("at the CLI: one line naming the file and place, none of the text", () => {
    const secret = file('{"bucket": "err-bucket", "secretKey": s3cr3t-VALUE}');
    const r = runCli(["config", "--config", secret]);
    assert.equal(r.code, 2);
    assertOneLineError(r, /f\d+\.json is not valid JSON at line 1, column 39: unexpected character\n$/);
    assert.ok(!r.stderr.includes("'s'") && !r.stderr.includes("s3cr3t"), r.stderr);
    const bom = runCli(["synth", file('\ufeff{"backend": {"bucket": "err-bucket"}}')]);
    assert.equal(bom.code, 2);
    assertOneLineError(bom, /is not valid JSON at line 1, column 1: unexpected byte-order mark \(U\+FEFF\)/);
    const defaults = runCli(["output", ...store, "--defaults", '{"pw": hunter2}']);
    assert.equal(defaults.code, 2);
    assertOneLineError(defaults, /--defaults must be a JSON object, got invalid JSON at line 1, column 8: unexpected character\n$/);
    assert.ok(!defaults.stderr.includes("hunter2") && !defaults.stderr.includes("'h'"), defaults.stderr);
    // The library refuses it once connected: a lock table keeps connect's "not locked" warning away.
    const locked = ["--kvstore-table", "locks", "--kvstore-endpoint", `file://${dir}/table`];
    const push = runCli(["state", "push", "-", ...store, ...locked], { input: '{"version": 4, "serial": 1,\u200b"lineage": "x"}' });
    assert.equal(push.code, 2);
    assertOneLineError(push, /the state to write to workspace "default" is not valid JSON at line 1, column 28: .*zero-width space \(U\+200B\)/);
  });
});

/** Run the CLI with its standard output closed by the reader before it writes. */
function withClosedStdout(args: string[], input?: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: cliEnv(), stdio: ["pipe", "pipe", "pipe"] });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.stdin.end(input);
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe("a closed standard output (| head)", () => {
  it("--help: exits 141 quietly, no EPIPE stack", async () => {
    const r = await withClosedStdout(["--help"]);
    assert.equal(r.stderr, "");
    assert.equal(r.code, EXIT.outputClosed);
  });

  it("state pull: exits 141 quietly", async () => {
    // The library refuses it once connected: a lock table keeps connect's "not locked" warning away.
    const locked = ["--kvstore-table", "locks", "--kvstore-endpoint", `file://${dir}/table`];
    const push = runCli(["state", "push", "-", ...store, ...locked], { input: JSON.stringify({ version: 4, serial: 1, pad: "x".repeat(1024 * 1024) }) });
    assert.equal(push.code, 0, push.stderr);
    const r = await withClosedStdout(["state", "pull", ...store]);
    assert.doesNotMatch(r.stderr, /error|EPIPE|\n\s+at /, r.stderr);
    assert.equal(r.code, EXIT.outputClosed);
  });
});

describe("the last resort and exit codes", () => {
  it("an unexpected error is one line with a code and no message or stack; OBJSTATE_DEBUG asks for the details", () => {
    const e = new TypeError("Cannot read properties of undefined (reading 'secret-ish')\n    at somewhere");
    const line = errorLine(e);
    assert.equal(line, "unexpected internal error (INTERNAL_ERROR: TypeError); run again with OBJSTATE_DEBUG=1 to see the details, and please report it");
    assert.equal(
      errorLine(Object.assign(new Error("x"), { code: "ERR_SOMETHING" })),
      "unexpected internal error (INTERNAL_ERROR: Error ERR_SOMETHING); run again with OBJSTATE_DEBUG=1 to see the details, and please report it",
    );
    assert.equal(errorLine(new ObjstateError("STORE_ERROR", "first line\n  second line")), "first line second line");
    assert.equal(debugEnabled({ OBJSTATE_DEBUG: "1" }), true);
    assert.equal(debugEnabled({ OBJSTATE_DEBUG: "0" }), false);
    assert.equal(debugEnabled({}), false);
  });

  it("bad input exits 2: CREDENTIALS_FILE_INVALID, INVALID_* codes, ConfigError", () => {
    assert.equal(exitCodeOf(new ObjstateError("CREDENTIALS_FILE_INVALID", "x")), 2);
    assert.equal(exitCodeOf(new ObjstateError("INVALID_KEY", "x")), 2);
    assert.equal(exitCodeOf(new ObjstateError("INVALID_ENDPOINT", "x")), 2);
    assert.equal(exitCodeOf(new ConfigError("INVALID_NAME", "x")), 2);
    assert.equal(exitCodeOf(new ObjstateError("ENDPOINT_UNREACHABLE", "x")), 1);
    assert.deepEqual([EXIT.hangup, EXIT.interrupted, EXIT.outputClosed, EXIT.terminated], [129, 130, 141, 143]);
  });
});

describe("messages say each word once", () => {
  it("no doubled words in the errors of common mistakes", () => {
    const runs = [
      runCli(["workspace", "new", "a/b", ...store]),
      runCli(["workspace", "delete", "nope", ...store]),
      runCli(["state", "pull", "-w", "nope", ...store]),
      runCli(["state", "pull", "--bucket", "Bad_Bucket", "--endpoint", "file:./x"]),
      runCli(["state", "pull", "--endpoint", "file:./x"]),
      runCli(["unlock", "abc", ...store, "--kvstore-table", "err-locks", "--kvstore-endpoint", `file://${dir}/store`]),
      runCli(["config", "--config", file('{"bucket": "err-bucket", "kvstoreTabel": "x"}')]),
    ];
    for (const r of runs) {
      assert.notEqual(r.code, 0);
      assert.doesNotMatch(r.stderr, /\b([a-z]{2,})\s+\1\b/i, r.stderr);
    }
  });
});
