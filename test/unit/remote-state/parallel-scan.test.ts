/**
 * The scan in the worker thread (parallel-scan.ts) gives exactly the answer of the
 * whole-buffer scan, whether the body is in shared memory (the S3 driver's) or copied there
 * chunk by chunk; a scan called off settles as null and frees the worker; a second scan
 * while the worker is busy runs on this thread, with the same answer.
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import fc from "fast-check";
import { scanTopLevel } from "../../../src/state/extract-outputs.js";
import { startTopLevelScan, type ScanSpans } from "../../../src/remote-state/parallel-scan.js";

const NAMES = ["version", "outputs", "modules"];

/** `bytes` as the S3 driver hands it over: in a SharedArrayBuffer, or an ordinary Buffer. */
function body(bytes: Buffer, shared: boolean): Buffer {
  if (!shared) return Buffer.from(bytes);
  const b = Buffer.from(new SharedArrayBuffer(bytes.length));
  bytes.copy(b);
  return b;
}

/** Feed `b` as if it arrived in pieces ending at `cuts`, then finish. */
async function scanned(b: Buffer, cuts: readonly number[], inWorker: boolean): Promise<ScanSpans> {
  const s = startTopLevelScan(NAMES, b, { inWorker });
  for (const c of [...cuts].sort((x, y) => x - y)) if (c > 0 && c < b.length) s.feed(b, c);
  return s.finish(b);
}

const key = fc.oneof(fc.constantFrom("outputs", "version", "modules", "resources", "out\\u0070uts"), fc.string({ maxLength: 5 }));
const doc = fc
  .tuple(fc.array(fc.tuple(key, fc.jsonValue({ maxDepth: 4 })), { maxLength: 6 }), fc.boolean())
  .map(
    ([members, pretty]) =>
      `{${members.map(([k, v]) => `${JSON.stringify(k).replace(/\\\\u0070/g, "\\u0070")}: ${JSON.stringify(v, null, pretty ? 2 : undefined)}`).join(pretty ? ",\n  " : ",")}}`,
  );

it("property: in the worker, shared or copied, in random chunks, the spans of the whole-buffer scan (valid and damaged documents)", async () => {
  await fc.assert(
    fc.asyncProperty(
      doc,
      fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 }),
      fc.boolean(),
      fc.option(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }))),
      async (text, cs, shared, damage) => {
        const bytes = Buffer.from(text, "utf8");
        if (damage !== null) bytes[damage[0] % bytes.length] = damage[1];
        const b = body(bytes, shared);
        const cuts = cs.map((c) => Math.floor(c * b.length));
        const want = scanTopLevel(bytes, NAMES);
        assert.deepEqual(await scanned(b, cuts, true), want);
        assert.deepEqual(await scanned(b, cuts, false), want);
      },
    ),
    { numRuns: 300 },
  );
});

it("a large state in 64 KiB pieces: the worker finds outputs after megabytes of resources", async () => {
  const resources = Array.from({ length: 20_000 }, (_, i) => ({
    type: "aws_instance",
    name: `r${i}`,
    attributes: { id: `i-${i}`, tags: { q: 'a "quoted" }]' } },
  }));
  const bytes = Buffer.from(JSON.stringify({ version: 4, resources, outputs: { vpc: { value: "vpc-1" } } }, null, 2));
  assert.ok(bytes.length > 2 * 1024 * 1024);
  const cuts = Array.from({ length: Math.floor(bytes.length / 65536) }, (_, k) => (k + 1) * 65536);
  for (const shared of [true, false]) {
    const spans = await scanned(body(bytes, shared), cuts, true);
    assert.ok(spans !== null);
    const [start, end] = spans.get("outputs") ?? [0, 0];
    assert.deepEqual(JSON.parse(bytes.subarray(start, end).toString()), { vpc: { value: "vpc-1" } });
  }
});

it("a scan called off settles as null and frees the worker for the next one", async () => {
  const bytes = Buffer.from(JSON.stringify({ version: 4, resources: Array.from({ length: 5000 }, (_, i) => ({ i })), outputs: {} }));
  const b = body(bytes, true);
  const first = startTopLevelScan(NAMES, b, { inWorker: true });
  first.feed(b, Math.floor(b.length / 2));
  first.cancel();
  assert.equal(await first.finish(b), null);
  // Called off after the last byte: nothing to call off, the answer stands.
  const second = startTopLevelScan(NAMES, b, { inWorker: true });
  const answer = second.finish(b);
  second.cancel();
  assert.deepEqual(await answer, scanTopLevel(bytes, NAMES));
});

it("while the worker is busy, a second scan runs on this thread with the same answer", async () => {
  const bytes = Buffer.from(JSON.stringify({ version: 4, resources: [1, 2, 3], outputs: { a: { value: 1 } } }));
  const want = scanTopLevel(bytes, NAMES);
  const a = body(bytes, true);
  const b = body(bytes, true);
  const busy = startTopLevelScan(NAMES, a, { inWorker: true });
  const beside = startTopLevelScan(NAMES, b, { inWorker: true });
  assert.deepEqual(await beside.finish(b), want);
  assert.deepEqual(await busy.finish(a), want);
});
