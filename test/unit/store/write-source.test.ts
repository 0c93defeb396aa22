/**
 * writeSource: how the embedded store writes a streamed body to its temp file (batches of
 * what arrived, one early fdatasync before the end of a large file, nothing in flight after
 * a failure). The ordering tests use a recording stand-in for the file; one test writes a
 * real file.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as fs from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { writeSource, type SyncedFile } from "../../../src/store/local-fs.js";

const MiB = 1024 * 1024;

/** A pushable source: chunks are yielded as they are pushed; end() or fail() finishes it. */
function pushable(): { push(c: Uint8Array): void; end(): void; fail(e: Error): void; chunks: AsyncIterable<Uint8Array> } {
  const queue: Uint8Array[] = [];
  let finished: { readonly error?: Error } | undefined;
  let wake: (() => void) | undefined;
  const poke = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  return {
    push: (c) => void (queue.push(c), poke()),
    end: () => void ((finished = {}), poke()),
    fail: (error) => void ((finished = { error }), poke()),
    chunks: {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const c = queue.shift();
          if (c !== undefined) yield c;
          else if (finished?.error !== undefined) throw finished.error;
          else if (finished !== undefined) return;
          else await new Promise<void>((r) => (wake = r));
        }
      },
    },
  };
}

/** A file that records its calls; each write or sync waits until release() (when held). */
function recordingFile(options: { hold?: boolean; shortBy?: number; failDatasync?: boolean } = {}) {
  const calls: string[] = [];
  const data: Buffer[] = [];
  const pending: (() => void)[] = [];
  let inFlight = 0;
  let shortBy = options.shortBy ?? 0;
  const gate = async (): Promise<void> => {
    inFlight += 1;
    if (options.hold === true) await new Promise<void>((r) => pending.push(r));
    else await new Promise((r) => setImmediate(r));
    inFlight -= 1;
  };
  const take = (parts: Uint8Array[]): number => {
    const all = Buffer.concat(parts);
    // A short write (legal for write(2)) takes fewer bytes than asked, once.
    const n = shortBy > 0 && all.length > shortBy ? all.length - shortBy : all.length;
    shortBy = 0;
    data.push(all.subarray(0, n));
    return n;
  };
  const file: SyncedFile = {
    async write(b) {
      calls.push(`write ${b.length}`);
      await gate();
      return { bytesWritten: take([b]) };
    },
    async writev(bs) {
      calls.push(`writev ${bs.length} ${bs.reduce((n, b) => n + b.length, 0)}`);
      await gate();
      return { bytesWritten: take(bs) };
    },
    async datasync() {
      calls.push(`datasync after ${Buffer.concat(data).length}`);
      await gate();
      if (options.failDatasync === true) throw Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" });
    },
    async sync() {
      calls.push(`sync after ${Buffer.concat(data).length}`);
      await gate();
    },
  };
  return { file, calls, data: () => Buffer.concat(data), release: () => pending.splice(0).forEach((r) => r()), inFlight: () => inFlight };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe("writeSource (the embedded store's streamed writes)", () => {
  it("chunks that arrive while a write is in progress go out together in one writev, in order", async () => {
    const f = recordingFile({ hold: true });
    const src = pushable();
    const pieces = Array.from({ length: 6 }, (_, i) => Buffer.alloc(64 * 1024, 0x61 + i));
    const done = writeSource(f.file, src.chunks, 6 * 64 * 1024);
    src.push(pieces[0] as Buffer);
    await tick();
    assert.deepEqual(f.calls, [`write ${64 * 1024}`]);
    for (const p of pieces.slice(1)) src.push(p);
    src.end();
    await tick();
    f.release();
    await tick();
    assert.deepEqual(f.calls, [`write ${64 * 1024}`, `writev 5 ${5 * 64 * 1024}`]);
    f.release();
    await tick();
    f.release();
    await done;
    assert.deepEqual(f.data(), Buffer.concat(pieces));
    assert.equal(f.calls.at(-1), `sync after ${6 * 64 * 1024}`);
  });

  it("a large file is fdatasync'ed once, in the background, when all but its last MiB is written; the final fsync comes after the last byte", async () => {
    const f = recordingFile();
    const src = pushable();
    const size = 8 * MiB;
    const done = writeSource(f.file, src.chunks, size);
    // The body arrives except its last 64 KiB, which its source holds back (as a request body
    // does until its MD5 is checked): the flush must not wait for them.
    for (let at = 0; at < size - 64 * 1024; at += 64 * 1024) src.push(Buffer.alloc(64 * 1024, 1));
    for (let i = 0; i < 20 && !f.calls.some((c) => c.startsWith("datasync")); i++) await tick();
    const early = f.calls.filter((c) => c.startsWith("datasync"));
    assert.equal(early.length, 1, f.calls.join("\n"));
    assert.ok(Number(early[0]?.split(" ")[2]) >= size - MiB);
    assert.ok(!f.calls.some((c) => c.startsWith("sync")));
    src.push(Buffer.alloc(64 * 1024, 2));
    src.end();
    await done;
    assert.equal(f.calls.filter((c) => c.startsWith("datasync")).length, 1);
    assert.equal(f.calls.at(-1), `sync after ${size}`);
  });

  it("a small file gets only the final fsync", async () => {
    const f = recordingFile();
    const src = pushable();
    const done = writeSource(f.file, src.chunks, 100);
    src.push(Buffer.alloc(100, 1));
    src.end();
    await done;
    assert.deepEqual(f.calls, ["write 100", "sync after 100"]);
  });

  it("a short write goes on from the byte where it stopped", async () => {
    const f = recordingFile({ shortBy: 1000 });
    const src = pushable();
    const pieces = [Buffer.alloc(5000, 1), Buffer.alloc(7000, 2)];
    const done = writeSource(f.file, src.chunks, 12_000);
    src.push(Buffer.concat(pieces));
    src.end();
    await done;
    assert.deepEqual(f.data(), Buffer.concat(pieces));
  });

  it("a source that fails makes the write fail only once no write is in flight, and nothing is fsynced", async () => {
    const f = recordingFile({ hold: true });
    const src = pushable();
    const done = writeSource(f.file, src.chunks, 10 * 64 * 1024);
    src.push(Buffer.alloc(64 * 1024));
    await tick();
    src.fail(new Error("MD5_MISMATCH"));
    let settled = false;
    const result = done.then(
      () => assert.fail("the write succeeded"),
      (e: unknown) => {
        settled = true;
        return e;
      },
    );
    await tick();
    assert.equal(settled, false, "rejected while a write was still in flight (the caller would close the file under it)");
    assert.equal(f.inFlight(), 1);
    f.release();
    assert.match(String(await result), /MD5_MISMATCH/);
    assert.equal(f.inFlight(), 0);
    assert.ok(!f.calls.some((c) => c.startsWith("sync")));
  });

  it("a failed background fdatasync fails the write (its error would not come back on the final fsync)", async () => {
    const f = recordingFile({ failDatasync: true });
    const src = pushable();
    const done = writeSource(f.file, src.chunks, 4 * MiB);
    for (let i = 0; i < 64; i++) src.push(Buffer.alloc(64 * 1024));
    src.end();
    await assert.rejects(done, /EIO/);
    assert.ok(!f.calls.some((c) => c.startsWith("sync")));
  });

  it("writes a real file byte for byte from pieces of every size", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-write-source-"));
    try {
      const pieces = [1, 65_536, 0, 17, 300_000, 4 * MiB, 3].map((n, i) => Buffer.alloc(n, 0x30 + i));
      const size = pieces.reduce((n, p) => n + p.length, 0);
      const handle = await fs.open(join(dir, "f"), "wx");
      try {
        await writeSource(
          handle,
          (async function* () {
            for (const p of pieces) yield p;
          })(),
          size,
        );
      } finally {
        await handle.close();
      }
      assert.deepEqual(readFileSync(join(dir, "f")), Buffer.concat(pieces));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
