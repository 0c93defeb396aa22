/**
 * The resumable grammar check (ContainerCheck) against JSON.parse, and its shortcuts (a
 * key's `:` taken with the key; `,` + newline + indentation + the next key's quote in one
 * step; string runs by table) against the same check fed one byte at a time, where no
 * shortcut can look past the end of what it was given: random JSON, pretty-printed as the
 * tool writes it or with random whitespace, then damaged (bytes replaced, inserted, deleted,
 * truncated), checked whole and in random chunks.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { ContainerCheck, INVALID, NEED_MORE, syntaxErrorOffset } from "../../../src/json/validate.js";

/** The verdict on `b` as one container from its first byte: end index, INVALID/TOO_DEEP, or NEED_MORE; and where it failed. */
function check(b: Buffer, cuts: readonly number[]): { readonly result: number; readonly failedAt: number } {
  const c = new ContainerCheck(0, 10000);
  let result = NEED_MORE;
  for (const limit of [...cuts, b.length]) {
    if (limit <= c.i && limit !== b.length) continue;
    result = c.run(b, limit);
    if (result !== NEED_MORE) break;
  }
  return { result, failedAt: c.failedAt };
}

/** Every limit from 1 to the end: the plain path only. */
function byteByByte(b: Buffer): { readonly result: number; readonly failedAt: number } {
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

/** JSON.parse accepts exactly when the check ends at the last non-whitespace byte. */
function agreesWithParse(b: Buffer, got: { readonly result: number }): void {
  let end = b.length;
  while (end > 0 && " \t\r\n".includes(String.fromCharCode(b[end - 1] as number))) end--;
  const accepted = got.result >= 0 && got.result === end && b[0] !== 0x20 && b[0] !== 0x0a && b[0] !== 0x09 && b[0] !== 0x0d;
  assert.equal(
    accepted,
    parses(b),
    `check says ${got.result} (${b.length} bytes), JSON.parse says ${parses(b) ? "valid" : "invalid"}: ${JSON.stringify(b.toString("utf8").slice(0, 200))}`,
  );
}

describe("ContainerCheck", () => {
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

  it("hand cases around the shortcuts: a chunk ending at the colon, inside the indentation, at the next key's quote", () => {
    const doc = Buffer.from('{\n  "a": "x",\n  "b": [\n    1,\n    "y"\n  ],\n  "c": {}\n}');
    for (let cut = 1; cut < doc.length; cut++) assert.deepEqual(check(doc, [cut]), { result: doc.length, failedAt: -1 }, `cut at ${cut}`);
    // Refusals the shortcuts pass by: a key without its colon, a comma before `}`, a control character in a key.
    for (const bad of ['{\n  "a" 1}', '{\n  "a": 1,\n  }', '{\n  "a": 1,\n  "b\u0001": 2}', '{"a":1,\n\n"b" , "c"}', '{"a"::1}', '[1,\n  "a":2]']) {
      const b = Buffer.from(bad);
      assert.equal(check(b, []).result, INVALID, bad);
      assert.deepEqual(check(b, []), byteByByte(b), bad);
      assert.equal(parses(b), false, bad);
    }
  });

  it("syntaxErrorOffset places the failing byte the same way", () => {
    assert.equal(syntaxErrorOffset(Buffer.from('{\n  "a": 1,\n  }')), 14);
    assert.equal(syntaxErrorOffset(Buffer.from('{\n  "a" 1}')), 8);
  });
});
