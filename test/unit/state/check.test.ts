/**
 * Issue 38, item 2 (docs/decisions/089): one rule for what a state is, decided in the library.
 * The library's writeState, `objstate state push` and `POST /state` refuse the same bytes with
 * the same code and message, and nothing is stored; streamed writes too.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { isObjstateError, type ObjstateError } from "../../../src/errors.js";
import type { ByteSource } from "../../../src/store/types.js";
import type { ObjstateServer } from "../../../src/server/server.js";
import { runCli } from "../../support/cli.js";
import { HttpBackendClient } from "../../support/http-backend-client.js";
import { startServer } from "../../support/server-fixture.js";
import { openStore } from "../../../src/store/index.js";
import { embeddedTarget } from "../../support/targets.js";
import { cliArgs } from "../cli/suite.js";

const state = (serial: number, extra = ""): string =>
  `{"version": 4, "terraform_version": "1.11.0", "serial": ${serial}, "lineage": "check-l", "outputs": {}, "resources": [${extra}]}`;
const ENVELOPE = '{"serial": 9, "lineage": "check-l", "meta": {"key_provider.pbkdf2.k": "e30="}, "encrypted_data": "QUJD", "encryption_version": "v0"}';

/** Bad inputs, each with what the one message must say. */
const BAD: [string, string, RegExp][] = [
  ["hello", "hello", /is not valid JSON at line 1, column 1: unexpected character; nothing was written$/],
  ["an array", "[]", /is not a state: expected a JSON object, not an array; nothing was written$/],
  ["a truncated object", "{", /is not valid JSON at line 1, column 2: unexpected end of input; nothing was written$/],
  ["an object without version", '{"serial": 3, "lineage": "check-l"}', /is not a state: it has no format "version"/],
  ["a version that is no whole number", '{"version": "4", "serial": 3}', /is not a state: its format "version" is not a whole number above 0/],
  [
    "a syntax error on line 3",
    '{"version": 4,\n  "serial": 3,\n  oops\n}',
    /is not valid JSON at line 3, column 3: unexpected character; nothing was written$/,
  ],
];

/** Every file under `dir`, with its size: what the store holds, temp files included. */
function snapshot(dir: string): string {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else out.push(`${p.slice(dir.length)} ${st.size}`);
    }
  };
  walk(dir);
  return out.join("\n");
}

/** `bytes` as a source in small chunks, as a streamed write reads it. */
function sourceOf(bytes: Buffer, chunk = 64 * 1024): ByteSource {
  return {
    size: bytes.length,
    async *open() {
      for (let i = 0; i < bytes.length; i += chunk) yield bytes.subarray(i, Math.min(bytes.length, i + chunk));
    },
  };
}

async function refusal(p: Promise<unknown>): Promise<ObjstateError> {
  try {
    await p;
  } catch (e) {
    assert.ok(isObjstateError(e, "STATE_INVALID"), `expected STATE_INVALID, got ${String(e)}`);
    return e;
  }
  return assert.fail("expected STATE_INVALID");
}

describe("one rule for what a state is", () => {
  const target = embeddedTarget();
  const work = mkdtempSync(join(tmpdir(), "objstate-check-"));
  let props: ObjectStoreBackendConfigProps;
  let backend: ObjectStoreBackend;
  let server: ObjstateServer;
  let bucketDir: string;
  let n = 0;

  before(async () => {
    props = await target.setup({ locks: true });
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    server = await startServer(backend, { audit: false });
    bucketDir = target.bucketDir?.(props.bucket) ?? assert.fail("embedded");
    await backend.writeState("default", state(1));
  });
  after(async () => {
    await server.close(200);
    backend.close();
  });

  const push = (bytes: Buffer | string): ReturnType<typeof runCli> => {
    const file = join(work, `s${++n}.json`);
    writeFileSync(file, bytes);
    const c = cliArgs(props);
    return runCli(["state", "push", file, ...c.args], { env: c.env });
  };
  const post = async (bytes: Buffer): Promise<{ status: number; code: string; message: string }> => {
    const c = new HttpBackendClient({ bases: [server.url], workspace: "default", retries: 0 });
    assert.ok((await c.lock("OperationTypeApply")).ok);
    try {
      const r = await c.put(bytes);
      const body = r.status === 200 ? { code: "", message: "" } : (JSON.parse(r.body.toString()) as { code: string; message: string });
      return { status: r.status, ...body };
    } finally {
      await c.unlock();
    }
  };

  it("writeState of bytes that are no state is STATE_INVALID (line and column) and the store holds nothing new", async () => {
    const held = snapshot(bucketDir);
    for (const [name, bytes, pattern] of BAD) {
      const e = await refusal(backend.writeState("default", bytes));
      assert.match(e.message, /^the state to write to workspace "default" /, name);
      assert.match(e.message, pattern, name);
    }
    const e = await refusal(backend.writeState("default", "{\n  oops"));
    assert.deepEqual(e.details, { line: 2, column: 3 });
    assert.equal(snapshot(bucketDir), held);
    assert.equal((await backend.readState("default"))?.toString(), state(1));
  });

  it("a streamed state refused mid-stream or at its end leaves nothing stored (the write is never completed)", async () => {
    const held = snapshot(bucketDir);
    const pad = `{"pad": "${"p".repeat(2 * 1024 * 1024)}"}`;
    const broken = Buffer.from(state(2, `${pad}, NaN`));
    const mid = await refusal(backend.writeState("default", sourceOf(broken)));
    assert.match(mid.message, /is not valid JSON at line 1, column \d+: unexpected character; nothing was written$/);
    const truncated = Buffer.from(state(2, pad).slice(0, -1));
    const end = await refusal(backend.writeState("default", sourceOf(truncated)));
    assert.match(end.message, /unexpected end of input; nothing was written$/);
    // With its MD5 given, the source is read only by the store's write: refused before its last chunk.
    const streamed = await refusal(backend.writeState("default", sourceOf(truncated), { md5: createHash("md5").update(truncated).digest("hex") }));
    assert.equal(streamed.message, end.message);
    const noVersion = Buffer.from(state(2, pad).replace('"version": 4, ', ""));
    await refusal(backend.writeState("default", sourceOf(noVersion)));
    assert.equal(snapshot(bucketDir), held);
    assert.deepEqual(await backend.leftovers(), []);
    // A state whose version comes last (keys sorted) is found past the first chunks.
    const sorted = Buffer.from(`{"lineage": "check-l", "outputs": {}, "resources": [${pad}], "serial": 2, "version": 4}`);
    assert.equal((await backend.writeState("default", sourceOf(sorted))).written, true);
  });

  it("a large non-state stored by hand, written again byte for byte, is refused (not taken for a no-op)", async () => {
    const junk = Buffer.from(`[${'"x",'.repeat(1024 * 1024)}"x"]`);
    const raw = await openStore({ bucket: props.bucket as string, endpoint: props.endpoint as string });
    try {
      await raw.put(backend.statePath("junk"), junk);
    } finally {
      raw.close();
    }
    const e = await refusal(backend.writeState("junk", junk));
    assert.match(e.message, /is not a state: expected a JSON object, not an array; nothing was written$/);
  });

  it("the library, state push and POST /state give the same code and message for the same bytes", async () => {
    const current = await backend.readState("default");
    const held = snapshot(bucketDir);
    const big = Buffer.from(state(5, `{"pad": "${"p".repeat(5 * 1024 * 1024)}"}, 01`));
    for (const [name, bytes] of [...BAD.map(([n, b]) => [n, Buffer.from(b)] as const), ["a 5 MiB state (streamed by serve)", big] as const]) {
      const lib = await refusal(backend.writeState("default", bytes));
      const cli = push(bytes);
      assert.equal(cli.code, 2, `${name}: ${cli.stderr}`);
      assert.equal(cli.stderr, `objstate: error: ${lib.message}\n`, name);
      const srv = await post(bytes);
      assert.deepEqual(srv, { status: 400, code: "STATE_INVALID", message: lib.message }, name);
    }
    assert.equal(snapshot(bucketDir), held);
    assert.deepEqual(await backend.readState("default"), current);
  });

  it("a valid state and an OpenTofu encryption envelope still go through all three", async () => {
    assert.equal((await backend.writeState("default", state(10))).written, true);
    const cli = push(state(11));
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal((await post(Buffer.from(state(12)))).status, 200);
    assert.equal((await backend.writeState("env-lib", ENVELOPE)).written, true);
    assert.equal((await backend.readState("env-lib"))?.toString(), ENVELOPE);
    const c = cliArgs(props);
    const file = join(work, "envelope.json");
    writeFileSync(file, ENVELOPE);
    assert.equal(runCli(["state", "push", file, "-w", "env-cli", ...c.args], { env: c.env }).code, 0);
    const s = new HttpBackendClient({ bases: [server.url], workspace: "env-srv", retries: 0 });
    assert.ok((await s.lock("OperationTypeApply")).ok);
    assert.equal((await s.put(Buffer.from(ENVELOPE))).status, 200);
    await s.unlock();
    assert.equal((await backend.readState("env-srv"))?.toString(), ENVELOPE);
  });
});
