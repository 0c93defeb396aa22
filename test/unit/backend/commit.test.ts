/**
 * The commit point's decisions (src/backend/commit.ts): committed, torn, superseded, foreign.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { intentMetadata, intentOf, judge, NO_PARENT } from "../../../src/backend/commit.js";
import type { DigestItem } from "../../../src/lock/types.js";
import type { ObjectMeta } from "../../../src/store/types.js";

const md5 = (s: string): string => createHash("md5").update(s).digest("hex");
const A = md5("a");
const B = md5("b");
const C = md5("c");
const item = (digest: string | null, generation: number): DigestItem => ({ digest, generation, lockId: undefined });
/** An objstate write of bytes with MD5 `sum` that saw the item `seen`. */
const written = (sum: string, seen: DigestItem | null, extra: Record<string, string> = {}): ObjectMeta => ({
  size: 1,
  metadata: { "objstate-serial": "2", "objstate-md5": sum, ...intentMetadata(seen), ...extra },
});

describe("intent metadata", () => {
  it("records the generation seen plus one and the digest it replaces (normalized), or none", () => {
    assert.deepEqual(intentMetadata(null), { "objstate-generation": "1", "objstate-parent-md5": NO_PARENT });
    assert.deepEqual(intentMetadata(item(` ${A.toUpperCase()}\n`, 0)), { "objstate-generation": "1", "objstate-parent-md5": A });
    assert.deepEqual(intentMetadata(item(A, 41)), { "objstate-generation": "42", "objstate-parent-md5": A });
  });

  it("reads back only a well-formed intent", () => {
    assert.deepEqual(intentOf({ size: 1, metadata: intentMetadata(item(A, 3)) }), { generation: 4, parent: A });
    assert.equal(intentOf({ size: 1 }), undefined);
    assert.equal(intentOf({ size: 1, metadata: { "objstate-generation": "0", "objstate-parent-md5": A } }), undefined);
    assert.equal(intentOf({ size: 1, metadata: { "objstate-generation": "x", "objstate-parent-md5": A } }), undefined);
    assert.equal(intentOf({ size: 1, metadata: { "objstate-generation": "2", "objstate-parent-md5": "not-an-md5" } }), undefined);
    assert.equal(intentOf({ size: 1, metadata: { "objstate-generation": "2" } }), undefined);
  });
});

describe("judge", () => {
  it("committed: the bytes are the committed digest's, whatever the metadata says", () => {
    assert.equal(judge({ size: 1 }, A, item(A, 0)), "committed");
    assert.equal(judge(written(A, item(C, 7)), A, item(` ${A.toUpperCase()}`, 1)), "committed");
  });

  it("torn: a complete write whose commit would still succeed (the generation and digest it saw are still the item's)", () => {
    const seen = item(A, 5);
    assert.equal(judge(written(B, seen), B, seen), "torn");
    // The first commit over no item, and over an item of the tool's own backend (no Generation).
    assert.equal(judge(written(B, null), B, null), "torn");
    assert.equal(judge(written(B, item(A, 0)), B, item(A.toUpperCase(), 0)), "torn");
  });

  it("superseded: another commit came after the write started", () => {
    const seen = item(A, 5);
    // The item moved on (another write committed generation 6, or more).
    assert.equal(judge(written(B, seen), B, item(C, 6)), "superseded");
    assert.equal(judge(written(B, seen), B, item(C, 9)), "superseded");
    // The same generation with another digest: the item was replaced and counted up again.
    assert.equal(judge(written(B, seen), B, item(C, 5)), "superseded");
    // A write that saw generation 5 against an item at 3 (replaced by the tool, then counted again): not its commit.
    assert.equal(judge(written(B, seen), B, item(A, 3)), "superseded");
  });

  it("foreign: no intent recorded, or bytes that do not match the write's own record", () => {
    assert.equal(judge({ size: 1, metadata: { "objstate-serial": "2", "objstate-md5": B } }, B, item(A, 1)), "foreign");
    assert.equal(judge({ size: 1 }, B, item(A, 1)), "foreign");
    // Damaged or replaced bytes: the write's record says B, the bytes hash to C.
    assert.equal(judge(written(B, item(A, 1)), C, item(A, 1)), "foreign");
  });

  it("a write stored in one piece is proven by its plain-MD5 ETag when objstate did not record the MD5", () => {
    const seen = item(A, 2);
    const meta: ObjectMeta = { size: 1, etag: B, metadata: { "objstate-serial": "3", ...intentMetadata(seen) } };
    assert.equal(judge(meta, B, seen), "torn");
    assert.equal(judge({ ...meta, etag: `${B}-2` }, B, seen), "foreign");
  });
});
