/**
 * objstate with `layout: "s3"` and the real terraform's S3 backend share one bucket and one
 * table (issue 24), with the default prefix (`env:`), so the default workspace is where the
 * tool keeps it (`{key}`), not objstate's seed layout (`{prefix}/{key}`). In both directions:
 * a state terraform applied gets objstate's pull, output, history, diff and rollback; a push
 * from objstate is what terraform reads and plans against; writes alternate (the tool's plain
 * PutItem of the digest item drops objstate's Generation, which then counts as 0); a lock
 * either side holds makes the other refuse (no lock timeout) or wait (one long enough).
 * Once with a lock table on a versioned bucket, once with lockfiles alone (`use_lockfile`) on
 * an unversioned one (Ceph ignores If-None-Match on versioned buckets).
 *
 * Ceph RGW + dynalite on 127.0.0.1; terraform runs in the isolated environment of
 * test/support/terraform.ts (nothing leaves 127.0.0.1). It holds its lock with a
 * `terraform_data` whose `local-exec` provisioner waits for a file the test writes: no
 * provider is downloaded, and no assertion depends on how long anything takes.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { EXIT } from "../../../src/error-codes.js";
import { openLockTable } from "../../../src/lock/index.js";
import { runCli, startCli, type CliResult } from "../../support/cli.js";
import { testServers } from "../../support/servers.js";
import { cephTarget } from "../../support/targets.js";
import { announce, PRODUCER, synth, TERRAFORM, TerraformSandbox } from "../../support/terraform.js";

announce("shared-bucket");

interface TfState {
  version: number;
  serial: number;
  lineage: string;
  outputs: Record<string, { value: unknown; type: unknown }>;
  resources: unknown[];
  [k: string]: unknown;
}

/** The hex MD5 of a state as pulled (byte for byte what is stored). */
const md5Of = (bytes: string): string => createHash("md5").update(bytes).digest("hex");

/** A producer whose apply holds the state lock until the file `release` appears in its directory. */
const HOLDING = (value: string, round: number) => ({
  resource: {
    terraform_data: {
      producer: { input: value },
      hold: { triggers_replace: round, provisioner: [{ "local-exec": { command: "while [ ! -e release ]; do sleep 0.1; done; rm -f release" } }] },
    },
  },
  output: PRODUCER(value).output,
});

describe("objstate (layout s3) and terraform's S3 backend share a bucket", { skip: TERRAFORM === undefined ? "no terraform on PATH" : false }, () => {
  let sandbox: TerraformSandbox;
  before(async () => {
    sandbox = await TerraformSandbox.create();
  });
  after(() => sandbox?.close());

  for (const mode of [
    { name: "a lock table on a versioned bucket", table: true },
    { name: "lockfiles alone on an unversioned bucket (use_lockfile)", table: false },
  ]) {
    describe(`with ${mode.name}`, () => {
      let props: ObjectStoreBackendConfigProps;
      let cfg = "";
      let dir = "";
      let tfEnv: Record<string, string> = {};
      let cliEnv: Record<string, string> = {};

      const objstate = (args: string[], input?: string): CliResult => runCli([...args, "--config", cfg], { env: cliEnv, input });
      const objstateOk = (args: string[], input?: string): CliResult => {
        const r = objstate(args, input);
        assert.equal(r.code, 0, `objstate ${args.join(" ")}: ${r.stderr}`);
        return r;
      };
      const pulledBytes = (): string => objstateOk(["state", "pull"]).stdout;
      const pulled = (): TfState => JSON.parse(pulledBytes()) as TfState;
      const tfOutput = async (name: string): Promise<string> => (await sandbox.ok(dir, ["output", "-raw", name], tfEnv)).stdout;
      const digestItem = async () => {
        const table = await openLockTable({
          table: props.kvstoreTable as string,
          endpoint: props.kvstoreEndpoint as string,
          credentials: () => Promise.resolve({ accessKeyId: testServers().accessKey, secretAccessKey: testServers().secretKey }),
        });
        try {
          return await table.getDigest(`${props.bucket}/tool.tfstate-md5`);
        } finally {
          table.close();
        }
      };

      before(async () => {
        const s = testServers();
        const target = cephTarget();
        props = await target.setup({ locks: mode.table });
        if (mode.table) {
          const raw = await target.raw(props.bucket);
          await raw.enableVersioning();
          raw.close();
        }
        // The keys stay out of every file: each side reads them from its environment.
        tfEnv = { AWS_ACCESS_KEY_ID: s.accessKey, AWS_SECRET_ACCESS_KEY: s.secretKey };
        cliEnv = { PROVIDER_ACCESS_KEY: s.accessKey, PROVIDER_SECRET_KEY: s.secretKey };
        const { accessKey: _a, secretKey: _s, ...store } = props;
        cfg = join(sandbox.work, `${props.bucket}.json`);
        writeFileSync(cfg, JSON.stringify({ ...store, objstate: { layout: "s3", ...(mode.table ? {} : { lockfile: true }) } }));
        // objstate.layout s3: synth --for s3 has nothing to warn about.
        const doc = synth(["--for", "s3", "--config", cfg]) as { terraform: { backend: { s3: Record<string, unknown> } } };
        const s3 = doc.terraform.backend.s3;
        // The prefix is the default one (the tool's default too): not empty, so the layout matters.
        assert.equal(s3["workspace_key_prefix"] ?? "env:", "env:");
        assert.equal(s3["use_lockfile"], mode.table ? undefined : true);
        assert.equal(s3["dynamodb_table"], mode.table ? props.kvstoreTable : undefined);
        dir = sandbox.workdir(props.bucket, { "backend.tf.json": doc, "main.tf.json": PRODUCER("v1") });
        await sandbox.ok(dir, ["init", "-input=false"], tfEnv);
        assert.deepEqual((JSON.parse(objstateOk(["config", "--json"]).stdout) as { layout: unknown }).layout, {
          value: "s3",
          source: "explicit",
          from: `${cfg} (objstate.layout)`,
        });
      });

      it("terraform applies; objstate pulls it and reads its outputs (and, with versions, its history, diff and rollback)", async () => {
        await sandbox.ok(dir, ["apply", "-input=false", "-auto-approve"], tfEnv);
        const first = pulled();
        assert.equal(first.outputs["y"]?.value, "v1");
        assert.equal(objstateOk(["output", "y", "--raw"]).stdout, "v1");
        if (!mode.table) return;

        const v1 = JSON.parse(objstateOk(["state", "history", "--json"]).stdout) as {
          path: string;
          versions: Array<{ versionId: string; serial: number; writer: string }>;
        };
        assert.equal(v1.path, `${props.bucket}/tool.tfstate`);
        sandbox.write(dir, { "main.tf.json": PRODUCER("v2") });
        await sandbox.ok(dir, ["apply", "-input=false", "-auto-approve"], tfEnv);
        const second = pulled();
        assert.equal(second.outputs["y"]?.value, "v2");
        assert.ok(second.serial > first.serial);
        const history = JSON.parse(objstateOk(["state", "history", "--json"]).stdout) as {
          versions: Array<{ versionId: string; serial: number; writer: string }>;
        };
        assert.equal(history.versions[0]?.serial, second.serial);
        assert.ok(
          history.versions.every((v) => v.writer === "other"),
          JSON.stringify(history.versions),
        );
        const v1Id = v1.versions[0]?.versionId as string;
        assert.ok(history.versions.some((v) => v.versionId === v1Id));

        const diff = JSON.parse(objstateOk(["state", "diff", "--json", "--from", v1Id]).stdout) as {
          outputs: { changed: Array<{ name: string; before: unknown; after: unknown }> };
        };
        assert.deepEqual(
          diff.outputs.changed.map((c) => [c.name, c.before, c.after]),
          [["y", "v1", "v2"]],
        );

        // objstate's rollback is a write terraform reads (digest-checked) and plans against.
        const rolled = JSON.parse(objstateOk(["state", "rollback", "--to", v1Id, "--yes", "--json"]).stdout) as { serial: number };
        assert.equal(rolled.serial, second.serial + 1);
        assert.equal(await tfOutput("y"), "v1");
        sandbox.write(dir, { "main.tf.json": PRODUCER("v1") });
        const plan = await sandbox.run(dir, ["plan", "-input=false", "-detailed-exitcode", "-no-color"], tfEnv);
        assert.equal(plan.code, 0, `${plan.stdout}\n${plan.stderr}`);
        assert.match(plan.stdout, /No changes/);
      });

      it("objstate pushes; terraform reads and plans against it; then writes alternate, each read by the other", async () => {
        const before = pulled();
        const pushed: TfState = { ...before, serial: before.serial + 1, outputs: { ...before.outputs, pushed: { value: "by-objstate", type: "string" } } };
        objstateOk(["state", "push", "-"], JSON.stringify(pushed));
        assert.equal(await tfOutput("pushed"), "by-objstate");
        // The plan starts from the pushed state: the output the configuration lacks goes away.
        const plan = await sandbox.run(dir, ["plan", "-input=false", "-detailed-exitcode", "-no-color"], tfEnv);
        assert.equal(plan.code, 2, `${plan.stdout}\n${plan.stderr}`);
        assert.match(plan.stdout, /- pushed += "by-objstate"/);
        if (mode.table) {
          // objstate's commit: Generation and CommitLockID beside the Digest.
          const item = await digestItem();
          assert.ok((item?.generation ?? 0) >= 1, JSON.stringify(item));
          assert.notEqual(item?.lockId, undefined);
        }

        // terraform writes over objstate's write: its PutItem replaces the digest item.
        await sandbox.ok(dir, ["apply", "-input=false", "-auto-approve"], tfEnv);
        const appliedBytes = pulledBytes();
        const applied = JSON.parse(appliedBytes) as TfState;
        assert.equal(applied.outputs["pushed"], undefined);
        assert.ok(applied.serial > pushed.serial);
        if (mode.table) assert.deepEqual(await digestItem(), { digest: md5Of(appliedBytes), generation: 0, lockId: undefined });

        // objstate writes over terraform's: committed from generation 0; terraform reads it.
        objstateOk(
          ["state", "push", "-"],
          JSON.stringify({ ...applied, serial: applied.serial + 1, outputs: { ...applied.outputs, y: { value: "v1-by-objstate", type: "string" } } }),
        );
        if (mode.table) assert.equal((await digestItem())?.generation, 1);
        assert.equal(await tfOutput("y"), "v1-by-objstate");
        await sandbox.ok(dir, ["apply", "-input=false", "-auto-approve"], tfEnv);
        assert.equal(pulled().outputs["y"]?.value, "v1");
      });

      it("objstate's lock: terraform with -lock-timeout=0s refuses; with a longer one it waits, and goes on once objstate unlocks", async () => {
        const id = objstateOk(["lock", "--operation", "hold"]).stdout.trim();
        let unlocked = false;
        try {
          const refused = await sandbox.run(dir, ["plan", "-input=false", "-lock-timeout=0s", "-no-color"], tfEnv);
          assert.equal(refused.code, 1, refused.stdout);
          assert.match(refused.stderr, /Error acquiring the state lock/);
          assert.ok(refused.stderr.includes(id), refused.stderr);
          // The lock info terraform shows is the tool's own shape: its Path is the lock's LockID.
          assert.match(refused.stderr, new RegExp(`Path:\\s+${props.bucket}/tool\\.tfstate\\n`));
          assert.match(refused.stderr, /Operation:\s+hold/);

          // Logged on each attempt: a second one is terraform retrying while objstate holds the lock.
          const waiting = sandbox.start(dir, ["plan", "-input=false", "-lock-timeout=10m", "-no-color"], { ...tfEnv, TF_LOG: "INFO" });
          await waiting.matches("stderr", /Attempting to lock remote state[^]*Attempting to lock remote state/);
          objstateOk(["unlock", id]);
          unlocked = true;
          const done = await waiting.done;
          assert.equal(done.code, 0, `${done.stdout}\n${done.stderr.slice(-4000)}`);
          assert.match(done.stdout, /No changes/);
        } finally {
          if (!unlocked) objstate(["unlock", id]);
        }
      });

      it("terraform's lock: objstate's push exits 3 naming it; with --lock-timeout it waits, and writes once terraform is done", async () => {
        const before = pulled();
        sandbox.write(dir, { "main.tf.json": HOLDING("v1", 1) });
        const apply = sandbox.start(dir, ["apply", "-input=false", "-auto-approve", "-no-color"], tfEnv);
        let released = false;
        const release = (): void => {
          writeFileSync(join(dir, "release"), "");
          released = true;
        };
        try {
          // The provisioner runs inside the apply, which holds the state lock until it ends.
          await apply.matches("stdout", /terraform_data\.hold \(local-exec\): Executing/);
          const next = JSON.stringify({
            ...before,
            serial: before.serial + 100,
            outputs: { ...before.outputs, y: { value: "after-waiting", type: "string" } },
          });
          const refused = objstate(["state", "push", "-"], next);
          assert.equal(refused.code, EXIT.locked, refused.stderr);
          assert.match(refused.stderr, /is locked: ID [0-9a-f-]{36}, held by .* for OperationTypeApply/);

          const waiting = startCli(["state", "push", "-", "--lock-timeout", "10m", "--config", cfg], { env: cliEnv, input: next });
          await waiting.stderrMatches(/is locked by .*; waiting up to 10m/, 60_000);
          release();
          const applied = await apply.done;
          assert.equal(applied.code, 0, `${applied.stdout}\n${applied.stderr}`);
          const pushed = await waiting.done;
          assert.equal(pushed.code, 0, pushed.stderr);
        } finally {
          if (!released) release();
          await apply.done;
          sandbox.write(dir, { "main.tf.json": PRODUCER("v1") });
        }
        assert.equal(await tfOutput("y"), "after-waiting");
      });

      it("workspaces: each side lists the other's, and the default workspace once", async () => {
        await sandbox.ok(dir, ["workspace", "new", "staging"], tfEnv);
        await sandbox.ok(dir, ["workspace", "select", "default"], tfEnv);
        objstateOk(["workspace", "new", "qa"]);
        assert.deepEqual(
          (JSON.parse(objstateOk(["workspace", "list", "--json"]).stdout) as { name: string }[]).map((w) => w.name),
          ["default", "qa", "staging"],
        );
        const listed = (await sandbox.ok(dir, ["workspace", "list"], tfEnv)).stdout
          .split("\n")
          .map((l) => l.replace(/^\*?\s*/, ""))
          .filter((l) => l !== "");
        assert.deepEqual(listed, ["default", "qa", "staging"]);
      });
    });
  }
});
