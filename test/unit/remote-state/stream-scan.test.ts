/**
 * The scan fed in arbitrary chunks, as a state downloads, gives exactly the answer of the
 * whole-buffer scan (scanTopLevel): the same spans, or null for both.
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import fc from "fast-check";
import { scanTopLevel } from "../../support/extract-outputs.js";
import { JsonScanner } from "../../../src/json/scan.js";

const NAMES = ["version", "outputs"];

/** Fed in pieces ending at `points`, then the rest. */
function fed(bytes: Buffer, points: readonly number[]): Map<string, readonly [number, number]> | null {
  const s = new JsonScanner(NAMES);
  for (const p of [...points, bytes.length]) if (p > s.offset) s.feed(bytes.subarray(s.offset, p));
  return s.end() === undefined ? (s.spans as Map<string, readonly [number, number]>) : null;
}

function streamed(bytes: Buffer, cuts: number[]): Map<string, readonly [number, number]> | null {
  return fed(
    bytes,
    [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b),
  );
}

const key = fc.oneof(fc.constantFrom("outputs", "version", "resources", "out\\u0070uts", 'a\\"b', "x"), fc.string({ maxLength: 5 }));
const doc = fc
  .tuple(fc.array(fc.tuple(key, fc.jsonValue({ maxDepth: 4 })), { maxLength: 6 }), fc.constantFrom("", " ", "\n  ", "\t"))
  .map(
    ([members, ws]) =>
      `${ws}{${ws}${members.map(([k, v]) => `${JSON.stringify(k).replace(/\\\\u0070/g, "\\u0070")}${ws}:${ws}${JSON.stringify(v, null, ws.length > 1 ? 2 : undefined)}`).join(`${ws},${ws}`)}${ws}}${ws}`,
  );
const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 });

it("property: streamed in random chunks equals the whole-buffer scan, for valid documents", () => {
  fc.assert(
    fc.property(doc, cuts, (text, cs) => {
      const bytes = Buffer.from(text, "utf8");
      assert.deepEqual(streamed(bytes, cs), scanTopLevel(bytes, NAMES));
    }),
    { numRuns: 2000 },
  );
});

it("property: also for damaged documents (truncated, bytes changed)", () => {
  fc.assert(
    fc.property(doc, cuts, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean(), (text, cs, at, byte, truncate) => {
      let bytes = Buffer.from(text, "utf8");
      if (bytes.length === 0) return;
      if (truncate) bytes = bytes.subarray(0, at % bytes.length);
      else bytes[at % bytes.length] = byte;
      assert.deepEqual(streamed(Buffer.from(bytes), cs), scanTopLevel(bytes, NAMES));
    }),
    { numRuns: 2000 },
  );
});

it("hand cases: escapes split across chunks, nested outputs keys, duplicate keys, outputs last", () => {
  const cases = [
    '{"resources":[{"outputs":{"x":1},"s":"a\\"]}"}],"outputs":{"o":{"value":"v"}}}',
    '{"outputs":{"a":1},"outputs":{"b":2}}',
    '{"version":4,"outputs":{},"resources":"\\\\"}',
    '  {"out\\u0070uts": {"k": [1, {"x": "]"}]}}  ',
  ];
  for (const c of cases) {
    const bytes = Buffer.from(c);
    for (let cut = 0; cut <= bytes.length; cut++) {
      assert.deepEqual(fed(bytes, [cut]), scanTopLevel(bytes, NAMES), `${c} cut at ${cut}`);
    }
  }
});

it("property: a damaged document scans (streamed or whole) exactly when JSON.parse accepts it as an object", () => {
  const jsonObject = (bytes: Buffer): boolean => {
    try {
      const v: unknown = JSON.parse(bytes.toString("utf8"));
      return typeof v === "object" && v !== null && !Array.isArray(v);
    } catch {
      return false;
    }
  };
  fc.assert(
    fc.property(
      doc,
      cuts,
      fc.nat(),
      fc.constantFrom(",", "]", "}", "[", "{", ":", "0", "N", "t", '"', "\\", "\t", " ", "-", "."),
      fc.boolean(),
      (text, cs, at, ch, insert) => {
        const bytes = Buffer.from(text, "utf8");
        const i = at % (bytes.length + 1);
        const damaged = Buffer.concat([bytes.subarray(0, i), Buffer.from(ch), bytes.subarray(insert ? i : i + 1)]);
        const ok = jsonObject(damaged);
        assert.equal(scanTopLevel(damaged, NAMES) !== null, ok, damaged.toString("utf8"));
        assert.equal(streamed(damaged, cs) !== null, ok, damaged.toString("utf8"));
      },
    ),
    { numRuns: 3000 },
  );
});

it("a large state in 64 KiB pieces: outputs found after megabytes of resources, their bytes kept", () => {
  const resources = Array.from({ length: 20_000 }, (_, i) => ({
    type: "aws_instance",
    name: `r${i}`,
    attributes: { id: `i-${i}`, tags: { q: 'a "quoted" }]' } },
  }));
  const bytes = Buffer.from(JSON.stringify({ version: 4, resources, outputs: { vpc: { value: "vpc-1" } } }, null, 2));
  assert.ok(bytes.length > 2 * 1024 * 1024);
  const s = new JsonScanner(NAMES);
  for (let at = 0; at < bytes.length; at += 65536) s.feed(bytes.subarray(at, at + 65536));
  assert.equal(s.end(), undefined);
  const [start, end] = s.spans.get("outputs") ?? [0, 0];
  assert.deepEqual(JSON.parse(bytes.subarray(start, end).toString()), { vpc: { value: "vpc-1" } });
  assert.deepEqual(JSON.parse(s.values.get("outputs")?.toString() ?? ""), { vpc: { value: "vpc-1" } });
});
