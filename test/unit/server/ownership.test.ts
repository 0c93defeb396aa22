/**
 * Lock ownership and who wrote what through `objstate serve`: two replicas (each its own
 * connection) over one embedded store and table, with users. A lock belongs to the user
 * who took it; releasing it or writing under its ID takes that user or the `force` role,
 * whichever replica is asked. Every write records the user beside the client's `Who`.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer, type ServerOptions } from "../../../src/server/server.js";
import { hashPassword, parseUsers } from "../../../src/server/users.js";
import { HttpBackendClient, rawRequest, toolState, type Reply } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { HISTORY_ENTRY_KEYS } from "../../support/history-shape.js";
import { withLowPort } from "../../support/port.js";

const CHEAP = { N: 1024, r: 8, p: 1 };
const USERS: Record<string, Record<string, string[]>> = {
  alice: { "*": ["read", "write", "lock"] },
  bob: { "*": ["read", "write", "lock"] },
  scribe: { "*": ["read", "write"] },
  forcer: { "*": ["read", "lock", "force"] },
  rewinder: { "*": ["read", "write", "lock", "force"] },
};
const pw = (name: string): string => `pw-of-${name}`;
const codeOf = (r: Reply): string => (JSON.parse(r.body.toString()) as { code: string }).code;
const messageOf = (r: Reply): string => (JSON.parse(r.body.toString()) as { message: string }).message;

describe("objstate serve: lock ownership and principals across replicas", () => {
  const backends: ObjectStoreBackend[] = [];
  const servers: ObjstateServer[] = [];
  let r1: string;
  let r2: string;

  before(async () => {
    const props = await embeddedTarget().setup({ locks: true });
    const entries: Record<string, unknown> = {};
    for (const [name, roles] of Object.entries(USERS)) entries[name] = { password: await hashPassword(pw(name), CHEAP), roles };
    const users: ServerOptions["users"] = parseUsers(JSON.stringify({ users: entries }), "users.json");
    for (let i = 0; i < 2; i++) {
      const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
        env: {},
        who: `replica${i}@owners`,
        onWarning: () => undefined,
      });
      backends.push(backend);
      // Principals of writes made with and without a lock: both kinds are accepted here.
      const s = new ObjstateServer({ backend, users, logger: new Logger("off"), allowUnlockedWrites: true });
      await withLowPort((port) => s.listen("127.0.0.1", port));
      servers.push(s);
    }
    [r1, r2] = servers.map((s) => s.url) as [string, string];
  });
  after(async () => {
    for (const s of servers) await s.close(500);
    for (const b of backends) b.close();
  });

  const backend = (): ObjectStoreBackend => backends[0] as ObjectStoreBackend;
  const as = (base: string, user: string, workspace: string, flavour: "terraform" | "opentofu" = "terraform"): HttpBackendClient =>
    new HttpBackendClient({ bases: [base], workspace, username: user, password: pw(user), flavour, retries: 0 });
  /** `user` on `base`, replaying what `holder` locked with (its ID and lock info bytes). */
  const replaying = (holder: HttpBackendClient, base: string, user: string, flavour: "terraform" | "opentofu" = "terraform"): HttpBackendClient => {
    const c = as(base, user, holder.options.workspace as string, flavour);
    c.lockID = holder.lockID;
    c.jsonLockInfo = holder.jsonLockInfo;
    return c;
  };
  const call = (base: string, user: string, method: string, path: string, body?: unknown): Promise<Reply> =>
    rawRequest(base, method, path, body === undefined ? undefined : Buffer.from(JSON.stringify(body)), { username: user, password: pw(user) });

  it("UNLOCK of a lock taken on replica 1: on replica 2 the same user releases it; another user with lock only is refused (403) even replaying its info, and the lock stays; a user with force releases it", async () => {
    const ws = uniqueName("ws");
    const alice = as(r1, "alice", ws);
    assert.ok((await alice.lock("OperationTypeApply")).ok);
    assert.equal((await backend().lockInfo(ws))?.Owner, "alice", "the owner is stored in the lock");

    for (const bob of [replaying(alice, r2, "bob"), replaying(alice, r1, "bob"), replaying(alice, r2, "bob", "opentofu")]) {
      const refused = await bob.unlock();
      assert.equal(refused.status, 403);
      assert.equal(codeOf(refused), "LOCK_NOT_OWNED");
      assert.match(messageOf(refused), /user bob may not release lock \S+ .*belongs to user alice.*force role/);
    }
    assert.equal((await backend().lockInfo(ws))?.ID, alice.lockID, "the lock stays");
    assert.equal((await replaying(alice, r2, "alice").unlock()).status, 200, "the tool's UNLOCK, on the other replica");
    assert.equal(await backend().lockInfo(ws), null);

    // OpenTofu's UNLOCK ({"ID"}, the rest empty) by the owner: the owner decides, not the fields.
    assert.ok((await alice.lock("OperationTypeApply")).ok);
    assert.equal((await replaying(alice, r2, "alice", "opentofu").unlock(alice.lockID)).status, 200);
    assert.equal(await backend().lockInfo(ws), null);

    assert.ok((await alice.lock("OperationTypeApply")).ok);
    // The tool's force-unlock (empty body) stays behind force, for the owner too.
    const empty = await as(r2, "alice", ws).unlock();
    assert.equal(empty.status, 403);
    assert.equal(codeOf(empty), "FORBIDDEN");
    assert.equal((await replaying(alice, r2, "forcer").unlock()).status, 200, "force releases another user's lock");
    assert.equal(await backend().lockInfo(ws), null);
  });

  it("writes under a lock: the owner on another replica writes; a writer without lock, or another locker, is refused (403) and nothing is written, streamed or not; force may", async () => {
    const ws = uniqueName("ws");
    const alice = as(r1, "alice", ws);
    assert.ok((await alice.lock("OperationTypeApply")).ok);
    const first = toolState(1, "owned");
    assert.equal((await replaying(alice, r2, "alice").put(first)).status, 200);
    // A state large enough to be written while it arrives (the streamed path).
    const big = toolState(2, "owned", { pad: { value: "x".repeat(300 * 1024), type: "string" } });
    for (const other of [replaying(alice, r2, "scribe"), replaying(alice, r1, "bob")]) {
      for (const body of [toolState(2, "owned"), big]) {
        const refused = await other.put(body);
        assert.equal(refused.status, 403, `${other.options.username} writing ${body.length} bytes`);
        assert.equal(codeOf(refused), "LOCK_NOT_OWNED");
        assert.match(messageOf(refused), new RegExp(`user ${other.options.username as string} may not write under lock .*belongs to user alice.*force role`));
      }
    }
    assert.deepEqual(await as(r2, "alice", ws).get(), first, "nothing written");
    const firstVersion = (
      JSON.parse((await call(r1, "bob", "GET", `/api/v1/workspaces/${ws}/history`)).body.toString()) as { versions: { versionId: string }[] }
    ).versions[0]?.versionId;
    const rollback = await call(r2, "bob", "POST", `/api/v1/workspaces/${ws}/rollback`, { to: firstVersion, lockId: alice.lockID });
    assert.equal(rollback.status, 403, "a rollback under someone else's lock too");
    assert.equal(codeOf(rollback), "LOCK_NOT_OWNED");
    assert.equal((await replaying(alice, r2, "rewinder").put(big)).status, 200, "force writes under another user's lock");
    assert.equal((await alice.unlock()).status, 200);
  });

  it("a lock taken outside the server (the CLI's, the library's) has no owner: through the server only force releases it or writes under it", async () => {
    const ws = uniqueName("ws");
    const lock = await backend().lock(ws, { operation: "apply" });
    const alice = as(r2, "alice", ws, "opentofu");
    alice.lockID = lock.ID;
    const write = await alice.put(toolState(1, "outside"));
    assert.equal(write.status, 403);
    assert.match(messageOf(write), /belongs to no server user: it was taken outside objstate serve/);
    const release = await alice.unlock(lock.ID);
    assert.equal(release.status, 403);
    assert.equal(codeOf(release), "LOCK_NOT_OWNED");
    assert.equal((await backend().lockInfo(ws))?.ID, lock.ID);
    assert.equal((await as(r1, "forcer", ws, "opentofu").unlock(lock.ID)).status, 200);
    assert.equal(await backend().lockInfo(ws), null);
  });

  it("a LOCK under the ID of another user's lock is refused with the holder (423), not taken as a retry; the owner's retry is 200", async () => {
    const ws = uniqueName("ws");
    const alice = as(r1, "alice", ws);
    assert.ok((await alice.lock("OperationTypeApply")).ok);
    const bob = replaying(alice, r2, "bob");
    const stolen = await bob.send("LOCK", `/state/${ws}`, alice.jsonLockInfo);
    assert.equal(stolen.status, 423);
    assert.equal((JSON.parse(stolen.body.toString()) as { ID: string }).ID, alice.lockID);
    assert.equal((await replaying(alice, r2, "alice").send("LOCK", `/state/${ws}`, alice.jsonLockInfo)).status, 200);
    assert.equal((await alice.unlock()).status, 200);
  });

  it("every write records the user and how they logged in beside the client's Who; history shows both in one shape (API, console), a rollback and a console rollback too", async () => {
    const ws = uniqueName("ws");
    const alice = as(r1, "alice", ws);
    assert.ok((await alice.lock("OperationTypeApply", "laptop-user@laptop")).ok);
    assert.equal((await replaying(alice, r2, "alice").put(toolState(1, "who"))).status, 200);
    assert.equal((await alice.unlock()).status, 200);
    // Without a lock ID: the write takes its own lock, and still records its user.
    assert.equal((await as(r2, "bob", ws).put(toolState(2, "who"))).status, 200);

    type Entry = { versionId: string; serial: number; who: string | null; principal: { name: string; via: string } | null; isLatest: boolean };
    const list = async (): Promise<Entry[]> => {
      const h = await call(r1, "scribe", "GET", `/api/v1/workspaces/${ws}/history`);
      assert.equal(h.status, 200);
      return (JSON.parse(h.body.toString()) as { versions: Entry[] }).versions;
    };
    const versions = await list();
    for (const v of versions) assert.deepEqual(Object.keys(v), HISTORY_ENTRY_KEYS, "the CLI's --json shape");
    assert.deepEqual(
      versions.map((v) => [v.serial, v.isLatest, v.who, v.principal]),
      [
        [2, true, "replica1@owners", { name: "bob", via: "password", tokenId: null, oidc: null }],
        [1, false, "laptop-user@laptop", { name: "alice", via: "password", tokenId: null, oidc: null }],
      ],
    );
    const view = JSON.parse((await call(r2, "alice", "GET", `/api/v1/workspaces/${ws}`)).body.toString()) as { lastWrite: { principal: unknown } };
    assert.deepEqual(view.lastWrite.principal, { name: "bob", via: "password", tokenId: null, oidc: null });

    const page = (await call(r1, "scribe", "GET", `/workspaces/${ws}/history`)).body.toString();
    assert.match(page, /laptop-user@laptop<br><span class="muted" data-principal>as server user alice \(password\)<\/span>/);

    const back = await call(r2, "alice", "POST", `/api/v1/workspaces/${ws}/rollback`, { to: versions[1]?.versionId });
    assert.equal(back.status, 200, back.body.toString());
    assert.deepEqual((await list())[0]?.principal, { name: "alice", via: "password", tokenId: null, oidc: null });

    // The console's rollback: its confirmation form, posted from its own origin.
    const to = versions[0]?.versionId as string;
    const confirm = (await call(r1, "rewinder", "GET", `/workspaces/${ws}/rollback?to=${encodeURIComponent(to)}`)).body.toString();
    const field = (name: string): string => new RegExp(`name="${name}" value="([^"]+)"`).exec(confirm)?.[1] ?? "";
    const form = new URLSearchParams({ csrf: field("csrf"), to: field("to"), current: field("current") }).toString();
    const posted = await rawRequest(
      r1,
      "POST",
      `/workspaces/${ws}/rollback`,
      Buffer.from(form),
      { username: "rewinder", password: pw("rewinder") },
      { "Content-Type": "application/x-www-form-urlencoded", Origin: r1 },
    );
    assert.equal(posted.status, 303, posted.body.toString());
    assert.deepEqual((await list())[0]?.principal, { name: "rewinder", via: "password", tokenId: null, oidc: null });
  });
});
