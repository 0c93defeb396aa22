/**
 * Issue 37, item 12: every `/state` and `/api/v1` answer (errors too) is `Cache-Control:
 * no-store` and `X-Content-Type-Options: nosniff`; `/readyz` checks the store really is
 * there (the embedded store's bucket directory moved away is 503 with the reason).
 */
import assert from "node:assert/strict";
import { renameSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import type { ObjstateServer } from "../../../src/server/server.js";
import { hashPassword, parseUsers } from "../../../src/server/users.js";
import { startServer } from "../../support/server-fixture.js";
import { embeddedTarget, type Target } from "../../support/targets.js";

const CHEAP = { N: 1024, r: 8, p: 1 };

describe("objstate serve: answers are never cached or sniffed, and readiness checks the store", () => {
  let target: Target;
  let bucket: string;
  let backend: ObjectStoreBackend;
  const servers: ObjstateServer[] = [];

  before(async () => {
    target = embeddedTarget();
    const props = await target.setup({ locks: true });
    bucket = props.bucket;
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
  });
  after(async () => {
    for (const s of servers) await s.close(200);
    backend.close();
  });

  it("Cache-Control: no-store and X-Content-Type-Options: nosniff on every /state and /api/v1 answer, errors included", async () => {
    const users = parseUsers(JSON.stringify({ users: { ops: { password: await hashPassword("pw", CHEAP), roles: { "*": ["admin"] } } } }), "users.json");
    const s = await startServer(backend, { users }, servers);
    const auth = { Authorization: `Basic ${Buffer.from("ops:pw").toString("base64")}` };
    const asked: [string, string, Record<string, string>, number][] = [
      ["GET", "/state/ws", auth, 204],
      ["GET", "/state/ws", {}, 401],
      ["POST", "/state/ws", { ...auth, "Content-Type": "text/plain" }, 415],
      ["PATCH", "/state/ws", auth, 405],
      ["GET", "/api/v1/workspaces", auth, 200],
      ["GET", "/api/v1/workspaces/ws/outputs", auth, 404],
      ["GET", "/api/v1/nothing-here", auth, 404],
      ["GET", "/state/ws", { ...auth, Origin: "http://elsewhere.example" }, 403],
    ];
    for (const [method, path, headers, status] of asked) {
      const r = await fetch(`${s.url}${path}`, { method, headers, ...(method === "POST" ? { body: "x" } : {}) });
      await r.arrayBuffer();
      const what = `${method} ${path} (${status})`;
      assert.equal(r.status, status, what);
      assert.equal(r.headers.get("cache-control"), "no-store", what);
      assert.equal(r.headers.get("x-content-type-options"), "nosniff", what);
    }
  });

  it("/readyz: ready on a fresh store; 503 BUCKET_NOT_FOUND with the reason while the bucket directory is moved away; ready again once it is back", async () => {
    const s = await startServer(backend, {}, servers);
    const ready = async (): Promise<{ status: number; body: { code?: string; message?: string } }> => {
      const r = await fetch(`${s.url}/readyz`);
      return { status: r.status, body: (await r.json()) as { code?: string; message?: string } };
    };
    assert.equal((await ready()).status, 200);
    const dir = (target.bucketDir as (b: string) => string)(bucket);
    renameSync(dir, `${dir}.moved`);
    try {
      const r = await ready();
      assert.equal(r.status, 503);
      assert.equal(r.body.code, "BUCKET_NOT_FOUND");
      assert.match(r.body.message ?? "", /bucket directory .* is missing/);
    } finally {
      renameSync(`${dir}.moved`, dir);
    }
    assert.equal((await ready()).status, 200);
  });
});
