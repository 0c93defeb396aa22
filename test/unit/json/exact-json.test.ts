/**
 * Exact JSON values (numbers kept as written), their conversions and serialization, and the
 * grammar check's error placement: pure logic, property-based against JSON.parse/stringify.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { RemoteOutputs, isObjstateError } from "../../../src/index.js";
import { decimalForm, isExactInJs, JsonNumber, parseExact, stringifyExact, toBigInt, toJs } from "../../../src/json/exact-json.js";
import { syntaxErrorOffset } from "../../../src/json/scan.js";

const parse = (text: string) => parseExact(Buffer.from(text, "utf8"));

describe("exact JSON values", () => {
  it("property: parse then stringify gives JSON.stringify's text (plain and indented) when no number is rounded", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), fc.constantFrom(0, 2), (v, space) => {
        const text = JSON.stringify(v);
        const exact = parse(JSON.stringify(v, null, 3));
        assert.equal(stringifyExact(exact, space), JSON.stringify(JSON.parse(text), null, space));
        assert.deepStrictEqual(toJs(exact, "js", false), JSON.parse(text));
      }),
      { numRuns: 1000 },
    );
  });

  it("keeps number literals as written, through nesting, duplicate keys and __proto__", () => {
    const text = '{"a":[12345678901234567890,1e400,1e-400,-0,1.50E+2],"__proto__":{"x":1},"d":1,"d":2}';
    assert.equal(stringifyExact(parse(text)), '{"a":[12345678901234567890,1e400,1e-400,-0,1.50E+2],"__proto__":{"x":1},"d":2}');
    assert.deepEqual(toJs(parse("[12345678901234567890, 1e400, 1e-400, 0.1]"), "lossless", false), ["12345678901234567890", "1e400", "1e-400", 0.1]);
    assert.deepEqual(toJs(parse("[12345678901234567890, 1e400, 1e-400]"), "js", false), [12345678901234567000, Infinity, 0]);
    const proto = toJs(parse('{"__proto__": 1}'), "js", false) as Record<string, unknown>;
    assert.ok(Object.hasOwn(proto, "__proto__"));
  });

  it("tells numbers a JS number holds exactly from those it does not", () => {
    for (const t of ["0", "-0", "0.1", "1E2", "1e21", "9007199254740992", "-12.75", "5e-324"]) assert.equal(isExactInJs(t), true, t);
    for (const t of ["12345678901234567890", "1e400", "1e-400", "9007199254740993", "0.10000000000000000001"]) assert.equal(isExactInJs(t), false, t);
  });

  it("plain decimal form and bigint, exactly", () => {
    assert.equal(decimalForm("1e400"), `1${"0".repeat(400)}`);
    assert.equal(decimalForm("1e-400"), `0.${"0".repeat(399)}1`);
    assert.equal(decimalForm("-1.50E+2"), "-150");
    assert.equal(decimalForm("123.456e-5"), "0.00123456");
    assert.equal(decimalForm("-0.0"), "0");
    assert.equal(decimalForm("1e999999999"), undefined, "too long to write out");
    assert.equal(toBigInt("12345678901234567890"), 12345678901234567890n);
    assert.equal(toBigInt("1.5e1"), 15n);
    assert.equal(toBigInt("-2E+3"), -2000n);
    assert.equal(toBigInt("1.5"), "not-whole");
    assert.equal(toBigInt("1e999999999"), "too-large");
  });

  it("walks 100,000 levels without the call stack", () => {
    const deep = `${"[".repeat(100_000)}"x"${"]".repeat(100_000)}`;
    const v = parse(deep);
    assert.equal(stringifyExact(v), deep);
    let plain: unknown = toJs(v, "lossless", true);
    for (let i = 0; i < 100_000; i++) plain = (plain as unknown[])[0];
    assert.equal(plain, "x");
    const out = new RemoteOutputs({ d: JSON.parse(deep) as string[] });
    assert.equal(out.toJSONText("d"), deep);
  });
});

describe("RemoteOutputs exact accessors", () => {
  it("numberText, bigint, typeOf, toJSONText; defaults given as JS numbers are written as JSON.stringify writes them", () => {
    const out = new RemoteOutputs({ n: 1e21, s: "x", l: [1, { a: null }] }, {}, ["s"]);
    assert.equal(out.numberText("n"), "1e+21");
    assert.equal(out.bigint("n"), 10n ** 21n);
    assert.equal(out.typeOf("l"), "list");
    assert.equal(out.isSensitive("s"), true);
    assert.equal(out.isSensitive("n"), false);
    assert.equal(out.toJSONText(), '{"l":[1,{"a":null}],"n":1e+21,"s":"x"}');
    assert.equal(out.toJSONText("l", 2), '[\n  1,\n  {\n    "a": null\n  }\n]');
    assert.throws(
      () => out.numberText("s"),
      (e: unknown) => isObjstateError(e, "OUTPUT_TYPE_MISMATCH"),
    );
    assert.throws(
      () => new RemoteOutputs({ x: 1.5 }).bigint("x"),
      (e: unknown) => isObjstateError(e, "OUTPUT_NOT_INTEGER") && e.message === 'output "x" (1.5) is not a whole number, so it has no bigint value',
    );
  });

  it("a value that refers to itself is OUTPUT_INVALID, not a hang or a stack overflow", () => {
    const loop: Record<string, unknown> = {};
    loop["self"] = loop;
    assert.throws(
      () => new RemoteOutputs({ loop } as never),
      (e: unknown) => isObjstateError(e, "OUTPUT_INVALID") && /output "loop" is not a JSON value/.test(e.message),
    );
    const shared = [1];
    assert.equal(new RemoteOutputs({ s: { a: shared, b: shared } }).toJSONText(), '{"s":{"a":[1],"b":[1]}}', "shared (not cyclic) values are fine");
  });

  it("JsonNumber keeps its text", () => {
    assert.equal(new JsonNumber("1e400").text, "1e400");
  });
});

describe("syntaxErrorOffset", () => {
  it("places errors where V8 does for the messages that carry a position", () => {
    const cases = [
      '{"a": "x\ty"}',
      '{"a": "\\x"}',
      '{"a": 01}',
      '{"a": 1.}',
      '{"a" 1}',
      '{"a": 1} x',
      '{"a": -}',
      '{"a": 1e}',
      "[1 2]",
      '{"a": {"b": [1, 2}]}',
    ];
    for (const text of cases) {
      let position: number | undefined;
      try {
        JSON.parse(text);
      } catch (e) {
        const m = /at position (\d+)/.exec((e as Error).message);
        position = m === null ? undefined : Number(m[1]);
      }
      assert.equal(syntaxErrorOffset(Buffer.from(text)), position, text);
    }
    assert.equal(syntaxErrorOffset(Buffer.from('{"a": [1,]}')), 9);
    assert.equal(syntaxErrorOffset(Buffer.from('{"a": NaN}')), 6);
    assert.equal(syntaxErrorOffset(Buffer.from('{"a": [1')), 8);
    assert.equal(syntaxErrorOffset(Buffer.from('{"a": 1}')), undefined);
  });
});
