/**
 * Versions, history, diff and rollback (docs/design.md §9), run unchanged against the embedded
 * store and Ceph RGW (a bucket with versioning turned on), with and without a lock table.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  ObjectStoreBackend,
  ObjectStoreBackendConfig,
  isObjstateError,
  type ConnectOptions,
  type ObjectStoreBackendConfigProps,
  type StateVersion,
} from "../../src/index.js";
import { diffStates } from "../../src/state-entry.js";
import type { ObjectStoreDriver, ObjectVersion } from "../../src/store/types.js";
import { suiteTarget, type Target } from "../support/targets.js";

const FAST_DIGEST = { timeoutMs: 400, intervalMs: 100 };
const LINEAGE = "3f6a1c2e-0000-4000-8000-000000000001";

/** A v4 state with the given resources (`type.name`) and outputs. */
export function state(serial: number, resources: string[], outputs: Record<string, { value: unknown; sensitive?: boolean }> = {}, lineage = LINEAGE): string {
  return JSON.stringify(
    {
      version: 4,
      terraform_version: "1.9.0",
      serial,
      lineage,
      outputs: Object.fromEntries(
        Object.entries(outputs).map(([k, o]) => [k, { value: o.value, type: "string", ...(o.sensitive === true ? { sensitive: true } : {}) }]),
      ),
      resources: resources.map((r) => {
        const [type, name] = r.split(".");
        return {
          mode: "managed",
          type,
          name,
          provider: 'provider["registry.example/x/y"]',
          instances: [{ schema_version: 0, attributes: { id: r, size: serial } }],
        };
      }),
      check_results: null,
    },
    null,
    2,
  );
}

/** `text` with its top-level serial replaced, as a rollback writes it. */
function reserialed(text: string, serial: number): string {
  return text.replace(/"serial": \d+/, `"serial": ${serial}`);
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of it) out.push(v);
  return out;
}

export function historySuite(makeTarget: () => Target): void {
  let target: Target;
  const open: ObjectStoreBackend[] = [];
  const raws: ObjectStoreDriver[] = [];

  async function connect(props: ObjectStoreBackendConfigProps, options: ConnectOptions = {}): Promise<ObjectStoreBackend> {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
      env: {},
      who: "tester@suite",
      digestRetry: FAST_DIGEST,
      onWarning: () => undefined,
      s3: { onRequest: (r) => target.wire?.push(r) },
      ...options,
    });
    open.push(b);
    return b;
  }

  async function raw(bucket: string): Promise<ObjectStoreDriver> {
    const r = await target.raw(bucket);
    raws.push(r);
    return r;
  }

  /** A fresh bucket with versioning on. */
  async function versioned(locks: boolean): Promise<{ props: ObjectStoreBackendConfigProps; b: ObjectStoreBackend; store: ObjectStoreDriver }> {
    const props = await target.setup({ locks });
    const store = await raw(props.bucket);
    await store.enableVersioning();
    return { props, b: await connect(props), store };
  }

  before(() => {
    target = makeTarget();
  });
  after(() => {
    for (const b of open) b.close();
    for (const r of raws) r.close();
  });

  describe("store versions", () => {
    it("lists versions of exactly one key, newest first, with delete markers, paged; reads each by ID", async () => {
      const props = await target.setup({ locks: false });
      const store = await raw(props.bucket);
      await store.enableVersioning();
      assert.equal(await store.versioning(), "enabled");
      for (let i = 1; i <= 5; i++) await store.put("s/k", Buffer.from(`v${i}`));
      await store.put("s/k.tflock", Buffer.from("other key"));
      await store.put("s/k2", Buffer.from("other key"));
      await store.delete("s/k");
      await store.put("s/k", Buffer.from("v6"));
      const all = await collect(store.listVersions("s/k", { pageSize: 2 }));
      assert.deepEqual(
        all.map((v) => (v.deleteMarker ? "marker" : v.size)),
        [2, "marker", 2, 2, 2, 2, 2],
      );
      assert.deepEqual(
        all.map((v) => v.isLatest),
        [true, false, false, false, false, false, false],
      );
      assert.ok(all.every((v) => v.key === "s/k"));
      const bodies = await Promise.all(
        all.filter((v) => !v.deleteMarker).map(async (v) => (await store.get("s/k", { versionId: v.versionId }))?.body.toString()),
      );
      assert.deepEqual(bodies, ["v6", "v5", "v4", "v3", "v2", "v1"]);
      const marker = all[1] as ObjectVersion;
      assert.equal(await store.get("s/k", { versionId: marker.versionId }), null, "a delete marker has no bytes");
      assert.equal((await store.head("s/k", { versionId: all[2]?.versionId }))?.size, 2);
      assert.equal((await store.get("s/k", { versionId: all[6]?.versionId, maxBytes: 1 }))?.body.toString(), "v", "a ranged read of an old version");
      // Stopping early reads no further.
      const first: ObjectVersion[] = [];
      for await (const v of store.listVersions("s/k", { pageSize: 2 })) {
        first.push(v);
        if (first.length === 3) break;
      }
      assert.equal(first.length, 3);
    });

    it("conditional writes on a versioned bucket: create-if-absent and If-Match still refuse what they must", async () => {
      const props = await target.setup({ locks: false });
      const store = await raw(props.bucket);
      await store.enableVersioning();
      await store.put("c/k", Buffer.from("one"), { ifNoneMatch: true });
      const refused = (e: unknown): boolean => isObjstateError(e, "PRECONDITION_FAILED");
      await assert.rejects(store.put("c/k", Buffer.from("two"), { ifNoneMatch: true }), refused);
      await assert.rejects(store.put("c/k", Buffer.from("two"), { ifMatch: "0123456789abcdef0123456789abcdef" }), refused);
      const etag = (await store.head("c/k"))?.etag as string;
      await store.put("c/k", Buffer.from("two"), { ifMatch: etag });
      await assert.rejects(store.put("c/k", Buffer.from("three"), { ifMatch: etag }), refused, "the old ETag no longer matches");
      assert.equal((await store.get("c/k"))?.body.toString(), "two");
      assert.equal((await collect(store.listVersions("c/k"))).length, 2);
    });

    it("keeps the operator's retention rule, or refuses a rule the store would not keep as asked", async () => {
      const props = await target.setup({ locks: false });
      const store = await raw(props.bucket);
      await store.enableVersioning();
      assert.equal(await store.getRetention(), null);
      await store.setRetention({ prefix: "env:/", noncurrentDays: 30 });
      assert.deepEqual(await store.getRetention(), { prefix: "env:/", noncurrentDays: 30, newerNoncurrentVersions: undefined });
      let kept = true;
      try {
        await store.setRetention({ prefix: "", noncurrentDays: 30, newerNoncurrentVersions: 2 });
      } catch (e) {
        // Ceph RGW drops NewerNoncurrentVersions: the earlier rule must be back.
        assert.ok(isObjstateError(e, "RETENTION_UNSUPPORTED"), String(e));
        assert.match((e as Error).message, /NewerNoncurrentVersions/);
        assert.deepEqual(await store.getRetention(), { prefix: "env:/", noncurrentDays: 30, newerNoncurrentVersions: undefined });
        kept = false;
      }
      if (kept) {
        assert.deepEqual(await store.getRetention(), { prefix: "", noncurrentDays: 30, newerNoncurrentVersions: 2 });
      }
      await store.setRetention({ prefix: "" });
      assert.equal(await store.getRetention(), null);
    });
  });

  for (const locks of [true, false]) {
    describe(`${locks ? "with" : "without"} a lock table`, () => {
      it("history lists writes by objstate and by a plain PutObject, newest first, from ranged reads only", async () => {
        const { props, b, store } = await versioned(locks);
        await b.writeState("default", state(1, ["t.a"]));
        await b.writeState("default", state(2, ["t.a", "t.b"]));
        // Another client (the tool itself, aws-cli): no objstate metadata.
        await store.put(b.statePath("default"), Buffer.from(state(3, ["t.a", "t.b", "t.c"])));
        await b.writeState("default", state(4, ["t.b"]));
        const wireBefore = target.wire?.length ?? 0;
        const h = await collect(b.history("default"));
        assert.deepEqual(
          h.map((v) => v.serial),
          [4, 3, 2, 1],
        );
        assert.deepEqual(
          h.map((v) => v.writer),
          ["objstate", "other", "objstate", "objstate"],
        );
        assert.ok(h.every((v) => v.lineage === LINEAGE));
        assert.deepEqual(
          h.map((v) => v.isLatest),
          [true, false, false, false],
        );
        assert.equal(h[0]?.who, "tester@suite");
        assert.equal(h[1]?.who, undefined);
        assert.equal(h[0]?.operation, locks ? "writeState" : undefined);
        assert.equal(h[0]?.lockId !== undefined, locks);
        assert.equal(h[0]?.size, Buffer.byteLength(state(4, ["t.b"])));
        assert.ok(h.every((v) => v.lastModified instanceof Date));
        if (target.wire !== undefined) {
          const gets = target.wire.slice(wireBefore).filter((r) => r.method === "GET" && !r.path.includes("versions") && !r.path.includes("versioning"));
          assert.equal(gets.length, 4);
          for (const g of gets) assert.equal(g.headers["range"], "bytes=0-4095", `every read of a version is ranged: ${g.path}`);
        }
        const wireTwo = target.wire?.length ?? 0;
        const two = await collect(b.history("default", { limit: 2 }));
        assert.deepEqual(
          two.map((v) => v.serial),
          [4, 3],
        );
        if (target.wire !== undefined) {
          // --limit asks the store for that many and pages no further.
          const lists = target.wire.slice(wireTwo).filter((r) => r.method === "GET" && /[?&]versions(=|&|$)/.test(r.path));
          assert.equal(lists.length, 1, lists.map((r) => r.path).join(" "));
          assert.match(lists[0]?.path ?? "", /max-keys=2/);
        }
        assert.deepEqual(await collect(b.history("never-written")), []);
        // Old versions read with no lock table at all.
        const plain = await connect({ bucket: props.bucket, endpoint: props.endpoint, accessKey: props.accessKey, secretKey: props.secretKey });
        assert.deepEqual(
          (await collect(plain.history("default"))).map((v) => v.serial),
          [4, 3, 2, 1],
        );
      });

      it("reads an old version byte for byte, and says which IDs do not exist", async () => {
        const { props, b } = await versioned(locks);
        const one = state(1, ["t.a"]);
        await b.writeState("default", one);
        await b.writeState("default", state(2, ["t.a", "t.b"]));
        const [latest, older] = await collect(b.history("default"));
        assert.equal((await b.readVersion("default", older?.versionId as string)).toString(), one);
        assert.equal((await b.readVersion("default", latest?.versionId as string)).toString(), state(2, ["t.a", "t.b"]));
        await assert.rejects(
          b.readVersion("default", "no-such-version"),
          (e) => isObjstateError(e, "VERSION_NOT_FOUND") && /state history/.test((e as Error).message),
        );
        const plain = await connect({ bucket: props.bucket, endpoint: props.endpoint, accessKey: props.accessKey, secretKey: props.secretKey });
        assert.equal((await plain.readVersion("default", older?.versionId as string)).toString(), one, "no lock table needed");
      });

      it("diffs two versions by resource address and output, sensitive values hidden", async () => {
        const { b } = await versioned(locks);
        await b.writeState("default", state(1, ["t.a", "t.b"], { url: { value: "http://a" }, pw: { value: "s3cret", sensitive: true }, gone: { value: "x" } }));
        await b.writeState("default", state(2, ["t.b", "t.c"], { url: { value: "http://b" }, pw: { value: "n3w", sensitive: true }, added: { value: "y" } }));
        const [to, from] = await collect(b.history("default"));
        const d = diffStates(await b.readVersion("default", from?.versionId as string), await b.readVersion("default", to?.versionId as string));
        assert.deepEqual(d.resources.added, ["t.c"]);
        assert.deepEqual(d.resources.removed, ["t.a"]);
        assert.deepEqual(d.resources.changed, [{ address: "t.b", attributes: ["size"] }]);
        assert.deepEqual(d.outputs.added, [{ name: "added", value: "y", sensitive: false }]);
        assert.deepEqual(d.outputs.removed, [{ name: "gone", value: "x", sensitive: false }]);
        assert.deepEqual(d.outputs.changed, [
          { name: "pw", before: "<sensitive>", after: "<sensitive>", sensitive: true },
          { name: "url", before: "http://a", after: "http://b", sensitive: false },
        ]);
      });

      it("rolls back as a new version with serial current + 1, then rolls back the rollback; deletes nothing", async () => {
        const { b } = await versioned(locks);
        await b.writeState("default", state(1, ["t.a"]));
        await b.writeState("default", state(2, ["t.a", "t.b"]));
        await b.writeState("default", state(5, ["t.a", "t.b", "t.c"]));
        const [v5, , v1] = await collect(b.history("default"));
        // The preview: from the current version to the target, and its `from` is what the rollback expects.
        const preview = await b.previewRollback("default", v1?.versionId as string);
        assert.deepEqual(
          [preview.from, preview.to, preview.diff.serial, preview.diff.resources.removed],
          [v5?.versionId, v1?.versionId, { before: 5, after: 1 }, ["t.b", "t.c"]],
        );
        await assert.rejects(b.rollback("default", v1?.versionId as string, { expectCurrent: v1?.versionId }), (e) => isObjstateError(e, "STATE_CONFLICT"));
        const r = await b.rollback("default", v1?.versionId as string, { expectCurrent: preview.from });
        assert.deepEqual([r.serial, r.previousSerial, r.restored, r.from], [6, 5, false, v1?.versionId]);
        assert.equal((await b.readState("default"))?.toString(), reserialed(state(1, ["t.a"]), 6), "the old content, byte for byte, with the new serial");
        const h = await collect(b.history("default"));
        assert.equal(h.length, 4, "nothing deleted");
        assert.equal(h[0]?.operation, "rollback");
        assert.equal(h[0]?.sourceVersion, v1?.versionId);
        assert.equal(h[0]?.serial, 6);
        // The rollback of the rollback: back to what it replaced.
        const r2 = await b.rollback("default", v5?.versionId as string);
        assert.equal(r2.serial, 7);
        assert.equal((await b.readState("default"))?.toString(), reserialed(state(5, ["t.a", "t.b", "t.c"]), 7));
        assert.equal((await collect(b.history("default"))).length, 5);
        // A plain write of the next serial is accepted afterwards (the tool's next apply).
        await b.writeState("default", state(8, ["t.a"]));
      });

      it("refuses to roll back to another lineage without force", async () => {
        const { b, store } = await versioned(locks);
        await store.put(b.statePath("default"), Buffer.from(state(9, ["t.x"], {}, "other-lineage")));
        await b.writeState("default", state(1, ["t.a"]), { force: true });
        const [, foreign] = await collect(b.history("default"));
        await assert.rejects(
          b.rollback("default", foreign?.versionId as string),
          (e) => isObjstateError(e, "STATE_CONFLICT") && /another lineage/.test((e as Error).message),
        );
        assert.equal((await b.readState("default"))?.toString(), state(1, ["t.a"]), "nothing written");
        const r = await b.rollback("default", foreign?.versionId as string, { force: true });
        assert.equal(r.serial, 10);
        assert.equal((await b.readState("default"))?.toString(), reserialed(state(9, ["t.x"], {}, "other-lineage"), 10));
      });

      it("a deleted workspace keeps its versions, and a rollback restores it", async () => {
        const { b } = await versioned(locks);
        await b.writeState("gone", state(1, ["t.a"]));
        await b.writeState("gone", state(2, ["t.a", "t.b"]));
        await b.deleteWorkspace("gone");
        assert.equal(await b.readState("gone"), null);
        assert.ok(!(await b.listWorkspaces()).includes("gone"));
        const h: StateVersion[] = await collect(b.history("gone"));
        assert.deepEqual(
          h.map((v) => [v.deleteMarker, v.isLatest, v.serial]),
          [
            [true, true, undefined],
            [false, false, 2],
            [false, false, 1],
          ],
        );
        const r = await b.rollback("gone", h[1]?.versionId as string);
        assert.deepEqual([r.serial, r.restored], [3, true]);
        assert.equal((await b.readState("gone"))?.toString(), reserialed(state(2, ["t.a", "t.b"]), 3));
        assert.ok((await b.listWorkspaces()).includes("gone"));
      });
    });
  }
}

/** Only where a bucket can be without versioning (S3): the clear message. */
export function unversionedSuite(makeTarget: () => Target): void {
  const suite = suiteTarget(makeTarget);
  const open = suite.open;
  it("history and rollback on a bucket without versioning say what to do", async () => {
    const props = await suite.target.setup({ locks: false });
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    open.push(b);
    await b.writeState("default", state(1, ["t.a"]));
    const off = (e: unknown): boolean => isObjstateError(e, "VERSIONING_OFF") && /objstate init --versioning/.test((e as Error).message);
    await assert.rejects(collect(b.history("default")), off);
    await assert.rejects(b.rollback("default", "null"), off);
  });
}
