/**
 * The CLI suite of versions (docs/design.md §9): `init --versioning`, doctor's versions line,
 * `state history`, `state pull --version`, `state diff` and `state rollback`, run as
 * subprocesses of the built CLI against the embedded store and Ceph RGW + dynalite.
 */
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import type { ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { runCli, runCliBytes, type CliOptions, type CliResult } from "../../support/cli.js";
import { HISTORY_ENTRY_KEYS } from "../../support/history-shape.js";
import type { Target } from "../../support/targets.js";
import { assertOneLineError, cliArgs } from "./suite.js";

const LINEAGE = "9d1e4c7a-0000-4000-8000-00000000000a";

function state(serial: number, resources: string[], outputs: Record<string, { value: string; sensitive?: boolean }>, lineage = LINEAGE): string {
  return `${JSON.stringify(
    {
      version: 4,
      terraform_version: "1.9.0",
      serial,
      lineage,
      outputs: Object.fromEntries(
        Object.entries(outputs).map(([k, o]) => [k, { value: o.value, type: "string", ...(o.sensitive === true ? { sensitive: true } : {}) }]),
      ),
      resources: resources.map((r) => {
        const [type, name] = r.split(".");
        return { mode: "managed", type, name, provider: 'provider["registry.example/x/y"]', instances: [{ schema_version: 0, attributes: { id: r } }] };
      }),
    },
    null,
    2,
  )}\n`;
}

interface HistoryJson {
  readonly versions: {
    versionId: string;
    isLatest: boolean;
    deleteMarker: boolean;
    serial: number | null;
    writer: string | null;
    who: string | null;
    principal: { name: string; via: string } | null;
    operation: string | null;
    sourceVersion: string | null;
  }[];
}

export function cliHistorySuite(makeTarget: () => Target, options: { readonly versionable: boolean }): void {
  let target: Target;
  before(() => {
    target = makeTarget();
  });

  async function fresh(locks = true) {
    const props: ObjectStoreBackendConfigProps = await target.setup({ locks });
    const { args, env } = cliArgs(props);
    const cli = (cmd: string[], o: CliOptions = {}): CliResult => runCli([...cmd, ...args], { ...o, env: { ...env, ...o.env } });
    const cliBytes = (cmd: string[]) => runCliBytes([...cmd, ...args], { env });
    const history = (ws: string[] = []): HistoryJson => {
      const r = cli(["state", "history", "--json", ...ws]);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as HistoryJson;
    };
    const push = (text: string, more: string[] = []): void => {
      const r = cli(["state", "push", "-", ...more], { input: text });
      assert.equal(r.code, 0, r.stderr);
    };
    return { props, cli, cliBytes, history, push };
  }

  /** A fresh bucket with versioning turned on by `init --versioning`. */
  async function versioned(locks = true) {
    const t = await fresh(locks);
    const r = t.cli(["init", "--create-bucket", "--versioning", "--create-table"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /versioning of bucket \S+ (is on|turned on)/);
    return t;
  }

  describe("init --versioning and doctor", () => {
    it("turns versioning on; doctor says whether it is on and that history and rollback need it", async () => {
      const t = await fresh();
      if (options.versionable) {
        const before = t.cli(["doctor"]);
        assert.match(
          before.stdout,
          /warn +versions: .*does not keep versions.*state history.*rollback need versioning — fix: turn it on with objstate init --versioning/,
        );
      }
      assert.equal(t.cli(["init", "--create-bucket", "--versioning", "--create-table"]).code, 0);
      const raw = await target.raw(t.props.bucket);
      try {
        assert.equal(await raw.versioning(), "enabled");
      } finally {
        raw.close();
      }
      const after = t.cli(["doctor"]);
      assert.match(after.stdout, /ok +versions: bucket \S+ keeps every version.*every noncurrent version is kept/);
    });

    it("sets a retention rule the store keeps, and refuses one it would not keep as asked", async () => {
      const t = await fresh();
      const days = t.cli(["init", "--create-bucket", "--versioning", "--keep-days", "30", "--create-table", "--json"]);
      assert.equal(days.code, 0, days.stderr);
      const out = JSON.parse(days.stdout) as { versions: { status: string; detail: string } };
      assert.equal(out.versions.status, "created");
      assert.match(out.versions.detail, /expire after 30 days/);
      const versions = t.cli(["init", "--create-bucket", "--versioning", "--keep-versions", "2", "--create-table"]);
      if (options.versionable) {
        // Ceph RGW refuses NewerNoncurrentVersions alone, and drops it beside NoncurrentDays:
        // objstate puts the earlier rule back and says so.
        assert.equal(versions.code, 1);
        assertOneLineError(versions, /refused the retention rule \(NewerNoncurrentVersions 2; MalformedXML\).*--keep-days.*nothing was changed/);
        const both = t.cli(["init", "--versioning", "--keep-days", "7", "--keep-versions", "2"]);
        assert.equal(both.code, 1);
        assertOneLineError(both, /did not keep NewerNoncurrentVersions 2.*put back/);
        assert.match(t.cli(["doctor"]).stdout, /expire after 30 days/);
      } else {
        assert.equal(versions.code, 0, versions.stderr);
        assert.match(versions.stdout, /beyond the 2 newest/);
      }
      const bad = t.cli(["init", "--keep-days", "3"]);
      assert.equal(bad.code, 2);
      assertOneLineError(bad, /--keep-days and --keep-versions .* with --versioning/);
      assert.equal(t.cli(["init", "--create-bucket", "--versioning", "--keep-days", "0"]).code, 2);
    });
  });

  describe("state history, pull --version, diff", () => {
    it("history lists writes by objstate and by another client, newest first; --limit stops early", async () => {
      const t = await versioned();
      t.push(state(1, ["t.a"], {}));
      t.push(state(2, ["t.a", "t.b"], {}));
      const raw = await target.raw(t.props.bucket);
      try {
        await raw.put("env:/tool.tfstate", Buffer.from(state(3, ["t.a", "t.b"], { o: { value: "x" } })));
      } finally {
        raw.close();
      }
      const h = t.history();
      assert.deepEqual(
        h.versions.map((v) => v.serial),
        [3, 2, 1],
      );
      assert.deepEqual(
        h.versions.map((v) => v.writer),
        ["other", "objstate", "objstate"],
      );
      assert.deepEqual(
        h.versions.map((v) => v.operation),
        [null, "state push", "state push"],
      );
      // The library's name for the current version, and every key in every entry (null when unknown).
      assert.deepEqual(
        h.versions.map((v) => v.isLatest),
        [true, false, false],
      );
      for (const v of h.versions) assert.deepEqual(Object.keys(v), HISTORY_ENTRY_KEYS);
      // Written by the CLI, not through a server: no principal recorded, only the client's own Who.
      assert.deepEqual(
        h.versions.map((v) => v.principal),
        [null, null, null],
      );
      assert.match(h.versions[1]?.who ?? "", /@/);
      assert.equal(t.history(["--limit", "2"]).versions.length, 2);
      const text = t.cli(["state", "history"]);
      assert.equal(text.code, 0, text.stderr);
      const lines = text.stdout.trimEnd().split("\n");
      assert.match(lines[0] ?? "", /VERSION +TIME +SIZE +SERIAL +LINEAGE +WRITTEN BY/);
      assert.match(lines[1] ?? "", /^\* +\S+ +\d{4}-\d\d-\d\dT\S+Z +\d+ B +3 +9d1e4c7a-\S+ +another client/);
      assert.match(lines[2] ?? "", /^ +\S+ .* 2 +9d1e4c7a-\S+ +\S+@\S+ \(state push, lock [0-9a-f-]+\)$/);
      assert.equal(t.cli(["state", "history", "--limit", "0"]).code, 2);
    });

    it("pull --version prints an old version byte for byte; the subcommand's --version wins over the program's", async () => {
      const t = await versioned();
      const one = state(1, ["t.a"], {});
      t.push(one);
      t.push(state(2, ["t.a", "t.b"], {}));
      const old = t.history().versions[1]?.versionId as string;
      const r = t.cliBytes(["state", "pull", "--version", old]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.toString("utf8"), one);
      assert.equal(t.cliBytes(["state", "pull", "--version-id", old]).stdout.toString("utf8"), one);
      assert.match(runCli(["--version"]).stdout, /^objstate v\d+\.\d+\.\d+\n/);
      const missing = t.cli(["state", "pull", "--version", "no-such-version"]);
      assert.equal(missing.code, 1);
      assertOneLineError(missing, /has no version "no-such-version".*objstate state history/);
    });

    it("diff shows resources and outputs added, removed and changed, sensitive values hidden; --json; exit 0", async () => {
      const t = await versioned();
      t.push(state(1, ["t.a", "t.b"], { url: { value: "http://a" }, pw: { value: "s3cret", sensitive: true } }));
      t.push(state(2, ["t.b", "t.c"], { url: { value: "http://b" }, pw: { value: "n3w", sensitive: true }, extra: { value: "e" } }));
      const r = t.cli(["state", "diff"]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /\+ t\.c\n/);
      assert.match(r.stdout, /- t\.a\n/);
      assert.match(r.stdout, /\+ extra = "e"/);
      assert.match(r.stdout, /~ pw: <sensitive> → <sensitive>/);
      assert.match(r.stdout, /~ url: "http:\/\/a" → "http:\/\/b"/);
      assert.ok(!r.stdout.includes("s3cret") && !r.stdout.includes("n3w"), "no sensitive value shown");
      const [v2, v1] = t.history().versions.map((v) => v.versionId);
      const j = t.cli(["state", "diff", "--json", "--from", v2 as string, "--to", v1 as string]);
      assert.equal(j.code, 0, j.stderr);
      const d = JSON.parse(j.stdout) as { from: string; to: string; resources: { added: string[]; removed: string[] } };
      assert.deepEqual([d.from, d.to, d.resources.added, d.resources.removed], [v2, v1, ["t.a"], ["t.c"]]);
      const same = t.cli(["state", "diff", "--from", v1 as string]);
      assert.equal(same.code, 0);
      assert.match(same.stdout, /Resources:/);
    });
  });

  describe("state rollback", () => {
    for (const locks of [true, false]) {
      it(`rolls back and rolls back the rollback (${locks ? "with" : "without"} a lock table)`, async () => {
        const t = await versioned(locks);
        t.push(state(1, ["t.a"], {}));
        t.push(state(4, ["t.a", "t.b"], {}));
        const [v4, v1] = t.history().versions.map((v) => v.versionId);
        const r = t.cli(["state", "rollback", "--yes", "--to", v1 as string]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /rolled back .* written as serial 5 .*replacing serial 4; nothing was deleted/);
        assert.equal(t.cli(["state", "pull"]).stdout, state(1, ["t.a"], {}).replace('"serial": 1', '"serial": 5'));
        const h = t.history();
        assert.deepEqual([h.versions[0]?.operation, h.versions[0]?.sourceVersion, h.versions.length], ["rollback", v1, 3]);
        const back = t.cli(["state", "rollback", "--yes", "--to", v4 as string, "--json"]);
        assert.equal(back.code, 0, back.stderr);
        assert.equal((JSON.parse(back.stdout) as { serial: number }).serial, 6);
        assert.equal(t.cli(["state", "pull"]).stdout, state(4, ["t.a", "t.b"], {}).replace('"serial": 4', '"serial": 6'));
        assert.equal(t.history().versions.length, 4);
      });
    }

    it("asks before rolling back: without a terminal it needs --yes (exit 2, nothing written)", async () => {
      const t = await versioned();
      t.push(state(1, ["t.a"], {}));
      t.push(state(2, ["t.a", "t.b"], {}));
      const v1 = t.history().versions[1]?.versionId as string;
      const r = t.cli(["state", "rollback", "--to", v1], { input: "yes\n" });
      assert.equal(r.code, 2);
      assertOneLineError(r, /state rollback shows the diff and asks for confirmation, and standard input is not a terminal: pass --yes/);
      assert.equal(r.stdout, "");
      assert.deepEqual(
        t.history().versions.map((v) => v.serial),
        [2, 1],
        "nothing was written",
      );
    });

    it("waits for the lock (--lock-timeout), or writes under the caller's (--lock-id)", async () => {
      const t = await versioned();
      t.push(state(1, ["t.a"], {}));
      t.push(state(2, ["t.a", "t.b"], {}));
      const v1 = t.history().versions[1]?.versionId as string;
      const id = t.cli(["lock"]).stdout.trim();
      const locked = t.cli(["state", "rollback", "--yes", "--to", v1, "--lock-timeout", "1s"]);
      assert.equal(locked.code, 3);
      assert.match(locked.stderr, /waiting up to 1s\nobjstate: error: .*is locked.*Gave up after waiting (\d+(\.\d)?(ms|s)|[\dhms]+) \(--lock-timeout 1s\)/);
      const r = t.cli(["state", "rollback", "--yes", "--to", v1, "--lock-id", id]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(t.history().versions[0]?.serial, 3);
      assert.equal(t.cli(["unlock", id]).code, 0);
    });

    it("refuses another lineage without --force (exit 5); restores a deleted workspace", async () => {
      const t = await versioned();
      t.push(state(1, ["t.x"], {}, "other-lineage"), ["-w", "gone"]);
      t.push(state(1, ["t.a"], {}), ["-w", "gone", "--force"]);
      const foreign = t.history(["-w", "gone"]).versions[1]?.versionId as string;
      const refused = t.cli(["state", "rollback", "--yes", "-w", "gone", "--to", foreign]);
      assert.equal(refused.code, 5);
      assertOneLineError(refused, /another lineage.*--force/);
      assert.equal(t.cli(["state", "rollback", "--yes", "-w", "gone", "--to", foreign, "--force"]).code, 0);
      assert.equal(t.cli(["workspace", "delete", "gone"]).code, 0);
      const h = t.history(["-w", "gone"]);
      assert.deepEqual(
        h.versions.map((v) => v.deleteMarker),
        [true, false, false, false],
      );
      const r = t.cli(["state", "rollback", "--yes", "-w", "gone", "--to", h.versions[1]?.versionId as string]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /restoring the deleted workspace/);
      assert.match(t.cli(["workspace", "list"]).stdout, /gone/);
      const diff = t.cli(["state", "diff", "-w", "gone", "--json"]);
      assert.equal(diff.code, 0, diff.stderr);
    });
  });

  if (options.versionable) {
    it("history and rollback on a bucket without versioning say what to do", async () => {
      const t = await fresh();
      assert.equal(t.cli(["init", "--create-bucket", "--create-table"]).code, 0);
      t.push(state(1, ["t.a"], {}));
      for (const cmd of [
        ["state", "history"],
        ["state", "rollback", "--yes", "--to", "null"],
      ]) {
        const r = t.cli(cmd);
        assert.equal(r.code, 1);
        assertOneLineError(r, /does not keep versions .*objstate init --versioning/);
      }
    });
  }
}
