/**
 * Issue 37, item 10: JSON nested as deep as the tool allows (10,000 levels, the top counting
 * as one) is answered on every route that parses it; deeper is 400 `JSON_TOO_DEEP` naming the
 * limit. Never a 500 from a RangeError (JSON.stringify of a diff overflowed at ~5,000 levels).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { openStore } from "../../../src/store/index.js";
import { Logger } from "../../../src/server/log.js";
import type { ObjstateServer } from "../../../src/server/server.js";
import { HttpBackendClient, rawRequest } from "../../support/http-backend-client.js";
import { startServer } from "../../support/server-fixture.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";

/** A v4 state whose output `o` is nested so that the whole document is `depth` levels deep, padded by `pad` bytes. */
function deepState(serial: number, depth: number, pad = 0): Buffer {
  const value = `${"[".repeat(depth - 3)}${"]".repeat(depth - 3)}`;
  return Buffer.from(
    `{"version":4,"terraform_version":"1.11.0","serial":${serial},"lineage":"deep","outputs":{"o":{"value":${value},"type":"string"},"pad":{"value":"${"p".repeat(pad)}","type":"string"}},"resources":[]}`,
  );
}

const deepJson = (depth: number): Buffer => Buffer.from(`${"[".repeat(depth)}${"]".repeat(depth)}`);

describe("objstate serve: JSON nesting on every route that parses it", () => {
  let backend: ObjectStoreBackend;
  let props: ObjectStoreBackendConfigProps;
  let server: ObjstateServer;
  const errors: string[] = [];

  before(async () => {
    props = await embeddedTarget().setup({ locks: true });
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    server = await startServer(backend, { logger: new Logger("error", (line) => errors.push(line)) });
  });
  after(async () => {
    await server.close(200);
    backend.close();
  });

  const tooDeep = (r: { status: number; body: Buffer }, what: string): void => {
    assert.equal(r.status, 400, `${what}: ${r.body.toString().slice(0, 300)}`);
    const e = JSON.parse(r.body.toString()) as { code: string; message: string };
    assert.equal(e.code, "JSON_TOO_DEEP", what);
    assert.match(e.message, /deeper than 10000 levels/, what);
  };

  it("POST …/diff: a state 10,000 levels deep is diffed (inline and in the worker); one level more is 400 JSON_TOO_DEEP", async () => {
    const ws = uniqueName("ws");
    for (const pad of [0, 300 * 1024]) {
      const r = await rawRequest(server.url, "POST", `/api/v1/workspaces/${ws}/diff`, deepState(1, 10_000, pad));
      assert.equal(r.status, 200, `${pad} bytes of padding: ${r.body.toString().slice(0, 300)}`);
      const d = JSON.parse(r.body.toString()) as { outputs: { added: { name: string }[] } };
      assert.deepEqual(d.outputs.added.map((o) => o.name).sort(), ["o", "pad"]);
      tooDeep(await rawRequest(server.url, "POST", `/api/v1/workspaces/${ws}/diff`, deepState(1, 10_001, pad)), `diff, ${pad} bytes of padding`);
    }
  });

  it("the lock info of LOCK and the rollback body: 400 JSON_TOO_DEEP past the limit", async () => {
    const ws = uniqueName("ws");
    tooDeep(await rawRequest(server.url, "LOCK", `/state/${ws}`, deepJson(10_001)), "LOCK");
    tooDeep(await rawRequest(server.url, "POST", `/api/v1/workspaces/${ws}/rollback`, deepJson(10_001)), "rollback");
  });

  it("states stored through /state 10,000 deep: their versions diff and their outputs read; a diff of one stored deeper is 400 JSON_TOO_DEEP", async () => {
    const ws = uniqueName("ws");
    const c = new HttpBackendClient({ bases: [server.url], workspace: ws, retries: 0 });
    const l = await c.lock("OperationTypeApply");
    assert.ok(l.ok);
    assert.equal((await c.put(deepState(1, 10_000))).status, 200);
    assert.equal((await c.put(deepState(2, 10_000, 10))).status, 200);
    // Deeper is no state the tool reads: refused, nothing stored (docs/decisions/089).
    const refused = await c.put(deepState(3, 10_001));
    assert.equal(refused.status, 400);
    assert.match((JSON.parse(refused.body.toString()) as { code: string; message: string }).message, /nested deeper than 10000 levels/);
    assert.equal((await c.unlock()).status, 200);
    // One stored deeper by another tool, its digest recorded.
    await (await openStore({ bucket: props.bucket, endpoint: props.endpoint ?? "" })).put(backend.statePath(ws), deepState(3, 10_001));
    await backend.repairState(ws, { force: true });
    const versions: string[] = [];
    for await (const v of backend.history(ws, { limit: 3 })) versions.push(v.versionId);
    const diff = (from: number, to: number): Promise<{ status: number; body: Buffer }> =>
      rawRequest(server.url, "GET", `/api/v1/workspaces/${ws}/diff?from=${versions[from]}&to=${versions[to]}`, undefined);
    const d = await diff(2, 1);
    assert.equal(d.status, 200, d.body.toString().slice(0, 300));
    tooDeep(await diff(1, 0), "diff of stored versions");
    const outputs = await rawRequest(server.url, "GET", `/api/v1/workspaces/${ws}/outputs`, undefined);
    assert.equal(outputs.status, 400, outputs.body.toString().slice(0, 300));
    assert.match(outputs.body.toString(), /nested more than 10000 levels/);
    assert.deepEqual(errors, [], "nothing was logged at error level");
  });
});
