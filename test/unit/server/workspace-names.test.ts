/**
 * Long workspace names: refused with 400 `INVALID_WORKSPACE` naming the limit, on every
 * route and before the store is touched — never a 500 that quotes the store's internal key.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { layout, statePath, WORKSPACE_MAX_LENGTH } from "../../../src/config/layout.js";
import { isObjstateError } from "../../../src/errors.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer } from "../../../src/server/server.js";
import { rawRequest, toolState } from "../../support/http-backend-client.js";
import { embeddedTarget } from "../../support/targets.js";
import { withLowPort } from "../../support/port.js";

describe("objstate serve: workspace names over the limit", () => {
  let backend: ObjectStoreBackend;
  let server: ObjstateServer;

  before(async () => {
    // The default prefix and key (env:, tool.tfstate): a 300-character name does not fit the
    // embedded store's 255-byte file names, which used to surface as a 500 INVALID_KEY.
    const config = ObjectStoreBackendConfig.from(await embeddedTarget().setup({ locks: true }));
    backend = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined });
    // Names, not locks: a write without ?ID stores a state in one request.
    server = new ObjstateServer({ backend, logger: new Logger("off"), allowUnlockedWrites: true });
    await withLowPort((port) => server.listen("127.0.0.1", port));
  });
  after(async () => {
    await server.close(200);
    backend.close();
  });

  for (const length of [WORKSPACE_MAX_LENGTH + 1, 300, 1100, 3000]) {
    it(`a name of ${length} characters: 400 INVALID_WORKSPACE naming the limit on the tool's routes and the API`, async () => {
      const ws = "w".repeat(length);
      const lockInfo = JSON.stringify({
        ID: "id-1",
        Operation: "OperationTypeApply",
        Who: "me",
        Version: "1.9.0",
        Created: "2025-01-01T00:00:00Z",
        Info: "",
        Path: "",
      });
      for (const [method, path, body] of [
        ["GET", `/state/${ws}`, undefined],
        ["POST", `/state/${ws}`, toolState(1, "long")],
        ["LOCK", `/state/${ws}`, Buffer.from(lockInfo)],
        ["GET", `/api/v1/workspaces/${ws}`, undefined],
        ["POST", `/api/v1/workspaces/${ws}/diff`, toolState(1, "long")],
      ] as const) {
        const r = await rawRequest(server.url, method, path, body);
        assert.equal(r.status, 400, `${method} ${path.slice(0, 20)}…: ${r.body.toString()}`);
        const answer = JSON.parse(r.body.toString()) as { code: string; message: string };
        assert.equal(answer.code, "INVALID_WORKSPACE");
        assert.match(answer.message, new RegExp(`at most ${WORKSPACE_MAX_LENGTH} characters`));
        assert.doesNotMatch(answer.message, /tool\.tfstate|object key/, "the store's key stays inside");
      }
    });
  }

  it(`a name of exactly ${WORKSPACE_MAX_LENGTH} characters is stored and read back`, async () => {
    const ws = "x".repeat(WORKSPACE_MAX_LENGTH);
    const state = toolState(1, "at-the-limit");
    assert.equal((await rawRequest(server.url, "POST", `/state/${ws}`, state)).status, 200);
    assert.deepEqual((await rawRequest(server.url, "GET", `/state/${ws}`, undefined)).body, state);
    assert.ok((await backend.listWorkspaces()).includes(ws));
  });

  it("a prefix and key that leave less room lower the limit on that store, and say so", () => {
    const prefix = "p".repeat(150);
    const l = layout(prefix, "tool.tfstate", "file");
    // 255 bytes, less the prefix, two encoded slashes (%2F), the key and `.tflock`.
    assert.equal(l.maxWorkspace, 255 - 150 - 6 - 12 - 7);
    assert.throws(
      () => statePath(l, "w".repeat(l.maxWorkspace + 1)),
      (e) => isObjstateError(e, "INVALID_WORKSPACE") && /at most 80 characters on this backend/.test(e.message),
    );
    assert.equal(statePath(l, "w".repeat(l.maxWorkspace)).length, 150 + 1 + 80 + 1 + 12);
    // S3's 1024-byte keys leave the fixed limit.
    assert.equal(layout(prefix, "tool.tfstate", "s3").maxWorkspace, WORKSPACE_MAX_LENGTH);
  });
});
