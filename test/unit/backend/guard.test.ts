/**
 * The pure parts of the guard: the tool's CheckValidImport rule, digest normalisation, and
 * reading lineage/serial from the first bytes of a state.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { normalizeDigest } from "../../../src/backend/meta.js";
import { guardRefusal } from "../../../src/backend/write.js";
import { isEmptyState, scanHeader, stateHeader } from "../../../src/backend/state-header.js";

const stored = (lineage: string | undefined, serial: number | undefined, empty = false) => ({ lineage, serial, version: 4, empty });

describe("guardRefusal (the tool's CheckValidImport)", () => {
  it("lets anything replace an empty state or one without a lineage", () => {
    assert.equal(guardRefusal(stored("l", 9, true), { lineage: "other", serial: 1 }, "x"), undefined);
    assert.equal(guardRefusal(stored(undefined, 9), { lineage: "other", serial: 1 }, "x"), undefined);
    assert.equal(guardRefusal(stored("", 9), {}, "x"), undefined);
  });
  it("refuses another lineage, a lower or missing serial, and the same serial; accepts a higher one", () => {
    assert.match(
      guardRefusal(stored("l", 5), { lineage: "m", serial: 6 }, "b/k")?.message ?? "",
      /another lineage over b\/k \(stored: lineage l, serial 5; new: lineage m, serial 6\)/,
    );
    assert.equal(guardRefusal(stored("l", 5), { lineage: "m", serial: 6 }, "x")?.code, "STATE_CONFLICT");
    assert.match(guardRefusal(stored("l", 5), { lineage: "l", serial: 4 }, "x")?.message ?? "", /older state/);
    assert.match(guardRefusal(stored("l", 5), { lineage: "l" }, "x")?.message ?? "", /older state.*serial \(none\)/);
    assert.match(guardRefusal(stored("l", 5), { lineage: "l", serial: 5 }, "x")?.message ?? "", /same serial/);
    assert.equal(guardRefusal(stored("l", 5), { lineage: "l", serial: 6 }, "x"), undefined);
    // A stored state with a lineage but no serial: only the lineage is checked.
    assert.equal(guardRefusal(stored("l", undefined), { lineage: "l", serial: 0 }, "x"), undefined);
  });
});

describe("normalizeDigest", () => {
  it("reads digests other tools write: any case, padded; empty is none", () => {
    assert.equal(normalizeDigest(" 0123ABCDEF0123456789ABCDEF012345\n"), "0123abcdef0123456789abcdef012345");
    assert.equal(normalizeDigest(""), undefined);
    assert.equal(normalizeDigest("  "), undefined);
    assert.equal(normalizeDigest(null), undefined);
  });
});

describe("state headers", () => {
  it("finds the top-level lineage and serial, not nested ones, in whole states and in any prefix", () => {
    const doc = JSON.stringify({
      version: 4,
      meta: { serial: 99, lineage: "nested" },
      "ser\\u0069al": 0,
      serial: 7,
      lineage: "top",
      resources: [{ serial: 1 }],
    });
    const bytes = Buffer.from(doc);
    const at = doc.indexOf('"serial":7') + '"serial":'.length;
    // serialAt: where a rollback writes the new serial, leaving every other byte as it was.
    assert.deepEqual(scanHeader(bytes), { version: 4, serial: 7, serialAt: [at, at + 1], lineage: "top", complete: true });
    const end = doc.indexOf('"resources"');
    for (let n = 0; n <= bytes.length; n++) {
      const h = scanHeader(bytes.subarray(0, n));
      if (n === 0) continue;
      // Whatever a prefix yields is right, and once lineage is complete it is found.
      assert.ok(h === undefined || h.serial === undefined || h.serial === 7 || h.serial === 0, `prefix ${n}`);
      if (n >= end) assert.equal(h?.lineage, "top", `prefix ${n}`);
    }
  });
  it("says when bytes are not an object", () => {
    assert.equal(scanHeader(Buffer.from("[1,2]")), undefined);
    assert.equal(scanHeader(Buffer.from("  ")), undefined);
  });
  it("agrees with JSON.parse on the members it reads (property)", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.option(fc.string()), fc.option(fc.integer({ min: 0 })), (extra, lineage, serial) => {
        const doc: Record<string, unknown> = { ...extra };
        delete doc["lineage"];
        delete doc["serial"];
        delete doc["version"];
        if (lineage !== null) doc["lineage"] = lineage;
        if (serial !== null) doc["serial"] = serial;
        const h = scanHeader(Buffer.from(JSON.stringify(doc)));
        assert.equal(h?.lineage, lineage ?? undefined);
        assert.equal(h?.serial, serial ?? undefined);
      }),
    );
  });
  it("tells empty states from others, formats 1–4", () => {
    assert.equal(isEmptyState({ version: 4, outputs: {}, resources: [] }), true);
    assert.equal(isEmptyState({ version: 4, outputs: { a: { value: 1 } }, resources: [] }), false);
    assert.equal(isEmptyState({ version: 4, resources: [{}] }), false);
    assert.equal(isEmptyState({ version: 3, modules: [{ path: ["root"], outputs: {}, resources: {} }] }), true);
    assert.equal(
      isEmptyState({ version: 3, modules: [{ path: ["root", "net"], outputs: { x: 1 }, resources: {} }] }),
      true,
      "child module outputs do not count",
    );
    assert.equal(isEmptyState({ version: 3, modules: [{ path: ["root", "net"], resources: { "a.b": {} } }] }), false);
    assert.equal(stateHeader(Buffer.from('{"version":4,"serial":2,"lineage":"x","resources":[]}'), true, "s").empty, true);
    assert.throws(() => stateHeader(Buffer.from("{"), true, "the stored state"), { code: "STATE_INVALID" });
  });
});
