/**
 * Terminal behaviour: durations, colours (on a TTY unless NO_COLOR or --no-color; anywhere
 * with FORCE_COLOR), the progress line, and — under a pseudo-terminal from util-linux
 * `script` — colours, the progress line and the force-unlock confirmation of the built CLI.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { formatWait as formatDuration } from "../../../src/backend/locks/waiting.js";
import { parseDuration } from "../../../src/config/setting-parsers.js";
import { colorsAllowed, paint, Progress, type OutStream } from "../../../src/cli/term.js";
import { CLI, cliEnv, runCli } from "../../support/cli.js";
import { verifyPassword } from "../../../src/server/users.js";

describe("durations", () => {
  it("parses Go-style durations", () => {
    const cases: [string, number][] = [
      ["0", 0],
      ["0s", 0],
      ["500ms", 500],
      ["30s", 30_000],
      ["1.5s", 1500],
      ["5m", 300_000],
      ["1h30m", 5_400_000],
      ["2h", 7_200_000],
      ["1m30s", 90_000],
    ];
    for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
  });
  it("refuses anything else", () => {
    for (const text of ["", "5", "5x", "-5s", "5 s", "s", "1h 30m", "5minutes", "1e3s", "30S"]) assert.equal(parseDuration(text), undefined, text);
  });
  it("formats for messages", () => {
    assert.equal(formatDuration(0), "0s");
    assert.equal(formatDuration(250), "250ms");
    assert.equal(formatDuration(1500), "1.5s");
    assert.equal(formatDuration(5_400_000), "1h30m");
  });
});

class FakeStream implements OutStream {
  text = "";
  constructor(readonly isTTY: boolean) {}
  readonly columns = 100;
  write(t: string | Uint8Array): boolean {
    this.text += t.toString();
    return true;
  }
}

describe("colours", () => {
  it("only on a TTY, and never when NO_COLOR is set (non-empty) or TERM=dumb", () => {
    assert.equal(colorsAllowed(new FakeStream(true), {}), true);
    assert.equal(colorsAllowed(new FakeStream(false), {}), false);
    assert.equal(colorsAllowed(new FakeStream(true), { NO_COLOR: "1" }), false);
    assert.equal(colorsAllowed(new FakeStream(true), { NO_COLOR: "" }), true);
    assert.equal(colorsAllowed(new FakeStream(true), { TERM: "dumb" }), false);
    assert.equal(paint(new FakeStream(true), { NO_COLOR: "1" }).red("x"), "x");
    assert.equal(paint(new FakeStream(true), {}).red("x"), "\u001b[31mx\u001b[39m");
  });

  it("FORCE_COLOR asks for them anywhere, over NO_COLOR and TERM=dumb; 0 or false refuses them even on a TTY", () => {
    for (const value of ["1", "2", "3", "true", ""]) {
      assert.equal(colorsAllowed(new FakeStream(false), { FORCE_COLOR: value }), true, `FORCE_COLOR=${value}`);
      assert.equal(colorsAllowed(new FakeStream(false), { FORCE_COLOR: value, NO_COLOR: "1", TERM: "dumb" }), true, `FORCE_COLOR=${value} over NO_COLOR`);
    }
    for (const value of ["0", "false", "FALSE"]) assert.equal(colorsAllowed(new FakeStream(true), { FORCE_COLOR: value }), false, `FORCE_COLOR=${value}`);
  });
});

describe("colours of the built CLI (standard error not a terminal)", () => {
  const RED = "\u001b[31mobjstate: error:\u001b[39m";
  // A bad flag value: the error line, from the command's own check.
  const failing = ["lock", "--lock-timeout", "soon", "--bucket", "colour-bucket", "--endpoint", "file:///nonexistent"];
  const stderr = (args: string[], env: Record<string, string | undefined>): string => {
    const r = runCli(args, { env: { NO_COLOR: undefined, ...env } });
    assert.equal(r.code, 2, r.stderr);
    return r.stderr;
  };

  it("FORCE_COLOR=1 colours the error line off a terminal, even with NO_COLOR set; FORCE_COLOR=0 does not", () => {
    assert.ok(stderr(failing, { FORCE_COLOR: "1" }).startsWith(RED));
    assert.ok(stderr(failing, { FORCE_COLOR: "1", NO_COLOR: "1" }).startsWith(RED));
    assert.ok(!stderr(failing, { FORCE_COLOR: "0" }).includes("\u001b"));
    assert.ok(!stderr(failing, {}).includes("\u001b"), "not a terminal: no colours");
  });

  it("--no-color (and the tool's -no-color) wins over FORCE_COLOR, after the command or before it, on commander's own errors too", () => {
    for (const args of [
      [...failing, "--no-color"],
      [...failing, "-no-color"],
      ["--no-color", ...failing],
      ["lock", "--no-such-flag", "--no-color"],
      ["version", "--no-color", "--no-such-flag"],
    ]) {
      const text = stderr(args, { FORCE_COLOR: "1" });
      assert.match(text, /^objstate: error: /, args.join(" "));
      assert.ok(!text.includes("\u001b"), args.join(" "));
    }
    assert.ok(stderr(["lock", "--no-such-flag"], { FORCE_COLOR: "1" }).startsWith(RED), "commander's errors are coloured like the others");
  });

  it("--no-color is an option of every command", () => {
    for (const args of [["version"], ["config"], ["serve", "hash-password"], ["state", "push"], ["output"], ["synth"], ["serve"]]) {
      const help = runCli([...args, "--help"]);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /--no-color +no colours in the output, whatever FORCE_COLOR says/, args.join(" "));
    }
  });
});

describe("progress line", () => {
  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("draws a bar for a big transfer on a TTY, redrawn with \\r and erased with spaces (no ANSI codes)", async () => {
    const s = new FakeStream(true);
    const p = Progress.start(s, "pushing b/env:/tool.tfstate", 64 * 1024 * 1024, { intervalMs: 10 });
    p.update(16 * 1024 * 1024);
    await wait(60);
    p.done();
    assert.match(s.text, /\rpushing b\/env:\/tool\.tfstate \[#{6} {18}\] 16\.0 MiB \/ 64\.0 MiB \d+\.\ds/);
    assert.ok(!s.text.includes("\u001b"), "no escape codes");
    assert.ok(s.text.endsWith("\r"), "the line is erased at the end");
    const after = s.text.length;
    await wait(40);
    assert.equal(s.text.length, after, "nothing is drawn after done()");
  });

  it("shows a spinner for a transfer of unknown size, only once it takes a while", async () => {
    const quick = new FakeStream(true);
    Progress.start(quick, "pulling", undefined, { delayMs: 200 }).done();
    await wait(250);
    assert.equal(quick.text, "");
    const slow = new FakeStream(true);
    const p = Progress.start(slow, "pulling b/env:/tool.tfstate", undefined, { delayMs: 20, intervalMs: 10 });
    await wait(80);
    p.done();
    assert.match(slow.text, /\rpulling b\/env:\/tool\.tfstate [|/\\-] \d+\.\ds/);
  });

  it("a download shows its bytes: against its size once the size is known, as a count before", () => {
    const p = Progress.start(new FakeStream(false), "pulling b/env:/tool.tfstate", undefined);
    assert.match(p.line(), /^pulling b\/env:\/tool\.tfstate [|/\\-] \d+\.\ds$/);
    p.update(8 * 1024 * 1024);
    assert.match(p.line(), /^pulling b\/env:\/tool\.tfstate 8\.0 MiB [|/\\-] \d+\.\ds$/);
    p.update(16 * 1024 * 1024, 32 * 1024 * 1024);
    assert.match(p.line(), /^pulling b\/env:\/tool\.tfstate \[#{12} {12}\] 16\.0 MiB \/ 32\.0 MiB \d+\.\ds$/);
    p.done();
  });

  it("prints nothing when the stream is not a TTY, or the transfer is small", async () => {
    const notTty = new FakeStream(false);
    const small = new FakeStream(true);
    const a = Progress.start(notTty, "pushing", 64 * 1024 * 1024, { intervalMs: 5 });
    const b = Progress.start(small, "pushing", 1024, { intervalMs: 5 });
    await wait(30);
    a.done();
    b.done();
    assert.equal(notTty.text + small.text, "");
  });
});

/** Run the built CLI under a pseudo-terminal (util-linux `script`), feeding `input`. */
function underPty(
  args: string[],
  options: { env?: Record<string, string | undefined>; input?: string; cwd?: string } = {},
): { code: number | null; out: string } {
  const quoted = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const r = spawnSync("script", ["-qec", quoted, "/dev/null"], {
    env: cliEnv({ NO_COLOR: undefined, TERM: "xterm", ...options.env }),
    input: options.input ?? "",
    encoding: "utf8",
    cwd: options.cwd,
  });
  return { code: r.status, out: r.stdout };
}

const hasScript = spawnSync("script", ["--version"]).status === 0;

describe("on a terminal (pseudo-terminal)", { skip: hasScript ? false : "util-linux `script` is not installed" }, () => {
  const dir = mkdtempSync(join(tmpdir(), "objstate-cli-tty-"));
  const settings = ["--bucket", "tty-bucket", "--endpoint", `file://${dir}`, "--kvstore-endpoint", `file://${dir}`, "--kvstore-table", "tty-locks"];

  it("colours doctor's marks on a TTY; none at all with NO_COLOR, or with --no-color", () => {
    const coloured = underPty(["doctor", ...settings]);
    assert.equal(coloured.code, 0, coloured.out);
    assert.ok(coloured.out.includes("\u001b[32mok  \u001b[39m  settings:"), JSON.stringify(coloured.out));
    for (const [args, env] of [
      [["doctor", ...settings], { NO_COLOR: "1" }],
      [["doctor", "--no-color", ...settings], {}],
    ] as const) {
      const plain = underPty([...args], { env });
      assert.equal(plain.code, 0, plain.out);
      assert.ok(!plain.out.includes("\u001b"), JSON.stringify(plain.out));
      assert.match(plain.out, /^ok {4}settings:/m);
    }
  });

  it("force-unlock asks on a TTY: anything but yes keeps the lock (exit 1), yes releases it", () => {
    const id = runCli(["lock", "--operation", "apply", ...settings]).stdout.trim();
    const no = underPty(["force-unlock", id, ...settings], { input: "no\n", env: { NO_COLOR: "1" } });
    assert.equal(no.code, 1, no.out);
    assert.match(no.out, new RegExp(`The lock on tty-bucket/env:/tool\\.tfstate: ID ${id}, held by .* for apply`));
    assert.match(no.out, /Force-unlock\? Only 'yes' will be accepted: /);
    assert.match(no.out, /objstate: error: force-unlock cancelled; the lock is still held/);
    assert.equal(runCli(["lock", ...settings]).code, 3);
    const wrong = underPty(["force-unlock", "22222222-2222-2222-2222-222222222222", ...settings], { input: "yes\n", env: { NO_COLOR: "1" } });
    assert.equal(wrong.code, 3, wrong.out);
    assert.doesNotMatch(wrong.out, /Only 'yes'/, "a wrong ID is refused before asking");
    const yes = underPty(["force-unlock", id, ...settings], { input: "yes\n", env: { NO_COLOR: "1" } });
    assert.equal(yes.code, 0, yes.out);
    assert.match(yes.out, new RegExp(`force-released lock ${id}`));
    assert.ok(!yes.out.includes("\u001b"), JSON.stringify(yes.out));
  });

  it("state rollback on a TTY shows the diff from the current state and asks: anything but yes writes nothing (exit 1), yes rolls back", () => {
    const ws = ["-w", "rb"];
    const push = (serial: number, names: string[]): void => {
      const doc = {
        version: 4,
        serial,
        lineage: "tty-lineage",
        outputs: {},
        resources: names.map((n) => ({
          mode: "managed",
          type: "t",
          name: n,
          provider: 'provider["registry.example/x/y"]',
          instances: [{ attributes: { id: n } }],
        })),
      };
      const r = runCli(["state", "push", "-", ...ws, ...settings], { input: JSON.stringify(doc) });
      assert.equal(r.code, 0, r.stderr);
    };
    const versions = (): { versionId: string; serial: number }[] =>
      (JSON.parse(runCli(["state", "history", "--json", ...ws, ...settings]).stdout) as { versions: { versionId: string; serial: number }[] }).versions;
    push(1, ["a"]);
    push(2, ["a", "b"]);
    const [v2, v1] = versions().map((v) => v.versionId);
    const no = underPty(["state", "rollback", "--to", v1 as string, ...ws, ...settings], { input: "no\n", env: { NO_COLOR: "1" } });
    assert.equal(no.code, 1, no.out);
    assert.match(no.out, new RegExp(`Rolling back tty-bucket/env:/rb/tool\\.tfstate to version ${v1} writes its content as a new version \\(serial 3\\)`));
    assert.ok(no.out.includes(`${v2} → ${v1}`), no.out);
    assert.match(no.out, /Serial: 2 → 1\r?\nResources:\r?\n {2}- t\.b\r?\n0 added, 0 changed, 1 removed/);
    assert.match(no.out, /Roll back\? Only 'yes' will be accepted: /);
    assert.match(no.out, /objstate: error: rollback cancelled; nothing was written/);
    assert.deepEqual(
      versions().map((v) => v.serial),
      [2, 1],
      "nothing was written",
    );
    const yes = underPty(["state", "rollback", "--to", v1 as string, ...ws, ...settings], { input: "yes\n", env: { NO_COLOR: "1" } });
    assert.equal(yes.code, 0, yes.out);
    assert.match(yes.out, /- t\.b/);
    assert.match(yes.out, /rolled back tty-bucket\/env:\/rb\/tool\.tfstate to version .* written as serial 3/);
    assert.deepEqual(
      versions().map((v) => v.serial),
      [3, 2, 1],
    );
  });

  it("state rollback: a write after the diff was shown and before the answer is not overwritten (exit 5, nothing written)", async () => {
    const ws = ["-w", "rb-race"];
    const push = (serial: number): void => {
      const r = runCli(["state", "push", "-", ...ws, ...settings], {
        input: JSON.stringify({ version: 4, serial, lineage: "race", outputs: { n: { value: serial, type: "number" } }, resources: [] }),
      });
      assert.equal(r.code, 0, r.stderr);
    };
    const versions = (): number[] =>
      (JSON.parse(runCli(["state", "history", "--json", ...ws, ...settings]).stdout) as { versions: { serial: number }[] }).versions.map((v) => v.serial);
    push(1);
    push(2);
    const v1 = (JSON.parse(runCli(["state", "history", "--json", ...ws, ...settings]).stdout) as { versions: { versionId: string }[] }).versions[1]
      ?.versionId as string;
    const quoted = [process.execPath, CLI, "state", "rollback", "--to", v1, ...ws, ...settings].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
    const child = spawn("script", ["-qec", quoted, "/dev/null"], { env: cliEnv({ NO_COLOR: "1", TERM: "xterm" }), stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        out += d;
        if (out.includes("Only 'yes' will be accepted")) resolve();
      });
      void exited.then(() => reject(new Error(`rollback ended before asking: ${out}`)));
    });
    push(3); // someone writes while the person reads the diff
    child.stdin.end("yes\n");
    assert.equal(await exited, 5, out);
    assert.match(
      out,
      /objstate: error: tty-bucket\/env:\/rb-race\/tool\.tfstate was written since the diff was shown: nothing was written; run the rollback again/,
    );
    assert.deepEqual(versions(), [3, 2, 1], "the write made meanwhile is still the current state");
  });

  // The timeout ends a run that never prompts (the old behaviour waited for Ctrl-D): a failure, not a hang.
  it("serve hash-password on a terminal: prompts twice on stderr, echoes nothing, and refuses two different passwords", { timeout: 60_000 }, async () => {
    const password = "correct-horse-battery-staple";
    /** Type each answer only once its prompt is on screen: typed earlier, the terminal would echo it before raw mode. */
    const session = async (answers: string[]): Promise<{ code: number | null; out: string }> => {
      const quoted = [process.execPath, CLI, "serve", "hash-password", "--user", "alice"].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
      const child = spawn("script", ["-qec", quoted, "/dev/null"], { env: cliEnv({ NO_COLOR: "1", TERM: "xterm" }), stdio: ["pipe", "pipe", "inherit"] });
      let out = "";
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      const prompts = ["Password for alice: ", "The same password again: "];
      let next = 0;
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        out += d;
        while (next < answers.length && out.includes(prompts[next] as string)) child.stdin.write(`${answers[next++] as string}\r`);
      });
      return { code: await exited, out };
    };
    const ok = await session([password, password]);
    assert.equal(ok.code, 0, ok.out);
    assert.ok(!ok.out.includes(password), `the password was echoed: ${JSON.stringify(ok.out)}`);
    const entry = JSON.parse(ok.out.slice(ok.out.indexOf("{"))) as Record<string, { password: string }>;
    assert.equal(await verifyPassword(password, entry["alice"]?.password), true, "the entry is the typed password's hash");
    const differ = await session([password, `${password}x`]);
    assert.equal(differ.code, 2, differ.out);
    assert.match(differ.out, /objstate: error: the two passwords differ: nothing was written/);
    assert.ok(!differ.out.includes(password));
  });

  it("shows a progress line on stderr while pushing a big state", () => {
    const big = join(dir, "big.json");
    writeFileSync(big, JSON.stringify({ version: 4, serial: 1, pad: "x".repeat(24 * 1024 * 1024) }));
    const r = underPty(["state", "push", big, ...settings], { env: { NO_COLOR: "1" } });
    assert.equal(r.code, 0, r.out.slice(0, 2000));
    assert.match(r.out, /\rpushing tty-bucket\/env:\/tool\.tfstate 24\.0 MiB [|/\\-] \d+\.\ds/);
    assert.match(r.out, /pushed 24\.0 MiB to tty-bucket\/env:\/tool\.tfstate/);
  });
});
