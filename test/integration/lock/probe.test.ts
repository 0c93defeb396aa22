/**
 * The conformance probe (docs/design.md §10) on Ceph RGW: a store that ignores `If-None-Match`
 * (a loopback proxy strips the header and signs the request again) gets no lockfiles
 * (`LOCKFILE_UNSUPPORTED`, naming the store); the verdict is cached per endpoint; the probe
 * key is purged; the real gateway passes.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { startFaultProxy, type FaultProxy } from "../../support/fault-proxy.js";
import { testServers } from "../../support/servers.js";
import { stripAndResign } from "../../support/sigv4.js";
import { cephTarget } from "../../support/targets.js";

describe("the lockfile conformance probe on Ceph RGW", () => {
  const proxies: FaultProxy[] = [];
  after(async () => {
    for (const p of proxies) await p.close();
  });

  it("refuses lockfiles on a store that ignores If-None-Match, caches the verdict per endpoint, and leaves no probe key", async () => {
    const s = testServers();
    const target = cephTarget();
    const props = await target.setup({ locks: false, extra: { prefix: "p", key: "s.tfstate" } });
    const proxy = await startFaultProxy(s.s3Endpoint);
    proxies.push(proxy);
    proxy.rewriteHeaders({ method: "PUT" }, (r) => stripAndResign(r, ["if-none-match"], s.secretKey));
    const connect = (): Promise<ObjectStoreBackend> =>
      ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ ...props, endpoint: proxy.url }), { env: {}, onWarning: () => undefined, lockfile: true });
    await assert.rejects(
      connect(),
      (e) => isObjstateError(e, "LOCKFILE_UNSUPPORTED") && e.message.includes(proxy.url) && /If-None-Match/.test(e.message) && !/If-Match \(/.test(e.message),
    );
    const puts = proxy.find({ method: "PUT" }).length;
    assert.ok(puts >= 2, "the probe wrote twice");
    await assert.rejects(connect(), (e) => isObjstateError(e, "LOCKFILE_UNSUPPORTED"));
    assert.equal(proxy.find({ method: "PUT" }).length, puts, "the second connection used the cached verdict");
    const raw = await target.raw(props.bucket);
    const left: string[] = [];
    for await (const k of raw.list("")) left.push(k);
    raw.close();
    assert.deepEqual(left, [], "the probe key was purged");
    // Without a lockfile nothing is probed, and the same store works.
    const plain = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ ...props, endpoint: proxy.url }), { env: {}, onWarning: () => undefined });
    plain.close();
  });

  it("refuses lockfiles on a versioned bucket, where this gateway ignores If-None-Match (it writes a new version over the current one)", async () => {
    const target = cephTarget();
    const props = await target.setup({ locks: false, extra: { prefix: "p", key: "s.tfstate" } });
    const raw = await target.raw(props.bucket);
    await raw.enableVersioning();
    raw.close();
    await assert.rejects(
      ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined, lockfile: true }),
      (e) => isObjstateError(e, "LOCKFILE_UNSUPPORTED") && /If-None-Match/.test(e.message),
    );
  });

  it("passes the real gateway (conditional create and replace honoured)", async () => {
    const props = await cephTarget().setup({ locks: false, extra: { prefix: "p", key: "s.tfstate" } });
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined, lockfile: true });
    assert.equal(b.conditions?.ifNoneMatch, true);
    assert.equal(b.conditions?.ifMatch, true);
    b.close();
  });
});
