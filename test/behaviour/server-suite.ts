/**
 * The http backend conformance suite: what the tool's client (and OpenTofu's) sends for
 * init, plan, apply, -lock-timeout and force-unlock, replayed request by request against
 * `objstate serve` over a target's store, through one server or two replicas over the same
 * bucket and table (each request to the next replica).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../src/index.js";
import { Logger } from "../../src/server/log.js";
import { ObjstateServer } from "../../src/server/server.js";
import { HttpBackendClient, rawRequest, toolState, type ClientOptions } from "../support/http-backend-client.js";
import { uniqueName, type Target } from "../support/targets.js";
import { HISTORY_ENTRY_KEYS } from "../support/history-shape.js";
import { withLowPort } from "../support/port.js";

export function serverSuite(makeTarget: () => Target, replicas: 1 | 2): void {
  const servers: ObjstateServer[] = [];
  const backends: ObjectStoreBackend[] = [];
  let bases: string[] = [];

  before(async () => {
    const target = makeTarget();
    const props = await target.setup({ locks: true });
    // History and rollback need the bucket to keep versions (the embedded store always does).
    const raw = await target.raw(props.bucket);
    await raw.enableVersioning();
    raw.close();
    const config = ObjectStoreBackendConfig.from(props);
    for (let i = 0; i < replicas; i++) {
      const backend = await ObjectStoreBackend.connect(config, {
        env: {},
        who: `replica${i}@suite`,
        digestRetry: { timeoutMs: 2000, intervalMs: 200 },
        onWarning: () => undefined,
      });
      backends.push(backend);
      const server = new ObjstateServer({ backend, logger: new Logger("off") });
      await withLowPort((port) => server.listen("127.0.0.1", port));
      servers.push(server);
    }
    bases = servers.map((s) => s.url);
  });
  after(async () => {
    for (const s of servers) await s.close(1000);
    for (const b of backends) b.close();
  });

  const client = (options: Partial<ClientOptions> = {}): HttpBackendClient => new HttpBackendClient({ bases, workspace: uniqueName("ws"), ...options });
  /** A state written as the tool writes one (`state push`): under its own lock. */
  const seed = async (c: HttpBackendClient, state: Buffer): Promise<void> => {
    assert.ok((await c.lock("OperationTypeInvalid")).ok);
    assert.equal((await c.put(state)).status, 200);
    assert.equal((await c.unlock()).status, 200);
  };
  const api = async (path: string): Promise<Record<string, unknown>> =>
    JSON.parse((await rawRequest(bases[0] as string, "GET", path, undefined)).body.toString()) as Record<string, unknown>;

  it("init: GET (no state: 204), LOCK, GET, POST of the first state under ?ID, UNLOCK", async () => {
    const trace: string[] = [];
    const c = client({ trace });
    assert.equal(await c.get(), null);
    const l = await c.lock("OperationTypeInit");
    assert.ok(l.ok);
    assert.equal(await c.get(), null);
    const first = toolState(1, "lineage-init");
    assert.equal((await c.put(first)).status, 200);
    assert.equal((await c.unlock()).status, 200);
    const ws = encodeURIComponent(c.options.workspace as string);
    assert.deepEqual(trace, [
      `GET /state/${ws}`,
      `LOCK /state/${ws} (${c.jsonLockInfo?.length} bytes)`,
      `GET /state/${ws}`,
      `POST /state/${ws}?ID=${l.id} (${first.length} bytes)`,
      `UNLOCK /state/${ws} (${c.jsonLockInfo?.length} bytes)`,
    ]);
    assert.deepEqual(await c.get(), first);
  });

  it("plan: LOCK, GET (200, body and Content-MD5), UNLOCK; the lock is gone from every replica", async () => {
    const c = client();
    const state = toolState(3, "lineage-plan");
    await seed(c, state);
    assert.ok((await c.lock("OperationTypePlan")).ok);
    const r = await c.send("GET", `/state/${c.options.workspace}`, undefined);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, state);
    assert.equal(r.headers["content-md5"], (await import("node:crypto")).createHash("md5").update(state).digest("base64"));
    assert.equal((await c.unlock()).status, 200);
    for (const base of bases)
      assert.deepEqual(JSON.parse((await rawRequest(base, "GET", `/api/v1/workspaces/${c.options.workspace}/lock`, undefined)).body.toString()), {
        lock: null,
      });
  });

  it("apply: LOCK, GET, intermediate POSTs under ?ID, the final POST, UNLOCK; a retried POST is a no-op 200", async () => {
    const c = client();
    assert.ok((await c.lock("OperationTypeApply")).ok);
    assert.equal(await c.get(), null);
    for (let serial = 1; serial <= 4; serial++) {
      const body = toolState(serial, "lineage-apply", { n: { value: serial, type: "number" } });
      assert.equal((await c.put(body)).status, 200, `write of serial ${serial}`);
      // The client retries a write whose reply was lost: the same bytes again.
      if (serial === 2) assert.equal((await c.put(body)).status, 200, "retried write");
    }
    const final = toolState(5, "lineage-apply", { n: { value: 5, type: "number" }, secret: { value: "hunter2", type: "string", sensitive: true } });
    assert.equal((await c.put(final)).status, 200);
    assert.equal((await c.unlock()).status, 200);
    assert.deepEqual(await c.get(), final);
    const view = await api(`/api/v1/workspaces/${c.options.workspace}`);
    assert.equal((view["lastWrite"] as { serial: number }).serial, 5);
    assert.equal(view["lock"], null);
    const outs = await api(`/api/v1/workspaces/${c.options.workspace}/outputs`);
    assert.deepEqual(outs, {
      outputs: { n: { sensitive: false, type: "number", value: 5 }, secret: { sensitive: true, type: "string", value: "<sensitive>" } },
    });
  });

  it("-lock-timeout: a LOCK on a held state gets 423 with the holder's info, and succeeds once it is released", async () => {
    const ws = uniqueName("ws");
    const a = client({ workspace: ws });
    const b = client({ workspace: ws });
    const la = await a.lock("OperationTypeApply", "alice@host");
    assert.ok(la.ok);
    const refused = await b.lock("OperationTypePlan", "bob@host");
    assert.ok(!refused.ok);
    assert.equal(refused.status, 423);
    assert.equal(refused.holder?.ID, la.id);
    assert.equal(refused.holder?.Who, "alice@host");
    setTimeout(() => void a.unlock(), 300);
    // The tool's wait: its first LOCK refused, the same lock info again 1 s later.
    const waited = await b.lockWithTimeout("OperationTypePlan", 5000);
    assert.ok(waited.ok, JSON.stringify(waited));
    assert.equal(waited.attempts, 2);
    assert.equal((await b.unlock()).status, 200);
  });

  it("force-unlock, the tool's way: an UNLOCK with an empty body releases whatever holds the lock", async () => {
    const ws = uniqueName("ws");
    const a = client({ workspace: ws });
    assert.ok((await a.lock("OperationTypeApply")).ok);
    const admin = client({ workspace: ws });
    assert.equal((await admin.unlock()).status, 200);
    assert.deepEqual(await api(`/api/v1/workspaces/${ws}/lock`), { lock: null });
    // The holder's write now finds its lock gone: refused, nothing written.
    const r = await a.put(toolState(1, "l"));
    assert.equal(r.status, 409);
    assert.equal(JSON.parse(r.body.toString()).code, "LOCK_NOT_HELD");
  });

  it('OpenTofu: LOCK without a GET first, its UNLOCK body, and its force-unlock ({"ID": …} with the rest empty)', async () => {
    const ws = uniqueName("ws");
    const trace: string[] = [];
    const t = client({ workspace: ws, flavour: "opentofu", trace });
    const l = await t.lock("OperationTypeApply");
    assert.ok(l.ok);
    assert.equal((await t.put(toolState(1, "tofu"))).status, 200);
    assert.equal((await t.unlock()).status, 200);
    assert.deepEqual(
      trace.map((x) => x.split(" ")[0]),
      ["LOCK", "POST", "UNLOCK"],
    );
    const holder = client({ workspace: ws });
    const h = await holder.lock("OperationTypeApply");
    assert.ok(h.ok);
    const forcer = client({ workspace: ws, flavour: "opentofu" });
    assert.equal((await forcer.unlock(h.id)).status, 200);
    assert.deepEqual(await api(`/api/v1/workspaces/${ws}/lock`), { lock: null });
  });

  it("retries are safe: LOCK twice under one ID is 200 twice; UNLOCK twice is 200 twice; a wrong ID is 409 with the holder", async () => {
    const ws = uniqueName("ws");
    const c = client({ workspace: ws });
    assert.ok((await c.lock("OperationTypeApply")).ok);
    const again = await c.send("LOCK", `/state/${ws}`, c.jsonLockInfo);
    assert.equal(again.status, 200);
    const other = { ...(JSON.parse((c.jsonLockInfo as Buffer).toString()) as object), ID: "not-the-holder" };
    const wrong = await c.send("UNLOCK", `/state/${ws}`, Buffer.from(JSON.stringify(other)));
    assert.equal(wrong.status, 409);
    assert.equal(JSON.parse(wrong.body.toString()).ID, c.lockID);
    assert.equal((await c.unlock()).status, 200);
    assert.equal((await c.unlock()).status, 200);
  });

  it("a write without ?ID (a client without lock_address, or -lock=false) is 409 UNLOCKED_WRITE naming the lock_address, and writes nothing", async () => {
    const ws = uniqueName("ws");
    const c = client({ workspace: ws });
    const stored = toolState(2, "unlocked", { o: { value: 1, type: "number" } });
    await seed(c, stored);
    for (const base of bases) {
      const r = await rawRequest(base, "POST", `/state/${ws}`, toolState(3, "unlocked"));
      assert.equal(r.status, 409);
      const body = JSON.parse(r.body.toString()) as { code: string; message: string; lock_address: string; ID?: string };
      assert.equal(body.code, "UNLOCKED_WRITE");
      assert.equal(body.lock_address, `${base}/state/${ws}`);
      assert.ok(body.message.includes(`lock_address and unlock_address to ${base}/state/${ws}`), body.message);
      assert.match(body.message, /--allow-unlocked-writes/);
      assert.equal(body.ID, undefined, "not lock info: the client is not to wait on it");
    }
    assert.deepEqual(await c.get(), stored);
  });

  it("--allow-unlocked-writes: a write without ?ID is taken; while another client holds the lock it is 423 with the holder; the lineage guard is 409 with the reason; a bad Content-MD5 is 400", async () => {
    const open = new ObjstateServer({ backend: backends[0] as ObjectStoreBackend, logger: new Logger("off"), allowUnlockedWrites: true });
    await withLowPort((port) => open.listen("127.0.0.1", port));
    try {
      const ws = uniqueName("ws");
      const holder = client({ workspace: ws });
      const stranger = new HttpBackendClient({ bases: [open.url], workspace: ws });
      const stored = toolState(2, "guarded", { o: { value: 1, type: "number" } });
      assert.equal((await stranger.put(stored)).status, 200);
      const l = await holder.lock("OperationTypeApply");
      assert.ok(l.ok);
      const locked = await stranger.put(toolState(3, "guarded"));
      assert.equal(locked.status, 423);
      assert.equal(JSON.parse(locked.body.toString()).ID, l.id);
      const conflict = await holder.put(toolState(1, "guarded"));
      assert.equal(conflict.status, 409);
      const reason = JSON.parse(conflict.body.toString()) as { code: string; message: string };
      assert.equal(reason.code, "STATE_CONFLICT");
      assert.match(reason.message, /serial/);
      const body = toolState(3, "guarded");
      const damaged = await rawRequest(bases[0] as string, "POST", `/state/${ws}?ID=${l.id}`, body, {}, { "Content-MD5": Buffer.alloc(16).toString("base64") });
      assert.equal(damaged.status, 400);
      assert.equal(JSON.parse(damaged.body.toString()).code, "MD5_MISMATCH");
      assert.deepEqual(await holder.get(), stored);
      assert.equal((await holder.unlock()).status, 200);
      stranger.close();
    } finally {
      await open.close(1000);
    }
  });

  it("an UNLOCK repeated after its reply was lost is 200, also once another client holds the lock, whose lock stays", async () => {
    for (const flavour of ["terraform", "opentofu"] as const) {
      const ws = uniqueName("ws");
      const a = client({ workspace: ws, flavour });
      const b = client({ workspace: ws, flavour });
      assert.ok((await a.lock("OperationTypeApply")).ok);
      assert.equal((await a.unlock()).status, 200);
      // The retry, after the first UNLOCK was done and before its answer arrived: no lock.
      assert.equal((await a.unlock()).status, 200);
      const lb = await b.lock("OperationTypeApply");
      assert.ok(lb.ok);
      // Later still, once b holds it: done, and b's lock is left alone (through every replica).
      for (let i = 0; i < bases.length; i++) assert.equal((await a.unlock()).status, 200, `${flavour}: repeated UNLOCK ${i + 1}`);
      assert.equal(((await api(`/api/v1/workspaces/${ws}/lock`))["lock"] as { id: string } | null)?.id, lb.id);
      assert.equal((await b.put(toolState(1, "after-retry"))).status, 200, "b still holds the lock and writes under it");
      // An ID that was never released is still refused with the holder.
      const other = await rawRequest(
        bases[0] as string,
        "UNLOCK",
        `/state/${ws}`,
        Buffer.from(JSON.stringify({ ...(JSON.parse((a.jsonLockInfo as Buffer).toString()) as object), ID: randomUUID() })),
      );
      assert.equal(other.status, 409);
      assert.equal(JSON.parse(other.body.toString()).ID, lb.id);
      assert.equal((await b.unlock()).status, 200);
    }
  });

  it("a LOCK that arrives after its lock was released (a late copy) is 409 without lock info, so the client does not wait on it; nothing is taken", async () => {
    const ws = uniqueName("ws");
    const a = client({ workspace: ws });
    const info = a.newLockInfo("OperationTypeApply");
    assert.ok((await a.lockWith(info)).ok);
    assert.equal((await a.put(toolState(1, "late"))).status, 200);
    assert.equal((await a.unlock()).status, 200);
    for (const base of bases) {
      const late = await rawRequest(base, "LOCK", `/state/${ws}`, Buffer.from(JSON.stringify(info)));
      assert.equal(late.status, 409);
      const body = JSON.parse(late.body.toString()) as { code: string; message: string; ID?: string };
      assert.equal(body.code, "LOCK_ID_RELEASED");
      assert.equal(body.ID, undefined);
      assert.match(body.message, new RegExp(`lock ${info.ID} .* was released at .*a late copy`));
    }
    assert.deepEqual(await api(`/api/v1/workspaces/${ws}/lock`), { lock: null }, "the late copies took nothing");
    // What LockWithContext makes of it: a lock error without a holder's ID, so no wait.
    const again = await a.lockWith(info);
    assert.ok(!again.ok && again.status === 409 && again.holder?.ID === undefined, JSON.stringify(again));
    assert.ok((await client({ workspace: ws }).lock("OperationTypePlan")).ok, "anyone else locks it at once");
  });

  it("a force-unlock repeated by the same user soon after (its reply lost) releases nothing more and says so (409): a lock taken since stays", async () => {
    const ws = uniqueName("ws");
    const a = client({ workspace: ws });
    const la = await a.lock("OperationTypeApply");
    assert.ok(la.ok);
    const admin = client({ workspace: ws });
    const first = await admin.unlock();
    assert.equal(first.status, 200);
    assert.deepEqual(JSON.parse(first.body.toString()), { released: la.id });
    const b = client({ workspace: ws });
    const lb = await b.lock("OperationTypeApply");
    assert.ok(lb.ok);
    const again = await admin.unlock();
    assert.equal(again.status, 409, "the lock still stands: not a 200");
    const body = JSON.parse(again.body.toString()) as { code: string; message: string };
    assert.equal(body.code, "FORCE_UNLOCK_REPEATED");
    assert.match(
      body.message,
      new RegExp(
        `released nothing, and the state is still locked \\(ID ${lb.id},.*force-unlocked lock ${la.id} at .*lock\\?id=${lb.id}.*force-unlock again after \\d{4}-`,
      ),
    );
    assert.equal(((await api(`/api/v1/workspaces/${ws}/lock`))["lock"] as { id: string } | null)?.id, lb.id);
    // A force-unlock by ID (OpenTofu's, the API's) names what it releases: it goes through.
    assert.equal((await client({ workspace: ws, flavour: "opentofu" }).unlock(lb.id)).status, 200);
    assert.deepEqual(await api(`/api/v1/workspaces/${ws}/lock`), { lock: null });
    // With no lock left, a force-unlock is 200 and says there was nothing to release.
    const none = await admin.unlock();
    assert.equal(none.status, 200);
    assert.match((JSON.parse(none.body.toString()) as { message: string }).message, new RegExp(`workspace ${ws} is not locked: nothing to release`));
  });

  it("lock_method = POST and unlock_method = DELETE on {address}/lock", async () => {
    const ws = uniqueName("ws");
    const c = client({ workspace: ws, lockStyle: "post-delete" });
    const l = await c.lock("OperationTypeApply");
    assert.ok(l.ok);
    const other = await client({ workspace: ws, lockStyle: "post-delete" }).lock("OperationTypePlan");
    assert.ok(!other.ok && other.status === 423 && other.holder?.ID === l.id);
    assert.equal((await c.put(toolState(1, "style"))).status, 200);
    assert.equal((await c.unlock()).status, 200);
    assert.deepEqual(await api(`/api/v1/workspaces/${ws}/lock`), { lock: null });
  });

  it("DELETE removes a workspace and refuses default", async () => {
    const c = client();
    await seed(c, toolState(1, "del"));
    assert.equal((await c.delete()).status, 200);
    assert.equal(await c.get(), null);
    const d = await rawRequest(bases[0] as string, "DELETE", "/state/default", undefined);
    assert.equal(d.status, 400);
    assert.equal(JSON.parse(d.body.toString()).code, "CANNOT_DELETE_DEFAULT");
  });

  it("/api/v1: workspaces with lock state and last write, a diff against a given state, and the lock listing", async () => {
    const c = client();
    const ws = c.options.workspace as string;
    await seed(c, toolState(7, "apiview"));
    assert.ok((await c.lock("OperationTypeApply")).ok);
    const list = (await api("/api/v1/workspaces"))["workspaces"] as { name: string; lock: { id: string } | null; lastWrite: { serial: number } | null }[];
    const mine = list.find((w) => w.name === ws);
    assert.equal(mine?.lock?.id, c.lockID);
    assert.equal(mine?.lastWrite?.serial, 7);
    assert.equal(list[0]?.name, "default");
    const d = await rawRequest(bases[0] as string, "POST", `/api/v1/workspaces/${ws}/diff`, toolState(8, "apiview", { x: { value: 1, type: "number" } }));
    assert.equal(d.status, 200);
    const diff = JSON.parse(d.body.toString()) as { serial: { before: number; after: number }; outputs: { added: { name: string }[] } };
    assert.deepEqual(diff.serial, { before: 7, after: 8 });
    assert.equal(diff.outputs.added[0]?.name, "x");
    const held = (await api("/api/v1/locks"))["locks"] as { workspace: string | null; id: string; operation: string }[];
    assert.deepEqual(
      held.filter((l) => l.workspace === ws).map((l) => [l.id, l.operation]),
      [[c.lockID, "OperationTypeApply"]],
    );
    const f = await rawRequest(bases[0] as string, "DELETE", `/api/v1/workspaces/${ws}/lock?id=${c.lockID}`, undefined);
    assert.equal(f.status, 200);
    const after = (await api("/api/v1/locks"))["locks"] as { workspace: string | null }[];
    assert.equal(after.filter((l) => l.workspace === ws).length, 0, "released: no longer listed");
    const ready = await rawRequest(bases[0] as string, "GET", "/readyz", undefined);
    assert.equal(ready.status, 200);
    const metrics = (await rawRequest(bases[0] as string, "GET", "/metrics", undefined)).body.toString();
    assert.match(metrics, /objstate_http_requests_total\{route="\/state\/:workspace",method="LOCK",status="200"\} \d+/);
    assert.match(metrics, /objstate_http_request_duration_seconds_bucket\{le="\+Inf",route="\/state\/:workspace"\} \d+/);
  });

  it("/api/v1 history, versions, diff by version IDs and rollback: the library's calls, through any replica", async () => {
    const c = client();
    const ws = c.options.workspace as string;
    const last = bases[bases.length - 1] as string;
    const json = async (base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
      const r = await rawRequest(base, method, path, body === undefined ? undefined : Buffer.from(typeof body === "string" ? body : JSON.stringify(body)));
      return { status: r.status, body: JSON.parse(r.body.toString()) as Record<string, unknown> };
    };
    const states = [
      toolState(1, "hist"),
      toolState(2, "hist", { a: { value: 1, type: "number" } }),
      toolState(3, "hist", { a: { value: 2, type: "number" }, b: { value: "x", type: "string", sensitive: true } }),
    ];
    assert.ok((await c.lock("OperationTypeApply", "alice@host")).ok);
    for (const s of states) assert.equal((await c.put(s)).status, 200);
    assert.equal((await c.unlock()).status, 200);

    type V = {
      versionId: string;
      serial: number;
      isLatest: boolean;
      who: string | null;
      principal: { name: string; via: string } | null;
      operation: string | null;
      lastModified: string;
      size: number;
    };
    const ANONYMOUS = { name: "anonymous", via: "none", tokenId: null, oidc: null };
    const h = await json(last, "GET", `/api/v1/workspaces/${ws}/history`);
    assert.equal(h.status, 200);
    const versions = h.body["versions"] as V[];
    assert.deepEqual(
      versions.map((v) => [v.serial, v.isLatest, v.who]),
      [
        [3, true, "alice@host"],
        [2, false, "alice@host"],
        [1, false, "alice@host"],
      ],
    );
    // A server without users: every write is the anonymous principal's.
    assert.deepEqual(
      versions.map((v) => v.principal),
      [ANONYMOUS, ANONYMOUS, ANONYMOUS],
    );
    for (const v of versions) assert.deepEqual(Object.keys(v), HISTORY_ENTRY_KEYS, "one shape with `state history --json`");
    assert.ok(!Number.isNaN(Date.parse(versions[0]?.lastModified ?? "")));
    assert.equal(versions[2]?.size, states[0]?.length);
    const [v3, v2, v1] = versions.map((v) => v.versionId) as [string, string, string];
    assert.deepEqual(
      ((await json(bases[0] as string, "GET", `/api/v1/workspaces/${ws}/history?limit=1`)).body["versions"] as V[]).map((v) => v.versionId),
      [v3],
    );
    assert.equal((await json(bases[0] as string, "GET", `/api/v1/workspaces/${ws}/history?limit=0`)).status, 400);

    const old = await rawRequest(bases[0] as string, "GET", `/api/v1/workspaces/${ws}/versions/${encodeURIComponent(v1)}`, undefined);
    assert.equal(old.status, 200);
    assert.deepEqual(old.body, states[0], "the bytes exactly as stored, like state pull --version");
    assert.equal(
      old.headers["content-md5"],
      (await import("node:crypto"))
        .createHash("md5")
        .update(states[0] as Buffer)
        .digest("base64"),
    );
    const missing = await json(bases[0] as string, "GET", `/api/v1/workspaces/${ws}/versions/no-such-version`);
    assert.equal(missing.status, 404);
    assert.equal(missing.body["code"], "VERSION_NOT_FOUND");

    const d = await json(last, "GET", `/api/v1/workspaces/${ws}/diff?from=${encodeURIComponent(v2)}&to=${encodeURIComponent(v3)}`);
    assert.equal(d.status, 200);
    const diff = d.body as {
      from: string;
      to: string;
      serial: { before: number; after: number };
      outputs: { added: { name: string; after?: unknown }[]; changed: { name: string }[] };
    };
    assert.deepEqual([diff.from, diff.to, diff.serial], [v2, v3, { before: 2, after: 3 }]);
    assert.deepEqual(
      diff.outputs.added.map((o) => o.name),
      ["b"],
    );
    assert.doesNotMatch(JSON.stringify(diff), /"x"/, "a sensitive value never leaves in a diff");
    assert.deepEqual(
      diff.outputs.changed.map((o) => o.name),
      ["a"],
    );
    assert.equal((await json(bases[0] as string, "GET", `/api/v1/workspaces/${ws}/diff?from=${encodeURIComponent(v2)}`)).status, 400);

    // A rollback while a client holds the lock waits for no one: 423 with the holder; under the holder's ID it goes through.
    const holder = client({ workspace: ws });
    const l = await holder.lock("OperationTypeApply", "bob@host");
    assert.ok(l.ok);
    const refused = await json(bases[0] as string, "POST", `/api/v1/workspaces/${ws}/rollback`, { to: v2 });
    assert.equal(refused.status, 423);
    assert.equal(refused.body["ID"], l.id);
    const underLock = await json(last, "POST", `/api/v1/workspaces/${ws}/rollback`, { to: v2, lockId: l.id });
    assert.equal(underLock.status, 200, JSON.stringify(underLock.body));
    assert.deepEqual([underLock.body["serial"], underLock.body["from"], underLock.body["previousSerial"]], [4, v2, 3]);
    assert.equal((await holder.unlock()).status, 200);

    const r = await json(bases[0] as string, "POST", `/api/v1/workspaces/${ws}/rollback`, { to: v1 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body["serial"], 5);
    const now = (await json(last, "GET", `/api/v1/workspaces/${ws}/history?limit=2`)).body["versions"] as V[];
    assert.deepEqual(
      now.map((v) => [v.serial, v.operation, v.isLatest]),
      [
        [5, "rollback", true],
        [4, "rollback", false],
      ],
    );
    const current = JSON.parse((await c.get())?.toString() ?? "null") as { serial: number; outputs: object };
    assert.deepEqual([current.serial, current.outputs], [5, {}], "version 1's content with the next serial");
    assert.deepEqual(await api(`/api/v1/workspaces/${ws}/lock`), { lock: null }, "the rollback's own lock is released");

    for (const bad of ["not json", { to: 7 }, { to: v1, force: "yes" }, []]) {
      const b = await json(bases[0] as string, "POST", `/api/v1/workspaces/${ws}/rollback`, bad);
      assert.equal(b.status, 400, JSON.stringify(bad));
      assert.match(String(b.body["message"]), /"to": "VERSION_ID"/);
    }
  });
}
