/**
 * The CLI behaviour suite: every command run as a subprocess of the built `objstate`,
 * unchanged against the embedded store and against Ceph RGW + dynalite. Settings go in
 * as flags; credentials (Ceph) as PROVIDER_ACCESS_KEY / PROVIDER_SECRET_KEY.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import type { ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { flagOf } from "../../../src/cli/settings.js";
import { openLockTable } from "../../../src/lock/index.js";
import { runCli, runCliBytes, startCli, type CliOptions, type CliResult } from "../../support/cli.js";
import { uniqueName, type Target } from "../../support/targets.js";

const md5 = (b: Uint8Array): string => createHash("md5").update(b).digest("hex");

/** Flags and environment for a target's props: secrets go in the environment. */
export function cliArgs(props: ObjectStoreBackendConfigProps): { args: string[]; env: Record<string, string> } {
  const args: string[] = [];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined) continue;
    if (k === "accessKey") env["PROVIDER_ACCESS_KEY"] = String(v);
    else if (k === "secretKey") env["PROVIDER_SECRET_KEY"] = String(v);
    else if (typeof v === "boolean") args.push(v ? flagOf(k) : `--no-${flagOf(k).slice(2)}`);
    else args.push(flagOf(k), String(v));
  }
  return { args, env };
}

/** Exactly one line on stderr, starting `objstate: error:`. */
export function assertOneLineError(r: CliResult, pattern: RegExp): void {
  assert.match(r.stderr, /^objstate: error: /);
  assert.equal(r.stderr.split("\n").filter((l) => l !== "").length, 1, `expected one line on stderr, got:\n${r.stderr}`);
  assert.match(r.stderr, pattern);
}

export function cliSuite(makeTarget: () => Target): void {
  let target: Target;
  const work = mkdtempSync(join(tmpdir(), "objstate-cli-"));
  let n = 0;
  const file = (text: string | Buffer, name = `f${++n}.json`): string => {
    const p = join(work, name);
    writeFileSync(p, text);
    return p;
  };

  before(() => {
    target = makeTarget();
  });

  /** A fresh bucket (+ lock table): a function running the CLI with its settings. */
  async function fresh(options: { locks?: boolean; extra?: Partial<ObjectStoreBackendConfigProps> } = {}) {
    const props = await target.setup({ locks: options.locks ?? true, extra: options.extra });
    const { args, env } = cliArgs(props);
    const cli = (cmd: string[], o: CliOptions = {}): CliResult => runCli([...cmd, ...args], { ...o, env: { ...env, ...o.env } });
    const cliBytes = (cmd: string[], o: CliOptions = {}) => runCliBytes([...cmd, ...args], { ...o, env: { ...env, ...o.env } });
    const start = (cmd: string[], o: CliOptions = {}) => startCli([...cmd, ...args], { ...o, env: { ...env, ...o.env } });
    /** Every object in the bucket with its MD5 (to show nothing was written). */
    const snapshot = async (): Promise<string> => {
      const raw = await target.raw(props.bucket);
      const out: string[] = [];
      try {
        for await (const key of raw.list("")) out.push(`${key} ${md5((await raw.get(key))?.body ?? Buffer.alloc(0))}`);
      } finally {
        raw.close();
      }
      if (target.bucketDir !== undefined) out.push(...treeOf(join(target.bucketDir(props.bucket), "..")));
      return out.join("\n");
    };
    return { props, args, env, cli, cliBytes, start, snapshot };
  }

  describe("state push / pull", () => {
    it("round-trips the exact bytes, from a file and from standard input", async () => {
      const t = await fresh();
      const bytes = Buffer.from('{\r\n  "version": 4,\r\n  "serial": 7,\r\n  "note": "h\u00e9llo \u2603 \ud83d\ude80",\r\n  "outputs": {}\r\n}', "utf8");
      const push = t.cli(["state", "push", file(bytes)]);
      assert.equal(push.code, 0, push.stderr);
      assert.match(push.stdout, /pushed .* to .*env:\/tool\.tfstate/);
      const pull = t.cliBytes(["state", "pull"]);
      assert.equal(pull.code, 0, pull.stderr);
      assert.ok(pull.stdout.equals(bytes), "pulled bytes differ from pushed bytes");
      const raw = await target.raw(t.props.bucket);
      assert.ok((await raw.get("env:/tool.tfstate"))?.body.equals(bytes));
      raw.close();

      const big = Buffer.from(JSON.stringify({ version: 4, serial: 8, resources: Array.from({ length: 20_000 }, (_, i) => ({ i, name: `r${i}` })) }));
      const viaStdin = t.cli(["state", "push", "-", "-w", "staging", "--json"], { input: big });
      assert.equal(viaStdin.code, 0, viaStdin.stderr);
      assert.deepEqual(JSON.parse(viaStdin.stdout), {
        workspace: "staging",
        path: `${t.props.bucket}/env:/staging/tool.tfstate`,
        bytes: big.length,
        locked: true,
        written: true,
        md5: md5(big),
      });
      const back = t.cliBytes(["state", "pull", "--workspace", "staging"]);
      assert.equal(back.code, 0, back.stderr);
      assert.equal(md5(back.stdout), md5(big));
    });

    it("pull of a workspace without state: one-line error, exit 1", async () => {
      const t = await fresh();
      const r = t.cli(["state", "pull", "-w", "nothing"]);
      assert.equal(r.code, 1);
      assert.equal(r.stdout, "");
      assertOneLineError(r, /no stored state for workspace nothing at .*env:\/nothing\/tool\.tfstate/);
    });

    it("push refuses input that is not a state, storing nothing (exit 2, names the workspace and line)", async () => {
      const t = await fresh();
      assert.equal(t.cli(["state", "push", file('{"version":4,"serial":1}')]).code, 0);
      const before = await t.snapshot();
      const bad = file('{\n  "serial": 2,\n  oops\n}');
      const r = t.cli(["state", "push", bad]);
      assert.equal(r.code, 2);
      assertOneLineError(r, /the state to write to workspace "default" is not valid JSON at line 3, column 3/);
      const notObject = t.cli(["state", "push", "-"], { input: "[1,2]" });
      assert.equal(notObject.code, 2);
      assertOneLineError(notObject, /the state to write to workspace "default" is not a state: expected a JSON object/);
      assert.equal(await t.snapshot(), before);
    });

    it("works without a lock table (says so, once)", async () => {
      const t = await fresh({ locks: false });
      const r = t.cli(["state", "push", file('{"version":4,"serial":1}')]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /not locked: no lock table/);
      assert.match(r.stderr, /^objstate: warning: no lock table is configured/);
      assert.equal(r.stderr.split("\n").filter((l) => l !== "").length, 1);
      const lock = t.cli(["lock"]);
      assert.equal(lock.code, 2);
      assertOneLineError(lock, /no lock table is configured, so there is no lock to take/);
    });
  });

  describe("guarded writes and locked read-modify-write", () => {
    const st = (serial: number, lineage = "l-1", extra: Record<string, unknown> = {}): string =>
      JSON.stringify({
        version: 4,
        serial,
        lineage,
        outputs: { n: { value: serial, type: "number" } },
        resources: [{ mode: "managed", type: "t", name: "a", instances: [] }],
        ...extra,
      });

    it("lock → pull → push --lock-id → unlock: the push writes under the caller's lock and leaves it held", async () => {
      const t = await fresh();
      assert.equal(t.cli(["state", "push", file(st(1))]).code, 0);
      const lock = t.cli(["lock", "--operation", "edit"]);
      assert.equal(lock.code, 0, lock.stderr);
      const id = lock.stdout.trim();
      assert.equal(t.cli(["state", "pull"]).stdout, st(1), "pull works while the lock is held");
      // Without the ID the push is refused: the lock is someone's (this caller's, but it did not say so).
      assert.equal(t.cli(["state", "push", file(st(2))]).code, 3);
      const push = t.cli(["state", "push", file(st(2)), "--lock-id", id]);
      assert.equal(push.code, 0, push.stderr);
      assert.equal(t.cli(["state", "pull"]).stdout, st(2));
      assert.equal(t.cli(["state", "push", file(st(3)), "--lock-id", "00000000-0000-4000-8000-000000000000"]).code, 3, "a wrong ID is another holder's lock");
      assert.equal(t.cli(["unlock", id]).code, 0);
      const late = t.cli(["state", "push", file(st(3)), "--lock-id", id]);
      assert.equal(late.code, 6, late.stderr);
      assertOneLineError(late, /not locked: lock .* was released or force-unlocked/);
      assert.equal(t.cli(["state", "pull"]).stdout, st(2), "nothing written after the lock was gone");
    });

    it("the lineage guard: another lineage, an older or same serial with other content exit 5; the same content exits 0; --force overrides", async () => {
      const t = await fresh();
      assert.equal(t.cli(["state", "push", file(st(5))]).code, 0);
      const before = await t.snapshot();
      for (const [bytes, pattern] of [
        [st(6, "l-other"), /another lineage.*lineage l-1, serial 5.*lineage l-other, serial 6/],
        [st(4), /older state/],
        [st(5, "l-1", { x: 1 }), /same serial/],
      ] as const) {
        const r = t.cli(["state", "push", file(bytes)]);
        assert.equal(r.code, 5, r.stderr);
        assertOneLineError(r, pattern);
      }
      assert.equal(await t.snapshot(), before, "nothing written");
      const same = t.cli(["state", "push", file(st(5))]);
      assert.equal(same.code, 0);
      assert.match(same.stdout, /already holds this state.*nothing written/);
      assert.equal(t.cli(["state", "push", file(st(4)), "--force"]).code, 0);
      assert.equal(t.cli(["state", "pull"]).stdout, st(4));
    });

    it("pull → +1 → push loops from several processes lose no acknowledged push", async () => {
      const t = await fresh();
      assert.equal(
        t.cli([
          "state",
          "push",
          file(JSON.stringify({ version: 4, serial: 1, lineage: "l", outputs: { tokens: { value: [], type: ["list", "string"] } }, resources: [{ a: 1 }] })),
        ]).code,
        0,
      );
      const acknowledged: string[] = [];
      const workers = Array.from({ length: 3 }, async (_, w) => {
        for (let i = 0; i < 3; i++) {
          const pulled = await t.start(["state", "pull"]).done;
          const doc = JSON.parse(pulled.stdout) as { serial: number; outputs: { tokens: { value: string[] } } };
          const token = `w${w}-${i}`;
          doc.serial += 1;
          doc.outputs.tokens.value.push(token);
          const r = await t.start(["state", "push", file(JSON.stringify(doc)), "--lock-timeout", "30s"]).done;
          if (r.code === 0) acknowledged.push(token);
          else assert.equal(r.code, 5, r.stderr);
        }
      });
      await Promise.all(workers);
      const final = JSON.parse(t.cli(["state", "pull"]).stdout) as { outputs: { tokens: { value: string[] } } };
      assert.ok(acknowledged.length >= 1);
      assert.deepEqual([...final.outputs.tokens.value].sort(), [...acknowledged].sort(), "exactly the acknowledged pushes are in the final state");
    });
  });

  describe("workspaces", () => {
    it("new writes an empty state, refuses an existing one; list; delete refuses default", async () => {
      const t = await fresh();
      const created = t.cli(["workspace", "new", "staging"]);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /created workspace staging/);
      const state = JSON.parse(t.cli(["state", "pull", "-w", "staging"]).stdout) as Record<string, unknown>;
      assert.deepEqual(Object.keys(state), ["version", "serial", "lineage", "outputs", "resources"]);
      assert.equal(state["version"], 4);
      assert.equal(state["serial"], 0);
      assert.match(String(state["lineage"]), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.deepEqual([state["outputs"], state["resources"]], [{}, []]);

      const again = t.cli(["workspace", "new", "staging"]);
      assert.equal(again.code, 1);
      assertOneLineError(again, /workspace staging already exists/);
      assert.equal(t.cli(["workspace", "new", "default"]).code, 1);
      assert.equal(t.cli(["workspace", "new", "prod"]).code, 0);

      const list = t.cli(["workspace", "list"]);
      assert.equal(list.code, 0, list.stderr);
      assert.equal(list.stdout, "* default\n  prod\n  staging\n");
      assert.deepEqual(
        (JSON.parse(t.cli(["workspace", "list", "--json"]).stdout) as { name: string }[]).map((w) => w.name),
        ["default", "prod", "staging"],
      );
      assert.equal(t.cli(["workspace", "list", "-w", "prod"]).stdout, "  default\n* prod\n  staging\n");

      const def = t.cli(["workspace", "delete", "default"]);
      assert.equal(def.code, 2);
      assertOneLineError(def, /the default workspace cannot be deleted/);
      const del = t.cli(["workspace", "delete", "staging"]);
      assert.equal(del.code, 0, del.stderr);
      assert.deepEqual(
        (JSON.parse(t.cli(["workspace", "list", "--json"]).stdout) as { name: string }[]).map((w) => w.name),
        ["default", "prod"],
      );
      const missing = t.cli(["workspace", "delete", "staging"]);
      assert.equal(missing.code, 1);
      assertOneLineError(missing, /workspace staging does not exist/);
      const badName = t.cli(["workspace", "new", "a/b"]);
      assert.equal(badName.code, 2);
      assertOneLineError(badName, /workspace must be a non-empty workspace name/);
    });
  });

  describe("locks", () => {
    it("a lock item without readable lock info: the lock error says how to clear it, force-unlock no-id clears it", async () => {
      const t = await fresh();
      const creds =
        t.props.accessKey === undefined
          ? undefined
          : () => Promise.resolve({ accessKeyId: t.props.accessKey as string, secretAccessKey: t.props.secretKey as string });
      const kv = await openLockTable({ table: t.props.kvstoreTable as string, endpoint: t.props.kvstoreEndpoint as string, credentials: creds });
      await kv.put(`${t.props.bucket}/env:/tool.tfstate`, "Holder", "by hand");
      kv.close();
      const locked = t.cli(["lock"]);
      assert.equal(locked.code, 3);
      assertOneLineError(locked, /no readable lock info.*objstate force-unlock no-id/);
      const cleared = t.cli(["force-unlock", "no-id", "--force"]);
      assert.equal(cleared.code, 0, cleared.stderr);
      const lock = t.cli(["lock"]);
      assert.equal(lock.code, 0, lock.stderr);
      assert.equal(t.cli(["unlock", lock.stdout.trim()]).code, 0);
    });

    it("lock prints the ID; a second lock and a push exit 3 naming the holder; unlock releases", async () => {
      const t = await fresh();
      assert.equal(t.cli(["state", "push", file('{"version":4,"serial":1}')]).code, 0);
      const lock = t.cli(["lock", "--operation", "apply", "--info", "CI run 42"]);
      assert.equal(lock.code, 0, lock.stderr);
      const id = lock.stdout.trim();
      assert.match(id, /^[0-9a-f-]{36}$/);
      const before = await t.snapshot();

      const second = t.cli(["lock", "--json"]);
      assert.equal(second.code, 3);
      assertOneLineError(
        second,
        new RegExp(
          `is locked: ID ${id}, held by \\S+@\\S+ since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z for apply \\(CI run 42\\)\\. If that holder is gone, unlock it with \`objstate force-unlock ${id}\` \\(through the tool: \`terraform force-unlock ${id}\`\\)`,
        ),
      );
      const push = t.cli(["state", "push", file('{"version":4,"serial":2}')]);
      assert.equal(push.code, 3);
      assertOneLineError(push, new RegExp(`locked: ID ${id}, held by .* since `));
      assert.equal(await t.snapshot(), before, "a refused push wrote something");

      const wrong = t.cli(["unlock", "00000000-0000-0000-0000-000000000000"]);
      assert.equal(wrong.code, 3);
      assertOneLineError(wrong, /does not match the lock/);
      const unlock = t.cli(["unlock", id]);
      assert.equal(unlock.code, 0, unlock.stderr);
      assert.match(unlock.stdout, new RegExp(`released lock ${id}`));
      const twice = t.cli(["unlock", id]);
      assert.equal(twice.code, 1);
      assertOneLineError(twice, /is not locked/);
      assert.equal(t.cli(["state", "push", file('{"version":4,"serial":2}')]).code, 0);
    });

    it("--lock-timeout: push waits and succeeds when the holder releases in time", async () => {
      const t = await fresh();
      const id = t.cli(["lock", "--operation", "apply"]).stdout.trim();
      const state = Buffer.from('{"version":4,"serial": 3, "waited": true}');
      const waiting = t.start(["state", "push", file(state), "--lock-timeout", "30s"]);
      await waiting.stderrMatches(/is locked by .* \(since .*\); waiting up to 30s/);
      const unlock = t.cli(["unlock", id]);
      assert.equal(unlock.code, 0, unlock.stderr);
      const r = await waiting.done;
      assert.equal(r.code, 0, r.stderr);
      assert.ok(t.cliBytes(["state", "pull"]).stdout.equals(state));
    });

    it("--lock-timeout: fails with exit 3 after the timeout, showing the holder and since when", async () => {
      const t = await fresh();
      const lock = JSON.parse(t.cli(["lock", "--operation", "apply", "--json"]).stdout) as { id: string; who: string; since: string };
      const startedAt = Date.now();
      const r = t.cli(["state", "push", file('{"version":4,"serial":4}'), "--lock-timeout", "1500ms"]);
      const took = Date.now() - startedAt;
      assert.equal(r.code, 3);
      assert.ok(took >= 1400, `gave up after ${took} ms`);
      assert.match(r.stderr, /waiting up to 1\.5s/);
      const last = r.stderr.trim().split("\n").at(-1) as string;
      assert.match(last, /^objstate: error: /);
      assert.ok(last.includes(`ID ${lock.id}, held by ${lock.who} since ${lock.since} for apply`), last);
      // How long it waited depends on the machine: assert the message's shape, not the figure.
      assert.match(last, /Gave up after waiting (\d+(\.\d)?(ms|s)|[\dhms]+) \(--lock-timeout 1\.5s\)/);
      assert.equal(t.cli(["state", "pull"]).code, 1, "nothing was written");
    });

    it("force-unlock: refuses a wrong ID (3) and, without a TTY, asks for --force (2); --force releases", async () => {
      const t = await fresh();
      const id = t.cli(["lock"]).stdout.trim();
      const noTty = t.cli(["force-unlock", id]);
      assert.equal(noTty.code, 2);
      assertOneLineError(noTty, /pass --force/);
      const wrong = t.cli(["force-unlock", "--force", "11111111-1111-1111-1111-111111111111"]);
      assert.equal(wrong.code, 3);
      assertOneLineError(wrong, new RegExp(`lock ID 11111111-1111-1111-1111-111111111111 does not match the lock on .*: ID ${id}`));
      assert.equal(t.cli(["lock"]).code, 3, "the lock is still held");
      const ok = t.cli(["force-unlock", "-f", id]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, new RegExp(`force-released lock ${id}`));
      const relock = t.cli(["lock"]);
      assert.equal(relock.code, 0, relock.stderr);
    });
  });

  describe("output", () => {
    const state = JSON.stringify({
      version: 4,
      serial: 3,
      lineage: "3f0c2a5e-0000-4000-8000-000000000000",
      outputs: {
        vpc_id: { value: "vpc-0a1b2c", type: "string" },
        subnet_count: { value: 3, type: "number" },
        ids: { value: ["a", "b"], type: ["list", "string"] },
      },
      resources: [],
    });

    it("prints the outputs over the defaults: all of them, one, --json and --raw", async () => {
      const t = await fresh();
      assert.equal(t.cli(["state", "push", file(state), "-w", "prod"]).code, 0);
      const defaults = ["--defaults", '{"vpc_id": "vpc-none", "region": "nowhere"}'];
      const all = t.cli(["output", "-w", "prod", ...defaults]);
      assert.equal(all.code, 0, all.stderr);
      assert.equal(all.stdout, 'ids = ["a","b"]\nregion = "nowhere"\nsubnet_count = 3\nvpc_id = "vpc-0a1b2c"\n');
      const json = t.cli(["output", "-w", "prod", "--json", ...defaults]);
      assert.deepEqual(JSON.parse(json.stdout), {
        vpc_id: { sensitive: false, type: "string", value: "vpc-0a1b2c" },
        region: { sensitive: false, type: "string", value: "nowhere" },
        subnet_count: { sensitive: false, type: "number", value: 3 },
        ids: { sensitive: false, type: ["list", "string"], value: ["a", "b"] },
      });
      assert.equal(t.cli(["output", "region", "-w", "prod", ...defaults]).stdout, '"nowhere"\n');
      assert.equal(t.cli(["output", "vpc_id", "-w", "prod", "--raw"]).stdout, "vpc-0a1b2c");
      assert.deepEqual(JSON.parse(t.cli(["output", "ids", "-w", "prod", "--json"]).stdout), ["a", "b"]);
      assert.equal(t.cli(["output", "subnet_count", "-w", "prod"]).stdout, "3\n");

      const notString = t.cli(["output", "ids", "-w", "prod", "--raw"]);
      assert.equal(notString.code, 1);
      assertOneLineError(notString, /output "ids" is a list, not a string: --raw prints only strings/);
      const unknown = t.cli(["output", "vpc", "-w", "prod"]);
      assert.equal(unknown.code, 1);
      assertOneLineError(unknown, /no output "vpc" in workspace prod at .*; available: ids, subnet_count, vpc_id/);
      const both = t.cli(["output", "vpc_id", "-w", "prod", "--raw", "--json"]);
      assert.equal(both.code, 2);
      assertOneLineError(both, /option '--raw' cannot be used with option '--json'/);
    });

    it("takes the workspace and defaults from a --config file too", async () => {
      const t = await fresh();
      assert.equal(t.cli(["state", "push", file(state), "-w", "staging"]).code, 0);
      const cfg = file(JSON.stringify({ workspace: "staging", defaults: { owner: "team-a", vpc_id: "vpc-none" } }));
      const r = t.cli(["output", "--json", "--config", cfg]);
      assert.equal(r.code, 0, r.stderr);
      const values = Object.fromEntries(Object.entries(JSON.parse(r.stdout) as Record<string, { value: unknown }>).map(([k, o]) => [k, o.value]));
      assert.deepEqual(values, { owner: "team-a", vpc_id: "vpc-0a1b2c", subnet_count: 3, ids: ["a", "b"] });
    });

    it("a workspace without state is an error, not empty outputs", async () => {
      const t = await fresh();
      const r = t.cli(["output", "-w", "nothing", "--defaults", '{"a": 1}']);
      assert.equal(r.code, 1);
      assert.equal(r.stdout, "");
      assertOneLineError(r, /no stored state for workspace nothing at .*env:\/nothing\/tool\.tfstate/);
    });
  });

  describe("doctor and init", () => {
    it("doctor: every check passes on a working setup, one line each, and leaves no probe behind", async () => {
      const t = await fresh();
      assert.equal(t.cli(["state", "push", file('{"version":4,"serial":1}')]).code, 0);
      const before = await t.snapshot();
      const r = t.cli(["doctor"]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const lines = r.stdout.trim().split("\n");
      assert.deepEqual(
        lines.map((l) => l.replace(/:.*$/, "")),
        [
          "ok    settings",
          "ok    credentials",
          "ok    object-store endpoint",
          "ok    bucket",
          "ok    If-None-Match",
          "ok    If-Match",
          "ok    conditional delete",
          // The embedded store always keeps versions; a fresh S3 bucket does not until init --versioning.
          target.name.startsWith("embedded") ? "ok    versions" : "warn  versions",
          "ok    lock-table endpoint",
          "ok    lock table",
          "ok    digest",
          "ok    leftovers",
        ],
      );
      assert.match(r.stdout, /bucket: bucket \S+ exists and is writable \(wrote and deleted env:\/\.objstate-doctor-[0-9a-f-]{36}\)/);
      assert.equal(await t.snapshot(), before);
      const json = JSON.parse(t.cli(["doctor", "--json"]).stdout) as { ok: boolean; checks: { name: string; status: string }[] };
      assert.equal(json.ok, true);
      assert.equal(json.checks.length, 12);
    });

    it("doctor reports a lock table whose key is not LockID, with a fix; exit 1", async () => {
      const t = await fresh({ locks: false });
      const bad = await target.badTable("other-key");
      const kv = target.name.startsWith("embedded") ? (t.props.endpoint as string) : (process.env["OBJSTATE_TEST_DYNAMODB_ENDPOINT"] as string);
      const r = t.cli(["doctor", "--kvstore-table", bad, "--kvstore-endpoint", kv]);
      assert.equal(r.code, 1);
      assert.match(
        r.stdout,
        new RegExp(
          `^FAIL  lock table: lock table ${bad} has Key \\(S, HASH\\); it must have exactly one key, LockID of type String \\(S\\) — fix: .*init --create-table`,
          "m",
        ),
      );
      assert.match(r.stdout, /^skip {2}digest: /m);
      assert.match(r.stdout, /^ok {4}bucket: /m);
      assertOneLineError(r, /1 check failed/);
      const numeric = await target.badTable("number-key");
      const r2 = t.cli(["doctor", "--kvstore-table", numeric, "--kvstore-endpoint", kv]);
      assert.equal(r2.code, 1);
      assert.match(r2.stdout, /FAIL {2}lock table: .* has LockID \(N, HASH\)/);
    });

    it("a state that does not match its digest: pull exits 4, doctor fails the digest check with the fix", async () => {
      const t = await fresh();
      assert.equal(t.cli(["state", "push", file('{"version":4,"serial":1}')]).code, 0);
      const pushed = createHash("md5").update('{"version":4,"serial":1}').digest("hex");
      // Changed behind objstate's back: not a write objstate can vouch for.
      const raw = await target.raw(t.props.bucket);
      await raw.put("env:/tool.tfstate", Buffer.from('{"version":4,"serial":1,"edited":"by hand"}'));
      raw.close();
      const doctor = t.cli(["doctor"]);
      assert.equal(doctor.code, 1);
      assert.match(
        doctor.stdout,
        new RegExp(
          `^FAIL {2}digest: the state of workspace default does not match its digest \\(lock table ${pushed}, object [0-9a-f]{32}\\) — fix: .*objstate state repair --force`,
          "m",
        ),
      );
      const pull = t.cli(["state", "pull"]);
      assert.equal(pull.code, 4);
      assert.equal(pull.stdout, "");
      assertOneLineError(pull, new RegExp(`does not match its digest: the lock table says ${pushed}`));
    });

    it("a write stored but never committed: doctor names it, the next pull commits it and says so; an older objstate's such write needs state repair", async () => {
      const t = await fresh();
      assert.equal(t.cli(["state", "push", file('{"version":4,"serial":1}')]).code, 0);
      const first = createHash("md5").update('{"version":4,"serial":1}').digest("hex");
      const second = '{"version":4,"serial":2}';
      const sum = createHash("md5").update(second).digest("hex");
      // What a push that died between storing and committing leaves: its object, recording the commit it meant.
      const raw = await target.raw(t.props.bucket);
      await raw.put("env:/tool.tfstate", Buffer.from(second), {
        metadata: { "objstate-serial": "2", "objstate-md5": sum, "objstate-who": "dead@host", "objstate-generation": "2", "objstate-parent-md5": first },
      });
      const doctor = t.cli(["doctor"]);
      assert.equal(doctor.code, 1);
      assert.match(doctor.stdout, /^FAIL {2}digest: the last write to workspace default was stored but never committed.* — fix: run objstate state repair/m);
      const pull = t.cli(["state", "pull"]);
      assert.equal(pull.code, 0, pull.stderr);
      assert.equal(pull.stdout, second);
      assert.match(
        pull.stderr,
        /^objstate: warning: committed the last write to .* \(serial 2 by dead@host\): it was stored, but its writer stopped before committing it/,
      );
      assert.equal(t.cli(["doctor"]).code, 0);
      // An older objstate recorded no intent: nothing proves no commit came in between, so the operator decides.
      const third = '{"version":4,"serial":3}';
      await raw.put("env:/tool.tfstate", Buffer.from(third), {
        metadata: { "objstate-serial": "3", "objstate-md5": createHash("md5").update(third).digest("hex") },
      });
      raw.close();
      const torn = t.cli(["state", "pull"]);
      assert.equal(torn.code, 4);
      assertOneLineError(torn, /the last write did not finish recording its digest.*objstate state repair/);
      const repair = t.cli(["state", "repair"]);
      assert.equal(repair.code, 0, repair.stderr);
      assert.match(repair.stdout, /recorded the digest/);
      assert.equal(t.cli(["state", "pull"]).stdout, third);
      const creds =
        t.props.accessKey === undefined
          ? undefined
          : () => Promise.resolve({ accessKeyId: t.props.accessKey as string, secretAccessKey: t.props.secretKey as string });
      const kv = await openLockTable({ table: t.props.kvstoreTable as string, endpoint: t.props.kvstoreEndpoint as string, credentials: creds });
      assert.match((await kv.get(`${t.props.bucket}/env:/tool.tfstate-md5`, "Repaired")) ?? "", new RegExp(`"previous":"${sum}"`));
      kv.close();
      assert.equal(t.cli(["doctor"]).code, 0);
    });

    it("doctor: a missing endpoint fails the settings check and skips the rest", async () => {
      const r = runCli(["doctor", "--bucket", "some-bucket"]);
      assert.equal(r.code, 1);
      const lines = r.stdout.trim().split("\n");
      assert.match(lines[0] as string, /^FAIL {2}settings: no object-store endpoint — fix: pass --endpoint/);
      assert.ok(
        lines.slice(1).every((l) => l.startsWith("skip  ")),
        r.stdout,
      );
    });

    it("init creates the bucket and the table when asked, and reports what existed", async () => {
      const base = await fresh();
      const bucket = uniqueName("init");
      const table = uniqueName("init-locks");
      const over = ["--bucket", bucket, "--kvstore-table", table];
      const run = (cmd: string[]): CliResult => runCli([...cmd, ...base.args, ...over], { env: base.env });

      const report = run(["init"]);
      if (target.name.startsWith("embedded")) {
        // The embedded store and table are made on first use: nothing to do is not a failure (as doctor says).
        assert.equal(report.code, 0, report.stderr);
        assert.match(
          report.stdout,
          new RegExp(`^later    bucket ${bucket} does not exist yet; the embedded store creates it on first write .*--create-bucket`, "m"),
        );
        assert.match(
          report.stdout,
          new RegExp(`^later    lock table ${table} does not exist yet; the embedded table is created on first use .*--create-table`, "m"),
        );
        assert.equal(report.stderr, "");
      } else {
        assert.equal(report.code, 1);
        assert.match(report.stdout, new RegExp(`^missing  bucket ${bucket} does not exist .*pass --create-bucket`, "m"));
        assert.match(report.stdout, new RegExp(`^missing  lock table ${table} does not exist .*pass --create-table`, "m"));
        assertOneLineError(report, /bucket .* is missing; lock table .* is missing/);
      }
      const raw = await target.raw(bucket);
      assert.equal(await raw.bucketExists(), false, "init without --create-bucket created the bucket");

      const created = run(["init", "--create-bucket", "--create-table"]);
      assert.equal(created.code, 0, created.stdout + created.stderr);
      assert.match(created.stdout, new RegExp(`^created  bucket ${bucket} created`, "m"));
      assert.match(created.stdout, new RegExp(`^created  lock table ${table} created with key LockID \\(String\\)`, "m"));
      assert.equal(await raw.bucketExists(), true);
      raw.close();
      const kv = await openLockTable({
        table,
        endpoint: base.props.kvstoreEndpoint as string,
        credentials:
          base.props.accessKey === undefined
            ? undefined
            : () => Promise.resolve({ accessKeyId: base.props.accessKey as string, secretAccessKey: base.props.secretKey as string }),
      });
      assert.deepEqual(await kv.describeKeySchema(), [{ name: "LockID", type: "S", keyType: "HASH" }]);
      kv.close();

      const again = run(["init", "--create-bucket", "--create-table", "--json"]);
      assert.equal(again.code, 0, again.stderr);
      const j = JSON.parse(again.stdout) as { ok: boolean; bucket: { status: string }; lockTable: { status: string } };
      assert.deepEqual([j.ok, j.bucket.status, j.lockTable.status], [true, "exists", "exists"]);
      const used = run(["state", "push", file('{"version":4,"serial":1}')]);
      assert.equal(used.code, 0, used.stderr);
    });
  });

  describe("config", () => {
    it("shows effective settings with provenance, secrets redacted, and the credentials source", async () => {
      const t = await fresh();
      const env = { PROVIDER_ACCESS_KEY: "AKIDEXAMPLE", PROVIDER_SECRET_KEY: "VERY-SECRET-VALUE", PROVIDER_REGION: "eu-west-1" };
      const r = t.cli(["config", "--json", "--key", "app.tfstate"], { env });
      assert.equal(r.code, 0, r.stderr);
      const j = JSON.parse(r.stdout) as { settings: Record<string, { value: unknown; source: string; from?: string }>; credentials: string };
      assert.deepEqual(j.settings["key"], { value: "app.tfstate", source: "explicit", from: "--key" });
      assert.deepEqual(j.settings["secretKey"], { value: "<redacted>", source: "env:PROVIDER_SECRET_KEY" });
      assert.deepEqual(j.settings["accessKey"], { value: "<redacted>", source: "env:PROVIDER_ACCESS_KEY" });
      assert.deepEqual(j.settings["region"], { value: "eu-west-1", source: "env:PROVIDER_REGION" });
      assert.deepEqual(j.settings["prefix"], { value: "env:", source: "default" });
      assert.match(j.credentials, /static keys \(env:PROVIDER_ACCESS_KEY\)/);
      const human = t.cli(["config"], { env });
      assert.equal(human.code, 0);
      assert.ok(!human.stdout.includes("VERY-SECRET-VALUE") && !human.stdout.includes("AKIDEXAMPLE"));
      assert.match(human.stdout, /^secretKey +<redacted> +env:PROVIDER_SECRET_KEY$/m);
      assert.match(human.stdout, /^credentials: static keys \(env:PROVIDER_ACCESS_KEY\)/m);
    });
  });

  describe("bad input at the terminal: one line on stderr, exit 2, nothing written", () => {
    const cases: [string, (t: Awaited<ReturnType<typeof fresh>>) => CliResult, RegExp][] = [
      [
        "unknown flag (suggests the nearest)",
        (t) => t.cli(["state", "push", file('{"version":4,"serial":9}'), "--lock-timout", "5s"]),
        /unknown option '--lock-timout' \(Did you mean --lock-timeout\?\)/,
      ],
      [
        "unknown settings flag",
        (t) => t.cli(["state", "push", file('{"version":4,"serial":9}'), "--kvstore-tabel", "x"]),
        /unknown option '--kvstore-tabel' \(Did you mean --kvstore-table\?\)/,
      ],
      [
        "bad duration",
        (t) => t.cli(["state", "push", file('{"version":4,"serial":9}'), "--lock-timeout", "5 minutes"]),
        /--lock-timeout must be a duration such as 0s, 30s, 5m or 1h30m, got "5 minutes"/,
      ],
      [
        "bad config file (names file and line)",
        (t) =>
          t.cli([
            "state",
            "push",
            file('{"version":4,"serial":9}'),
            "--config",
            file('{\n  "bucket": "x-bucket",\n  "key": "a.tfstate",,\n}', "broken-config.json"),
          ]),
        /broken-config\.json is not valid JSON at line 3, column 22/,
      ],
      [
        "missing bucket",
        (t) =>
          runCli(["state", "push", file('{"version":4,"serial":9}'), ...t.args.filter((a, i, all) => a !== "--bucket" && all[i - 1] !== "--bucket")], {
            env: t.env,
          }),
        /bucket is required: pass --bucket NAME/,
      ],
      [
        "bad number",
        (t) => t.cli(["state", "push", file('{"version":4,"serial":9}'), "--assume-role-session-expiration", "60"]),
        /--assume-role-session-expiration must be an integer from 900 to 3600 \(seconds\), got 60/,
      ],
    ];
    for (const [name, run, pattern] of cases) {
      it(name, async () => {
        const t = await fresh();
        assert.equal(t.cli(["state", "push", file('{"version":4,"serial":1}')]).code, 0);
        const before = await t.snapshot();
        const r = run(t);
        assert.equal(r.code, 2, r.stderr);
        assert.equal(r.stdout, "");
        assertOneLineError(r, pattern);
        assert.equal(await t.snapshot(), before, "the store changed");
      });
    }
  });
}

/** Every file below `dir` with size and MD5, for "nothing was written" checks on the embedded store. */
export function treeOf(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let names: string[];
    try {
      names = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else out.push(`${p} ${st.size} ${md5(readFileSync(p))}`);
    }
  };
  walk(dir);
  return out;
}
