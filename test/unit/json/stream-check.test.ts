/**
 * The check `state push` makes while it streams a file: the same verdict as `JSON.parse`
 * (plus "the top level is an object") however the bytes are cut into chunks, the byte
 * offset of the first error, and its line and column from a second pass.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { describeFailure, JsonObjectStreamCheck, positionAt, type StreamCheckFailure } from "../../../src/json/stream-check.js";

function checkIn(bytes: Buffer, chunkSize: number): StreamCheckFailure | undefined {
  const check = new JsonObjectStreamCheck();
  for (let i = 0; i < bytes.length; i += chunkSize) if (!check.feed(bytes.subarray(i, i + chunkSize))) break;
  return check.end();
}

async function* chunks(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

/** `JSON.parse`'s verdict on the text, for the check's: an object or not. */
function parsesToObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

const VALID = [
  "{}",
  ' \r\n\t{"a": 1} \n',
  '{"version": 4, "serial": 1, "lineage": "x", "outputs": {}, "resources": []}',
  '{"a": [1, -2.5e+3, 0, 0.1, 1E9, true, false, null, "s\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9"], "b": {"c": {"d": []}}}',
  '{"é": "h\u00e9llo \u2603 \ud83d\ude80"}',
  '{"bad utf-8 inside a string is what JSON.parse sees as U+FFFD": "\xff"}',
];
const INVALID = [
  "",
  "   ",
  '{"a": 1,}',
  '{"a": [1, 2,]}',
  '{"a": NaN}',
  '{"a": Infinity}',
  '{"a": 01}',
  '{"a": 1.}',
  '{"a": .5}',
  '{"a": 1e}',
  '{"a": -}',
  '{"a": tru}',
  '{"a": nul}',
  '{"a": "\\x"}',
  '{"a": "\\u12G4"}',
  '{"a": "line\nbreak"}',
  '{"a" 1}',
  "{'a': 1}",
  "{a: 1}",
  '{"a": 1}}',
  '{"a": 1} x',
  '{"a": 1',
  '{"a": "unterminated',
  '{"a": [1}',
  '\ufeff{"a": 1}',
  '{"a":\u00a01}',
  "// comment\n{}",
];
const NOT_OBJECT = ["[1, 2]", "42", '"s"', "true", "null", "[]"];

describe("JsonObjectStreamCheck", () => {
  it("agrees with JSON.parse on every document, whatever the chunk size", () => {
    for (const text of [...VALID, ...INVALID, ...NOT_OBJECT]) {
      const bytes = Buffer.from(text, text.includes("\xff") ? "latin1" : "utf8");
      const expected = parsesToObject(bytes.toString("utf8"));
      for (const size of [1, 2, 3, 7, 64, 1 << 20]) {
        const f = checkIn(bytes, size);
        assert.equal(f === undefined, expected, `${JSON.stringify(text)} in chunks of ${size}: ${JSON.stringify(f)}`);
      }
    }
  });

  it("tells valid JSON that is not an object from broken JSON", () => {
    assert.deepEqual(checkIn(Buffer.from("[1, 2]"), 1), { kind: "not-object", what: "an array" });
    assert.deepEqual(checkIn(Buffer.from(" 42"), 1), { kind: "not-object", what: "a number" });
    assert.deepEqual(checkIn(Buffer.from("[1, 2,]"), 1), { kind: "syntax", offset: 6, reason: "unexpected" });
    assert.deepEqual(checkIn(Buffer.from(""), 1), { kind: "syntax", offset: 0, reason: "end" });
    assert.deepEqual(checkIn(Buffer.from('{"a": 1'), 2), { kind: "syntax", offset: 7, reason: "end" });
    assert.deepEqual(checkIn(Buffer.from('{"a": 1}\n x'), 3), { kind: "syntax", offset: 10, reason: "after" });
  });

  it("finds NaN and a trailing comma deep inside a large document, at their byte offset", () => {
    const pad = "x".repeat(3 * 1024 * 1024);
    for (const [inner, at] of [
      ['{"v": NaN}', 6],
      ['{"v": 1,}', 8],
    ] as const) {
      const text = `{"resources": [{"attributes": {"blob": "${pad}", "deep": [[[${inner}]]]}}]}`;
      const offset = text.indexOf(inner) + at;
      for (const size of [1000, 65536]) assert.deepEqual(checkIn(Buffer.from(text), size), { kind: "syntax", offset, reason: "unexpected" });
    }
  });

  it("refuses nesting deeper than the tool's 10,000 levels (without recursion)", () => {
    const ok = `{"a":${"[".repeat(9999)}${"]".repeat(9999)}}`;
    const deep = `{"a":${"[".repeat(10000)}${"]".repeat(10000)}}`;
    assert.equal(checkIn(Buffer.from(ok), 4096), undefined);
    const f = checkIn(Buffer.from(deep), 4096);
    assert.equal(f?.kind === "syntax" ? f.reason : undefined, "too-deep");
  });

  it("stops early: once failed, feeding more changes nothing", () => {
    const check = new JsonObjectStreamCheck();
    assert.equal(check.feed(Buffer.from('{"a": NaN')), false);
    assert.equal(check.feed(Buffer.from("}")), false);
    assert.deepEqual(check.end(), { kind: "syntax", offset: 6, reason: "unexpected" });
  });
});

describe("positionAt", () => {
  it("gives line and column as editors count them (UTF-16 units), across chunks, and the character there", async () => {
    const text = '{\n  "é": "\ud83d\ude80",\r\n  "b": x}';
    const bytes = Buffer.from(text);
    const offset = bytes.indexOf("x");
    for (const size of [1, 2, 5, 100]) {
      const p = await positionAt(chunks(bytes, size), offset);
      // Line 3 after \n and \r\n; "  \"b\": " is 7 units before x.
      assert.deepEqual(p, { line: 3, column: 8, char: "x" }, `chunks of ${size}`);
    }
    const afterEmoji = await positionAt(chunks(bytes, 3), bytes.indexOf(","));
    // `  "é": "🚀"` : the emoji counts two columns, as in an editor's UTF-16 view.
    assert.deepEqual(afterEmoji, { line: 2, column: 12, char: "," });
    assert.deepEqual(await positionAt(chunks(bytes, 4), bytes.length), { line: 3, column: 10, char: undefined });
  });

  it("names an invisible character, never shows a visible one", async () => {
    const bom = Buffer.from("\ufeff{}");
    const f = checkIn(bom, 1);
    assert.ok(f?.kind === "syntax");
    const p = await positionAt(chunks(bom, 1), f.offset);
    assert.deepEqual(p, { line: 1, column: 1, char: "\ufeff" });
    assert.equal(describeFailure(f, p.char), "unexpected byte-order mark (U+FEFF), which most editors do not show: delete it");
    assert.equal(describeFailure({ kind: "syntax", offset: 3, reason: "unexpected" }, "s"), "unexpected character");
    assert.equal(describeFailure({ kind: "syntax", offset: 3, reason: "end" }, undefined), "unexpected end of input");
    assert.equal(describeFailure({ kind: "syntax", offset: 3, reason: "after" }, "}"), "unexpected character after the end of the JSON object");
  });
});
