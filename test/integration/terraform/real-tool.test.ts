/**
 * The real `terraform` binary (whichever is on PATH) reads what `objstate synth --for`
 * writes, unchanged (issue 24): `init`, `plan` and `apply` through the s3 backend against
 * Ceph RGW + dynalite and through the http backend against `objstate serve` (in process, over
 * the embedded store), a `terraform_remote_state` of each read by `terraform plan`, and the
 * oss backend accepted up to its first request to an OSS endpoint (which no test has).
 * objstate and the tool see the same objects: what one writes or locks, the other reads or
 * waits for. Only `terraform_data` resources and outputs: no provider is downloaded, and
 * every proxy points at a closed loopback port, so nothing leaves 127.0.0.1.
 *
 * Without terraform on PATH the suite does not run and says so in one line on stderr; with
 * it, one line says which binary ran (CI's log shows either).
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import type { ObjstateServer } from "../../../src/server/server.js";
import { Identity } from "../../../src/server/identity/identity.js";
import { createToken, revokeToken } from "../../../src/server/identity/tokens.js";
import { hashPassword, parseUsers } from "../../../src/server/users.js";
import { parseEncryptionConfig } from "../../../src/encryption/index.js";
import { connectAtRest, filesUnder } from "../../support/at-rest.js";
import { startServer } from "../../support/server-fixture.js";
import { chainConfig, PASSPHRASE } from "../../unit/encryption/support.js";
import { testServers } from "../../support/servers.js";
import { cephTarget, embeddedTarget } from "../../support/targets.js";
import { announce, CONSUMER, PRODUCER, synth, TERRAFORM, TERRAFORM_VERSION as VERSION, TerraformSandbox, type Files } from "../../support/terraform.js";

announce("real-tool");

const SERVER_KEY = parseEncryptionConfig(chainConfig([PASSPHRASE]), { source: "TF_ENCRYPTION", literalSecrets: true });

describe("the real terraform reads objstate synth --for", { skip: TERRAFORM === undefined ? "no terraform on PATH" : false }, () => {
  let sandbox: TerraformSandbox;
  let work = "";
  let closed = 0;

  before(async () => {
    sandbox = await TerraformSandbox.create();
    work = sandbox.work;
    closed = sandbox.closedPort;
  });
  after(() => sandbox?.close());

  const workdir = (name: string, files: Files): string => sandbox.workdir(name, files);
  const terraform = (dir: string, args: string[], extraEnv: Record<string, string> = {}) => sandbox.run(dir, args, extraEnv);
  const ok = (dir: string, args: string[], extraEnv: Record<string, string> = {}) => sandbox.ok(dir, args, extraEnv);
  const planned = (dir: string, extraEnv: Record<string, string> = {}) => sandbox.planned(dir, extraEnv);
  const plannedZ = async (dir: string, extraEnv: Record<string, string> = {}): Promise<unknown> => (await planned(dir, extraEnv))["z"];

  describe("s3 against Ceph RGW + dynalite", () => {
    let props: ObjectStoreBackendConfigProps;
    let creds: Record<string, string>;
    before(async () => {
      const s = testServers();
      props = await cephTarget().setup({ locks: true });
      // The keys stay out of the synthesized files: the tool reads them from its environment.
      creds = { AWS_ACCESS_KEY_ID: s.accessKey, AWS_SECRET_ACCESS_KEY: s.secretKey };
    });
    const settingsFlags = () => [
      "--bucket",
      props.bucket,
      "--endpoint",
      props.endpoint as string,
      "--kvstore-table",
      props.kvstoreTable as string,
      "--kvstore-endpoint",
      props.kvstoreEndpoint as string,
    ];

    it("init, plan and apply in a named workspace; objstate reads the state (digest-checked) and its lock stops the tool", async () => {
      const backendDoc = synth(
        ["--for", "s3", "--lockfile", ...settingsFlags()],
        [/default workspace's state at tool\.tfstate, objstate at env:\/tool\.tfstate/],
      );
      const dir = workdir("s3-producer", { "backend.tf.json": backendDoc, "main.tf.json": PRODUCER("from-terraform-s3") });
      await ok(dir, ["init", "-input=false"], creds);
      await ok(dir, ["workspace", "new", "staging"], creds);
      const plan = await ok(dir, ["plan", "-input=false"], creds);
      assert.match(plan.stdout, /Plan: 1 to add/);
      await ok(dir, ["apply", "-input=false", "-auto-approve"], creds);

      const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { lockfile: true, env: {} });
      try {
        const state = JSON.parse(((await backend.readState("staging")) as Buffer).toString("utf8")) as { outputs: { y: { value: string } } };
        assert.equal(state.outputs.y.value, "from-terraform-s3");
        assert.deepEqual(await backend.locks(), []);
        // objstate's lock (lockfile + table) is the tool's: its plan cannot take the lock.
        const held = await backend.lock("staging", { operation: "test" });
        try {
          const blocked = await terraform(dir, ["plan", "-input=false", "-lock-timeout=0s", "-no-color"], creds);
          assert.equal(blocked.code, 1, blocked.stdout);
          assert.match(blocked.stderr, /Error acquiring the state lock/);
          assert.ok(blocked.stderr.includes(held.ID), blocked.stderr);
        } finally {
          await backend.unlock("staging", held.ID);
        }
      } finally {
        backend.close();
      }
      await ok(dir, ["plan", "-input=false", "-lock-timeout=0s"], creds);
    });

    it("with an empty prefix the default workspace is the same object too (no layout warning)", async () => {
      const own = await cephTarget().setup({ locks: true, extra: { prefix: "" } });
      const dir = workdir("s3-default", {
        "backend.tf.json": synth([
          "--for",
          "s3",
          "--bucket",
          own.bucket,
          "--prefix",
          "",
          "--endpoint",
          own.endpoint as string,
          "--kvstore-table",
          own.kvstoreTable as string,
          "--kvstore-endpoint",
          own.kvstoreEndpoint as string,
        ]),
        "main.tf.json": PRODUCER("default-workspace"),
      });
      await ok(dir, ["init", "-input=false"], creds);
      await ok(dir, ["apply", "-input=false", "-auto-approve"], creds);
      const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(own), { env: {} });
      try {
        const state = JSON.parse(((await backend.readState("default")) as Buffer).toString("utf8")) as { outputs: { y: { value: string } } };
        assert.equal(state.outputs.y.value, "default-workspace");
      } finally {
        backend.close();
      }
    });

    it("remote states terraform applied and objstate wrote, read by terraform plan through data.terraform_remote_state", async () => {
      const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {} });
      try {
        const state = {
          version: 4,
          terraform_version: VERSION,
          serial: 1,
          lineage: "0b5c4e0e-0000-4000-8000-000000000001",
          outputs: { y: { value: "from-objstate", type: "string" } },
          resources: [],
        };
        await backend.writeState("prod", JSON.stringify(state));
      } finally {
        backend.close();
      }
      const { accessKey: _a, secretKey: _s, ...noKeys } = props;
      const propsFile = join(work, "s3-remote.json");
      writeFileSync(propsFile, JSON.stringify({ remoteStates: { upstream: { ...noKeys, workspace: "prod" }, applied: { ...noKeys, workspace: "staging" } } }));
      const consumer = { output: { ...CONSUMER("upstream").output, z2: { value: "${data.terraform_remote_state.applied.outputs.y}" } } };
      const dir = workdir("s3-consumer", { "remote.tf.json": synth(["--for", "s3", propsFile]), "main.tf.json": consumer });
      assert.deepEqual(await planned(dir, creds), { z: "from-objstate", z2: "from-terraform-s3" });
    });
  });

  describe("http against objstate serve (in process, embedded store)", () => {
    let server: ObjstateServer;
    let backend: ObjectStoreBackend;
    let tokensFile = "";
    const password = { TF_HTTP_PASSWORD: "ci-password" };
    before(async () => {
      const cheap = { N: 1024, r: 8, p: 1 };
      const users = parseUsers(
        JSON.stringify({ users: { ci: { password: await hashPassword("ci-password", cheap), roles: { "*": ["read", "write", "lock"] } } } }),
        "users.json",
      );
      backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(await embeddedTarget().setup({ locks: true })));
      tokensFile = join(work, "users.tokens.json");
      server = await startServer(backend, { users, identity: new Identity(users, { tokensFile }) });
    });
    after(async () => {
      await server.close(500);
      backend.close();
    });

    it("an API token as the http backend's password (TF_HTTP_PASSWORD): init and apply; revoked, the tool is refused", async () => {
      const { token, record } = await createToken(tokensFile, "ci", 3600_000, undefined);
      const doc = synth(["--for", "http", "--serve-url", server.url, "--username", "ci", "-w", "tokened", "--bucket", "held-by-the-server"]);
      const dir = workdir("http-token", { "backend.tf.json": doc, "main.tf.json": PRODUCER("from-a-token") });
      await ok(dir, ["init", "-input=false"], { TF_HTTP_PASSWORD: token });
      await ok(dir, ["apply", "-input=false", "-auto-approve"], { TF_HTTP_PASSWORD: token });
      const state = JSON.parse(((await backend.readState("tokened")) as Buffer).toString("utf8")) as { outputs: { y: { value: string } } };
      assert.equal(state.outputs.y.value, "from-a-token");
      await revokeToken(tokensFile, record.id);
      const denied = await terraform(dir, ["plan", "-input=false", "-no-color"], { TF_HTTP_PASSWORD: token });
      assert.notEqual(denied.code, 0);
      assert.match(denied.stderr, /requires auth|401|Unauthorized/i);
      assert.ok(!denied.stderr.includes(token) && !denied.stdout.includes(token));
    });

    it("init, plan and apply as a user (the password from TF_HTTP_PASSWORD); the server stores the state and releases the lock", async () => {
      const doc = synth(["--for", "http", "--serve-url", server.url, "--username", "ci", "-w", "prod", "--bucket", "held-by-the-server"]);
      assert.ok(!JSON.stringify(doc).includes("ci-password"));
      const dir = workdir("http-producer", { "backend.tf.json": doc, "main.tf.json": PRODUCER("from-terraform-http") });
      await ok(dir, ["init", "-input=false"], password);
      const plan = await ok(dir, ["plan", "-input=false"], password);
      assert.match(plan.stdout, /Plan: 1 to add/);
      await ok(dir, ["apply", "-input=false", "-auto-approve"], password);
      const state = JSON.parse(((await backend.readState("prod")) as Buffer).toString("utf8")) as { outputs: { y: { value: string } } };
      assert.equal(state.outputs.y.value, "from-terraform-http");
      assert.equal(await backend.lockInfo("prod"), null);
      // Without the password the server refuses the tool.
      const denied = await terraform(dir, ["plan", "-input=false", "-no-color"]);
      assert.notEqual(denied.code, 0);
      assert.match(denied.stderr, /requires auth|401|Unauthorized/i);
    });

    it("a remote state read by terraform plan through data.terraform_remote_state (the workspace in the address)", async () => {
      const propsFile = join(work, "http-remote.json");
      writeFileSync(propsFile, JSON.stringify({ remoteStates: { upstream: { bucket: "held-by-the-server", workspace: "prod" } } }));
      const dir = workdir("http-consumer", {
        "remote.tf.json": synth(["--for", "http", "--serve-url", server.url, "--username", "ci", propsFile]),
        "main.tf.json": CONSUMER("upstream"),
      });
      assert.equal(await plannedZ(dir, password), "from-terraform-http");
    });
  });

  describe("http against objstate serve encrypting at rest (issue 26 item 4)", () => {
    let server: ObjstateServer;
    let backend: ObjectStoreBackend;
    let bucketDir: string;
    const secret = "S3CR3T-from-terraform-at-rest-5c2a";
    before(async () => {
      const target = embeddedTarget();
      const props = await target.setup({ locks: true });
      bucketDir = (target.bucketDir as (b: string) => string)(props.bucket);
      backend = await connectAtRest(props, SERVER_KEY);
      server = await startServer(backend, { encryption: SERVER_KEY });
    });
    after(async () => {
      await server.close(500);
      backend.close();
    });

    it("apply through the http backend: the bucket holds only envelopes (no secret's bytes in any file), and terraform output shows the values", async () => {
      const doc = synth(["--for", "http", "--serve-url", server.url, "-w", "vault", "--bucket", "held-by-the-server"]);
      const dir = workdir("http-at-rest", {
        "backend.tf.json": doc,
        "main.tf.json": {
          resource: { terraform_data: { producer: { input: secret } } },
          output: { y: { value: "${terraform_data.producer.output}" }, password: { value: secret, sensitive: true } },
        },
      });
      await ok(dir, ["init", "-input=false"]);
      await ok(dir, ["apply", "-input=false", "-auto-approve"]);
      const files = filesUnder(bucketDir);
      assert.ok(
        files.some((f) => f.includes('"encrypted_data"')),
        "the state is stored as an envelope",
      );
      for (const f of files) assert.equal(f.indexOf(secret), -1, "no stored file holds the secret's bytes");
      const shown = await ok(dir, ["output", "-json"]);
      const outputs = JSON.parse(shown.stdout) as Record<string, { value: unknown; sensitive: boolean }>;
      assert.equal(outputs["y"]?.value, secret);
      assert.deepEqual([outputs["password"]?.value, outputs["password"]?.sensitive], [secret, true]);
      // The next plan reads the state back through the server (GET decrypts): nothing to do.
      assert.match((await ok(dir, ["plan", "-input=false", "-no-color"])).stdout, /No changes/);
    });
  });

  describe("the README's http backend block, as written, and its operator's force-unlock", () => {
    let server: ObjstateServer;
    let backend: ObjectStoreBackend;
    const ci = { TF_HTTP_PASSWORD: "ci-password" };
    const ops = { TF_HTTP_PASSWORD: "ops-password" };
    before(async () => {
      const cheap = { N: 1024, r: 8, p: 1 };
      const users = parseUsers(
        JSON.stringify({
          users: {
            ci: { password: await hashPassword("ci-password", cheap), roles: { "*": ["read", "write", "lock"] } },
            ops: { password: await hashPassword("ops-password", cheap), roles: { "*": ["read", "force"] } },
          },
        }),
        "users.json",
      );
      backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(await embeddedTarget().setup({ locks: true })));
      server = await startServer(backend, { users });
    });
    after(async () => {
      await server.close(500);
      backend.close();
    });

    it("applies with TF_HTTP_PASSWORD; TF_HTTP_USERNAME does not override the block's username; -backend-config=username does, and force-unlocks", async () => {
      const readme = readFileSync(join(fileURLToPath(new URL("../../../../", import.meta.url)), "README.md"), "utf8");
      const block = /```hcl\n(terraform \{\n {2}backend "http" \{[\s\S]*?)```/.exec(readme)?.[1];
      assert.ok(block !== undefined, "README.md has the http backend example in a terraform block");
      assert.ok(!/password\s*=/.test(block), "no password in the file");
      const dir = workdir("readme-http", { "backend.tf": block.replaceAll("http://127.0.0.1:8080", server.url), "main.tf.json": PRODUCER("from-the-readme") });
      await ok(dir, ["init", "-input=false"], ci);
      await ok(dir, ["apply", "-input=false", "-auto-approve"], ci);
      assert.equal(
        (JSON.parse(((await backend.readState("prod")) as Buffer).toString("utf8")) as { outputs: { y: { value: string } } }).outputs.y.value,
        "from-the-readme",
      );

      // CI's run crashed holding the lock.
      const left = await backend.lock("prod", { owner: "ci", operation: "OperationTypeApply" });
      // The block names ci: TF_HTTP_USERNAME is not read, so ops's password is ci's wrong one.
      const ignored = await terraform(dir, ["force-unlock", "-force", left.ID], { TF_HTTP_USERNAME: "ops", ...ops });
      assert.notEqual(ignored.code, 0, ignored.stdout);
      assert.equal((await backend.lockInfo("prod"))?.ID, left.ID, "the lock is still held");
      // As the README says: override the block's username for one init, then force-unlock as ops.
      await ok(dir, ["init", "-input=false", "-reconfigure", "-backend-config=username=ops"], ops);
      await ok(dir, ["force-unlock", "-force", left.ID], ops);
      assert.equal(await backend.lockInfo("prod"), null);
      // A second force-unlock within a minute is taken for the first one's retry: the lock ci
      // took since stands, and terraform must not report it released.
      const next = await backend.lock("prod", { owner: "ci", operation: "OperationTypeApply" });
      const kept = await terraform(dir, ["force-unlock", "-force", next.ID], ops);
      assert.notEqual(kept.code, 0, kept.stdout);
      assert.match(kept.stderr, /409/);
      assert.equal((await backend.lockInfo("prod"))?.ID, next.ID, "the lock is still held");
      await backend.unlock("prod", next.ID);
    });
  });

  describe("oss (no OSS endpoint here)", () => {
    // What a failure at configuration looks like: an argument the backend does not have, or a value it refuses.
    const CONFIG_ERROR = /Unsupported argument|Invalid backend configuration|An argument named|Missing required argument|Invalid value|must be a valid/;
    // What a failure at the network step looks like: a request to the (closed) endpoint that found no one.
    const NETWORK_ERROR = () =>
      new RegExp(`127\\.0\\.0\\.1:${closed}[^]*(connection refused|net\\.OpError)|(connection refused|net\\.OpError)[^]*127\\.0\\.0\\.1:${closed}`);
    const fakeKeys = { ALICLOUD_ACCESS_KEY: "fake-access-key", ALICLOUD_SECRET_KEY: "fake-secret-key" };
    const settings = () => ({
      bucket: "state-bucket",
      endpoint: `http://127.0.0.1:${closed}`,
      kvstoreTable: "state-locks",
      kvstoreEndpoint: `http://127.0.0.1:${closed}`,
      region: "cn-hangzhou",
    });

    it("init accepts every argument objstate writes for it and fails only when it reaches the network", async () => {
      // Every field the oss backend has an argument for (the deprecated block too); its endpoints at the closed port.
      const every = {
        ...settings(),
        accessKey: "fake-access-key",
        acl: "private",
        assumeRole: { roleArn: "acs:ram::123456789012:role/old", policy: '{"Statement":[]}', sessionName: "old-session", sessionExpiration: 1800 },
        assumeRolePolicy: '{"Version":"1","Statement":[]}',
        assumeRoleRoleArn: "acs:ram::123456789012:role/deployer",
        assumeRoleSessionExpiration: 900,
        assumeRoleSessionName: "deploy",
        computeRoleName: "ecs-state-role",
        encrypt: true,
        key: "network.tfstate",
        prefix: "states",
        profile: "prod",
        secretKey: "fake-secret-key",
        securityToken: "fake-token",
        sharedCredentialsFile: join(work, "no-such-config.json"),
        stsEndpoint: `127.0.0.1:${closed}`,
      };
      const configFile = join(work, "oss-settings.json");
      writeFileSync(configFile, JSON.stringify(every));
      const dir = workdir("oss-backend", {
        "backend.tf.json": synth(
          ["--for", "oss", "--config", configFile],
          [/accessKey is written/, /secretKey is written/, /securityToken is written/, /assumeRole block is deprecated/],
        ),
        "main.tf.json": PRODUCER("unused"),
      });
      const r = await terraform(dir, ["init", "-input=false", "-no-color"], fakeKeys);
      assert.equal(r.code, 1, r.stdout);
      assert.doesNotMatch(r.stderr, CONFIG_ERROR);
      assert.match(r.stderr, NETWORK_ERROR(), r.stderr);
    });

    it("a remote state's plan fails the same way: at the OSS endpoint, not at its configuration", async () => {
      const propsFile = join(work, "oss-remote.json");
      writeFileSync(propsFile, JSON.stringify({ remoteStates: { upstream: { ...settings(), workspace: "prod" } } }));
      const dir = workdir("oss-consumer", { "remote.tf.json": synth(["--for", "oss", propsFile]), "main.tf.json": CONSUMER("upstream") });
      await ok(dir, ["init", "-input=false"], fakeKeys);
      const r = await terraform(dir, ["plan", "-input=false", "-no-color"], fakeKeys);
      assert.equal(r.code, 1, r.stdout);
      assert.doesNotMatch(r.stderr, CONFIG_ERROR);
      assert.match(r.stderr, NETWORK_ERROR(), r.stderr);
    });
  });
});
