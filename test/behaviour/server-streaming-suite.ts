/**
 * Large states through `objstate serve` without buffering them twice: a GET is sent while
 * the state is read (its last bytes only once the read proved the digest), a POST is written
 * from the chunks it arrived in, once the whole body matched its Content-MD5. In-process
 * server over any target; what only the embedded store can show (bytes damaged behind the
 * store's record) runs there only.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type StateSink } from "../../src/index.js";
import { Logger } from "../../src/server/log.js";
import { HOLD_BACK as GET_HOLD_BACK } from "../../src/server/protocol.js";
import { ObjstateServer } from "../../src/server/server.js";
import type { ObjectStoreDriver } from "../../src/store/types.js";
import { rawRequest, toolState } from "../support/http-backend-client.js";
import { uniqueName, type Target } from "../support/targets.js";
import { withLowPort } from "../support/port.js";

const MiB = 1024 * 1024;
const md5 = (b: Buffer, enc: "hex" | "base64"): string => createHash("md5").update(b).digest(enc);
const bigState = (serial: number, mib: number): Buffer => toolState(serial, "stream", { pad: { value: "s".repeat(mib * MiB), type: "string" } });

interface Partial {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly received: number;
  readonly complete: boolean;
  /** Milliseconds from the headers to the end (or the cut). */
  readonly afterHeadersMs: number;
}

/** A GET that reports how far the body got when the connection ends, whole or cut. */
function getPartial(url: string): Promise<Partial> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      const t = performance.now();
      let received = 0;
      let settled = false;
      const done = (): void => {
        if (settled) return;
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, received, complete: res.complete, afterHeadersMs: performance.now() - t });
      };
      res.on("data", (c: Buffer) => (received += c.length));
      res.on("end", done);
      res.on("aborted", done);
      res.on("error", done);
      res.on("close", done);
    });
    req.setTimeout(30_000, () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end();
  });
}

/** A POST whose last `tail` bytes wait until `beforeTail` resolves. */
function postInTwo(
  url: string,
  body: Buffer,
  tail: number,
  beforeTail: () => Promise<void>,
  contentMd5 = md5(body, "base64"),
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "POST", agent: false, headers: { "Content-Type": "application/json", "Content-Length": String(body.length), "Content-MD5": contentMd5 } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.write(body.subarray(0, body.length - tail));
    beforeTail().then(
      () => req.end(body.subarray(body.length - tail)),
      (e: unknown) => {
        req.destroy();
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** Rewrite the embedded store's MD5 record of a version (its metadata file), leaving the bytes: damage the store cannot see. */
async function forgeRecord(dir: string, from: string, to: string): Promise<number> {
  let n = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".json")) continue;
    const file = join(entry.parentPath, entry.name);
    const text = await readFile(file, "utf8");
    if (!text.includes(from)) continue;
    await writeFile(file, text.split(from).join(to));
    n++;
  }
  return n;
}

export function serverStreamingSuite(makeTarget: () => Target): void {
  const target = makeTarget();
  const embedded = target.bucketDir !== undefined;
  let backend: ObjectStoreBackend;
  let raw: ObjectStoreDriver;
  let server: ObjstateServer;
  let bucket: string;

  before(async () => {
    const props = await target.setup({ locks: true });
    bucket = props.bucket as string;
    const config = ObjectStoreBackendConfig.from(props);
    // Retries far apart: a cut that waited for the next attempt would show.
    backend = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined, digestRetry: { timeoutMs: 4000, intervalMs: 2000 } });
    raw = await target.raw(props.bucket as string);
    // Streamed bodies, not locks: writes without ?ID keep each case to one request.
    server = new ObjstateServer({ backend, logger: new Logger("off"), allowUnlockedWrites: true });
    await withLowPort((port) => server.listen("127.0.0.1", port));
  });
  after(async () => {
    await server.close(200);
    raw.close();
    backend.close();
  });

  it("GET of a large state: 200 with Content-MD5 = the recorded digest and the whole state", async () => {
    const ws = uniqueName("ws");
    const state = bigState(1, 6);
    await backend.writeState(ws, state);
    const got = await rawRequest(server.url, "GET", `/state/${ws}`, undefined);
    assert.equal(got.status, 200);
    assert.equal(got.headers["content-md5"], md5(state, "base64"));
    assert.equal(got.headers["content-length"], String(state.length));
    assert.ok(got.body.equals(state));
  });

  it(
    "GET of a large state whose bytes do not match what the store and the digest agree on: the answer starts, then is cut off before its last bytes — never complete",
    { skip: !embedded && "only the embedded store lets a test damage bytes behind the store's record" },
    async () => {
      const ws = uniqueName("ws");
      const state = bigState(1, 6);
      await backend.writeState(ws, state);
      // Damaged at rest: other bytes of the same size, while the store's record still says the old MD5.
      const other = Buffer.from(state);
      other[other.length - 10] = 0x2a;
      await raw.put(backend.statePath(ws), other, { contentType: "application/json" });
      assert.ok((await forgeRecord(target.bucketDir?.(bucket) ?? "", md5(other, "hex"), md5(state, "hex"))) > 0);
      const got = await getPartial(`${server.url}/state/${ws}`);
      assert.equal(got.status, 200);
      assert.equal(got.headers["content-md5"], md5(state, "base64"), "the recorded digest is announced");
      assert.equal(got.complete, false);
      assert.ok(got.received <= state.length - GET_HOLD_BACK, `${got.received} bytes of ${state.length} arrived: the held-back tail must not`);
      // Cut when the read found the mismatch, not after its next attempt (2 s later).
      assert.ok(got.afterHeadersMs < 1500, `cut after ${got.afterHeadersMs} ms`);
    },
  );

  it("GET of a large state changed outside objstate (the store's MD5 is not the digest): nothing is sent before the digest retries settle it — then 409 (the operator's to fix: the server already waited for the store)", async () => {
    const ws = uniqueName("ws");
    const state = bigState(1, 6);
    await backend.writeState(ws, state);
    const other = Buffer.from(state);
    other[other.length - 10] = 0x2a;
    await raw.put(backend.statePath(ws), other, { contentType: "application/json" });
    const got = await rawRequest(server.url, "GET", `/state/${ws}`, undefined);
    assert.equal(got.status, 409);
    assert.match(got.body.toString("utf8"), /DIGEST_MISMATCH/);
  });

  /** A sink that writes down what the library's streamed read did to it. */
  const recordingSink = (): { events: string[]; sent: () => number; sink: StateSink } => {
    const events: string[] = [];
    let sent = 0;
    const sink: StateSink = {
      start: (size, digest) => void events.push(`start ${size} ${digest}`),
      write: (chunk) => void (sent += chunk.length),
      abort: () => void events.push("abort"),
    };
    return { events, sent: () => sent, sink };
  };

  it("the library's streamed read starts the sink with the digest when the store's record agrees, and sends nothing when they disagree", async () => {
    const ws = uniqueName("ws");
    const state = bigState(1, 1);
    await backend.writeState(ws, state);
    const good = recordingSink();
    const read = await backend.streamState(ws, good.sink);
    assert.deepEqual(read, { streamed: true, size: state.length, md5: md5(state, "hex") });
    assert.deepEqual(good.events, [`start ${state.length} ${md5(state, "hex")}`]);
    assert.equal(good.sent(), state.length);
    await raw.put(backend.statePath(ws), Buffer.concat([state, Buffer.from(" ")]), { contentType: "application/json" });
    const changed = recordingSink();
    await assert.rejects(backend.streamState(ws, changed.sink), { code: "DIGEST_MISMATCH" });
    assert.deepEqual(changed.events, [], "nothing was announced for bytes nobody vouched for");
    assert.equal(changed.sent(), 0);
  });

  it(
    "the library's streamed read cuts the sink off when the bytes do not match what the store and the digest agree on, before their last bytes",
    { skip: !embedded && "only the embedded store lets a test damage bytes behind the store's record" },
    async () => {
      const ws = uniqueName("ws");
      const state = bigState(1, 3);
      await backend.writeState(ws, state);
      const other = Buffer.from(state);
      other[other.length - 10] = 0x2a;
      await raw.put(backend.statePath(ws), other, { contentType: "application/json" });
      assert.ok((await forgeRecord(target.bucketDir?.(bucket) ?? "", md5(other, "hex"), md5(state, "hex"))) > 0);
      const out = recordingSink();
      await assert.rejects(backend.streamState(ws, out.sink, { holdBackBytes: GET_HOLD_BACK }), { code: "DIGEST_MISMATCH" });
      assert.equal(out.events[0], `start ${state.length} ${md5(state, "hex")}`);
      assert.equal(out.events[1], "abort");
      assert.equal(out.events.length, 2, out.events.join(", "));
      assert.ok(out.sent() <= state.length - GET_HOLD_BACK, `${out.sent()} bytes of ${state.length} went out: the held-back tail must not`);
    },
  );

  it("the store's streamed get yields a large object byte-exact, and get({ md5 }) hashes what it read", async () => {
    const ws = uniqueName("ws");
    const state = bigState(1, 5);
    await backend.writeState(ws, state);
    const streamed = await raw.getStream(backend.statePath(ws));
    const chunks: Buffer[] = [];
    for await (const c of streamed?.body ?? []) chunks.push(Buffer.from(c));
    assert.ok(Buffer.concat(chunks).equals(state));
    assert.equal(streamed?.meta.size, state.length);
    assert.equal((await raw.get(backend.statePath(ws), { md5: true }))?.md5, md5(state, "hex"));
  });

  it("POST of a large body sent in two parts: nothing reaches the store before the whole body arrived and matched its Content-MD5, then 200 with the state", async () => {
    const ws = uniqueName("ws");
    const state = bigState(1, 6);
    let tempWhileSending: unknown;
    const reply = await postInTwo(`${server.url}/state/${ws}`, state, 512 * 1024, async () => {
      await new Promise((r) => setTimeout(r, 300));
      tempWhileSending = (await backend.leftovers()).find((l) => l.kind === "temp-file" && l.key === backend.statePath(ws));
    });
    assert.equal(reply.status, 200, reply.body);
    assert.equal(tempWhileSending, undefined, "a write started before the body was whole");
    assert.ok((await backend.readState(ws))?.equals(state));
    assert.deepEqual(await backend.leftovers(), []);
  });

  it("POST of a large body that does not match its Content-MD5: 400, nothing stored, no temp file left", async () => {
    const ws = uniqueName("ws");
    const state = bigState(1, 6);
    const damaged = Buffer.from(state);
    damaged[damaged.length - 100] = 0x2a;
    const reply = await postInTwo(`${server.url}/state/${ws}`, damaged, 1, () => new Promise((r) => setTimeout(r, 300)), md5(state, "base64"));
    assert.equal(reply.status, 400, reply.body);
    assert.match(reply.body, /MD5_MISMATCH/);
    assert.equal(await backend.readState(ws), null);
    assert.deepEqual(await backend.leftovers(), []);
  });

  it("states of about a MiB, one after another, side by side and after a refused write: each version holds exactly what was sent", async () => {
    // Each state a different size and fill, so that bytes left from an earlier body would show.
    const sized = (serial: number, lineage: string, kib: number, fill: string): Buffer =>
      toolState(serial, lineage, { pad: { value: fill.repeat(kib * 1024), type: "string" } });
    const [w1, w2] = [uniqueName("ws"), uniqueName("ws")];
    const a = sized(1, "lend", 1024, "a");
    const b = sized(2, "lend", 900, "b");
    const post = async (ws: string, body: Buffer): Promise<number> => (await rawRequest(server.url, "POST", `/state/${ws}`, body)).status;
    /** The stored state is exactly `want` (compared as text, so that a failure shows where). */
    const holds = async (ws: string, want: Buffer): Promise<void> => assert.equal((await backend.readState(ws))?.toString("utf8"), want.toString("utf8"));
    assert.equal(await post(w1, a), 200);
    await holds(w1, a);
    assert.equal(await post(w1, b), 200);
    await holds(w1, b);
    // Side by side.
    const c = sized(3, "lend", 1536, "c");
    const d = sized(1, "other", 1200, "d");
    assert.deepEqual(await Promise.all([post(w1, c), post(w2, d)]), [200, 200]);
    await holds(w1, c);
    await holds(w2, d);
    // Refused (another lineage): the next write is whole all the same.
    assert.equal(await post(w1, sized(4, "foreign", 700, "e")), 409);
    await holds(w1, c);
    const f = sized(4, "lend", 800, "f");
    assert.equal(await post(w1, f), 200);
    await holds(w1, f);
  });

  it("a large POST of the same content again (a no-op) is still checked against its Content-MD5 before the 200", async () => {
    const ws = uniqueName("ws");
    const state = bigState(1, 6);
    assert.equal((await rawRequest(server.url, "POST", `/state/${ws}`, state)).status, 200);
    const damaged = Buffer.from(state);
    damaged[damaged.length - 100] = 0x2a;
    const reply = await rawRequest(server.url, "POST", `/state/${ws}`, damaged, {}, { "Content-MD5": md5(state, "base64") });
    assert.equal(reply.status, 400, reply.body.toString());
    assert.equal((await rawRequest(server.url, "POST", `/state/${ws}`, state)).status, 200);
    assert.ok((await backend.readState(ws))?.equals(state));
  });
}
