/**
 * Bodies as the server moves them: a request's kept as the socket's reads (the one body
 * reader), a GET's answer written to the socket in pieces of at least SEND_MIN.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import { readBody } from "../../../src/io/http-body.js";
import type { Ctx } from "../../../src/server/context.js";
import { StreamedRead } from "../../../src/fast/streamed-read.js";
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
  it("a body is kept as the socket's reads as they are, never copied into one buffer of its size, with its MD5 (a large one hashed in the worker)", async () => {
    const sent = chunksOf([64 * 1024, 3 * 1024 * 1024, 2 * 1024 * 1024, 16 * 1024]);
    const body = await readBody(arriving(sent), LIMITS);
    assert.equal(body.md5, md5(sent));
    assert.equal(body.size, Buffer.concat(sent).length);
    assert.equal(body.chunks.length, sent.length);
    body.chunks.forEach((c, i) => assert.equal(c, sent[i], `chunk ${i} is the read the socket delivered`));
    assert.deepEqual(body.bytes(), Buffer.concat(sent));
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
    assert.deepEqual(body.bytes(), Buffer.concat(sent));
    assert.equal(body.md5, md5(sent));
    // Not yet marked complete, but the whole Content-Length is in its buffer: all there too.
    const early = request(sent);
    assert.equal(early.complete, undefined);
    const t0 = timers();
    const quick = readBody(early, LIMITS);
    assert.equal(timers(), t0);
    assert.deepEqual((await quick).bytes(), Buffer.concat(sent));
    // Over the limit: refused as before, without reading it.
    const big = request(chunksOf([2048])) as IncomingMessage & { complete: boolean };
    big.complete = true;
    await assert.rejects(readBody(big, { maxBytes: 1024, idleMs: 5_000 }), (e: Error & { code?: string }) => e.code === "BODY_TOO_LARGE");
  });

  it("a body longer than its Content-Length is refused, a shorter one too", async () => {
    const long = readBody(arriving(chunksOf([64 * 1024, 10]), 64 * 1024), LIMITS);
    await assert.rejects(long, (e: Error & { code?: string }) => e.code === "BAD_REQUEST" && /longer than its Content-Length/.test(e.message));
    const short = readBody(arriving(chunksOf([64 * 1024]), 64 * 1024 + 10), LIMITS);
    await assert.rejects(short, (e: Error & { code?: string }) => e.code === "BAD_REQUEST" && /shorter than its Content-Length/.test(e.message));
  });

  it("readBody joins the chunks once, with their MD5", async () => {
    const sent = chunksOf([10, 20, 30]);
    const body = await readBody(request(sent), LIMITS);
    assert.deepEqual(body.bytes(), Buffer.concat(sent));
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
