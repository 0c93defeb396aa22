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
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import type { ObjstateServer } from "../../../src/server/server.js";
import { hashPassword, parseUsers } from "../../../src/server/users.js";
import { runCli } from "../../support/cli.js";
import { startServer } from "../../support/server-fixture.js";
import { testServers } from "../../support/servers.js";
import { cephTarget, embeddedTarget } from "../../support/targets.js";

function onPath(name: string): string | undefined {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    if (dir === "") continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

const TERRAFORM = onPath("terraform");
const VERSION = TERRAFORM === undefined ? "" : (/Terraform v(\S+)/.exec(spawnSync(TERRAFORM, ["version"], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "", CHECKPOINT_DISABLE: "1" } }).stdout)?.[1] ?? "unknown");
process.stderr.write(
  TERRAFORM === undefined
    ? "objstate: the real-tool suite did NOT run: no terraform on PATH (put Terraform >= 1.10 on PATH to run it)\n"
    : `objstate: the real-tool suite runs ${TERRAFORM} (Terraform ${VERSION})\n`,
);

/** A loopback port nothing listens on (bound, then closed): the proxies point there. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

describe("the real terraform reads objstate synth --for", { skip: TERRAFORM === undefined ? "no terraform on PATH" : false }, () => {
  let work = "";
  let env: Record<string, string> = {};
  let closed = 0;

  before(async () => {
    work = mkdtempSync(join(tmpdir(), "objstate-terraform-"));
    const home = join(work, "home");
    mkdirSync(home);
    const cliConfig = join(work, "empty.tfrc");
    writeFileSync(cliConfig, "");
    closed = await closedPort();
    // Built from nothing: no AWS_*, TF_* or proxy setting of the caller's reaches the tool.
    env = {
      PATH: process.env["PATH"] ?? "",
      HOME: home,
      TMPDIR: work,
      TF_IN_AUTOMATION: "1",
      CHECKPOINT_DISABLE: "1",
      TF_CLI_CONFIG_FILE: cliConfig,
      HTTP_PROXY: `http://127.0.0.1:${closed}`,
      HTTPS_PROXY: `http://127.0.0.1:${closed}`,
      NO_PROXY: "127.0.0.1",
      AWS_EC2_METADATA_DISABLED: "true",
    };
  });
  after(() => {
    if (work !== "") rmSync(work, { recursive: true, force: true });
  });

  /** A fresh working directory holding `files` (name → document). */
  function workdir(name: string, files: Record<string, unknown>): string {
    const dir = join(work, name);
    mkdirSync(dir);
    for (const [file, doc] of Object.entries(files)) writeFileSync(join(dir, file), typeof doc === "string" ? doc : JSON.stringify(doc, null, 2));
    return dir;
  }

  /** Run terraform in `dir` (asynchronously: an in-process server must keep answering). */
  function terraform(dir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
    return new Promise((resolve, reject) => {
      const child = spawn(TERRAFORM as string, args, { cwd: dir, env: { ...env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  }

  async function ok(dir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
    const r = await terraform(dir, [...args, "-no-color"], extraEnv);
    assert.equal(r.code, 0, `terraform ${args.join(" ")} in ${dir} failed:\n${r.stdout}\n${r.stderr}`);
    return r;
  }

  /** `objstate synth ARGS` (the built CLI), its document parsed; no warning but the ones expected. */
  function synth(args: string[], warnings: RegExp[] = []): unknown {
    const r = runCli(["synth", ...args]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stderr.split("\n").filter((l) => l !== "");
    assert.equal(lines.length, warnings.length, r.stderr);
    warnings.forEach((w, i) => assert.match(lines[i] as string, w));
    return JSON.parse(r.stdout) as unknown;
  }

  const PRODUCER = (value: string) => ({
    resource: { terraform_data: { producer: { input: value } } },
    output: { y: { value: "${terraform_data.producer.output}" } },
  });
  const CONSUMER = (name: string) => ({ output: { z: { value: `\${data.terraform_remote_state.${name}.outputs.y}` } } });

  /** The values `terraform plan` plans for the outputs of the consumer in `dir`. */
  async function planned(dir: string, extraEnv: Record<string, string> = {}): Promise<Record<string, unknown>> {
    await ok(dir, ["init", "-input=false"], extraEnv);
    await ok(dir, ["plan", "-input=false", "-out=plan.bin"], extraEnv);
    const show = await ok(dir, ["show", "-json", "plan.bin"], extraEnv);
    const outputs = (JSON.parse(show.stdout) as { planned_values: { outputs: Record<string, { value: unknown }> } }).planned_values.outputs;
    return Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, o.value]));
  }
  async function plannedZ(dir: string, extraEnv: Record<string, string> = {}): Promise<unknown> {
    return (await planned(dir, extraEnv))["z"];
  }

  describe("s3 against Ceph RGW + dynalite", () => {
    let props: ObjectStoreBackendConfigProps;
    let creds: Record<string, string>;
    before(async () => {
      const s = testServers();
      props = await cephTarget().setup({ locks: true });
      // The keys stay out of the synthesized files: the tool reads them from its environment.
      creds = { AWS_ACCESS_KEY_ID: s.accessKey, AWS_SECRET_ACCESS_KEY: s.secretKey };
    });
    const settingsFlags = () => ["--bucket", props.bucket, "--endpoint", props.endpoint as string, "--kvstore-table", props.kvstoreTable as string, "--kvstore-endpoint", props.kvstoreEndpoint as string];

    it("init, plan and apply in a named workspace; objstate reads the state (digest-checked) and its lock stops the tool", async () => {
      const backendDoc = synth(["--for", "s3", "--lockfile", ...settingsFlags()], [/default workspace's state at tool\.tfstate, objstate at env:\/tool\.tfstate/]);
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
        "backend.tf.json": synth(["--for", "s3", "--bucket", own.bucket, "--prefix", "", "--endpoint", own.endpoint as string, "--kvstore-table", own.kvstoreTable as string, "--kvstore-endpoint", own.kvstoreEndpoint as string]),
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
        const state = { version: 4, terraform_version: VERSION, serial: 1, lineage: "0b5c4e0e-0000-4000-8000-000000000001", outputs: { y: { value: "from-objstate", type: "string" } }, resources: [] };
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
    const password = { TF_HTTP_PASSWORD: "ci-password" };
    before(async () => {
      const cheap = { N: 1024, r: 8, p: 1 };
      const users = parseUsers(JSON.stringify({ users: { ci: { password: await hashPassword("ci-password", cheap), roles: { "*": ["read", "write", "lock"] } } } }), "users.json");
      backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(await embeddedTarget().setup({ locks: true })));
      server = await startServer(backend, { users });
    });
    after(async () => {
      await server.close(500);
      backend.close();
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
      const dir = workdir("http-consumer", { "remote.tf.json": synth(["--for", "http", "--serve-url", server.url, "--username", "ci", propsFile]), "main.tf.json": CONSUMER("upstream") });
      assert.equal(await plannedZ(dir, password), "from-terraform-http");
    });
  });

  describe("oss (no OSS endpoint here)", () => {
    // What a failure at configuration looks like: an argument the backend does not have, or a value it refuses.
    const CONFIG_ERROR = /Unsupported argument|Invalid backend configuration|An argument named|Missing required argument|Invalid value|must be a valid/;
    // What a failure at the network step looks like: a request to the (closed) endpoint that found no one.
    const NETWORK_ERROR = () => new RegExp(`127\\.0\\.0\\.1:${closed}[^]*(connection refused|net\\.OpError)|(connection refused|net\\.OpError)[^]*127\\.0\\.0\\.1:${closed}`);
    const fakeKeys = { ALICLOUD_ACCESS_KEY: "fake-access-key", ALICLOUD_SECRET_KEY: "fake-secret-key" };
    const settings = () => ({ bucket: "state-bucket", endpoint: `http://127.0.0.1:${closed}`, kvstoreTable: "state-locks", kvstoreEndpoint: `http://127.0.0.1:${closed}`, region: "cn-hangzhou" });

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
      const dir = workdir("oss-backend", { "backend.tf.json": synth(["--for", "oss", "--config", configFile], [/accessKey is written/, /secretKey is written/, /securityToken is written/, /assumeRole block is deprecated/]), "main.tf.json": PRODUCER("unused") });
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
