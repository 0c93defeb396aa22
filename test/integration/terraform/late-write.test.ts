/**
 * Issue 37, item 13: a late objstate write on a versioned Ceph bucket shared with the real
 * terraform's S3 backend (layout s3, `dynamodb_table`). Ceph RGW refuses every If-Match on a
 * versioned bucket, so objstate checks by HEAD and then PUTs unconditionally; a writer frozen
 * (SIGSTOP) between the two whose lock is force-unlocked meanwhile, and who resumes after
 * terraform applied, lands its PUT over terraform's state. Its commit is refused, and it must
 * put the committed state back itself before it reports the refusal: otherwise every
 * `terraform plan` fails ("state data in S3 does not have the expected content") until an
 * objstate read happens to heal it. Once through `objstate state push`, once through a
 * replica of `objstate serve` frozen in a write that a load balancer retried on another.
 *
 * Ceph RGW + dynalite on 127.0.0.1; terraform in the isolated environment of
 * test/support/terraform.ts.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { EXIT } from "../../../src/error-codes.js";
import { runCli, startCli, startServeProcess, type ServeProcess } from "../../support/cli.js";
import { HttpBackendClient } from "../../support/http-backend-client.js";
import { stopped } from "../../support/paused-process.js";
import { testServers } from "../../support/servers.js";
import { cephTarget } from "../../support/targets.js";
import { announce, PRODUCER, synth, TERRAFORM, TerraformSandbox } from "../../support/terraform.js";

announce("late-write");

interface TfState {
  serial: number;
  outputs: Record<string, { value: unknown; type: unknown }>;
  [k: string]: unknown;
}

interface Shared {
  readonly cfg: string;
  readonly dir: string;
  readonly tfEnv: Record<string, string>;
  readonly cliEnv: Record<string, string>;
  objstate(args: string[], input?: string): string;
}

/** A versioned bucket and a table, objstate's config (layout s3) and a terraform directory on it, with v1 applied by terraform. */
async function share(sandbox: TerraformSandbox): Promise<Shared> {
  const s = testServers();
  const target = cephTarget();
  const props = await target.setup({ locks: true });
  const raw = await target.raw(props.bucket);
  await raw.enableVersioning();
  raw.close();
  const tfEnv = { AWS_ACCESS_KEY_ID: s.accessKey, AWS_SECRET_ACCESS_KEY: s.secretKey };
  const cliEnv = { PROVIDER_ACCESS_KEY: s.accessKey, PROVIDER_SECRET_KEY: s.secretKey, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" };
  const { accessKey: _a, secretKey: _s, ...store } = props;
  const cfg = join(sandbox.work, `${props.bucket}.json`);
  writeFileSync(cfg, JSON.stringify({ ...store, objstate: { layout: "s3" } }));
  const doc = synth(["--for", "s3", "--config", cfg]);
  const dir = sandbox.workdir(props.bucket, { "backend.tf.json": doc, "main.tf.json": PRODUCER("v1") });
  await sandbox.ok(dir, ["init", "-input=false"], tfEnv);
  await sandbox.ok(dir, ["apply", "-input=false", "-auto-approve"], tfEnv);
  const objstate = (args: string[], input?: string): string => {
    const r = runCli([...args, "--config", cfg], { env: cliEnv, input });
    assert.equal(r.code, 0, `objstate ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  return { cfg, dir, tfEnv, cliEnv, objstate };
}

/** The pulled state with a higher serial and output `y` set to `value`: what a late writer sends. */
function nextState(sh: Shared, value: string): string {
  const base = JSON.parse(sh.objstate(["state", "pull"])) as TfState;
  return JSON.stringify({ ...base, serial: base.serial + 1, outputs: { ...base.outputs, y: { value, type: "string" } } });
}

/** terraform's view once the late write was refused: a plan with no changes, and the acknowledged apply's output. */
async function assertTerraformReads(sandbox: TerraformSandbox, sh: Shared, y: string): Promise<void> {
  const plan = await sandbox.run(sh.dir, ["plan", "-input=false", "-detailed-exitcode", "-no-color"], sh.tfEnv);
  assert.equal(plan.code, 0, `terraform plan after the late write was refused:\n${plan.stdout}\n${plan.stderr}`);
  assert.match(plan.stdout, /No changes/);
  assert.equal((await sandbox.ok(sh.dir, ["output", "-raw", "y"], sh.tfEnv)).stdout, y);
}

describe(
  "a late objstate write on a versioned bucket shared with terraform's S3 backend",
  { skip: TERRAFORM === undefined ? "no terraform on PATH" : false, timeout: 300_000 },
  () => {
    let sandbox: TerraformSandbox;
    before(async () => {
      sandbox = await TerraformSandbox.create();
    });
    after(() => sandbox?.close());

    it("state push frozen between its HEAD and its PUT, force-unlocked, terraform applies, the push resumes: refused, and terraform plans with no changes", async () => {
      const sh = await share(sandbox);
      const push = startCli(["state", "push", "-", "--config", sh.cfg], {
        env: { ...sh.cliEnv, OBJSTATE_TEST_PAUSE_AT: "store-checked" },
        input: nextState(sh, "late"),
      });
      try {
        await stopped(push);
        const locks = JSON.parse(sh.objstate(["locks", "--json"])) as { id: string; operation: string }[];
        assert.deepEqual(
          locks.map((l) => l.operation),
          ["state push"],
        );
        await sandbox.ok(sh.dir, ["force-unlock", "-force", (locks[0] as { id: string }).id], sh.tfEnv);
        sandbox.write(sh.dir, { "main.tf.json": PRODUCER("v2") });
        await sandbox.ok(sh.dir, ["apply", "-input=false", "-auto-approve"], sh.tfEnv);
        push.resume();
        const done = await push.done;
        assert.equal(done.code, EXIT.conflict, done.stderr);
        assert.match(done.stderr, /this write did not happen/);
      } finally {
        if (!push.ended()) {
          push.kill();
          push.resume();
        }
      }
      await assertTerraformReads(sandbox, sh, "v2");
      assert.equal((JSON.parse(sh.objstate(["state", "pull"])) as TfState).outputs["y"]?.value, "v2");
    });

    it("a serve replica frozen in a write the load balancer retried on another replica, terraform applies, the replica resumes: refused, and terraform plans with no changes", async () => {
      const sh = await share(sandbox);
      const serve = (env: Record<string, string>): Promise<ServeProcess> =>
        startServeProcess(["--config", sh.cfg, "--log-level", "warn"], { ...sh.cliEnv, ...env });
      const [a, b] = await Promise.all([serve({ OBJSTATE_TEST_PAUSE_AT: "store-checked" }), serve({})]);
      try {
        // Attempts alternate between the replicas, as behind a load balancer: LOCK on A, GET on B, POST on A.
        const x = new HttpBackendClient({ bases: [a.url, b.url] });
        assert.ok((await x.lock("OperationTypeApply")).ok);
        const base = JSON.parse((await x.get())?.toString() ?? "{}") as TfState;
        const posted = x.put(
          Buffer.from(JSON.stringify({ ...base, serial: base.serial + 1, outputs: { ...base.outputs, y: { value: "x", type: "string" } } })),
        );
        await stopped({ pid: a.child.pid ?? -1, ended: () => a.child.exitCode !== null });
        // The balancer gives up on A and sends the POST again, to B.
        x.dropConnections();
        assert.equal((await posted).status, 200);
        const viaB = new HttpBackendClient({ bases: [b.url] });
        viaB.lockID = x.lockID;
        viaB.jsonLockInfo = x.jsonLockInfo;
        assert.equal((await viaB.unlock()).status, 200);
        sandbox.write(sh.dir, { "main.tf.json": PRODUCER("v2") });
        await sandbox.ok(sh.dir, ["apply", "-input=false", "-auto-approve"], sh.tfEnv);
        a.child.kill("SIGCONT");
        // A's answer to the POST nobody waits for any more: the write did not happen.
        for (;;) {
          const lines = a
            .stderr()
            .split("\n")
            .filter((l) => l.startsWith("{"));
          const answered = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e["msg"] === "request" && e["method"] === "POST");
          if (answered !== undefined) {
            assert.equal(answered["status"], 409, a.stderr());
            assert.equal(answered["code"], "STATE_CONFLICT", a.stderr());
            break;
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      } finally {
        a.child.kill("SIGCONT");
        for (const r of [a, b]) r.child.kill("SIGTERM");
        await Promise.all([a.exited, b.exited]);
      }
      await assertTerraformReads(sandbox, sh, "v2");
    });
  },
);
