/**
 * The record of recent releases (docs/decisions/013), on every driver pair and lock mode:
 * a release records its lock ID beside the lock, so a repeated release after another
 * holder took the lock is "already released" (its lock left alone), and a LOCK under a
 * released ID (a late copy of an earlier request) is refused. Bounded in count and age.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import {
  ObjectStoreBackend,
  ObjectStoreBackendConfig,
  isObjstateError,
  type ConnectOptions,
  type ErrorCode,
  type ObjectStoreBackendConfigProps,
} from "../../src/index.js";
import { RELEASED_KEEP, RELEASED_MAX_AGE_MS } from "../../src/backend/locks/lock-places.js";
import { openLockTable } from "../../src/lock/index.js";
import type { Target } from "../support/targets.js";

type Mode = "table" | "lockfile" | "both";
const MODES: readonly Mode[] = ["table", "lockfile", "both"];
const is = (code: ErrorCode) => (e: unknown) => isObjstateError(e, code);

export function releasedSuite(makeTarget: () => Target): void {
  let target: Target;
  const open: ObjectStoreBackend[] = [];
  before(() => {
    target = makeTarget();
  });
  after(() => {
    for (const b of open) b.close();
  });

  async function setup(mode: Mode): Promise<ObjectStoreBackendConfigProps> {
    return target.setup({ locks: mode !== "lockfile", extra: { prefix: "p", key: "app.tfstate" } });
  }
  async function connect(props: ObjectStoreBackendConfigProps, mode: Mode, options: ConnectOptions = {}): Promise<ObjectStoreBackend> {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
      env: {},
      who: "tester@released",
      onWarning: () => undefined,
      lockfile: mode !== "table",
      ...options,
    });
    open.push(b);
    return b;
  }

  for (const mode of MODES) {
    describe(`released lock IDs with ${mode === "table" ? "the lock table" : mode === "lockfile" ? "a lockfile and no table" : "a lockfile and the lock table"}`, () => {
      it("a release repeated once another holder took the lock is LOCK_NOT_FOUND (already released), and that lock stays; an ID never held is LOCK_ID_MISMATCH", async () => {
        const props = await setup(mode);
        const a = await connect(props, mode);
        const b = await connect(props, mode);
        const x = await a.lock("w", { id: randomUUID(), owner: "alice" });
        await a.unlock("w", x.ID, { owner: "alice" });
        assert.deepEqual(
          (await b.recentReleases("w")).map((r) => r.id),
          [x.ID],
        );
        // Repeated with no lock at all: not locked (as before).
        await assert.rejects(b.unlock("w", x.ID, { owner: "alice" }), is("LOCK_NOT_FOUND"));
        const y = await b.lock("w", { id: randomUUID(), owner: "bob" });
        // Repeated once bob holds it, through the other connection and this one.
        for (const c of [b, a]) {
          await assert.rejects(
            c.unlock("w", x.ID, { owner: "alice" }),
            (e: unknown) => isObjstateError(e, "LOCK_NOT_FOUND") && /already released .*locked again since, by ID/.test(e.message),
          );
        }
        assert.equal((await a.lockInfo("w"))?.ID, y.ID, "bob's lock is left alone");
        await a.writeState("w", '{"version":4,"serial":1,"lineage":"L"}', { lockId: y.ID });
        await assert.rejects(
          a.unlock("w", randomUUID()),
          (e: unknown) => isObjstateError(e, "LOCK_ID_MISMATCH") && (e.details?.["lockInfo"] as { ID: string }).ID === y.ID,
        );
        await b.unlock("w", y.ID, { owner: "bob" });
      });

      it("a LOCK under a released ID is LOCK_ID_RELEASED (no lock info) and takes nothing; a new ID takes the lock", async () => {
        const props = await setup(mode);
        const a = await connect(props, mode);
        const late = await connect(props, mode);
        const id = randomUUID();
        await a.lock("w", { id });
        await a.unlock("w", id);
        await assert.rejects(
          late.lock("w", { id }),
          (e: unknown) => isObjstateError(e, "LOCK_ID_RELEASED") && e.details?.["lockInfo"] === undefined && e.message.includes(id),
        );
        assert.equal(await late.lockInfo("w"), null);
        const fresh = await late.lock("w", { id: randomUUID() });
        assert.equal((await a.lockInfo("w"))?.ID, fresh.ID);
        await late.unlock("w", fresh.ID);
      });

      it("a LOCK refused because another holds the lock records nothing: the same ID is taken once the lock is free (the tool waits with one ID)", async () => {
        const props = await setup(mode);
        const a = await connect(props, mode);
        // In both places, the table's lock taken alone: the lockfile is taken, then given back.
        const holder = await connect(props, mode === "both" ? "table" : mode);
        const h = await holder.lock("w", { id: randomUUID() });
        const id = randomUUID();
        await assert.rejects(a.lock("w", { id }), is("STATE_LOCKED"));
        assert.deepEqual(
          (await a.recentReleases("w")).map((r) => r.id),
          [],
        );
        await holder.unlock("w", h.ID);
        assert.equal((await a.lock("w", { id })).ID, id);
        await a.unlock("w", id);
      });

      it("the record keeps the newest releases and forgets those past an hour", async () => {
        const props = await setup(mode);
        let now = Date.now();
        const a = await connect(props, mode, { lockClock: () => now });
        const ids: string[] = [];
        for (let i = 0; i <= RELEASED_KEEP; i++) {
          const l = await a.lock("w", { id: randomUUID() });
          await a.unlock("w", l.ID);
          ids.push(l.ID);
        }
        const kept = (await a.recentReleases("w")).map((r) => r.id);
        assert.deepEqual(kept, ids.slice(1), `the newest ${RELEASED_KEEP}, oldest first`);
        // The oldest is forgotten: its ID can be taken again; the next one cannot.
        await assert.rejects(a.lock("w", { id: ids[1] as string }), is("LOCK_ID_RELEASED"));
        await a.unlock("w", (await a.lock("w", { id: ids[0] as string })).ID);
        // Past the age limit (by the reader's clock) a release no longer counts.
        now += RELEASED_MAX_AGE_MS + 1000;
        await a.unlock("w", (await a.lock("w", { id: ids[2] as string })).ID);
        assert.deepEqual(
          (await a.recentReleases("w")).map((r) => r.id),
          [ids[2]],
          "a release prunes the record of what is past the limit",
        );
      });
    });
  }

  it("the record lives beside the lock: the table item {bucket}/{path}-released, or {statePath}.tfrel beside a lockfile; it is neither a lock nor a workspace", async () => {
    for (const mode of ["table", "lockfile"] as const) {
      const props = await setup(mode);
      const a = await connect(props, mode);
      const l = await a.lock("w", { id: randomUUID() });
      await a.unlock("w", l.ID);
      if (mode === "table") {
        const t = await openLockTable({
          table: props.kvstoreTable as string,
          endpoint: props.kvstoreEndpoint as string,
          credentials:
            props.accessKey === undefined
              ? undefined
              : () => Promise.resolve({ accessKeyId: props.accessKey as string, secretAccessKey: props.secretKey as string }),
        });
        const stored = JSON.parse((await t.get(`${props.bucket}/p/w/app.tfstate-released`, "ReleasedIDs")) ?? "null") as { ID: string; At: number }[];
        t.close();
        assert.deepEqual(
          stored.map((r) => r.ID),
          [l.ID],
        );
        assert.equal(typeof stored[0]?.At, "number");
      } else {
        const raw = await target.raw(props.bucket);
        const stored = JSON.parse((await raw.get("p/w/app.tfstate.tfrel"))?.body.toString() ?? "null") as { ID: string }[];
        raw.close();
        assert.deepEqual(
          stored.map((r) => r.ID),
          [l.ID],
        );
      }
      assert.deepEqual(await a.locks(), []);
      assert.deepEqual(await a.listWorkspaces(), ["default"]);
    }
  });
}
