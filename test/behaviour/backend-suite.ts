/**
 * The backend behaviour suite (docs/design.md §5), run unchanged against every driver pair, with
 * and without a lock table.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, isObjstateError, type ConnectOptions, type ObjectStoreBackendConfigProps } from "../../src/index.js";
import type { Target } from "../support/targets.js";

const md5 = (b: Uint8Array): string => createHash("md5").update(b).digest("hex");
const FAST_DIGEST = { timeoutMs: 400, intervalMs: 100 };

export function backendSuite(makeTarget: () => Target): void {
  let target: Target;
  const open: ObjectStoreBackend[] = [];
  const warnings: string[] = [];

  async function connect(props: ObjectStoreBackendConfigProps, options: ConnectOptions = {}): Promise<ObjectStoreBackend> {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
      env: {},
      who: "tester@suite",
      digestRetry: FAST_DIGEST,
      onWarning: (m) => warnings.push(m),
      s3: { onRequest: (r) => target.wire?.push(r) },
      ...options,
    });
    open.push(b);
    return b;
  }

  before(() => {
    target = makeTarget();
  });
  after(() => {
    for (const b of open) b.close();
  });

  for (const locks of [true, false]) {
    describe(`${locks ? "with" : "without"} a lock table`, () => {
      it("stores default and named workspaces at {prefix}/{key} and {prefix}/{w}/{key}", async () => {
        const props = await target.setup({ locks, extra: { prefix: "team/states/", key: "app/main.tfstate" } });
        const b = await connect(props);
        await b.writeState("default", '{"version":4,"serial":1}');
        await b.writeState("staging", '{"version":4,"serial":2}');
        const raw = await target.raw(props.bucket);
        assert.equal((await raw.get("team/states/app/main.tfstate"))?.body.toString(), '{"version":4,"serial":1}');
        assert.equal((await raw.get("team/states/staging/app/main.tfstate"))?.body.toString(), '{"version":4,"serial":2}');
        assert.equal(b.statePath("staging"), "team/states/staging/app/main.tfstate");
        assert.equal((await b.readState("default"))?.toString(), '{"version":4,"serial":1}');
        assert.equal((await b.readState("staging"))?.toString(), '{"version":4,"serial":2}');
        assert.equal(await b.readState("nothing-here"), null);
        const meta = await raw.head("team/states/app/main.tfstate");
        assert.equal(meta?.contentType, "application/json");
        raw.close();
      });

      it("uses the defaults prefix env: and key tool.tfstate", async () => {
        const props = await target.setup({ locks });
        const b = await connect(props);
        await b.writeState("default", '{"version":4}');
        await b.writeState("w1", '{"version":4}');
        const raw = await target.raw(props.bucket);
        assert.ok(await raw.head("env:/tool.tfstate"));
        assert.ok(await raw.head("env:/w1/tool.tfstate"));
        raw.close();
      });

      it("lists workspaces across pages, sorted, default first, ignoring stray objects", async () => {
        const props = await target.setup({ locks, extra: { prefix: "p", key: "s.tfstate" } });
        const b = await connect(props, { listPageSize: 3 });
        const names = ["zeta", "alpha", "m-1", "m_2", "beta.x", "gamma", "delta", "epsilon"];
        for (const w of names) await b.writeState(w, '{"version":4}');
        const raw = await target.raw(props.bucket);
        // Stray objects that must not count as workspaces.
        for (const k of [
          "p/alpha/other.tfstate",
          "p/a/b/s.tfstate",
          "px/s.tfstate",
          "p/s.tfstate.bak",
          "p/s.tfstate",
          "q/w/s.tfstate",
          "p//s.tfstate",
          "p/default/s.tfstate",
        ]) {
          await raw.put(k, Buffer.from("{}"));
        }
        assert.deepEqual(await b.listWorkspaces(), ["default", ...[...names].sort()]);
        raw.close();
      });

      it("listWorkspaceObjects: every workspace's state object from the listing (across pages), with the size, time and ETag lastWrite reports, default first", async () => {
        const props = await target.setup({ locks, extra: { prefix: "p", key: "s.tfstate" } });
        const b = await connect(props, { listPageSize: 2 });
        assert.deepEqual(await b.listWorkspaceObjects(), [], "default without a state is not an object");
        for (const [w, body] of [
          ["zeta", '{"version":4}'],
          ["alpha", '{"version":4,"a":1}'],
          ["default", '{"version":4,"serial":1}'],
          ["m-1", '{ "version":4 }'],
        ] as const)
          await b.writeState(w, body);
        const raw = await target.raw(props.bucket);
        await raw.put("p/a/b/s.tfstate", Buffer.from("{}")); // stray: not a workspace
        raw.close();
        const objects = await b.listWorkspaceObjects();
        assert.deepEqual(
          objects.map((o) => o.workspace),
          ["default", "alpha", "m-1", "zeta"],
        );
        for (const o of objects) {
          const w = await b.lastWrite(o.workspace);
          // S3 lists times in milliseconds, a HEAD's Last-Modified header has whole seconds.
          const seconds = (t: string | undefined): number => Math.floor(Date.parse(t ?? "") / 1000);
          assert.deepEqual([o.size, o.etag, seconds(o.lastModified)], [w?.size, w?.etag, seconds(w?.lastModified)], o.workspace);
        }
      });

      it("deleteWorkspace removes the state and refuses default; a second delete succeeds, unless mustExist", async () => {
        const props = await target.setup({ locks });
        const b = await connect(props);
        await b.writeState("temp", '{"version":4}');
        await b.deleteWorkspace("temp");
        assert.equal(await b.readState("temp"), null);
        assert.deepEqual(await b.listWorkspaces(), ["default"]);
        await assert.rejects(b.deleteWorkspace("default"), (e) => isObjstateError(e, "CANNOT_DELETE_DEFAULT"));
        await assert.rejects(b.deleteWorkspace("a/b"), (e) => isObjstateError(e, "INVALID_WORKSPACE"));
        await b.deleteWorkspace("temp");
        await assert.rejects(
          b.deleteWorkspace("temp", { mustExist: true }),
          (e) => isObjstateError(e, "WORKSPACE_NOT_FOUND") && /workspace temp does not exist/.test(e.message),
        );
        await b.writeState("temp", '{"version":4}');
        await b.deleteWorkspace("temp", { mustExist: true });
        assert.equal(await b.readState("temp"), null);
      });

      it("round-trips a 64 MiB state byte for byte", async () => {
        const props = await target.setup({ locks });
        const b = await connect(props);
        // A state is a JSON object; the padding keeps it incompressible and 64 MiB long.
        const head = Buffer.from('{"version":4,"serial":1,"lineage":"big","pad":"');
        const pad = Buffer.from(
          randomBytes(48 * 1024 * 1024)
            .toString("base64")
            .slice(0, 64 * 1024 * 1024 - head.length - 2),
        );
        const state = Buffer.concat([head, pad, Buffer.from('"}')]);
        const progress: number[] = [];
        await b.writeState("big", state, { onProgress: (sent, total) => (assert.equal(total, state.length), progress.push(sent)) });
        assert.equal(progress.at(-1), state.length, "progress reported up to the whole state");
        const back = await b.readState("big");
        assert.ok(back !== null);
        assert.equal(back.length, state.length);
        assert.equal(md5(back), md5(state));
      });

      it("applies the acl and requests AES256 server-side encryption", async () => {
        const props = await target.setup({ locks, extra: { acl: "public-read", encrypt: true } });
        const b = await connect(props);
        const before = target.wire?.length ?? 0;
        await b.writeState("default", '{"version":4,"x":1}');
        const raw = await target.raw(props.bucket);
        const meta = await raw.head(b.statePath("default"));
        if (target.grants !== undefined) {
          const grants = await target.grants(props.bucket, b.statePath("default"));
          assert.ok(grants.includes("http://acs.amazonaws.com/groups/global/AllUsers:READ"), grants.join());
          const puts = (target.wire ?? []).slice(before).filter((r) => r.method === "PUT" && r.path.startsWith(`/${props.bucket}/`));
          assert.ok(puts.length > 0, "the state PUT was seen on the wire");
          for (const p of puts) {
            assert.equal(p.headers["x-amz-server-side-encryption"], "AES256");
            assert.equal(p.headers["x-amz-acl"], "public-read");
          }
        } else {
          assert.equal(meta?.acl, "public-read");
          assert.equal(meta?.serverSideEncryption, "AES256");
        }
        // Without the settings, neither is sent.
        const plain = await connect(await target.setup({ locks }));
        const mark = target.wire?.length ?? 0;
        await plain.writeState("default", '{"version":4}');
        for (const r of (target.wire ?? []).slice(mark)) assert.equal(r.headers["x-amz-server-side-encryption"], undefined);
        raw.close();
      });

      if (locks) {
        it("refuses a second lock and shows the holder; unlock checks the ID; force-unlock", async () => {
          const props = await target.setup({ locks });
          const a = await connect(props, { who: "alice@host-a" });
          const b = await connect(props, { who: "bob@host-b" });
          const lock = await a.lock("default", { operation: "apply", info: "run 42" });
          assert.match(lock.ID, /^[0-9a-f-]{36}$/);
          assert.deepEqual(
            { Operation: lock.Operation, Info: lock.Info, Who: lock.Who, Path: lock.Path },
            { Operation: "apply", Info: "run 42", Who: "alice@host-a", Path: `${props.bucket}/env:/tool.tfstate` },
          );
          assert.ok(!Number.isNaN(Date.parse(lock.Created)) && lock.Created.endsWith("Z"));
          await assert.rejects(b.lock("default", { operation: "plan" }), (e) => {
            assert.ok(isObjstateError(e, "STATE_LOCKED"));
            assert.deepEqual(e.details?.["lockInfo"], lock);
            assert.match(e.message, /alice@host-a/);
            assert.match(e.message, new RegExp(lock.ID));
            return true;
          });
          // A write by someone who does not hold the lock is refused.
          await assert.rejects(b.writeState("default", '{"version":4,"by":"bob"}'), (e) => isObjstateError(e, "STATE_LOCKED"));
          await assert.rejects(b.writeState("default", '{"version":4,"by":"bob"}', { lockId: "00000000-0000-0000-0000-000000000000" }), (e) =>
            isObjstateError(e, "STATE_LOCKED"),
          );
          assert.equal(await b.readState("default"), null);
          // The holder writes with its lock.
          await a.writeState("default", '{"version":4,"by":"alice"}', { lockId: lock.ID });
          assert.deepEqual(await b.lockInfo("default"), lock);
          await assert.rejects(b.unlock("default", "wrong-id"), (e) => isObjstateError(e, "LOCK_ID_MISMATCH"));
          assert.deepEqual(await a.lockInfo("default"), lock, "a wrong ID leaves the lock in place");
          await b.unlock("default", lock.ID);
          assert.equal(await a.lockInfo("default"), null);
          // The old holder's lock is gone: its writes are refused now.
          await assert.rejects(a.writeState("default", '{"version":4}', { lockId: lock.ID }), (e) => isObjstateError(e, "LOCK_NOT_HELD"));
          await assert.rejects(a.unlock("default", lock.ID), (e) => isObjstateError(e, "LOCK_NOT_FOUND"));
          // Locks are per workspace.
          const l1 = await a.lock("one");
          const l2 = await b.lock("two");
          await a.unlock("one", l1.ID);
          await b.unlock("two", l2.ID);
          assert.equal((await b.readState("default"))?.toString(), '{"version":4,"by":"alice"}');
        });

        it("takes a lock under a caller-chosen ID, and a retry with that ID succeeds while another ID is refused", async () => {
          const props = await target.setup({ locks });
          const a = await connect(props, { who: "server@host" });
          const b = await connect(props);
          const id = "6f1c1a2e-0000-4000-8000-000000000001";
          const lock = await a.lock("default", {
            id,
            operation: "OperationTypeApply",
            who: "client@laptop",
            version: "1.9.0",
            created: "2026-11-24T00:00:00Z",
          });
          assert.deepEqual(
            { ID: lock.ID, Who: lock.Who, Version: lock.Version, Created: lock.Created },
            { ID: id, Who: "client@laptop", Version: "1.9.0", Created: "2026-11-24T00:00:00Z" },
          );
          // Another connection retrying the same client's LOCK (a second replica) gets the stored info back.
          const again = await b.lock("default", { id, operation: "OperationTypeApply", who: "client@laptop", version: "1.9.0" });
          assert.deepEqual(again, lock);
          await assert.rejects(b.lock("default", { id: "6f1c1a2e-0000-4000-8000-000000000002" }), (e) => isObjstateError(e, "STATE_LOCKED"));
          await assert.rejects(b.lock("default"), (e) => isObjstateError(e, "STATE_LOCKED"));
          await b.unlock("default", id);
          assert.equal(await a.lockInfo("default"), null);
        });

        it("writes the digest and detects a state changed behind the backend's back", async () => {
          const props = await target.setup({ locks });
          const b = await connect(props);
          await b.writeState("default", '{"version":4,"serial":7}');
          const raw = await target.raw(props.bucket);
          await raw.put(b.statePath("default"), Buffer.from('{"version":4,"serial":8,"edited":"by hand"}'));
          const started = Date.now();
          await assert.rejects(b.readState("default"), (e) => {
            assert.ok(isObjstateError(e, "DIGEST_MISMATCH"));
            assert.equal(e.details?.["expected"], md5(Buffer.from('{"version":4,"serial":7}')));
            assert.equal(e.details?.["actual"], md5(Buffer.from('{"version":4,"serial":8,"edited":"by hand"}')));
            assert.match(
              e.message,
              new RegExp(`${md5(Buffer.from('{"version":4,"serial":7}'))}.*${md5(Buffer.from('{"version":4,"serial":8,"edited":"by hand"}'))}`),
            );
            assert.match(e.message, /objstate state repair --force/);
            return true;
          });
          assert.ok(Date.now() - started >= FAST_DIGEST.timeoutMs - FAST_DIGEST.intervalMs, "retried before failing");
          // A write through the backend brings state and digest together again.
          await b.writeState("default", '{"version":4,"serial":9}');
          assert.equal((await b.readState("default"))?.toString(), '{"version":4,"serial":9}');
          // A backend without the lock table does not check digests.
          const { kvstoreTable: _t, kvstoreEndpoint: _e, ...noLocks } = props;
          await raw.put(b.statePath("default"), Buffer.from("{}"));
          assert.equal((await (await connect(noLocks)).readState("default"))?.toString(), "{}");
          raw.close();
        });

        it("a digest mismatch heals when the object store catches up during the retry", async () => {
          const props = await target.setup({ locks });
          const b = await connect(props, { digestRetry: { timeoutMs: 3000, intervalMs: 100 } });
          await b.writeState("default", '{"version":4,"v":1}');
          const raw = await target.raw(props.bucket);
          await raw.put(b.statePath("default"), Buffer.from('{"version":4,"v":"stale"}'));
          setTimeout(() => void raw.put(b.statePath("default"), Buffer.from('{"version":4,"v":1}')), 250);
          assert.equal((await b.readState("default"))?.toString(), '{"version":4,"v":1}');
          raw.close();
        });
      } else {
        it("without a lock table: locking is off and says so once, on the first lock or write, not to readers", async () => {
          const props = await target.setup({ locks: false });
          warnings.length = 0;
          const b = await connect(props);
          assert.equal(b.lockingEnabled, false);
          assert.equal(await b.readState("default"), null);
          await b.listWorkspaces();
          assert.equal(warnings.length, 0, `a reader is not warned about writers: ${warnings.join("; ")}`);
          const l = await b.lock("default");
          assert.equal(warnings.length, 1);
          assert.match(warnings[0] as string, /NOT locked/);
          assert.equal(await b.lockInfo("default"), null);
          await b.writeState("default", '{"version":4}', { lockId: l.ID });
          await b.writeState("default", '{"version":4}');
          await b.unlock("default", l.ID);
          assert.equal(warnings.length, 1, "once per connection");
          const w = await connect(props);
          await w.writeState("default", '{"version":4,"serial":2}');
          assert.equal(warnings.length, 2, "a write without a lock says so too");
        });
      }
    });
  }

  describe("lock table checks", () => {
    for (const schema of ["other-key", "number-key"] as const) {
      it(`refuses a table with ${schema === "other-key" ? "a key other than LockID" : "LockID of type Number"} before touching any state`, async () => {
        const props = await target.setup({ locks: false });
        const table = await target.badTable(schema);
        const lockEndpoint = (await target.setup({ locks: true })).kvstoreEndpoint as string;
        await assert.rejects(connect({ ...props, kvstoreTable: table, kvstoreEndpoint: lockEndpoint }), (e) => {
          assert.ok(isObjstateError(e, "TABLE_SCHEMA_INVALID"), String(e));
          assert.match(e.message, /exactly one key, LockID of type String/);
          assert.match(e.message, schema === "other-key" ? /Key \(S, HASH\)/ : /LockID \(N, HASH\)/);
          return true;
        });
        const raw = await target.raw(props.bucket);
        const keys: string[] = [];
        for await (const k of raw.list("")) keys.push(k);
        assert.deepEqual(keys, []);
        raw.close();
      });
    }

    it("kvstoreTable without kvstoreEndpoint is a clear error at connect time", async () => {
      const props = await target.setup({ locks: false });
      await assert.rejects(
        connect({ ...props, kvstoreTable: "locks-table" }),
        (e) => isObjstateError(e, "NO_LOCK_ENDPOINT") && /kvstoreEndpoint/.test(e.message),
      );
    });

    it("no endpoint at all names both ways to give one", async () => {
      await assert.rejects(
        ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ bucket: "state-bucket" }), { env: {} }),
        (e) => isObjstateError(e, "NO_ENDPOINT") && /`endpoint` in the config/.test(e.message) && /PROVIDER_OBJECT_STORE_ENDPOINT/.test(e.message),
      );
    });
  });
}
