/**
 * Endpoints that answer, but not as expected, against the real servers: the lock endpoint
 * pointed at Ceph's S3 port and the object endpoint at dynalite, a bare host (https) on a
 * plain-HTTP server, a lock table still CREATING, and an interrupt while a lock request
 * is in flight (through a loopback proxy that holds the request back).
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, connect as netConnect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { openLockTable } from "../../../src/lock/index.js";
import { CLI, cliEnv, runCli, type CliResult } from "../../support/cli.js";
import { testServers, type TestServers } from "../../support/servers.js";
import { cephTarget, uniqueName } from "../../support/targets.js";
import { listenLow, withLowPort } from "../../support/port.js";

/** One `objstate: error:` line matching `pattern`, and nothing else but warnings. */
function assertErrorLine(r: CliResult, pattern: RegExp): void {
  const lines = r.stderr.split("\n").filter((l) => l !== "" && !l.startsWith("objstate: warning:"));
  assert.equal(lines.length, 1, `expected one error line, got:\n${r.stderr}`);
  assert.match(`${lines[0] as string}\n`, /^objstate: error: /);
  assert.match(`${lines[0] as string}\n`, pattern);
}

const REPO = fileURLToPath(new URL("../../../../", import.meta.url));

/** A dynalite of our own (tables stay CREATING for `createTableMs`), on a free loopback port. */
async function startDynalite(createTableMs: number): Promise<{ endpoint: string; proc: ChildProcess }> {
  // The child reports the port it took, or exits 98 when the port was in use (then another).
  return withLowPort(async (port) => {
    const script = `import dynalite from "dynalite"; const s = dynalite({ createTableMs: ${createTableMs} }); s.on("error", (e) => { console.error(e.message); process.exit(e.code === "EADDRINUSE" ? 98 : 1); }); s.listen(${port}, "127.0.0.1", () => console.log(s.address().port));`;
    const proc = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      proc.stdout?.setEncoding("utf8").once("data", () => resolve());
      proc.once("exit", (c) => reject(Object.assign(new Error(`dynalite exited (${c})`), c === 98 ? { code: "EADDRINUSE" } : {})));
    });
    return { endpoint: `http://127.0.0.1:${port}`, proc };
  });
}

/**
 * A loopback TCP proxy to `upstream` that holds back, for `delayMs`, each request whose
 * bytes contain `marker` (a DynamoDB operation name), and tells when it sees one.
 */
async function delayingProxy(upstream: string, marker: string, delayMs: number): Promise<{ endpoint: string; seen: Promise<void>; server: Server }> {
  const target = new URL(upstream);
  let markSeen!: () => void;
  const seen = new Promise<void>((r) => (markSeen = r));
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const up = netConnect(Number(target.port), target.hostname);
    sockets.add(client).add(up);
    client.on("data", (d: Buffer) => {
      if (d.includes(marker)) {
        markSeen();
        setTimeout(() => up.write(d), delayMs);
      } else up.write(d);
    });
    up.pipe(client);
    const end = (): void => {
      client.destroy();
      up.destroy();
    };
    client.on("error", end).on("close", end);
    up.on("error", end).on("close", end);
  });
  server.on("close", () => sockets.forEach((s) => s.destroy()));
  await listenLow(server);
  const address = server.address() as { port: number };
  return { endpoint: `http://127.0.0.1:${address.port}`, seen, server };
}

describe("objstate CLI: endpoints that answer wrongly", () => {
  let s: TestServers;
  let env: Record<string, string>;
  let bucket: string;
  before(async () => {
    s = testServers();
    env = { PROVIDER_ACCESS_KEY: s.accessKey, PROVIDER_SECRET_KEY: s.secretKey };
    bucket = (await cephTarget().setup({ locks: false })).bucket;
  });
  const hostPort = (url: string): string => new URL(url).host;

  it("a lock endpoint at the S3 port: ENDPOINT_NOT_DYNAMODB, one line, no SDK internals", () => {
    const r = runCli(["state", "pull", "--bucket", bucket, "--endpoint", s.s3Endpoint, "--kvstore-table", "locks", "--kvstore-endpoint", s.s3Endpoint], {
      env,
    });
    assert.equal(r.code, 1);
    assertErrorLine(r, /the endpoint does not speak the DynamoDB API .*check kvstoreEndpoint: is it the object store's \(S3\) endpoint\?\n$/);
    assert.doesNotMatch(r.stderr, /\$response|Deserialization|<\?xml/);
  });

  it("an object endpoint at the DynamoDB port: ENDPOINT_NOT_S3 (push and list)", () => {
    const file = join(mkdtempSync(join(tmpdir(), "objstate-ep-")), "s.json");
    writeFileSync(file, '{"version": 4, "serial": 1}');
    const push = runCli(["state", "push", file, "--bucket", "some-bucket", "--endpoint", s.dynamoEndpoint], { env });
    assert.equal(push.code, 1);
    assertErrorLine(push, /the endpoint does not speak the S3 API .*check --endpoint: is it the lock table's \(DynamoDB\) endpoint\?\n$/);
    const list = runCli(["workspace", "list", "--bucket", "some-bucket", "--endpoint", s.dynamoEndpoint], { env });
    assert.equal(list.code, 1);
    assertErrorLine(list, /the endpoint does not speak the S3 API/);
    assert.doesNotMatch(list.stderr, /\$response|Deserialization/);
    // A GET that the DynamoDB server answers 200 (its health page) is no state either.
    const pull = runCli(["state", "pull", "--bucket", "some-bucket", "--endpoint", s.dynamoEndpoint], { env });
    assert.equal(pull.code, 1, pull.stdout);
    assert.equal(pull.stdout, "");
    assertErrorLine(pull, /the endpoint does not speak the S3 API/);
  });

  it("says each word once: a bucket check refused is not 'check bucket bucket'", () => {
    const r = runCli(["init", "--bucket", bucket, "--endpoint", s.s3Endpoint], { env: { ...env, PROVIDER_SECRET_KEY: "wrong-secret" } });
    assert.equal(r.code, 1);
    assertErrorLine(r, new RegExp(`access denied: cannot check bucket "${bucket}" at `));
    assert.doesNotMatch(r.stderr, /\b([a-z]{2,})\s+\1\b/i);
  });

  it("a bare host (https) on a plain-HTTP server says so and suggests http://, for both drivers and doctor", () => {
    const s3 = runCli(["state", "pull", "--bucket", bucket, "--endpoint", hostPort(s.s3Endpoint)], { env });
    assert.equal(s3.code, 1);
    assertErrorLine(s3, new RegExp(`speaks plain HTTP, not TLS \\(an endpoint without a scheme means https://\\): use http://${hostPort(s.s3Endpoint)}\\n$`));
    const kv = runCli(
      ["state", "pull", "--bucket", bucket, "--endpoint", s.s3Endpoint, "--kvstore-table", "locks", "--kvstore-endpoint", hostPort(s.dynamoEndpoint)],
      { env },
    );
    assert.equal(kv.code, 1);
    assertErrorLine(kv, new RegExp(`speaks plain HTTP, not TLS .*: use http://${hostPort(s.dynamoEndpoint)}\\n$`));
    const doctor = runCli(["doctor", "--bucket", bucket, "--endpoint", hostPort(s.s3Endpoint)], { env });
    assert.equal(doctor.code, 1);
    assert.match(
      doctor.stdout,
      new RegExp(
        `FAIL  object-store endpoint: cannot reach https://${hostPort(s.s3Endpoint)} \\(TLS handshake answered in plain HTTP\\) — fix: .*use http://${hostPort(s.s3Endpoint)}`,
      ),
    );
  });
});

describe("objstate CLI: a lock table still CREATING", () => {
  let dyn: { endpoint: string; proc: ChildProcess };
  before(async () => {
    dyn = await startDynalite(1500);
  });
  after(() => {
    dyn.proc.kill();
  });

  it("is waited for, not reported as missing", async () => {
    const table = uniqueName("creating");
    const client = new DynamoDBClient({ endpoint: dyn.endpoint, region: "us-east-1", credentials: { accessKeyId: "k", secretAccessKey: "s" } });
    await client.send(
      new CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [{ AttributeName: "LockID", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "LockID", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
    client.destroy();
    const dir = mkdtempSync(join(tmpdir(), "objstate-creating-"));
    const r = runCli(["lock", "--bucket", "cr-bucket", "--endpoint", `file://${dir}`, "--kvstore-table", table, "--kvstore-endpoint", dyn.endpoint], {
      env: { PROVIDER_ACCESS_KEY: "k", PROVIDER_SECRET_KEY: "s" },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^[0-9a-f-]{36}\n$/);
  });
});

describe("objstate CLI: an interrupt while the lock request is in flight", () => {
  let s: TestServers;
  const creds = (): Record<string, string> => ({ PROVIDER_ACCESS_KEY: s.accessKey, PROVIDER_SECRET_KEY: s.secretKey });
  before(() => {
    s = testServers();
  });

  async function interruptDuringPut(cmd: string[], table: string, dir: string): Promise<CliResult> {
    const proxy = await delayingProxy(s.dynamoEndpoint, "PutItem", 1500);
    try {
      const settings = ["--bucket", "fl-bucket", "--endpoint", `file://${dir}`, "--kvstore-table", table, "--kvstore-endpoint", proxy.endpoint];
      const child = spawn(process.execPath, [CLI, ...cmd, ...settings], { env: cliEnv(creds()), stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      const done = new Promise<number | null>((resolve) => child.on("close", resolve));
      await proxy.seen;
      child.kill("SIGINT");
      const code = await done;
      return { code, stdout, stderr };
    } finally {
      proxy.server.close();
    }
  }

  async function freshTable(): Promise<string> {
    const table = uniqueName("inflight");
    const t = await openLockTable({ table, endpoint: s.dynamoEndpoint, credentials: async () => ({ accessKeyId: s.accessKey, secretAccessKey: s.secretKey }) });
    await t.createTable();
    t.close();
    return table;
  }

  it("lock: waits for the answer and prints the lock it got (exit 130), which is then held", async () => {
    const table = await freshTable();
    const dir = mkdtempSync(join(tmpdir(), "objstate-inflight-"));
    const r = await interruptDuringPut(["lock"], table, dir);
    assert.equal(r.code, 130, r.stderr);
    const id = r.stdout.trim();
    assert.match(id, /^[0-9a-f-]{36}$/);
    assert.match(
      r.stderr,
      new RegExp(
        `objstate: error: interrupted after the lock was taken: lock ${id} on fl-bucket/env:/tool\\.tfstate is held; release it with objstate unlock ${id} -w default\\n$`,
      ),
    );
    const unlock = runCli(
      ["unlock", id, "--bucket", "fl-bucket", "--endpoint", `file://${dir}`, "--kvstore-table", table, "--kvstore-endpoint", s.dynamoEndpoint],
      { env: creds() },
    );
    assert.equal(unlock.code, 0, unlock.stderr);
  });

  it("workspace delete: the delete settles, its lock is released, and it says so", async () => {
    const table = await freshTable();
    const dir = mkdtempSync(join(tmpdir(), "objstate-inflight-"));
    const direct = ["--bucket", "fl-bucket", "--endpoint", `file://${dir}`, "--kvstore-table", table, "--kvstore-endpoint", s.dynamoEndpoint];
    const created = runCli(["workspace", "new", "gone", ...direct], { env: creds() });
    assert.equal(created.code, 0, created.stderr);
    const r = await interruptDuringPut(["workspace", "delete", "gone"], table, dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /interrupted, but the delete had already been sent: workspace gone is deleted and its lock released/);
    const list = runCli(["workspace", "list", "--json", ...direct], { env: creds() });
    assert.deepEqual(
      (JSON.parse(list.stdout) as { name: string }[]).map((w) => w.name),
      ["default"],
    );
    const lock = runCli(["lock", "-w", "gone", ...direct], { env: creds() });
    assert.equal(lock.code, 0, `the delete's lock was left held: ${lock.stderr}`);
  });
});
