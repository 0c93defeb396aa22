/**
 * `POST /api/v1/workspaces/{w}/diff` bounded: computed off the main thread (/healthz answers
 * meanwhile), at most MAX_CONCURRENT_DIFFS at once (429 with Retry-After beyond), a body of
 * at most DIFF_MAX_BODY. Diffs of stored versions (`GET …/diff?from&to`, the console's Diff
 * and Rollback pages) share the worker and the cap. In-process server over the embedded store.
 */
import assert from "node:assert/strict";
import { connect as netConnect } from "node:net";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { DIFF_MAX_BODY, diffsRunning, MAX_CONCURRENT_DIFFS } from "../../../src/server/diff-runner.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer } from "../../../src/server/server.js";
import { rawRequest, toolState, type Reply } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { withLowPort } from "../../support/port.js";

/** A state of `count` resources of ~500 bytes each (20 MiB at 40 000), `serial` in every id. */
function bigState(count: number, serial: number): Buffer {
  const resources = [];
  for (let i = 0; i < count; i++) {
    resources.push({
      mode: "managed",
      type: "t_x",
      name: `r${i}`,
      provider: 'provider["registry.terraform.io/x/x"]',
      instances: [{ schema_version: 0, attributes: { id: `id-${i}-${serial}`, pad: "p".repeat(400), n: i } }],
    });
  }
  return toolState(serial, "big", { o: { value: serial, type: "number" } }, resources);
}

/** Resolves once `cond()` holds, or with false once `settled` has (checked each turn of the loop). */
async function until(cond: () => boolean, settled: () => boolean): Promise<boolean> {
  while (!cond()) {
    if (settled()) return false;
    await new Promise((r) => setImmediate(r));
  }
  return true;
}

describe("objstate serve: POST …/diff bounded", () => {
  let backend: ObjectStoreBackend;
  let server: ObjstateServer;
  const ws = uniqueName("ws");
  const COUNT = 40_000;
  let newer: Buffer;
  /** A workspace with two ~20 MiB versions, oldest first. */
  const versioned = uniqueName("ws");
  let versions: [string, string];

  before(async () => {
    const config = ObjectStoreBackendConfig.from(await embeddedTarget().setup({ locks: true }));
    backend = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined });
    server = new ObjstateServer({ backend, logger: new Logger("off") });
    await withLowPort((port) => server.listen("127.0.0.1", port));
    await backend.writeState(ws, bigState(COUNT, 1));
    newer = bigState(COUNT, 2);
    await backend.writeState(versioned, bigState(COUNT, 1));
    await backend.writeState(versioned, newer);
    const ids: string[] = [];
    for await (const v of backend.history(versioned)) ids.push(v.versionId);
    versions = [ids[1] as string, ids[0] as string];
  });
  after(async () => {
    await server.close(5000);
    backend.close();
  });

  it("/healthz answers while a large diff is being computed (off the main thread)", async () => {
    const events: string[] = [];
    let diffDone = false;
    const diff = rawRequest(server.url, "POST", `/api/v1/workspaces/${ws}/diff`, newer).then((r) => {
      diffDone = true;
      events.push(`diff ${r.status}`);
      return r;
    });
    // Computing on the main thread, the diff would start and end in one turn of the loop:
    // this would never see it running, only its answer.
    if (
      await until(
        () => diffsRunning() === 1,
        () => diffDone,
      )
    )
      events.push("diff running");
    const health = await rawRequest(server.url, "GET", "/healthz", undefined);
    events.push(`healthz ${health.status}`);
    const d = await diff;
    assert.deepEqual(events, ["diff running", "healthz 200", "diff 200"]);
    const body = JSON.parse(d.body.toString()) as { resources: { changed: unknown[] }; serial: { before: number; after: number } };
    assert.equal(body.resources.changed.length, COUNT);
    assert.deepEqual(body.serial, { before: 1, after: 2 });
  });

  it(`a diff beyond ${MAX_CONCURRENT_DIFFS} at once is refused with 429 and Retry-After, before its body is read; a place freed is taken again`, async () => {
    let settled = 0;
    const running = Array.from({ length: MAX_CONCURRENT_DIFFS }, () =>
      rawRequest(server.url, "POST", `/api/v1/workspaces/${ws}/diff`, newer).then((r) => {
        settled += 1;
        return r;
      }),
    );
    assert.ok(
      await until(
        () => diffsRunning() === MAX_CONCURRENT_DIFFS,
        () => settled > 0,
      ),
      "both diffs were computing at once",
    );
    const extra = await rawRequest(server.url, "POST", `/api/v1/workspaces/${ws}/diff`, toolState(3, "small"));
    assert.equal(extra.status, 429);
    assert.equal(extra.headers["retry-after"], "2");
    assert.equal((JSON.parse(extra.body.toString()) as { code: string }).code, "TOO_MANY_DIFFS");
    for (const r of await Promise.all(running)) assert.equal(r.status, 200);
    assert.equal(diffsRunning(), 0);
    assert.equal((await rawRequest(server.url, "POST", `/api/v1/workspaces/${ws}/diff`, newer)).status, 200);
  });

  const versionDiffs: [string, () => string][] = [
    ["GET …/diff?from&to", () => `/api/v1/workspaces/${versioned}/diff?from=${versions[0]}&to=${versions[1]}`],
    ["the console's Diff page", () => `/workspaces/${versioned}/diff?from=${versions[0]}&to=${versions[1]}`],
    ["the console's Rollback confirmation", () => `/workspaces/${versioned}/rollback?to=${versions[0]}`],
  ];
  for (const [name, path] of versionDiffs) {
    it(`${name}: two ~20 MiB stored versions compared in the worker (/healthz answers meanwhile); beyond ${MAX_CONCURRENT_DIFFS} at once, 429`, async () => {
      const events: string[] = [];
      let settled = 0;
      const running = Array.from({ length: MAX_CONCURRENT_DIFFS }, () =>
        rawRequest(server.url, "GET", path(), undefined).then((r) => {
          settled += 1;
          events.push(`diff ${r.status}`);
          return r;
        }),
      );
      // On the main thread, a diff starts and ends in one turn of the loop: this would never see one running.
      if (
        await until(
          () => diffsRunning() === MAX_CONCURRENT_DIFFS,
          () => settled > 0,
        )
      )
        events.push("diffs running");
      events.push(`healthz ${(await rawRequest(server.url, "GET", "/healthz", undefined)).status}`);
      const extra = await rawRequest(server.url, "GET", path(), undefined);
      events.push(`extra ${extra.status}`);
      const done = await Promise.all(running);
      assert.deepEqual(events, ["diffs running", "healthz 200", "extra 429", "diff 200", "diff 200"]);
      assert.match(extra.body.toString(), /TOO_MANY_DIFFS|computing 2 diffs, the most it runs at once/);
      if (name.startsWith("GET")) {
        const body = JSON.parse((done[0] as Reply).body.toString()) as { resources: { changed: unknown[] }; serial: { before: number; after: number } };
        assert.equal(body.resources.changed.length, COUNT);
        assert.deepEqual(body.serial, { before: 1, after: 2 });
      } else assert.match((done[0] as Reply).body.toString(), /r39999/);
      assert.equal(diffsRunning(), 0);
    });
  }

  it(`a body announced over ${DIFF_MAX_BODY / 1024 / 1024} MiB gets 413 naming the diff's limit before any of it is sent`, async () => {
    const u = new URL(server.url);
    const answer = await new Promise<string>((resolve) => {
      const sock = netConnect(Number(u.port), u.hostname, () =>
        sock.write(
          `POST /api/v1/workspaces/${ws}/diff HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${DIFF_MAX_BODY + 1}\r\n\r\n`,
        ),
      );
      let got = "";
      sock.on("data", (d) => (got += d.toString("latin1")));
      sock.on("error", () => undefined);
      sock.on("close", () => resolve(got));
    });
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.match(answer, /BODY_TOO_LARGE.*the most a diff takes/);
  });

  it("a body that is not a state: 400 STATE_INVALID, from the worker (large) as inline (small)", async () => {
    const check = (r: Reply): void => {
      assert.equal(r.status, 400, r.body.toString());
      assert.equal((JSON.parse(r.body.toString()) as { code: string }).code, "STATE_INVALID");
    };
    check(await rawRequest(server.url, "POST", `/api/v1/workspaces/${ws}/diff`, Buffer.from(`{"version": 4, "serial": 1, ${"x".repeat(300 * 1024)}`)));
    check(await rawRequest(server.url, "POST", `/api/v1/workspaces/${ws}/diff`, Buffer.from('{"version": 4, "serial": 1, oops')));
    assert.equal(diffsRunning(), 0);
  });
});
