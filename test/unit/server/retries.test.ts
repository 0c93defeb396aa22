/**
 * Every request the tool's client retries is safe (README "Retries"), shown with the real
 * client's timings (1 s and 2 s between attempts, a lock backoff from 1 s to 16 s) against
 * two `objstate serve` replicas over one embedded store, each behind a fault proxy that
 * loses a reply after the server did the work, holds a request, or both. The client goes
 * round-robin over the proxies, as through a load balancer: a retry reaches the other one.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer } from "../../../src/server/server.js";
import { startFaultProxy, type FaultProxy, type ProxyLogEntry } from "../../support/fault-proxy.js";
import { HttpBackendClient, rawRequest, toolState, type ClientOptions } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { withLowPort } from "../../support/port.js";

interface Replica {
  readonly backend: ObjectStoreBackend;
  readonly server: ObjstateServer;
  readonly proxy: FaultProxy;
}

describe("objstate serve: every retried request is safe, with the real client's timings", () => {
  let props: ObjectStoreBackendConfigProps;
  const replicas: Replica[] = [];
  const clients: HttpBackendClient[] = [];
  /** Releases that found their ID released already while another client held the lock (the case a naive server answers 409). */
  let repeatedWhileHeld = 0;

  before(async () => {
    props = await embeddedTarget().setup({ locks: true });
    for (let i = 0; i < 2; i++) {
      const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
        env: {},
        who: `replica${i}@retries`,
        onWarning: () => undefined,
      });
      // Counts, does not change, what the library answers the server.
      const unlock = backend.unlock.bind(backend);
      backend.unlock = async (...args: Parameters<ObjectStoreBackend["unlock"]>): Promise<void> => {
        try {
          await unlock(...args);
        } catch (e) {
          if (isObjstateError(e, "LOCK_NOT_FOUND") && e.details?.["releasedAt"] !== undefined) repeatedWhileHeld++;
          throw e;
        }
      };
      const server = new ObjstateServer({ backend, logger: new Logger("off") });
      await withLowPort((port) => server.listen("127.0.0.1", port));
      replicas.push({ backend, server, proxy: await startFaultProxy(server.url) });
    }
  });
  after(async () => {
    for (const c of clients) c.close();
    for (const r of replicas) {
      await r.proxy.close();
      await r.server.close(1000);
      r.backend.close();
    }
  });

  const [A, B] = [0, 1];
  const proxy = (i: number): FaultProxy => (replicas[i] as Replica).proxy;
  const backend = (): ObjectStoreBackend => (replicas[0] as Replica).backend;
  /** A client through both proxies, the first attempt to `first`. */
  const client = (workspace: string, first = A, options: Partial<ClientOptions> = {}): HttpBackendClient => {
    const bases = replicas.map((r) => r.proxy.url);
    const c = new HttpBackendClient({ bases: first === A ? bases : [...bases].reverse(), workspace, ...options });
    clients.push(c);
    return c;
  };
  const holderOf = async (ws: string): Promise<string | undefined> => (await backend().lockInfo(ws))?.ID;
  const versionsOf = async (ws: string): Promise<number> => {
    let n = 0;
    for await (const v of backend().history(ws)) if (!v.deleteMarker) n++;
    return n;
  };

  it("GET: a lost reply is sent again 1 s later (to the other replica) and answers the state", async () => {
    const ws = uniqueName("get");
    const state = toolState(1, "get");
    await backend().writeState(ws, state);
    const trace: string[] = [];
    const c = client(ws, A, { trace });
    const drop = proxy(A).dropReplyOnce({ method: "GET" });
    assert.deepEqual(await c.get(), state);
    assert.equal((await drop).outcome, "dropped");
    assert.deepEqual(trace, [`GET /state/${ws}`, `GET /state/${ws}`]);
  });

  it("POST: the same content again after a lost reply is a 200 no-op (one version stored)", async () => {
    const ws = uniqueName("post");
    const c = client(ws, B);
    assert.ok((await c.lock("OperationTypeApply")).ok);
    // The POST goes to A (the client's second request): its reply is lost after the write.
    const drop = proxy(A).dropReplyOnce({ method: "POST" });
    const state = toolState(1, "post");
    assert.equal((await c.put(state)).status, 200);
    assert.equal((await drop).outcome, "dropped");
    assert.equal(proxy(B).find({ method: "POST" }).length, 1, "the retry went to the other replica");
    assert.deepEqual(await backend().readState(ws), state);
    assert.equal(await versionsOf(ws), 1, "the retry wrote nothing");
    assert.equal((await c.unlock()).status, 200);
  });

  it("LOCK: retried under its own ID after a lost reply is 200, and the client holds the lock", async () => {
    const ws = uniqueName("lock");
    const c = client(ws);
    const drop = proxy(A).dropReplyOnce({ method: "LOCK" });
    const l = await c.lock("OperationTypeApply");
    assert.equal((await drop).outcome, "dropped");
    assert.ok(l.ok);
    assert.equal(await holderOf(ws), l.id);
    assert.equal((await c.put(toolState(1, "lock"))).status, 200);
    assert.equal((await c.unlock()).status, 200);
    assert.equal(await holderOf(ws), undefined);
  });

  it("UNLOCK: retried after a lost reply is 200, also when another client took the lock in between, whose lock stays", async () => {
    const ws = uniqueName("unlock");
    const a = client(ws, B);
    const b = client(ws, A);
    assert.ok((await a.lock("OperationTypeApply")).ok);
    // a's UNLOCK goes to A (lost reply); its retry to B waits there until b has the lock.
    const drop = proxy(A).dropReplyOnce({ method: "UNLOCK" });
    proxy(B).stall({ method: "UNLOCK" });
    const unlocked = a.unlock();
    assert.equal((await drop).outcome, "dropped");
    const lb = await b.lock("OperationTypeApply");
    assert.ok(lb.ok);
    await proxy(B).waitFor({ method: "UNLOCK", path: `/state/${ws}` });
    await proxy(B).resume();
    assert.equal((await unlocked).status, 200);
    assert.equal(await holderOf(ws), lb.id, "b's lock is left alone");
    assert.equal((await b.put(toolState(1, "unlock"))).status, 200);
    assert.equal((await b.unlock()).status, 200);
  });

  it("force-unlock (no ID): retried after a lost reply releases nothing more; a lock another client took in between stays, and the answer says so (409)", async () => {
    const ws = uniqueName("force");
    const a = client(ws);
    assert.ok((await a.lock("OperationTypeApply")).ok);
    const admin = client(ws, A);
    const b = client(ws, A);
    const drop = proxy(A).dropReplyOnce({ method: "UNLOCK" });
    proxy(B).stall({ method: "UNLOCK" });
    const forced = admin.unlock();
    assert.equal((await drop).outcome, "dropped");
    assert.equal(await holderOf(ws), undefined, "the first attempt released a's lock");
    const lb = await b.lock("OperationTypeApply");
    assert.ok(lb.ok);
    await proxy(B).waitFor({ method: "UNLOCK", path: `/state/${ws}` });
    await proxy(B).resume();
    // Not 200: a lock stands after the request (decision 016), though its first attempt released one.
    const answer = await forced;
    assert.equal(answer.status, 409);
    assert.equal((JSON.parse(answer.body.toString()) as { code: string }).code, "FORCE_UNLOCK_REPEATED");
    assert.equal(await holderOf(ws), lb.id, "the retry released nothing more");
    assert.equal((await b.unlock()).status, 200);
  });

  it("Late LOCK: a LOCK held up until after its lock was released is refused (409, no lock ID) and takes nothing", async () => {
    const ws = uniqueName("late");
    const c = client(ws);
    proxy(A).stall({ method: "LOCK" });
    const locking = c.lock("OperationTypeApply");
    const held: ProxyLogEntry = await proxy(A).waitFor({ method: "LOCK", path: `/state/${ws}` });
    // The connection is cut while A holds the request (a load balancer's timeout): the client
    // sends it again 1 s later, to B, and goes on with its apply.
    c.dropConnections();
    const l = await locking;
    assert.ok(l.ok);
    assert.equal((await c.put(toolState(1, "late"))).status, 200);
    assert.equal((await c.unlock()).status, 200);
    // Now A serves the copy it held.
    await proxy(A).resume();
    assert.equal(held.outcome, 409);
    assert.equal(held.clientGone, true);
    assert.equal(await holderOf(ws), undefined, "the late copy took nothing");
    // Its answer is no lock info with an ID, so a tool that did get it would not wait on it.
    const again = await rawRequest(replicas[A]?.server.url as string, "LOCK", `/state/${ws}`, held.body);
    assert.equal(again.status, 409);
    assert.deepEqual(Object.keys(JSON.parse(again.body.toString()) as object).sort(), ["code", "message"]);
    assert.ok((await client(ws).lock("OperationTypePlan")).ok, "the state is free for the next client");
  });

  it("Lost UNLOCK replies with real timings, and clients starting at random times: 0 false 409s in at least 30 faults", async () => {
    const WORKSPACES = 5;
    const PER_WORKSPACE = 3;
    const FAULTS = 30;
    let faults = 0;
    const failures: string[] = [];
    const cycles = new Map<string, number>();
    const proxyAt = (base: string): FaultProxy => (replicas.find((r) => r.proxy.url === base) as Replica).proxy;
    const worker = async (ws: string, lineage: string): Promise<void> => {
      const c = client(ws, Math.random() < 0.5 ? A : B);
      while (faults < FAULTS && failures.length === 0) {
        // Each apply starts at a random time; a client whose lock is held waits as the tool does.
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 1000)));
        const l = await c.lockWithTimeout("OperationTypeApply", 120_000);
        if (!l.ok) {
          failures.push(`${ws}: LOCK ${l.status} ${JSON.stringify(l.holder)}`);
          return;
        }
        const current = await c.get();
        const serial = current === null ? 0 : (JSON.parse(current.toString()) as { serial: number }).serial;
        // The apply itself, holding the lock (a retry of another client's UNLOCK may arrive now).
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 1500)));
        const put = await c.put(toolState(serial + 1, lineage));
        if (put.status !== 200) failures.push(`${ws}: POST ${put.status} ${put.body.toString()}`);
        else cycles.set(ws, (cycles.get(ws) ?? 0) + 1);
        // The reply to this UNLOCK's first attempt is lost once the server released the lock;
        // the retry, 1 s later, reaches the other replica.
        const drop = proxyAt(c.nextBase).dropReplyOnce({ method: "UNLOCK", body: c.lockID });
        try {
          const u = await c.unlock();
          if (u.status !== 200) failures.push(`${ws}: UNLOCK ${u.status} ${u.body.toString()}`);
        } catch (e) {
          failures.push(`${ws}: UNLOCK failed: ${(e as Error).message}`);
        }
        if ((await drop).outcome === "dropped") faults++;
      }
    };
    const names = Array.from({ length: WORKSPACES }, () => uniqueName("many"));
    await Promise.all(names.flatMap((ws) => Array.from({ length: PER_WORKSPACE }, () => worker(ws, `lineage-${ws}`))));
    assert.deepEqual(failures, []);
    assert.ok(faults >= FAULTS, `${faults} faults`);
    for (const ws of names) {
      assert.equal(await holderOf(ws), undefined, `${ws}: no lock left`);
      // Every acknowledged write is there: the serial counts the cycles.
      assert.equal((JSON.parse((await backend().readState(ws))?.toString() ?? "{}") as { serial: number }).serial, cycles.get(ws), ws);
    }
    // The case a server without the record answers 409 happened, and was answered 200.
    assert.ok(repeatedWhileHeld > 0, `no UNLOCK retry found another client holding the lock in ${faults} faults`);
    process.stdout.write(
      `# ${faults} lost UNLOCK replies, ${[...cycles.values()].reduce((x, y) => x + y, 0)} cycles, ${repeatedWhileHeld} retries found another client holding the lock\n`,
    );
  });
});
