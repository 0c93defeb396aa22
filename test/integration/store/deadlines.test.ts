/**
 * Deadlines: a server that stalls (accepts and never answers, or sends headers and then
 * nothing) ends every kind of request — S3, DynamoDB API, STS, metadata — within its
 * deadline plus a little, with an error naming the endpoint; and large transfers to the
 * real Ceph RGW that keep moving are not cut off by a deadline far shorter than they take.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { assumeRole } from "../../../src/credentials/sts.js";
import { fetchComputeRoleCredentials } from "../../../src/credentials/metadata.js";
import { isObjstateError, ObjstateError } from "../../../src/errors.js";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { openLockTable } from "../../../src/lock/index.js";
import { openStore } from "../../../src/store/index.js";
import type { Credentials } from "../../../src/credentials/types.js";
import type { Timeouts } from "../../../src/io/sdk-client.js";
import { runCli } from "../../support/cli.js";
import { testServers } from "../../support/servers.js";
import { silentServer, stallingBodyServer, type StalledServer } from "../../support/stalled-server.js";
import { cephTarget } from "../../support/targets.js";

const T: Timeouts = { connectMs: 500, idleMs: 300, requestMs: 1500 };
/** Scheduling on a loaded two-core machine, and the SDK's backoff before its last attempt. */
const SLACK_MS = 1500;
const creds = (): Promise<Credentials> => Promise.resolve({ accessKeyId: "AKIDEXAMPLE", secretAccessKey: "not-a-secret" });

/** Runs `op`, which must fail; returns the error and how long it took. */
async function timed(op: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await op();
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
  assert.fail("expected the request to fail");
}

function assertTimeout(r: { error: unknown; ms: number }, url: string, limitMs = T.requestMs): void {
  assert.ok(isObjstateError(r.error, "ENDPOINT_TIMEOUT"), `expected ENDPOINT_TIMEOUT, got ${String(r.error)} ${(r.error as ObjstateError).code ?? ""}`);
  assert.ok(r.error.message.includes(url), `the message names ${url}: ${r.error.message}`);
  assert.ok(!r.error.message.includes("\n"), "one line");
  assert.ok(r.ms <= limitMs + SLACK_MS, `ended after ${r.ms} ms, deadline ${limitMs} ms`);
}

describe("a server that accepts and never answers", () => {
  let srv: StalledServer;
  before(async () => {
    srv = await silentServer();
  });
  after(() => srv.close());

  it("S3 get, head and put end with ENDPOINT_TIMEOUT naming the endpoint", async () => {
    const store = await openStore({ bucket: "stalled", endpoint: srv.url, credentials: creds, timeouts: T });
    try {
      assertTimeout(await timed(() => store.get("k")), srv.url);
      assertTimeout(await timed(() => store.head("k")), srv.url);
      assertTimeout(await timed(() => store.put("k", Buffer.from("114 bytes of state"))), srv.url);
    } finally {
      store.close();
    }
  });

  it("DynamoDB put and get end with ENDPOINT_TIMEOUT naming the endpoint", async () => {
    const table = await openLockTable({ table: "locks", endpoint: srv.url, credentials: creds, timeouts: T });
    try {
      assertTimeout(await timed(() => table.putIfAbsent("id", "Info", "{}")), srv.url);
      assertTimeout(await timed(() => table.get("id", "Info")), srv.url);
    } finally {
      table.close();
    }
  });

  it("STS AssumeRole ends with ENDPOINT_TIMEOUT naming the endpoint", async () => {
    const r = await timed(() =>
      assumeRole({
        endpoint: srv.url,
        region: "us-east-1",
        base: creds,
        roleArn: "arn:aws:iam:::role/r",
        sessionName: "deadline",
        durationSeconds: 900,
        timeouts: T,
      }),
    );
    assertTimeout(r, srv.url);
  });

  it("the metadata service ends with METADATA_UNREACHABLE naming it, within its timeout", async () => {
    const r = await timed(() => fetchComputeRoleCredentials("role", { PROVIDER_METADATA_ENDPOINT: srv.url }, 500));
    assert.ok(isObjstateError(r.error, "METADATA_UNREACHABLE"), String(r.error));
    assert.ok(r.error.message.includes(srv.url));
    assert.ok(r.ms <= 500 + SLACK_MS, `${r.ms} ms`);
  });

  it("connecting the backend (its lock-table check) gives up in time: the default idle and connect limits are capped by requestMs", async () => {
    const config = ObjectStoreBackendConfig.from({
      bucket: "stalled",
      endpoint: srv.url,
      accessKey: "AKIDEXAMPLE",
      secretKey: "not-a-secret",
      kvstoreTable: "locks",
      kvstoreEndpoint: srv.url,
    });
    const r = await timed(() => ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined, timeouts: { requestMs: 1500 } }));
    assertTimeout(r, srv.url);
  });

  it("objstate state push --timeout 2s to a stopped gateway exits 1 in about 2 s, naming the endpoint", () => {
    const started = Date.now();
    const r = runCli(["state", "push", "-", "--timeout", "2s", "--bucket", "stalled", "--endpoint", srv.url], {
      input: '{"version":4,"serial":1,"lineage":"l","outputs":{},"resources":[]}',
      env: { PROVIDER_ACCESS_KEY: "AKIDEXAMPLE", PROVIDER_SECRET_KEY: "not-a-secret" },
    });
    const ms = Date.now() - started;
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`objstate: error: no answer from the object store at ${srv.url.replace(/\./g, "\\.")}`));
    assert.ok(ms < 2000 + SLACK_MS + 1500, `took ${ms} ms`);
    assert.doesNotMatch(r.stderr, /@smithy|@aws-sdk|WARN/, "no raw SDK warnings");
  });

  it("objstate output --timeout 2s (remote-state read) gives up in time too", () => {
    const started = Date.now();
    const r = runCli(["output", "--timeout", "2s", "--bucket", "stalled", "--endpoint", srv.url], {
      env: { PROVIDER_ACCESS_KEY: "AKIDEXAMPLE", PROVIDER_SECRET_KEY: "not-a-secret" },
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /no answer from the object store at/);
    assert.ok(Date.now() - started < 2000 + SLACK_MS + 1500, `took ${Date.now() - started} ms`);
  });

  it("--timeout must be a duration above zero", () => {
    assert.equal(runCli(["state", "pull", "--timeout", "soon", "--bucket", "b", "--endpoint", srv.url]).code, 2);
    const zero = runCli(["state", "pull", "--timeout", "0s", "--bucket", "b", "--endpoint", srv.url]);
    assert.equal(zero.code, 2);
    assert.match(zero.stderr, /--timeout must be more than 0s/);
  });
});

describe("a server that sends headers and then stalls the body", () => {
  it("S3 get ends with ENDPOINT_TIMEOUT naming the endpoint", async () => {
    const srv = await stallingBodyServer({ "content-type": "application/octet-stream", etag: '"0123456789abcdef0123456789abcdef"' }, '{"partial":');
    const store = await openStore({ bucket: "stalled", endpoint: srv.url, credentials: creds, timeouts: T });
    try {
      assertTimeout(await timed(() => store.get("k")), srv.url);
    } finally {
      store.close();
      await srv.close();
    }
  });

  it("DynamoDB get ends with ENDPOINT_TIMEOUT naming the endpoint", async () => {
    const srv = await stallingBodyServer({ "content-type": "application/x-amz-json-1.0" }, '{"Item":{"LockID":');
    const table = await openLockTable({ table: "locks", endpoint: srv.url, credentials: creds, timeouts: T });
    try {
      assertTimeout(await timed(() => table.get("id", "Info")), srv.url);
    } finally {
      table.close();
      await srv.close();
    }
  });

  it("STS AssumeRole ends with ENDPOINT_TIMEOUT naming the endpoint", async () => {
    const srv = await stallingBodyServer({ "content-type": "text/xml" }, "<AssumeRoleResponse><AssumeRoleResult>");
    try {
      const r = await timed(() =>
        assumeRole({
          endpoint: srv.url,
          region: "us-east-1",
          base: creds,
          roleArn: "arn:aws:iam:::role/r",
          sessionName: "deadline",
          durationSeconds: 900,
          timeouts: T,
        }),
      );
      assertTimeout(r, srv.url);
    } finally {
      await srv.close();
    }
  });

  it("the metadata service ends within its timeout with an error naming it", async () => {
    const srv = await stallingBodyServer({ "content-type": "application/json" }, '{"Code":"Success",');
    try {
      const r = await timed(() => fetchComputeRoleCredentials("role", { PROVIDER_METADATA_ENDPOINT: srv.url }, 500));
      assert.ok(r.error instanceof ObjstateError && r.error.message.includes(srv.url), String(r.error));
      assert.ok(r.ms <= 500 + SLACK_MS, `${r.ms} ms`);
    } finally {
      await srv.close();
    }
  });
});

describe("large transfers to Ceph RGW that keep moving", () => {
  const MiB = 1024 * 1024;
  // Shorter than these transfers take: only the per-MiB allowance lets them finish.
  const SHORT = { requestMs: 250, connectMs: 5000, idleMs: 10_000 };

  it("a 100 MiB state goes up in parts and comes back with a 250 ms request deadline", async () => {
    const props = await cephTarget().setup({ locks: true });
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined, timeouts: SHORT });
    try {
      // A state document (the library refuses other bytes) of 100 MiB that does not compress.
      const head = '{"version":4,"pad":"';
      const state = Buffer.from(
        `${head}${randomBytes(75 * MiB)
          .toString("base64")
          .slice(0, 100 * MiB - head.length - 2)}"}`,
      );
      await b.writeState("default", state);
      const started = Date.now();
      const back = await b.readState("default");
      assert.ok(Date.now() - started > SHORT.requestMs, "the download took longer than the bare deadline");
      assert.ok(back?.equals(state), "read back the same bytes");
    } finally {
      b.close();
    }
  });

  it("a 64 MiB single PutObject and GetObject pass with a 100 ms request deadline", async () => {
    const s = testServers();
    const props = await cephTarget().setup({ locks: false });
    const store = await openStore({
      bucket: props.bucket,
      endpoint: s.s3Endpoint,
      credentials: () => Promise.resolve({ accessKeyId: s.accessKey, secretAccessKey: s.secretKey }),
      timeouts: { ...SHORT, requestMs: 100 },
    });
    try {
      const body = randomBytes(64 * MiB);
      const started = Date.now();
      await store.put("big", body);
      assert.ok(Date.now() - started > 100, "the upload took longer than the bare deadline");
      const got = await store.get("big");
      assert.ok(got?.body.equals(body));
    } finally {
      store.close();
    }
  });
});
