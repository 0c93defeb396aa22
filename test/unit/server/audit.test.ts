/**
 * The audit log through `objstate serve`: two replicas (each its own connection) over one
 * embedded store and table, with users. Every change through the http protocol, /api/v1 and
 * the console stores one event (its own object) before it is answered; `GET /api/v1/audit` reads them back
 * for admins; no line, and no line of the server's log, holds a password, a credential or
 * state content.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type AuditRecord } from "../../../src/index.js";
import { auditPrefix, layout } from "../../../src/config/layout.js";
import { openStore } from "../../../src/store/index.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer, type ServerOptions } from "../../../src/server/server.js";
import { hashPassword, parseUsers } from "../../../src/server/users.js";
import { HttpBackendClient, rawRequest, toolState, type Reply } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { withLowPort } from "../../support/port.js";

const CHEAP = { N: 1024, r: 8, p: 1 };
const USERS: Record<string, Record<string, string[]>> = {
  alice: { "*": ["read", "write", "lock"] },
  reader: { "*": ["read"] },
  forcer: { "*": ["read", "lock", "force"] },
  rewinder: { "*": ["read", "write", "lock", "force"] },
  admin: { "*": ["admin"] },
  teamadmin: { "team-*": ["admin"] },
};
/** Passwords unlike anything else in a line, so finding one anywhere is a leak. */
const pw = (name: string): string => `pw-${name}-Zq8xK2`;
/** State content that must never reach an audit line or the log. */
const STATE_SECRET = "state-secret-9f3c1d";

describe("objstate serve: the audit log", () => {
  const backends: ObjectStoreBackend[] = [];
  const servers: ObjstateServer[] = [];
  const logged: string[] = [];
  let props: Awaited<ReturnType<ReturnType<typeof embeddedTarget>["setup"]>>;
  let r1: string;
  let r2: string;

  before(async () => {
    props = await embeddedTarget().setup({ locks: true });
    const entries: Record<string, unknown> = {};
    for (const [name, roles] of Object.entries(USERS)) entries[name] = { password: await hashPassword(pw(name), CHEAP), roles };
    const users: ServerOptions["users"] = parseUsers(JSON.stringify({ users: entries }), "users.json");
    for (let i = 0; i < 2; i++) {
      const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, who: `replica${i}@audit`, onWarning: () => undefined });
      backends.push(backend);
      // Every line the server logs, at the most verbose level, is searched for secrets below.
      const s = new ObjstateServer({ backend, users, logger: new Logger("debug", (l) => logged.push(l)) });
      await withLowPort((port) => s.listen("127.0.0.1", port));
      servers.push(s);
    }
    [r1, r2] = servers.map((s) => s.url) as [string, string];
  });
  after(async () => {
    for (const s of servers) await s.close(500);
    for (const b of backends) b.close();
  });

  const as = (base: string, user: string, workspace: string, flavour: "terraform" | "opentofu" = "terraform"): HttpBackendClient =>
    new HttpBackendClient({ bases: [base], workspace, username: user, password: pw(user), flavour, retries: 0 });
  const call = (base: string, user: string, method: string, path: string, body?: unknown): Promise<Reply> =>
    rawRequest(base, method, path, body === undefined ? undefined : Buffer.from(JSON.stringify(body)), { username: user, password: pw(user) });
  /** The workspace's events as the audit route returns them: every change answered is in them already. */
  const audit = async (ws: string): Promise<AuditRecord[]> => {
    const r = await call(r2, "admin", "GET", `/api/v1/audit?workspace=${ws}`);
    assert.equal(r.status, 200, r.body.toString());
    return (JSON.parse(r.body.toString()) as { records: AuditRecord[] }).records;
  };
  const brief = (r: AuditRecord): string =>
    [r.action, r.principal.name, r.principal.via, r.surface, r.outcome, r.lockId ?? "-", r.serial ?? "-", r.code ?? "-"].join(" ");

  it("the http protocol: lock, write, unlock, a refused write and both force-unlocks each write one line, whichever replica answered", async () => {
    const ws = uniqueName("ws");
    const alice = as(r1, "alice", ws);
    const taken = await alice.lock("OperationTypeApply");
    assert.ok(taken.ok);
    const state = toolState(3, "lin-audit", { token: { value: STATE_SECRET, type: "string", sensitive: true } });
    const onR2 = as(r2, "alice", ws);
    onR2.lockID = alice.lockID;
    assert.equal((await onR2.put(state)).status, 200);
    assert.equal((await as(r1, "reader", ws).put(toolState(4, "lin-audit"))).status, 403);
    assert.equal((await alice.unlock()).status, 200);
    // The tool's force-unlock (empty body) and OpenTofu's ({"ID": …} and nothing else).
    const again = await alice.lock("OperationTypeApply");
    assert.ok(again.ok);
    assert.equal((await as(r2, "forcer", ws).unlock()).status, 200);
    const third = await alice.lock("OperationTypePlan");
    assert.ok(third.ok);
    assert.equal((await as(r1, "forcer", ws, "opentofu").unlock(third.id)).status, 200);

    const lines = await audit(ws);
    assert.deepEqual(lines.map(brief), [
      `lock alice password http ok ${taken.id} - -`,
      `write alice password http ok ${taken.id} 3 -`,
      `write reader password http refused - - FORBIDDEN`,
      `unlock alice password http ok ${taken.id} - -`,
      `lock alice password http ok ${again.id} - -`,
      `force-unlock forcer password http ok ${again.id} - -`,
      `lock alice password http ok ${third.id} - -`,
      `force-unlock forcer password http ok ${third.id} - -`,
    ]);
    const write = lines[1] as AuditRecord;
    assert.match(write.md5 ?? "", /^[0-9a-f]{32}$/);
    assert.equal(write.workspace, ws);
    assert.ok(lines.every((l) => !Number.isNaN(Date.parse(l.time))));
  });

  it("/api/v1 and the console: rollback, force-unlock and a workspace delete each write one line, with the version written", async () => {
    const ws = uniqueName("ws");
    const alice = as(r1, "alice", ws);
    assert.ok((await alice.lock("OperationTypeApply")).ok);
    assert.equal((await alice.put(toolState(1, "lin-api"))).status, 200);
    assert.equal((await alice.put(toolState(2, "lin-api"))).status, 200);
    assert.equal((await alice.unlock()).status, 200);
    const history = JSON.parse((await call(r1, "alice", "GET", `/api/v1/workspaces/${ws}/history`)).body.toString()) as { versions: { versionId: string }[] };
    const first = history.versions[1]?.versionId as string;
    const back = await call(r2, "rewinder", "POST", `/api/v1/workspaces/${ws}/rollback`, { to: first });
    assert.equal(back.status, 200, back.body.toString());

    const held = await alice.lock("OperationTypeApply");
    assert.ok(held.ok);
    assert.equal((await call(r1, "rewinder", "DELETE", `/api/v1/workspaces/${ws}/lock?id=${held.id}`)).status, 200);

    // The console's force-unlock: its confirmation page's form, posted from its own origin.
    const console = await alice.lock("OperationTypeApply");
    assert.ok(console.ok);
    const page = (await call(r2, "rewinder", "GET", `/workspaces/${ws}/force-unlock?id=${console.id}`)).body.toString();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "";
    const form = new URLSearchParams({ csrf, id: console.id, confirm: ws }).toString();
    const posted = await rawRequest(
      r2,
      "POST",
      `/workspaces/${ws}/force-unlock`,
      Buffer.from(form),
      { username: "rewinder", password: pw("rewinder") },
      { "Content-Type": "application/x-www-form-urlencoded", Origin: r2 },
    );
    assert.equal(posted.status, 303, posted.body.toString());

    const lines = (await audit(ws)).filter((l) => l.action !== "lock" && l.action !== "unlock" && l.action !== "write");
    assert.deepEqual(lines.map(brief), [
      `rollback rewinder password api ok - 3 -`,
      `force-unlock rewinder password api ok ${held.id} - -`,
      `force-unlock rewinder password console ok ${console.id} - -`,
    ]);
    assert.equal(lines[0]?.from, first);

    // DELETE /state/{w}: objstate's own, for admins.
    const other = uniqueName("ws");
    assert.equal((await as(r1, "alice", other).lock("OperationTypeApply")).ok, true);
    const gone = await call(r1, "admin", "DELETE", `/api/v1/workspaces/${other}/lock?id=no-such-lock`);
    assert.notEqual(gone.status, 200);
    const doomed = uniqueName("ws");
    await backends[0]?.createWorkspace(doomed);
    assert.equal((await call(r2, "admin", "DELETE", `/state/${doomed}`)).status, 200);
    assert.deepEqual((await audit(doomed)).map(brief), [`delete-workspace admin password http ok - - -`]);
  });

  it("GET /api/v1/audit: admins only (of the workspace asked for, or of every one), since and limit parsed and bounded", async () => {
    const ws = `team-${uniqueName("a")}`;
    const alice = as(r1, "alice", ws);
    for (let i = 0; i < 3; i++) {
      assert.ok((await alice.lock("OperationTypeApply")).ok);
      assert.equal((await alice.unlock()).status, 200);
    }
    assert.equal((await call(r1, "alice", "GET", `/api/v1/audit?workspace=${ws}`)).status, 403);
    assert.equal((await call(r1, "teamadmin", "GET", "/api/v1/audit")).status, 403);
    assert.equal((await call(r1, "teamadmin", "GET", `/api/v1/audit?workspace=prod`)).status, 403);
    const mine = await call(r1, "teamadmin", "GET", `/api/v1/audit?workspace=${ws}&since=1h&limit=4`);
    assert.equal(mine.status, 200, mine.body.toString());
    const page = JSON.parse(mine.body.toString()) as { records: AuditRecord[]; truncated: boolean };
    assert.deepEqual(
      page.records.map((r) => r.action),
      ["lock", "unlock", "lock", "unlock"],
    );
    assert.equal(page.truncated, true);
    const future = JSON.parse((await call(r1, "admin", "GET", `/api/v1/audit?since=2999-01-01`)).body.toString()) as { records: unknown[] };
    assert.deepEqual(future.records, []);
    for (const bad of ["since=yesterday", "limit=0", "limit=10001", "workspace=a%2Fb"]) {
      assert.equal((await call(r1, "admin", "GET", `/api/v1/audit?${bad}`)).status, 400, bad);
    }
  });

  it("no audit object and no line of the server's log holds a password, a Basic credential or state content", async () => {
    const store = await openStore({ bucket: props.bucket as string, endpoint: props.endpoint as string });
    const prefix = auditPrefix(layout((props.prefix as string | undefined) ?? "env:", (props.key as string | undefined) ?? "tool.tfstate"));
    let objects = "";
    for await (const key of store.list(prefix)) objects += (await store.get(key))?.body.toString("utf8") ?? "";
    store.close();
    assert.match(objects, /"action":"write"/, "the search covers real lines");
    const log = logged.join("");
    assert.match(log, /"msg":"request"/);
    const secrets = [STATE_SECRET];
    for (const name of Object.keys(USERS)) secrets.push(pw(name), Buffer.from(`${name}:${pw(name)}`).toString("base64"));
    for (const secret of secrets) {
      assert.ok(!objects.includes(secret), `an audit object holds ${secret}`);
      assert.ok(!log.includes(secret), `the server's log holds ${secret}`);
    }
  });
});

describe("objstate serve: the audit log on the embedded store (which keeps every version)", () => {
  it("N applies (lock, write, unlock) make exactly 3N audit objects of one version each, and no other version than the N states'", async () => {
    const target = embeddedTarget();
    const props = await target.setup({ locks: true });
    const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    const server = new ObjstateServer({ backend, logger: new Logger("off") });
    await withLowPort((port) => server.listen("127.0.0.1", port));
    const store = await openStore({ bucket: props.bucket as string, endpoint: props.endpoint as string });
    try {
      const ws = uniqueName("ws");
      const client = new HttpBackendClient({ bases: [server.url], workspace: ws, retries: 0 });
      const n = 6;
      // As the tool applies: read, lock, read, write, unlock.
      for (let serial = 1; serial <= n; serial++) {
        await client.get();
        assert.ok((await client.lock("OperationTypeApply")).ok);
        await client.get();
        assert.equal((await client.put(toolState(serial, "lin-versions"))).status, 200);
        assert.equal((await client.unlock()).status, 200);
      }
      const prefix = auditPrefix(layout((props.prefix as string | undefined) ?? "env:", (props.key as string | undefined) ?? "tool.tfstate"));
      const versions = new Map<string, number>();
      for await (const key of store.list("")) {
        let count = 0;
        for await (const v of store.listVersions(key)) if (!v.deleteMarker) count++;
        versions.set(key, count);
      }
      const audit = [...versions].filter(([k]) => k.startsWith(prefix));
      assert.equal(audit.length, 3 * n, `one object per event: ${audit.map(([k]) => k).join(", ")}`);
      assert.ok(
        audit.every(([, c]) => c === 1),
        "no audit object was written twice",
      );
      assert.deepEqual(
        [...versions].filter(([k]) => !k.startsWith(prefix)),
        [[backend.statePath(ws), n]],
        "the only other versions are the states'",
      );
    } finally {
      store.close();
      await server.close(500);
      backend.close();
    }
  });
});
