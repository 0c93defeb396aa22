/**
 * Bodies as the server moves them: a request's kept as the socket's reads and handed to the
 * store as they are, a GET's answer written to the socket in pieces of at least SEND_MIN.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import { HOLD_BACK, readBody, receiveBody, streamBody } from "../../../src/server/body.js";
import { BodyBuffers, LENT_MAX, LENT_MIN } from "../../../src/server/body-buffers.js";
import type { Ctx } from "../../../src/server/context.js";
import { StreamedRead } from "../../../src/backend/stream.js";
import { GET_STREAM, HOLD_BACK as GET_HOLD_BACK, ResponseSink, SEND_MIN } from "../../../src/server/protocol.js";
import { listenLow } from "../../support/port.js";

const LIMITS = { maxBytes: 64 * 1024 * 1024, idleMs: 5_000 };

/** A request whose body arrives as these chunks, each a buffer of its own as a socket's reads are. */
function request(chunks: readonly Buffer[]): IncomingMessage {
  const size = chunks.reduce((n, c) => n + c.length, 0);
  const req = new Readable({ read() {} }) as Readable & { headers: Record<string, string> };
  req.headers = { "content-length": String(size) };
  for (const c of chunks) req.push(c);
  req.push(null);
  return req as unknown as IncomingMessage;
}

/** A request whose body chunks arrive after the call that reads it (not with the headers). */
function arriving(chunks: readonly Buffer[], declared = chunks.reduce((n, c) => n + c.length, 0)): IncomingMessage {
  const req = new Readable({ read() {} }) as Readable & { headers: Record<string, string> };
  req.headers = { "content-length": String(declared) };
  let i = 0;
  const next = (): void => {
    if (i < chunks.length) {
      req.push(chunks[i++]);
      setImmediate(next);
    } else req.push(null);
  };
  setImmediate(next);
  return req as unknown as IncomingMessage;
}

const chunksOf = (sizes: readonly number[]): Buffer[] => sizes.map((n, i) => Buffer.alloc(n, 0x61 + i));
const md5 = (chunks: readonly Buffer[]): string => {
  const h = createHash("md5");
  for (const c of chunks) h.update(c);
  return h.digest("hex");
};

describe("request bodies", () => {
  it("a streamed body hands the store the socket's reads as they are, never through one buffer of the body's size", async () => {
    const sent = chunksOf([64 * 1024, 300 * 1024, 70 * 1024, 16 * 1024]);
    const body = streamBody(request(sent), LIMITS, md5(sent));
    const got: Uint8Array[] = [];
    for await (const c of body.source.open()) got.push(c);
    assert.equal(await body.done, md5(sent));
    assert.deepEqual(Buffer.concat(got), Buffer.concat(sent));
    // Every piece lies in the memory of the read it came from.
    for (const piece of got)
      assert.ok(
        sent.some((c) => c.buffer === piece.buffer),
        `a piece of ${piece.length} bytes is a copy, not a read the socket delivered`,
      );
  });

  it("a streamed body that does not match its Content-MD5 fails every read before its tail, and can be read again when it matched", async () => {
    const sent = chunksOf([200 * 1024, 200 * 1024]);
    const bad = streamBody(request(sent), LIMITS, "0".repeat(32));
    let read = 0;
    await assert.rejects(async () => {
      for await (const c of bad.source.open()) read += c.length;
    }, /MD5|Content-MD5/);
    assert.ok(read <= 400 * 1024 - HOLD_BACK);
    await assert.rejects(bad.done, (e: Error & { code?: string }) => e.code === "MD5_MISMATCH");

    const good = streamBody(request(sent), LIMITS, md5(sent));
    for (let round = 0; round < 2; round++) {
      let n = 0;
      for await (const c of good.source.open()) n += c.length;
      assert.equal(n, 400 * 1024);
    }
    assert.deepEqual(await good.whole(), Buffer.concat(sent));
  });

  it("a body sent in many small pieces is kept in few buffers (a client writing 100 bytes at a time costs no object per write), large reads beside them as they are", async () => {
    const sent = [...chunksOf(Array.from({ length: 2000 }, () => 100)), ...chunksOf([300 * 1024]), ...chunksOf(Array.from({ length: 50 }, () => 10))];
    const received = receiveBody(request(sent), LIMITS);
    assert.equal(await received.done, md5(sent));
    assert.deepEqual(Buffer.concat(received.chunks), Buffer.concat(sent));
    assert.ok(received.chunks.length <= 6, `${received.chunks.length} buffers held`);
    assert.ok(
      received.chunks.some((c) => c === sent[2000]),
      "the large read is kept as it is",
    );
    const whole = await readBody(request(sent), LIMITS);
    assert.deepEqual(whole.bytes, Buffer.concat(sent));
  });

  it("a body that arrived whole with its headers is taken at once: no idle timer armed, no wait for events", async () => {
    const sent = chunksOf([300, 40]);
    const req = request(sent) as IncomingMessage & { complete: boolean };
    req.complete = true; // as node:http marks a request whose body the parser has seen to the end
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = timers();
    const pending = readBody(req, LIMITS);
    assert.equal(timers(), before, "no idle timer for a body that is all there");
    const body = await pending;
    assert.deepEqual(body.bytes, Buffer.concat(sent));
    assert.equal(body.md5, md5(sent));
    // Not yet marked complete, but the whole Content-Length is in its buffer: all there too.
    const early = request(sent);
    assert.equal(early.complete, undefined);
    const t0 = timers();
    const quick = readBody(early, LIMITS);
    assert.equal(timers(), t0);
    assert.deepEqual((await quick).bytes, Buffer.concat(sent));
    // Over the limit: refused as before, without reading it.
    const big = request(chunksOf([2048])) as IncomingMessage & { complete: boolean };
    big.complete = true;
    await assert.rejects(readBody(big, { maxBytes: 1024, idleMs: 5_000 }), (e: Error & { code?: string }) => e.code === "BODY_TOO_LARGE");
  });

  it("with the server's buffers, a body of LENT_MIN to LENT_MAX bytes is copied into a lent buffer as it arrives, which is used again once given back and not before", async () => {
    const buffers = new BodyBuffers();
    const sent = chunksOf([64 * 1024, 64 * 1024, 100_000, 300]);
    const first = await readBody(arriving(sent), LIMITS, buffers);
    assert.deepEqual(first.bytes, Buffer.concat(sent));
    assert.equal(first.md5, md5(sent));
    assert.ok(!sent.some((c) => c.buffer === first.bytes.buffer), "copied, not one of the socket's reads");
    // Not given back (a write that failed): the next body gets a buffer of its own.
    const other = chunksOf([200_000, 5]);
    const second = await readBody(arriving(other), LIMITS, buffers);
    assert.notEqual(second.bytes.buffer, first.bytes.buffer);
    assert.deepEqual(second.bytes, Buffer.concat(other));
    // Given back: the next body of a size it holds goes into the same memory, and is whole.
    first.release();
    const smaller = chunksOf([70_000, 1000]);
    const third = await readBody(arriving(smaller), LIMITS, buffers);
    assert.equal(third.bytes.buffer, first.bytes.buffer);
    assert.deepEqual(third.bytes, Buffer.concat(smaller));
    assert.equal(third.md5, md5(smaller));
    // Small and streamed sizes are not lent.
    const small = await readBody(arriving(chunksOf([LENT_MIN - 1])), LIMITS, buffers);
    small.release();
    assert.notEqual(small.bytes.buffer, third.bytes.buffer);
  });

  it("a lent buffer holds no more than the Content-Length: a longer body is refused, a shorter one too", async () => {
    const buffers = new BodyBuffers();
    const long = readBody(arriving(chunksOf([LENT_MIN, 10]), LENT_MIN), LIMITS, buffers);
    await assert.rejects(long, (e: Error & { code?: string }) => e.code === "BAD_REQUEST" && /longer than its Content-Length/.test(e.message));
    const short = readBody(arriving(chunksOf([LENT_MIN]), LENT_MIN + 10), LIMITS, buffers);
    await assert.rejects(short, (e: Error & { code?: string }) => e.code === "BAD_REQUEST" && /shorter than its Content-Length/.test(e.message));
  });

  it("the server's buffers: the smallest that fits is lent, at most two idle ones are kept (the largest)", () => {
    const buffers = new BodyBuffers();
    const [a, b, c] = [buffers.lend(LENT_MIN), buffers.lend(2 * LENT_MIN), buffers.lend(LENT_MAX)];
    assert.deepEqual([a.length, b.length, c.length], [LENT_MIN, 2 * LENT_MIN, LENT_MAX]);
    buffers.giveBack(a);
    buffers.giveBack(c);
    buffers.giveBack(c); // twice is once
    assert.equal(buffers.lend(LENT_MIN + 1), c, "the one that fits");
    buffers.giveBack(c);
    buffers.giveBack(b);
    // Three idle: the smallest went.
    assert.equal(buffers.lend(LENT_MIN), b);
    assert.equal(buffers.lend(LENT_MIN), c);
    assert.notEqual(buffers.lend(LENT_MIN), a);
  });

  it("readBody joins the chunks once, with their MD5", async () => {
    const sent = chunksOf([10, 20, 30]);
    const body = await readBody(request(sent), LIMITS);
    assert.deepEqual(body.bytes, Buffer.concat(sent));
    assert.equal(body.md5, md5(sent));
  });
});

describe("a GET's answer, sent as the store reads", () => {
  it("a store that reads in 64 KiB chunks (S3) reaches the socket in pieces of at least SEND_MIN, all of it once the read proved it", () => {
    const writes: number[] = [];
    let ended = false;
    const res = {
      destroyed: false,
      writeHead: () => undefined,
      write: (b: Buffer) => void writes.push(b.length),
      end: () => void (ended = true),
      destroy: () => undefined,
    };
    const ctx = { res, params: { workspace: "w" }, bytesOut: 0 } as unknown as Ctx;
    const body = Buffer.alloc(5 * 1024 * 1024 + 12_345, 0x7b);
    const digest = createHash("md5").update(body).digest("hex");
    const out = new StreamedRead(new ResponseSink(ctx), GET_STREAM);
    out.vouched(digest);
    for (let n = 64 * 1024; ; n += 64 * 1024) {
      out.data(body, Math.min(n, body.length));
      if (n >= body.length) break;
    }
    // The read proved these bytes: the rest goes out, and the server ends the answer.
    assert.equal(out.finish({ body, md5: digest, etag: undefined }), digest);
    res.end();
    assert.ok(ended);
    assert.equal(
      writes.reduce((a, b) => a + b, 0),
      body.length,
    );
    assert.equal(ctx.bytesOut, body.length);
    // Every write but the two at the end (up to the held-back tail, then the tail) is a large one.
    for (const w of writes.slice(0, -2)) assert.ok(w >= SEND_MIN, `a write of ${w} bytes`);
    assert.equal(writes.at(-1), GET_HOLD_BACK);
    assert.ok(writes.length <= Math.ceil(body.length / SEND_MIN) + 2, `${writes.length} writes`);
  });
});

describe("a GET's answer when the vouch comes after the bytes", () => {
  it("the lock table answering after the store still streams: the sink starts from what arrived, and gets every byte", () => {
    const events: string[] = [];
    let sent = 0;
    const sink = {
      start: (size: number, md5: string) => void events.push(`start ${size} ${md5}`),
      write: (c: Buffer) => void (sent += c.length),
      abort: () => void events.push("abort"),
    };
    const body = Buffer.alloc(1024 * 1024 + 7, 0x7b);
    const digest = createHash("md5").update(body).digest("hex");
    const out = new StreamedRead(sink, GET_STREAM);
    out.data(body, 512 * 1024);
    out.data(body, body.length);
    assert.deepEqual(events, [], "nothing before the vouch");
    out.vouched(digest);
    assert.deepEqual(events, [`start ${body.length} ${digest}`]);
    assert.equal(sent, body.length - GET_HOLD_BACK, "all but the held-back tail as soon as it is vouched for");
    assert.equal(out.finish({ body, md5: digest, etag: undefined }), digest);
    assert.equal(sent, body.length);
  });
});

describe("a GET's answer leaves at once", () => {
  it("what data() writes is handed to the socket before data() returns (not corked until the read is done)", async () => {
    const { createServer, request } = await import("node:http");
    const body = Buffer.alloc(1024 * 1024, 0x20);
    body[0] = 0x7b;
    const digest = createHash("md5").update(body).digest("hex");
    let corkedAfterData = -1;
    let sentAfterData = -1;
    const server = createServer((_req, res) => {
      const ctx = { res, params: { workspace: "w" }, bytesOut: 0 } as unknown as Ctx;
      const out = new StreamedRead(new ResponseSink(ctx), GET_STREAM);
      out.vouched(digest);
      out.data(body, body.length);
      // Looked at before anything else runs: the read would now hash these bytes.
      corkedAfterData = res.socket?.writableCorked ?? -1;
      sentAfterData = res.socket?.bytesWritten ?? -1;
      out.finish({ body, md5: digest, etag: undefined });
      res.end();
    });
    await listenLow(server);
    try {
      const address = server.address() as { port: number };
      const got = await new Promise<Buffer>((resolve, reject) => {
        request({ host: "127.0.0.1", port: address.port, path: "/" }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve(Buffer.concat(chunks)));
          res.on("error", reject);
        })
          .on("error", reject)
          .end();
      });
      assert.deepEqual(got, body);
      assert.equal(corkedAfterData, 0, "the socket is not left corked");
      assert.ok(sentAfterData >= body.length - GET_HOLD_BACK, `only ${sentAfterData} bytes were handed to the socket`);
    } finally {
      server.close();
    }
  });
});
