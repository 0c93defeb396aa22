/**
 * The one scanner (json/scan.ts) against JSON.parse, and its shortcuts (string runs by table,
 * runs of spaces) against the same scan fed one byte at a time, where no shortcut can look
 * past the end of what it was given: random JSON, pretty-printed as the tool writes it or
 * with random whitespace, then damaged (bytes replaced, inserted, deleted, truncated),
 * scanned whole and in random chunks. Then the verdicts `state push` relies on: not an
 * object, the byte offset of the first error, its line and column from a second pass.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { JsonScanner, syntaxErrorOffset, type ScanFailure } from "../../../src/json/scan.js";
import { describeFailure, positionAt } from "../../../src/json/syntax-error.js";

interface Verdict {
  readonly failure: ScanFailure | undefined;
  readonly spans: readonly (readonly [string, readonly [number, number]])[];
  readonly values: readonly (readonly [string, string])[];
}

/** The verdict on `b` fed in pieces ending at `cuts`, with the spans and bytes of two kept members. */
function check(b: Buffer, cuts: readonly number[]): Verdict {
  const s = new JsonScanner(["a", ""]);
  let from = 0;
  for (const limit of [...cuts, b.length]) {
    if (limit <= from) continue;
    if (!s.feed(b.subarray(from, limit))) break;
    from = limit;
  }
  return { failure: s.end(), spans: [...s.spans], values: [...s.values].map(([k, v]) => [k, v.toString("latin1")]) };
}

/** Every limit from 1 to the end: the plain path only. */
function byteByByte(b: Buffer): Verdict {
  return check(
    b,
    Array.from({ length: b.length }, (_, k) => k + 1),
  );
}

/** JSON.parse's verdict on `b` as a whole document whose top level must be an object or array. */
function parses(b: Buffer): boolean {
  try {
    const v: unknown = JSON.parse(b.toString("utf8"));
    return typeof v === "object" && v !== null;
  } catch {
    return false;
  }
}

const leaf = fc.oneof(
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.constantFrom('a "quoted" value', "path\\with\\backslashes", "Zürich", "東京", "\u2028", "\u0000\u001f", "x".repeat(30)),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(true, false, null, 0, -0.5, 1e21, 12.5e-7),
);
const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie("value"), { maxKeys: 5 }),
  ),
}));
const container = fc.oneof(fc.array(value, { maxLength: 5 }), fc.dictionary(fc.string({ maxLength: 6 }), value, { maxKeys: 6 }));
/** Pretty-printed as the tool writes it (2 spaces), compact, tabs, or CRLF line ends: where the shortcuts fire and where they must not. */
const text = fc.tuple(container, fc.constantFrom("pretty", "compact", "tab", "crlf")).map(([v, how]) => {
  if (how === "compact") return JSON.stringify(v);
  if (how === "tab") return JSON.stringify(v, null, "\t");
  const pretty = JSON.stringify(v, null, 2);
  return how === "crlf" ? pretty.replace(/\n/g, "\r\n") : pretty;
});
const mutation = fc.tuple(
  fc.double({ min: 0, max: 1, noNaN: true }),
  fc.constantFrom("replace", "insert", "delete", "truncate"),
  fc.constantFrom(...'"\\{}[]:, \n\t\r0-.eEtfnu'.split(""), "\u0001", "\u00ff"),
);
const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 10 });

function damage(s: string, mutations: readonly (readonly [number, string, string])[]): Buffer {
  let b = Buffer.from(s, "utf8");
  for (const [at, op, ch] of mutations) {
    const p = Math.floor(at * b.length);
    const c = Buffer.from(ch, "utf8");
    if (op === "replace") b = Buffer.concat([b.subarray(0, p), c, b.subarray(p + 1)]);
    else if (op === "insert") b = Buffer.concat([b.subarray(0, p), c, b.subarray(p)]);
    else if (op === "delete") b = Buffer.concat([b.subarray(0, p), b.subarray(p + 1)]);
    else b = b.subarray(0, p);
  }
  return b;
}

/** JSON.parse accepts exactly when the scan finds an object or an array; the kept spans hold the kept bytes. */
function agreesWithParse(b: Buffer, got: Verdict): void {
  const f = got.failure;
  const accepted = f === undefined || (f.kind === "not-object" && f.what === "an array");
  assert.equal(
    accepted,
    parses(b),
    `scan says ${JSON.stringify(f)} (${b.length} bytes), JSON.parse says ${parses(b) ? "valid" : "invalid"}: ${JSON.stringify(b.toString("utf8").slice(0, 200))}`,
  );
  for (const [k, [start, end]] of got.spans) assert.equal(got.values.find(([n]) => n === k)?.[1], b.toString("latin1", start, end));
  if (f === undefined) {
    const doc = JSON.parse(b.toString("utf8")) as Record<string, unknown>;
    for (const k of ["a", ""]) {
      const v = got.values.find(([n]) => n === k)?.[1];
      assert.deepEqual(v === undefined ? undefined : JSON.parse(Buffer.from(v, "latin1").toString("utf8")), Object.hasOwn(doc, k) ? doc[k] : undefined);
    }
  }
}

describe("JsonScanner", () => {
  it("property: accepts and refuses what JSON.parse does, whole and in random chunks, on valid and damaged documents", () => {
    fc.assert(
      fc.property(text, fc.array(mutation, { maxLength: 3 }), cuts, (s, mutations, cs) => {
        const b = damage(s, mutations);
        if (b.length === 0 || (b[0] !== 0x7b && b[0] !== 0x5b)) return;
        const points = cs.map((c) => Math.floor(c * b.length)).sort((x, y) => x - y);
        agreesWithParse(b, check(b, []));
        agreesWithParse(b, check(b, points));
      }),
      { numRuns: 4000 },
    );
  });

  it("property: its shortcuts change nothing: same end, same verdict and same failing byte as one byte at a time", () => {
    fc.assert(
      fc.property(text, fc.array(mutation, { maxLength: 2 }), cuts, (s, mutations, cs) => {
        const b = damage(s, mutations);
        if (b.length === 0 || (b[0] !== 0x7b && b[0] !== 0x5b)) return;
        const slow = byteByByte(b);
        assert.deepEqual(check(b, []), slow);
        assert.deepEqual(
          check(
            b,
            cs.map((c) => Math.floor(c * b.length)).sort((x, y) => x - y),
          ),
          slow,
        );
      }),
      { numRuns: 3000 },
    );
  });

  it("hand cases: a chunk ending at the colon, inside the indentation, at the next key's quote", () => {
    const doc = Buffer.from('{\n  "a": "x",\n  "b": [\n    1,\n    "y"\n  ],\n  "c": {}\n}');
    for (let cut = 1; cut < doc.length; cut++) assert.deepEqual(check(doc, [cut]), check(doc, []), `cut at ${cut}`);
    assert.deepEqual(check(doc, []).values, [["a", '"x"']]);
    // Refusals the shortcuts pass by: a key without its colon, a comma before `}`, a control character in a key.
    for (const bad of ['{\n  "a" 1}', '{\n  "a": 1,\n  }', '{\n  "a": 1,\n  "b\u0001": 2}', '{"a":1,\n\n"b" , "c"}', '{"a"::1}', '[1,\n  "a":2]']) {
      const b = Buffer.from(bad);
      assert.equal(check(b, []).failure?.kind, "syntax", bad);
      assert.deepEqual(check(b, []), byteByByte(b), bad);
      assert.equal(parses(b), false, bad);
    }
  });

  it("syntaxErrorOffset places the failing byte", () => {
    assert.equal(syntaxErrorOffset(Buffer.from('{\n  "a": 1,\n  }')), 14);
    assert.equal(syntaxErrorOffset(Buffer.from('{\n  "a" 1}')), 8);
  });
});

function checkIn(bytes: Buffer, chunkSize: number): ScanFailure | undefined {
  const check = new JsonScanner();
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

describe("JsonScanner as the state rule sees it", () => {
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
    const check = new JsonScanner();
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
