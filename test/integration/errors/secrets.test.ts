/**
 * A real 403 from Ceph RGW (wrong secret key), wrapped by the S3 driver and by the
 * backend: the signed request the SDK keeps on its error (`$response`, the socket's
 * request headers) must not be reachable from the ObjstateError, even with
 * `util.inspect(err, { showHidden: true, depth: Infinity })`.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { inspect } from "node:util";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { isObjstateError, SanitizedCause } from "../../../src/errors.js";
import { S3Driver, type WireRequest } from "../../../src/store/s3.js";
import { testServers } from "../../support/servers.js";

const servers = testServers();
const WRONG_SECRET = `wrong-${randomBytes(16).toString("hex")}`;

/** The `Signature=` values of the requests that were sent. */
function signaturesOf(wire: WireRequest[]): string[] {
  return wire.map((r) => /Signature=([0-9a-f]+)/.exec(r.headers["authorization"] ?? "")?.[1]).filter((s): s is string => s !== undefined);
}

function assertNothingSigned(err: unknown, signatures: string[]): void {
  const texts = [inspect(err, { showHidden: true, depth: Infinity, getters: true }), JSON.stringify(err) ?? "", String(err), String((err as Error).stack)];
  for (const text of texts) {
    for (const secret of [WRONG_SECRET, servers.secretKey, ...signatures])
      assert.ok(!text.includes(secret), `a secret or signature is reachable:\n${text.slice(0, 4000)}`);
    assert.ok(!text.includes("$response"), "the SDK's $response is reachable");
    assert.doesNotMatch(text, /Signature=[0-9a-f]{16}/);
  }
}

describe("a real 403 against Ceph keeps no signed request", () => {
  it("S3 driver: wrong secret key", async () => {
    const wire: WireRequest[] = [];
    const driver = new S3Driver({
      bucket: `objstate-it-${randomBytes(4).toString("hex")}`,
      endpoint: servers.s3Endpoint,
      credentials: () => Promise.resolve({ accessKeyId: servers.accessKey, secretAccessKey: WRONG_SECRET }),
      onRequest: (r) => wire.push(r),
    });
    try {
      for (const op of [() => driver.get("env:/tool.tfstate"), () => driver.put("env:/tool.tfstate", Buffer.from("{}")), () => driver.bucketExists()]) {
        const before = wire.length;
        await assert.rejects(op(), (e: unknown) => {
          assert.ok(isObjstateError(e, "ACCESS_DENIED"), String(e));
          const signatures = signaturesOf(wire.slice(before));
          assert.ok(signatures.length > 0, "the request was signed and sent");
          assertNothingSigned(e, signatures);
          assert.ok(e.cause instanceof SanitizedCause, "the SDK error is kept sanitized");
          assert.equal(e.cause.httpStatus, 403);
          return true;
        });
      }
    } finally {
      driver.close();
    }
  });

  it("backend: the same through the public API, and the backend itself prints no secret", async () => {
    const config = ObjectStoreBackendConfig.from({
      bucket: `objstate-it-${randomBytes(4).toString("hex")}`,
      endpoint: servers.s3Endpoint,
      accessKey: servers.accessKey,
      secretKey: WRONG_SECRET,
    });
    const wire: WireRequest[] = [];
    const backend = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined, s3: { onRequest: (r) => wire.push(r) } });
    try {
      assert.ok(!inspect(backend, { showHidden: true, depth: Infinity }).includes(WRONG_SECRET));
      await assert.rejects(backend.readState("default"), (e: unknown) => {
        assert.ok(isObjstateError(e, "ACCESS_DENIED"), String(e));
        assertNothingSigned(e, signaturesOf(wire));
        return true;
      });
    } finally {
      backend.close();
    }
  });
});
