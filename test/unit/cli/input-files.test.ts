/**
 * Files objstate reads (--config, synth FILE, state push FILE, the shared credentials
 * file): a FIFO, a device or an oversized file is refused at once with a typed error,
 * never a hang or unbounded memory; `-` still reads standard input (bounded too).
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, closeSync, ftruncateSync, mkdtempSync, openSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ObjectStoreBackendConfig, isObjstateError } from "../../../src/index.js";
import { resolveEffectiveSettings } from "../../../src/credentials/index.js";
import { FILE_LIMITS, readBoundedFile, ReadFileError } from "../../../src/io/read-file.js";
import { CLI, cliEnv, runCli, type CliResult } from "../../support/cli.js";
import { assertOneLineError } from "./suite.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-inputs-"));
const fifo = join(dir, "fifo.json");
execFileSync("mkfifo", [fifo]);

/** A sparse file of `size` bytes (no disk or memory spent on it). */
function sparse(name: string, size: number): string {
  const p = join(dir, name);
  const fd = openSync(p, "w");
  ftruncateSync(fd, size);
  closeSync(fd);
  return p;
}

/** Like runCli, but killed after 10 s: the code before this change hung on a FIFO. */
function runBounded(args: string[], env: Record<string, string> = {}): CliResult {
  const r = spawnSync(process.execPath, [CLI, ...args], { env: cliEnv(env), encoding: "utf8", timeout: 10_000, stdio: ["ignore", "pipe", "pipe"] });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const settings = ["--bucket", "in-bucket", "--endpoint", `file://${dir}/store`];

describe("the bounded reader", () => {
  it("refuses a FIFO, a device and a directory by their kind, and a file over the limit by its size", () => {
    const problem = (f: string, limit = 1024): string => {
      try {
        readBoundedFile(f, limit);
      } catch (e) {
        assert.ok(e instanceof ReadFileError);
        return e.message;
      }
      return "read";
    };
    assert.equal(problem(fifo), `cannot read ${fifo}: is a FIFO (named pipe), not a regular file`);
    assert.equal(problem("/dev/zero"), "cannot read /dev/zero: is a character device, not a regular file");
    assert.equal(problem(dir), `cannot read ${dir}: is a directory`);
    assert.equal(problem(sparse("big.bin", 2048)), `cannot read ${join(dir, "big.bin")}: is larger than the limit of 1024 bytes (2048 bytes)`);
    assert.equal(problem(join(dir, "absent")), `cannot read ${join(dir, "absent")}: no such file`);
    const ok = join(dir, "ok.json");
    writeFileSync(ok, "x".repeat(1024));
    assert.equal(readBoundedFile(ok, 1024).bytes.length, 1024);
  });

  it("documents its limits: a state file 5 GiB (one PutObject), a state on standard input 500 MiB, config 16 MiB, credentials 1 MiB", () => {
    assert.deepEqual(FILE_LIMITS, { state: 500 * 1024 * 1024, stateFile: 5 * 1024 * 1024 * 1024, config: 16 * 1024 * 1024, credentials: 1024 * 1024 });
  });
});

describe("the CLI refuses files it cannot read at once: one line, exit 2", () => {
  const cases: [string, string[], RegExp][] = [
    ["--config FIFO", ["config", "--config", fifo], /cannot read .*fifo\.json: is a FIFO \(named pipe\), not a regular file\n/],
    ["--config /dev/zero", ["config", "--config", "/dev/zero"], /cannot read \/dev\/zero: is a character device, not a regular file\n/],
    ["synth FIFO", ["synth", fifo], /cannot read .*fifo\.json: is a FIFO/],
    ["synth /dev/zero", ["synth", "/dev/zero"], /cannot read \/dev\/zero: is a character device/],
    ["state push FIFO", ["state", "push", fifo, ...settings], /cannot read .*fifo\.json: is a FIFO/],
    ["state push /dev/zero", ["state", "push", "/dev/zero", ...settings], /cannot read \/dev\/zero: is a character device/],
    [
      "oversized --config",
      ["config", "--config", sparse("config-17m.json", 17 * 1024 * 1024)],
      /cannot read .*config-17m\.json: is larger than the limit of 16 MiB/,
    ],
    [
      "oversized state",
      ["state", "push", sparse("state-5g.json", 5 * 1024 * 1024 * 1024 + 1), ...settings],
      /cannot read .*state-5g\.json: is larger than the limit of 5 GiB \(5368709121 bytes\)\n/,
    ],
    // Over 512 MiB is no longer refused by size: it is checked (here: stopped at its first byte). The
    // library checks it once connected: a lock table keeps connect's "not locked" warning away.
    [
      "state over 512 MiB is checked, not refused",
      ["state", "push", sparse("state-600m.json", 600 * 1024 * 1024), ...settings, "--kvstore-table", "locks", "--kvstore-endpoint", `file://${dir}/table`],
      /the state to write to workspace "default" is not valid JSON at line 1, column 1: unexpected control character \(U\+0000\)/,
    ],
  ];
  for (const [name, args, pattern] of cases) {
    it(name, () => {
      const r = runBounded(args);
      assert.equal(r.code, 2, r.stderr);
      assertOneLineError(r, pattern);
    });
  }

  it("standard input (-) still works for --config, synth and state push", () => {
    const cfg = runCli(["config", "--json", "--config", "-"], { input: '{"bucket": "from-stdin"}' });
    assert.equal(cfg.code, 0, cfg.stderr);
    assert.equal((JSON.parse(cfg.stdout) as { settings: { bucket: { value: string } } }).settings.bucket.value, "from-stdin");
    const push = runCli(["state", "push", "-", ...settings], { input: '{"version": 4, "serial": 1}' });
    assert.equal(push.code, 0, push.stderr);
  });

  it("standard input is bounded too: more than 16 MiB for --config is refused", () => {
    const r = runCli(["config", "--config", "-"], { input: Buffer.alloc(16 * 1024 * 1024 + 10, 0x20) });
    assert.equal(r.code, 2, r.stderr);
    assertOneLineError(r, /cannot read standard input: is larger than the limit of 16 MiB/);
  });

  it("a state on standard input over 500 MiB is refused, saying why (held in memory) and what to do instead", () => {
    // A shell pipe: 500 MiB + 1 byte of spaces never sits in this test's memory.
    const r = spawnSync(
      "sh",
      ["-c", `head -c ${500 * 1024 * 1024 + 1} /dev/zero | tr '\\0' ' ' | "$0" "$@"`, process.execPath, CLI, "state", "push", "-", ...settings],
      {
        env: cliEnv(),
        encoding: "utf8",
        // A hang guard: piping 500 MiB through tr takes over a minute on a loaded machine.
        timeout: 170_000,
      },
    );
    assert.equal(r.status, 2, r.stderr);
    assertOneLineError(
      { code: r.status, stdout: r.stdout, stderr: r.stderr },
      /cannot read standard input: is larger than the limit of 500 MiB .*standard input cannot be read twice.* save the state to a file and push the file\n$/,
    );
  });
});

describe("the shared credentials file", () => {
  const B = (p: Record<string, unknown>): ObjectStoreBackendConfig => ObjectStoreBackendConfig.from({ bucket: "state-bucket", profile: "ak", ...p } as never);
  const profiles = JSON.stringify({ profiles: [{ name: "ak", mode: "AK", access_key_id: "AK1", access_key_secret: "SK1" }] });

  for (const [name, file, pattern] of [
    ["a FIFO", fifo, /fifo\.json: is a FIFO \(named pipe\), not a regular file/],
    ["a device", "/dev/zero", /\/dev\/zero: is a character device, not a regular file/],
    ["over 1 MiB", sparse("creds-2m.json", 2 * 1024 * 1024), /creds-2m\.json: is larger than the limit of 1 MiB/],
  ] as const) {
    it(`${name} is CREDENTIALS_FILE_INVALID at once`, () => {
      assert.throws(
        () => resolveEffectiveSettings(B({ sharedCredentialsFile: file }), {}),
        (e: unknown) => isObjstateError(e, "CREDENTIALS_FILE_INVALID") && pattern.test(e.message),
      );
    });
  }

  it("a file other users can change draws a warning, like one they can read", () => {
    const f = join(dir, "creds-writable.json");
    writeFileSync(f, profiles);
    chmodSync(f, 0o620);
    const warnings: [string, string][] = [];
    resolveEffectiveSettings(B({ sharedCredentialsFile: f }), {}, { onWarning: (m, c) => warnings.push([m, c]) });
    assert.deepEqual(warnings, [
      [`shared credentials file ${f} can be changed by other users; restrict it with chmod 600 ${f}`, "OBJSTATE_CREDENTIALS_FILE_WRITABLE"],
    ]);
    chmodSync(f, 0o666);
    warnings.length = 0;
    resolveEffectiveSettings(B({ sharedCredentialsFile: f }), {}, { onWarning: (m, c) => warnings.push([m, c]) });
    assert.deepEqual(warnings, [
      [`shared credentials file ${f} can be read and changed by other users; restrict it with chmod 600 ${f}`, "OBJSTATE_CREDENTIALS_FILE_READABLE"],
    ]);
    chmodSync(f, 0o600);
    warnings.length = 0;
    resolveEffectiveSettings(B({ sharedCredentialsFile: f }), {}, { onWarning: (m, c) => warnings.push([m, c]) });
    assert.deepEqual(warnings, []);
  });

  it("CREDENTIALS_FILE_INVALID exits 2 (bad input) at the CLI", () => {
    // The embedded store needs no credentials: an HTTP endpoint (never contacted) makes the chain run.
    const http = runBounded(["state", "pull", "--bucket", "in-bucket", "--endpoint", "http://127.0.0.1:9"], {
      PROVIDER_PROFILE: "ak",
      PROVIDER_SHARED_CREDENTIALS_FILE: fifo,
    });
    assert.equal(http.code, 2, http.stderr);
    assertOneLineError(http, /shared credentials file .*fifo\.json: is a FIFO/);
  });
});
