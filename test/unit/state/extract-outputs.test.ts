/**
 * The outputs extractor against JSON.parse: property-based over random documents (random
 * whitespace, escaped keys, duplicate keys, decoy nested "outputs", odd strings), their
 * truncations and mutations, plus hand-written cases.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  DEFAULT_SCAN_THRESHOLD,
  extractOutputs,
  extractTopLevel,
  MAX_NESTING,
  NestingError,
  scanTopLevel,
  type Extracted,
} from "../../support/extract-outputs.js";

const NAMES = ["outputs", "version", "resources", "", "__proto__"];
const SCAN = { scanThreshold: 0 };

/** A JSON document as a tree; objects keep every entry, so keys may repeat. */
type Node =
  | { readonly t: "obj"; readonly entries: readonly (readonly [string, Node])[] }
  | { readonly t: "arr"; readonly items: readonly Node[] }
  | { readonly t: "str"; readonly v: string }
  | { readonly t: "num"; readonly text: string }
  | { readonly t: "lit"; readonly text: "true" | "false" | "null" };

const keyArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom("outputs", "version", "resources", "out", "outputs ", "Outputs", "", "__proto__", "value", "a") },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 6 }) },
);
const stringArb = fc.oneof(
  fc.constantFrom('"outputs": {', "{", "}", "[", "]", "\\", '"', "a\\", '\\"', "outputs", "ü€😀", "\n\t"),
  fc.string({ unit: "binary", maxLength: 8 }),
);
const numberArb = fc.oneof(
  fc.constantFrom("0", "-0", "1e5", "1E+2", "0.5e-3", "-12.75", "123456789012345678901234567890", "4"),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
);
const { node: nodeArb } = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.record({ t: fc.constant("str" as const), v: stringArb }),
    fc.record({ t: fc.constant("num" as const), text: numberArb }),
    fc.record({ t: fc.constant("lit" as const), text: fc.constantFrom("true" as const, "false" as const, "null" as const) }),
    fc.record({ t: fc.constant("arr" as const), items: fc.array(tie("node"), { maxLength: 4 }) }),
    fc.record({ t: fc.constant("obj" as const), entries: fc.array(fc.tuple(keyArb, tie("node")), { maxLength: 5 }) }),
  ),
}));
const topObjectArb = fc.record({ t: fc.constant("obj" as const), entries: fc.array(fc.tuple(keyArb, nodeArb), { maxLength: 8 }) });

/** Deterministic randomness for formatting choices, so a failing case replays exactly. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Serialize with random whitespace and random (but valid) escaping of string characters. */
function serialize(node: Node, seed: number): string {
  const r = prng(seed);
  const ws = (): string => {
    if (r() < 0.5) return "";
    let s = "";
    const n = 1 + Math.floor(r() * 3);
    for (let i = 0; i < n; i++) s += " \t\n\r"[Math.floor(r() * 4)] as string;
    return s;
  };
  const str = (v: string): string => {
    let out = '"';
    for (const ch of v) {
      const code = ch.codePointAt(0) as number;
      if (ch === '"') out += r() < 0.8 ? '\\"' : "\\u0022";
      else if (ch === "\\") out += r() < 0.8 ? "\\\\" : "\\u005C";
      else if (code < 0x20) out += ch === "\n" && r() < 0.5 ? "\\n" : `\\u${code.toString(16).padStart(4, "0")}`;
      else if (ch === "/" && r() < 0.5) out += "\\/";
      else if (r() < 0.15) {
        for (let k = 0; k < ch.length; k++) {
          const hex = ch.charCodeAt(k).toString(16).padStart(4, "0");
          out += `\\u${r() < 0.5 ? hex : hex.toUpperCase()}`;
        }
      } else out += ch;
    }
    return `${out}"`;
  };
  const go = (n: Node): string => {
    switch (n.t) {
      case "str":
        return str(n.v);
      case "num":
      case "lit":
        return n.text;
      case "arr":
        return `[${ws()}${n.items.map((x) => `${go(x)}${ws()}`).join(`,${ws()}`)}]`;
      case "obj":
        return `{${ws()}${n.entries.map(([k, v]) => `${str(k)}${ws()}:${ws()}${go(v)}${ws()}`).join(`,${ws()}`)}}`;
    }
  };
  return `${ws()}${go(node)}${ws()}`;
}

/** What JSON.parse says about the same bytes, in the extractor's terms. */
function reference(bytes: Buffer, names: readonly string[]): { kind: Extracted["kind"]; members: Map<string, unknown> } {
  const doc: unknown = JSON.parse(bytes.toString("utf8"));
  const kind = doc === null ? "null" : Array.isArray(doc) ? "array" : (typeof doc as Extracted["kind"]);
  const members = new Map<string, unknown>();
  if (kind === "object") for (const n of names) if (Object.hasOwn(doc as object, n)) members.set(n, (doc as Record<string, unknown>)[n]);
  return { kind, members };
}

function assertSame(got: Extracted, want: ReturnType<typeof reference>): void {
  assert.equal(got.kind, want.kind);
  assert.deepStrictEqual([...got.members.keys()].sort(), [...want.members.keys()].sort());
  for (const [k, v] of want.members) assert.deepStrictEqual(got.members.get(k), v, `member ${JSON.stringify(k)}`);
}

describe("extractTopLevel, property-based against JSON.parse", () => {
  it("gives JSON.parse's members for every top-level object, and takes the scan path doing it", () => {
    fc.assert(
      fc.property(topObjectArb, fc.integer(), (doc, seed) => {
        const bytes = Buffer.from(serialize(doc, seed), "utf8");
        const got = extractTopLevel(bytes, NAMES, SCAN);
        assertSame(got, reference(bytes, NAMES));
        assert.equal(got.method, "scan", "a valid top-level object must never need the fallback");
      }),
      { numRuns: 1500 },
    );
  });

  it("gives JSON.parse's answer for any top-level value", () => {
    fc.assert(
      fc.property(nodeArb, fc.integer(), (doc, seed) => {
        const bytes = Buffer.from(serialize(doc, seed), "utf8");
        assertSame(extractTopLevel(bytes, NAMES, SCAN), reference(bytes, NAMES));
      }),
      { numRuns: 800 },
    );
  });

  it("agrees with extractOutputs and with the parse path", () => {
    fc.assert(
      fc.property(topObjectArb, fc.integer(), (doc, seed) => {
        const bytes = Buffer.from(serialize(doc, seed), "utf8");
        const parsed = extractTopLevel(bytes, ["outputs"], { scanThreshold: Infinity });
        assert.equal(parsed.method, "parse");
        assert.deepStrictEqual(extractOutputs(bytes, SCAN), parsed.members.get("outputs"));
      }),
      { numRuns: 300 },
    );
  });

  it("throws exactly when JSON.parse throws on a truncated document", () => {
    fc.assert(
      fc.property(topObjectArb, fc.integer(), fc.double({ min: 0, max: 1, noNaN: true }), (doc, seed, at) => {
        const full = Buffer.from(serialize(doc, seed), "utf8");
        const bytes = full.subarray(0, Math.floor(at * full.length));
        let want: ReturnType<typeof reference> | undefined;
        try {
          want = reference(bytes, NAMES);
        } catch {
          want = undefined;
        }
        if (want === undefined) assert.throws(() => extractTopLevel(bytes, NAMES, SCAN), SyntaxError);
        else assertSame(extractTopLevel(bytes, NAMES, SCAN), want);
      }),
      { numRuns: 800 },
    );
  });

  it("on mutated documents: both paths give JSON.parse's answer when it accepts them and throw SyntaxError when it refuses them", () => {
    const mutation = fc.tuple(
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.constantFrom("replace", "insert", "delete"),
      fc.constantFrom(...'"\\{}[]:, \n0a\u00e9'.split(""), "\u00ff"),
    );
    fc.assert(
      fc.property(topObjectArb, fc.integer(), fc.array(mutation, { minLength: 1, maxLength: 3 }), (doc, seed, mutations) => {
        let bytes = Buffer.from(serialize(doc, seed), "utf8");
        for (const [at, op, ch] of mutations) {
          const i = Math.floor(at * bytes.length);
          const b = ch === "\u00ff" ? Buffer.from([0xff]) : Buffer.from(ch, "utf8");
          if (op === "replace" && bytes.length > 0) bytes = Buffer.concat([bytes.subarray(0, i), b, bytes.subarray(i + 1)]);
          else if (op === "insert") bytes = Buffer.concat([bytes.subarray(0, i), b, bytes.subarray(i)]);
          else bytes = Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1)]);
        }
        let want: ReturnType<typeof reference> | undefined;
        try {
          want = reference(bytes, NAMES);
        } catch {
          want = undefined;
        }
        for (const options of [SCAN, { scanThreshold: Infinity }]) {
          if (want !== undefined) assertSame(extractTopLevel(bytes, NAMES, options), want);
          else assert.throws(() => extractTopLevel(bytes, NAMES, options), SyntaxError);
        }
      }),
      { numRuns: 1500 },
    );
  });
});

describe("extractTopLevel, hand cases", () => {
  const outputs = (text: string): unknown => extractOutputs(Buffer.from(text, "utf8"), SCAN);
  const method = (text: string): string => extractTopLevel(Buffer.from(text, "utf8"), ["outputs"], SCAN).method;

  it("decodes escaped keys: out\\u0070uts is outputs", () => {
    assert.deepEqual(outputs('{"out\\u0070uts": {"a": {"value": 1}}}'), { a: { value: 1 } });
    assert.deepEqual(outputs('{"\\u006futputs": 2, "outputs\\u0020": 3}'), 2);
    assert.equal(method('{"out\\u0070uts": 1}'), "scan");
  });

  it("ignores nested outputs keys and outputs inside strings", () => {
    const doc = '{"resources": [{"outputs": {"x": 1}}, "\\"outputs\\": 5"], "a": {"outputs": 2}, "s": "{\\"outputs\\": 3}"}';
    assert.equal(outputs(doc), undefined);
    assert.equal(outputs(`{"resources": {"outputs": 1}, "outputs": 9}`), 9);
  });

  it("finds outputs after huge resources, and first", () => {
    const resources = JSON.stringify(
      Array.from({ length: 20_000 }, (_, i) => ({ id: `r-${i}`, attributes: { outputs: { value: i }, tags: { 'a"}]': "[{" } } })),
    );
    const big = `{"version": 4, "resources": ${resources}, "outputs": {"vpc": {"value": "vpc-1", "type": "string"}}}`;
    assert.ok(big.length > DEFAULT_SCAN_THRESHOLD);
    const got = extractTopLevel(Buffer.from(big), ["outputs", "version"]);
    assert.equal(got.method, "scan", "above the default threshold the scan is used");
    assert.deepEqual(got.members.get("outputs"), { vpc: { value: "vpc-1", type: "string" } });
    assert.equal(got.members.get("version"), 4);
    const first = `{"outputs": {"n": {"value": 1}}, "resources": ${resources}}`;
    assert.deepEqual(outputs(first), { n: { value: 1 } });
  });

  it("keeps the last of duplicate keys, as JSON.parse does", () => {
    assert.deepEqual(outputs('{"outputs": {"a": 1}, "x": [], "outputs": {"b": 2}}'), { b: 2 });
    assert.deepEqual(outputs('{"outputs": {"a": 1}, "out\\u0070uts": null}'), null);
    assert.deepEqual(outputs('{"outputs": 1, "outputs": {"b": 2}, "outputs": "three"}'), "three");
  });

  it("accepts any JSON whitespace", () => {
    assert.deepEqual(outputs('\r\n\t {\t"outputs"\n:\r{ "a" :\t[ 1 ,2 ] }\n,"z":true\t}\r\n '), { a: [1, 2] });
  });

  it("handles strings with brackets, quotes and trailing backslashes", () => {
    const doc = '{"r": ["}", "]", "\\\\", "a\\\\\\"b", "{[", "\\u005c"], "outputs": {"p": "\\\\"}, "t": "\\\\\\\\"}';
    assert.deepEqual(outputs(doc), JSON.parse(doc).outputs);
  });

  it("scalar, null and missing outputs", () => {
    assert.equal(outputs('{"outputs": "x"}'), "x");
    assert.equal(outputs('{"outputs": -1.5e3}'), -1500);
    assert.equal(outputs('{"outputs": null}'), null);
    assert.equal(outputs('{"version": 4}'), undefined);
    assert.equal(outputs("{}"), undefined);
    assert.equal(outputs(" { } "), undefined);
  });

  it("non-object top levels fall back to a full parse", () => {
    for (const [text, kind] of [
      ['[{"outputs": 1}]', "array"],
      ['"outputs"', "string"],
      ["null", "null"],
      ["4", "number"],
      ["false", "boolean"],
    ] as const) {
      const got = extractTopLevel(Buffer.from(text), ["outputs"], SCAN);
      assert.equal(got.kind, kind);
      assert.equal(got.method, "parse");
      assert.equal(got.members.size, 0);
    }
  });

  it("rejects what JSON.parse rejects at the top level and in the wanted member", () => {
    for (const bad of [
      "",
      "\ufeff{}",
      "{",
      '{"outputs": {"a": 1}',
      '{"outputs": {"a": 1}} x',
      '{"outputs": {"a": 1},}',
      '{"outputs" {"a": 1}}',
      '{"outputs": {"a": tru}}',
      '{"outputs": {"a": [1,]}}',
      '{"outputs": 01}',
      '{"a": 1 "outputs": 2}',
      '{"a\u0001": 1}',
      '{"\\x": 1}',
      '{"outputs": "a\tb"}',
      '{"resources": [}',
      '{"resources": [1, {"a": "unterminated]}',
      '{"resources": {"a": [1}]}',
      "{'outputs': 1}",
    ]) {
      assert.throws(() => extractTopLevel(Buffer.from(bad, "utf8"), ["outputs"], SCAN), SyntaxError, JSON.stringify(bad));
    }
  });

  it("checks the inside of members it skips: what JSON.parse refuses deep in resources is refused", () => {
    for (const bad of [
      "[tru]",
      "[1 2]",
      "[1,]",
      '{"a":1,}',
      "[NaN]",
      "[01]",
      "[1.]",
      "[.5]",
      "[1e]",
      "[-]",
      '["\\x"]',
      '["\\u12G4"]',
      '["a\tb"]',
      "[+1]",
      '{"a" 1}',
      "{1: 2}",
      "[Infinity]",
      "[nul]",
      "[truex]",
      '{"a":}',
      "[,]",
      "[]]",
    ]) {
      const doc = `{"resources": ${bad}, "outputs": {"a": 1}}`;
      assert.throws(() => JSON.parse(doc), SyntaxError, `JSON.parse refuses ${doc}`);
      assert.throws(() => outputs(doc), SyntaxError, doc);
      assert.throws(() => extractOutputs(Buffer.from(doc), { scanThreshold: Infinity }), SyntaxError, doc);
    }
  });

  it("accepts nesting up to the tool's limit (10,000 levels, the top-level object included) and refuses deeper, on both paths", () => {
    const doc = (levels: number): string => `{"resources": ${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}, "outputs": {"d": {"value": true}}}`;
    for (const threshold of [0, Infinity]) {
      assert.deepEqual(extractOutputs(Buffer.from(doc(MAX_NESTING)), { scanThreshold: threshold }), { d: { value: true } });
      assert.throws(() => extractOutputs(Buffer.from(doc(MAX_NESTING + 1)), { scanThreshold: threshold }), NestingError);
      assert.throws(() => extractOutputs(Buffer.from(doc(100_000)), { scanThreshold: threshold }), NestingError);
    }
    assert.throws(() => outputs(`{"resources": ${"[".repeat(1000)}${"]".repeat(999)}}, "outputs": 1}`), SyntaxError);
  });

  it("decodes UTF-8 (and invalid UTF-8) the way Buffer#toString does", () => {
    const doc = Buffer.concat([
      Buffer.from('{"resources": ["'),
      Buffer.from([0xff, 0xc3]),
      Buffer.from('"], "outputs": {"name": "Zürich 😀 '),
      Buffer.from([0xe2, 0x82]),
      Buffer.from('"}}'),
    ]);
    assert.deepEqual(extractOutputs(doc, SCAN), JSON.parse(doc.toString("utf8")).outputs);
    assert.equal(extractTopLevel(doc, ["outputs"], SCAN).method, "scan");
  });

  it("works on a view into a larger buffer", () => {
    const backing = Buffer.from('xxxx{"outputs": {"a": 1}, "resources": [1]}yyyy');
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 4, backing.length - 8);
    assert.deepEqual(extractOutputs(view, SCAN), { a: 1 });
    assert.deepEqual(scanTopLevel(view, ["outputs"]), new Map([["outputs", [12, 20]]]));
  });

  it("parses small documents whole below the threshold", () => {
    const doc = Buffer.from('{"outputs": {"a": 1}}');
    assert.equal(extractTopLevel(doc, ["outputs"]).method, "parse");
    assert.equal(extractTopLevel(doc, ["outputs"], { scanThreshold: doc.length }).method, "scan");
    assert.equal(extractTopLevel(doc, ["outputs"], { scanThreshold: doc.length + 1 }).method, "parse");
  });
});
