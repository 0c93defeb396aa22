import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { writeGathered, type GatherTarget } from "../../../src/store/gathered-write.js";
import type { ByteSource } from "../../../src/store/types.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-gathered-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A source whose chunks the test hands over one by one (`give`), as a request body's reads arrive. */
function arriving(size: number): ByteSource & { give(chunk: Buffer): void; fail(e: Error): void; end(): void } {
  const queue: (Buffer | Error | null)[] = [];
  let wake: (() => void) | undefined;
  const push = (x: Buffer | Error | null): void => {
    queue.push(x);
    wake?.();
  };
  return {
    size,
    stable: true,
    give: (c) => push(c),
    fail: (e) => push(e),
    end: () => push(null),
    async *open() {
      for (;;) {
        const x = queue.shift();
        if (x === undefined) await new Promise<void>((r) => (wake = r));
        else if (x === null) return;
        else if (x instanceof Error) throw x;
        else yield x;
      }
    },
  };
}

/** A file whose first write ends only when the test lets it (`release`); `started` once it began. */
function heldTarget(): GatherTarget & { calls: number[]; release(): void; started: Promise<void> } {
  let release: () => void = () => undefined;
  let started: () => void = () => undefined;
  const t = {
    calls: [] as number[],
    started: new Promise<void>((r) => (started = r)),
    release: () => release(),
    async writev(buffers: readonly Uint8Array[]) {
      t.calls.push(buffers.length);
      if (t.calls.length === 1) {
        started();
        await new Promise<void>((r) => (release = r));
      }
      return { bytesWritten: buffers.reduce((n, b) => n + b.length, 0) };
    },
  };
  return t;
}

const chunk = (i: number): Buffer => Buffer.alloc(1000, 65 + (i % 26));
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

describe("writeGathered", () => {
  it("writes the chunks that arrived during a write together in the next writev, in order, to a real file", async () => {
    const file = join(dir, "burst");
    const handle = await open(file, "w");
    const calls: number[] = [];
    let block: (() => void) | undefined;
    const target: GatherTarget = {
      async writev(buffers) {
        calls.push(buffers.length);
        if (calls.length === 1) await new Promise<void>((r) => (block = r));
        return handle.writev(buffers as Uint8Array[]);
      },
    };
    const source = arriving(11 * 1000);
    const seen: number[] = [];
    const totals: number[] = [];
    const done = writeGathered(
      target,
      source,
      "the test's bytes",
      (c) => seen.push(c[0] as number),
      (t) => totals.push(t),
    );
    source.give(chunk(0));
    while (block === undefined) await settle();
    for (let i = 1; i <= 10; i++) source.give(chunk(i));
    source.end();
    await settle();
    block();
    await done;
    await handle.close();
    assert.deepEqual(calls, [1, 10], "ten chunks that arrived during the first write go in one writev");
    assert.deepEqual(
      seen,
      [...Array(11).keys()].map((i) => 65 + (i % 26)),
      "each chunk is seen once, in order",
    );
    assert.deepEqual(totals, [1000, 11_000]);
    assert.deepEqual(readFileSync(file), Buffer.concat([...Array(11).keys()].map(chunk)));
  });

  it("finishes a batch a file took only part of", async () => {
    const out: Buffer[] = [];
    const target: GatherTarget = {
      async writev(buffers) {
        // At most 7 bytes per call, from wherever the batch now starts.
        const all = Buffer.concat(buffers as Uint8Array[]);
        out.push(all.subarray(0, 7));
        return { bytesWritten: Math.min(7, all.length) };
      },
    };
    const source = arriving(3 * 1000);
    const done = writeGathered(
      target,
      source,
      "the test's bytes",
      () => undefined,
      () => undefined,
    );
    for (let i = 0; i < 3; i++) source.give(chunk(i));
    source.end();
    await done;
    assert.deepEqual(Buffer.concat(out), Buffer.concat([chunk(0), chunk(1), chunk(2)]));
  });

  it("rejects with the read's failure only once the write under way has ended", async () => {
    const target = heldTarget();
    const source = arriving(5000);
    const order: string[] = [];
    const done = writeGathered(
      target,
      source,
      "the test's bytes",
      () => undefined,
      () => undefined,
    ).catch((e: unknown) => {
      order.push("rejected");
      return e;
    });
    source.give(chunk(0));
    await target.started;
    source.fail(new Error("the client went away"));
    await settle();
    order.push("write ends");
    target.release();
    const e = await done;
    assert.deepEqual(order, ["write ends", "rejected"]);
    assert.match(String(e), /the client went away/);
  });

  it("rejects with a write's failure (a full disk) and reads no further", async () => {
    let calls = 0;
    const target: GatherTarget = {
      async writev() {
        calls += 1;
        throw Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
      },
    };
    const source = arriving(4000);
    const done = writeGathered(
      target,
      source,
      "the test's bytes",
      () => undefined,
      () => undefined,
    );
    source.give(chunk(0));
    await settle();
    source.give(chunk(1));
    source.give(chunk(2));
    await assert.rejects(done, (e: NodeJS.ErrnoException) => e.code === "ENOSPC");
    assert.equal(calls, 1);
  });

  it("fails rather than spin when a write takes no bytes", async () => {
    const target: GatherTarget = { writev: async () => ({ bytesWritten: 0 }) };
    const source = arriving(1000);
    const done = writeGathered(
      target,
      source,
      "the test's bytes",
      () => undefined,
      () => undefined,
    );
    source.give(chunk(0));
    source.end();
    await assert.rejects(done, (e: NodeJS.ErrnoException) => e.code === "EIO");
  });

  it("refuses a source that yields fewer bytes than its size", async () => {
    const target = { writev: async (b: readonly Uint8Array[]) => ({ bytesWritten: b.reduce((n, x) => n + x.length, 0) }) };
    const source = arriving(5000);
    const done = writeGathered(
      target,
      source,
      "the test's bytes",
      () => undefined,
      () => undefined,
    );
    source.give(chunk(0));
    source.end();
    await assert.rejects(done, (e: { code?: string }) => e.code === "INPUT_CHANGED");
  });
});
