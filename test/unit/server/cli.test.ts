/** `objstate serve` and `objstate serve hash-password` as a user runs them. */
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseUsers, verifyPassword } from "../../../src/server/users.js";
import { runCli, startCli, loopbackAddress } from "../../support/cli.js";
import { rawRequest } from "../../support/http-backend-client.js";
import { listenLow } from "../../support/port.js";

const STORE = ["--bucket", "serve-cli", "--endpoint", "file:./s", "--kvstore-endpoint", "file:./s", "--kvstore-table", "locks"];

/** `objstate serve ARGS` that must refuse to start: fails (rather than waits) if it serves. */
async function refusedAtStart(args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  const s = startCli(["serve", ...args, "--listen", await loopbackAddress(), "--log-level", "off"], { cwd });
  if (
    await s.stderrMatches(/serving /).then(
      () => true,
      () => false,
    )
  ) {
    s.kill();
    await s.done;
    assert.fail(`serve ${args.join(" ")} started`);
  }
  return s.done;
}

describe("objstate serve (CLI)", () => {
  it("refuses a non-loopback address without --users, naming both ways out", () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const r = runCli(["serve", ...STORE, "--listen", "0.0.0.0:0"], { cwd });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /not a loopback address and there is no --users file: give --users FILE .* or --insecure-no-auth/);
  });

  it("without --users it serves loopback only and says so; SIGTERM stops it with exit 0", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const s = startCli(["serve", ...STORE, "--listen", await loopbackAddress(), "--log-level", "off"], { cwd });
    await s.stderrMatches(/serving serve-cli\/env:\/tool\.tfstate at http:\/\/127\.0\.0\.1:\d+\/state\/\{workspace\}/);
    s.kill();
    const r = await s.done;
    assert.equal(r.code, 0);
    assert.match(r.stderr, /warning: no --users file: serving on loopback only/);
  });

  it("a port in use is LISTEN_FAILED saying so and what to do, not a bare EADDRINUSE", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const taken = createNetServer();
    await listenLow(taken);
    const { port } = taken.address() as AddressInfo;
    try {
      const r = runCli(["serve", ...STORE, "--listen", `127.0.0.1:${port}`, "--log-level", "off"], { cwd });
      assert.equal(r.code, 2);
      assert.match(r.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: port ${port} is in use .*--listen 127\\.0\\.0\\.1:PORT`));
      assert.doesNotMatch(r.stderr, /EADDRINUSE/);
    } finally {
      taken.close();
    }
  });

  it("serves the web console at / unless --no-console", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    for (const [flags, status] of [
      [[], 200],
      [["--no-console"], 404],
    ] as const) {
      const s = startCli(["serve", ...STORE, "--listen", await loopbackAddress(), "--log-level", "off", ...flags], { cwd });
      try {
        await s.stderrMatches(/at (http:\/\/127\.0\.0\.1:\d+)\/state\/\{workspace\}/);
        const url = /at (http:\/\/127\.0\.0\.1:\d+)\/state/.exec(s.stderrSoFar())?.[1] as string;
        assert.match(s.stderrSoFar(), status === 200 ? /web console at http:/ : /no web console: --no-console/);
        const r = await fetch(`${url}/`);
        assert.equal(r.status, status, flags.join(" "));
        await r.arrayBuffer();
      } finally {
        s.kill();
        await s.done;
      }
    }
  });

  it("refuses --tls-cert without --tls-key, and a bad --max-state-size", () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    assert.match(runCli(["serve", ...STORE, "--tls-cert", "c.pem"], { cwd }).stderr, /--tls-cert and --tls-key go together/);
    assert.match(runCli(["serve", ...STORE, "--max-state-size", "huge"], { cwd }).stderr, /--max-state-size must be a size/);
  });

  it("--max-connections-per-client caps a running server's connections from one address; bad counts are usage errors", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    for (const [flag, value] of [
      ["--max-connections", "0"],
      ["--max-connections-per-client", "many"],
    ]) {
      const bad = runCli(["serve", ...STORE, flag as string, value as string], { cwd });
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, new RegExp(`${flag} must be a whole number of at least 1`));
    }
    const s = startCli(["serve", ...STORE, "--listen", await loopbackAddress(), "--log-level", "off", "--max-connections-per-client", "1"], { cwd });
    const held: Socket[] = [];
    try {
      await s.stderrMatches(/at (http:\/\/127\.0\.0\.1:\d+)\/state\/\{workspace\}/);
      const port = Number(/at http:\/\/127\.0\.0\.1:(\d+)\/state/.exec(s.stderrSoFar())?.[1]);
      const status = (localAddress: string): Promise<string> =>
        new Promise((resolve) => {
          const sock = netConnect({ port, host: "127.0.0.1", localAddress }, () => sock.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
          held.push(sock);
          sock.on("error", () => undefined);
          sock.once("data", (d) => resolve(d.toString("latin1").slice(0, 12)));
          sock.once("close", () => resolve("closed"));
        });
      assert.equal(await status("127.0.0.2"), "HTTP/1.1 200");
      assert.equal(await status("127.0.0.2"), "closed");
      assert.equal(await status("127.0.0.3"), "HTTP/1.1 200");
    } finally {
      for (const c of held) c.destroy();
      s.kill();
      await s.done;
    }
  });

  it("hash-password reads the password from stdin and adds the user with its roles to the users file (mode 600)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const file = join(dir, "users.json");
    const r = runCli(["serve", "hash-password", "--user", "ci", "--role", "staging-*=read,write,lock", "--role", "*=read", "--users", file], {
      input: "s3cret pass\n",
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /user ci added in/);
    assert.ok(!r.stderr.includes("s3cret") && !r.stdout.includes("s3cret"));
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const r2 = runCli(["serve", "hash-password", "--user", "ops", "--role", "*=admin", "--users", file], { input: "other" });
    assert.equal(r2.code, 0, r2.stderr);
    const users = parseUsers(readFileSync(file, "utf8"), file);
    assert.deepEqual([...users.keys()], ["ci", "ops"]);
    assert.equal(await verifyPassword("s3cret pass", users.get("ci")?.password), true);
    assert.deepEqual([...(users.get("ci")?.grants.map((g) => g.glob) ?? [])], ["staging-*", "*"]);
    const consumer = runCli(["serve", "hash-password", "--user", "tf", "--role", "*=outputs", "--users", file], { input: "p" });
    assert.equal(consumer.code, 0, consumer.stderr);
    assert.deepEqual([...(parseUsers(readFileSync(file, "utf8"), file).get("tf")?.grants[0]?.roles ?? [])], ["outputs"]);
    const bad = runCli(["serve", "hash-password", "--user", "x", "--role", "*=root"], { input: "p" });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--role must be GLOB=ROLE/);
  });

  it("hash-password fixes an existing users file that others may read (chmod 600) and says so", () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const file = join(dir, "users.json");
    assert.equal(runCli(["serve", "hash-password", "--user", "ci", "--users", file], { input: "p1" }).code, 0);
    chmodSync(file, 0o644);
    const r = runCli(["serve", "hash-password", "--user", "ops", "--users", file], { input: "p2" });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.ok(r.stderr.includes(`${file} had mode 0644 (its group or others could read or change it): changed it to 0600`), r.stderr);
    const quiet = runCli(["serve", "hash-password", "--user", "dev", "--users", file], { input: "p3" });
    assert.doesNotMatch(quiet.stderr, /mode/, "nothing to fix, nothing said");
  });

  it("serve refuses a users file its group or others may read or write, naming the file, its mode and the chmod 600 fix; 600 starts", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const file = join(cwd, "users.json");
    assert.equal(runCli(["serve", "hash-password", "--user", "ci", "--users", file], { input: "p" }).code, 0);
    for (const mode of [0o644, 0o620, 0o604]) {
      chmodSync(file, mode);
      const s = startCli(["serve", ...STORE, "--listen", await loopbackAddress(), "--log-level", "off", "--users", file], { cwd });
      if (
        await s.stderrMatches(/serving serve-cli/).then(
          () => true,
          () => false,
        )
      ) {
        s.kill();
        await s.done;
        assert.fail(`serve started with a users file of mode 0${mode.toString(8)}`);
      }
      const r = await s.done;
      assert.equal(r.code, 2, r.stderr);
      assert.ok(r.stderr.includes(`users file ${file} has mode 0${mode.toString(8)}`), r.stderr);
      assert.ok(r.stderr.includes(`chmod 600 ${file}`), r.stderr);
    }
    chmodSync(file, 0o600);
    const s = startCli(["serve", ...STORE, "--listen", await loopbackAddress(), "--log-level", "off", "--users", file], { cwd });
    try {
      await s.stderrMatches(/serving serve-cli/);
    } finally {
      s.kill();
      await s.done;
    }
  });

  it("a tokens file, or a directory of the users and tokens files, its group or others may change is refused at start, by token create, and by a running server, naming the file and the chmod fix", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const file = join(cwd, "users.json");
    const tokens = join(cwd, "users.tokens.json");
    assert.equal(runCli(["serve", "hash-password", "--user", "ci", "--users", file], { input: "p" }).code, 0);
    const made = runCli(["serve", "token", "create", "--user", "ci", "--users", file]);
    assert.equal(made.code, 0, made.stderr);
    const token = made.stdout.trim();
    chmodSync(tokens, 0o666);
    const r = await refusedAtStart([...STORE, "--users", file], cwd);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(`tokens file ${tokens} has mode 0666`) && r.stderr.includes(`chmod 600 ${tokens}`), r.stderr);
    const create = runCli(["serve", "token", "create", "--user", "ci", "--users", file]);
    assert.equal(create.code, 2, create.stderr);
    assert.ok(create.stderr.includes(`chmod 600 ${tokens}`), create.stderr);
    chmodSync(tokens, 0o600);
    chmodSync(cwd, 0o777);
    try {
      const d = await refusedAtStart([...STORE, "--users", file], cwd);
      assert.equal(d.code, 2, d.stderr);
      assert.ok(d.stderr.includes(`the directory ${cwd} of users file ${file} has mode 0777`) && d.stderr.includes(`chmod go-w ${cwd}`), d.stderr);
    } finally {
      chmodSync(cwd, 0o700);
    }
    const s = startCli(["serve", ...STORE, "--listen", await loopbackAddress(), "--log-level", "off", "--users", file], { cwd });
    try {
      await s.stderrMatches(/at (http:\/\/127\.0\.0\.1:\d+)\/state\/\{workspace\}/);
      const base = /at (http:\/\/127\.0\.0\.1:\d+)\/state/.exec(s.stderrSoFar())?.[1] as string;
      const get = (): Promise<Response> => fetch(`${base}/state/tok`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal((await get()).status, 204);
      chmodSync(tokens, 0o622);
      const refused = await get();
      assert.equal(refused.status, 500);
      assert.match(await refused.text(), /TOKENS_FILE_PERMISSIONS.*has mode 0622.*chmod 600/);
      chmodSync(tokens, 0o600);
      assert.equal((await get()).status, 204);
    } finally {
      s.kill();
      await s.done;
    }
  });

  it("serve refuses a users file that is missing or not a users file with exit 2 (bad input, like its mode), naming the file", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const broken = join(cwd, "broken.json");
    writeFileSync(broken, "{", { mode: 0o600 });
    // An identity rule named like a user: one name, two principals.
    const clash = join(cwd, "clash.json");
    const rule = { name: "ci", issuer: "https://token.actions.githubusercontent.com", audience: "objstate", roles: { "*": ["read"] } };
    writeFileSync(clash, JSON.stringify({ users: { ci: { roles: { "*": ["read"] } } }, identities: [rule] }), { mode: 0o600 });
    for (const [file, code] of [
      [broken, "USERS_FILE_INVALID"],
      [clash, 'identities[0]: name "ci" is also a user'],
      [join(cwd, "absent.json"), "USERS_FILE_UNREADABLE"],
    ] as const) {
      const r = await refusedAtStart([...STORE, "--users", file], cwd);
      assert.equal(r.code, 2, `${code}: ${r.stderr}`);
      assert.ok(r.stderr.includes(file), r.stderr);
      if (file === clash) assert.ok(r.stderr.includes(code), r.stderr);
    }
  });

  it("serve takes no lease: --lock-ttl (or lockTtl in --config) is refused by name, and not offered in its help", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const flag = await refusedAtStart([...STORE, "--lock-ttl", "10m"], cwd);
    assert.equal(flag.code, 2, flag.stderr);
    assert.match(
      flag.stderr,
      /objstate serve takes no lease \(--lock-ttl, or lockTtl in the --config file's objstate section\): the tool's http client cannot renew one/,
    );
    assert.match(flag.stderr, /Remove it/);
    writeFileSync(
      join(cwd, "c.json"),
      JSON.stringify({ bucket: "serve-cli", endpoint: "file:./s", kvstoreEndpoint: "file:./s", kvstoreTable: "locks", objstate: { lockTtl: "1h" } }),
    );
    const file = await refusedAtStart(["--config", "c.json"], cwd);
    assert.equal(file.code, 2, file.stderr);
    assert.match(file.stderr, /objstate serve takes no lease/);
    const help = runCli(["serve", "--help"], { cwd });
    assert.doesNotMatch(help.stdout, /--lock-ttl/);
    assert.match(help.stdout, /--allow-unlocked-writes/);
    // Other commands still offer it, and say objstate renews it.
    assert.match(runCli(["lock", "--help"], { cwd }).stdout, /--lock-ttl <duration> +locks this command takes expire unless renewed \(objstate renews them/);
  });

  it("without a lock table serve starts only with --allow-unlocked-writes; a write without ?ID is refused unless that flag is given; a force-unlock is a warn line with the user and the lock ID", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-serve-cli-"));
    const bare = ["--bucket", "serve-cli", "--endpoint", "file:./s"];
    const refused = await refusedAtStart(bare, cwd);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(
      refused.stderr,
      /no lock table is configured \(kvstoreTable, or --lockfile\): every write through this server would be unlocked.*--allow-unlocked-writes/,
    );
    const state = Buffer.from('{"version":4,"serial":1,"lineage":"cli","outputs":{},"resources":[]}');
    for (const [flags, status] of [
      [[...bare, "--allow-unlocked-writes"], 200],
      [STORE, 409],
      [[...STORE, "--allow-unlocked-writes"], 200],
    ] as const) {
      const s = startCli(["serve", ...flags, "--listen", await loopbackAddress(), "--log-level", "warn"], { cwd });
      try {
        await s.stderrMatches(/at (http:\/\/127\.0\.0\.1:\d+)\/state\/\{workspace\}/);
        const url = /at (http:\/\/127\.0\.0\.1:\d+)\/state/.exec(s.stderrSoFar())?.[1] as string;
        const r = await rawRequest(url, "POST", `/state/cli-${status}`, state);
        assert.equal(r.status, status, `${flags.join(" ")}: ${r.body.toString()}`);
        if (status === 409) assert.equal((JSON.parse(r.body.toString()) as { lock_address: string }).lock_address, `${url}/state/cli-409`);
        if (flags.includes("--allow-unlocked-writes"))
          assert.match(
            s.stderrSoFar(),
            /warning: (no lock table is configured \(--allow-unlocked-writes\)|--allow-unlocked-writes: a client without lock_address)/,
          );
        if (flags === STORE) {
          const lock = {
            ID: "11111111-2222-3333-4444-555555555555",
            Operation: "OperationTypeApply",
            Info: "",
            Who: "a@h",
            Version: "1.9.0",
            Created: new Date().toISOString(),
            Path: "",
          };
          assert.equal((await rawRequest(url, "LOCK", "/state/held", Buffer.from(JSON.stringify(lock)))).status, 200);
          assert.equal((await rawRequest(url, "UNLOCK", "/state/held", Buffer.alloc(0))).status, 200);
          await s.stderrMatches(/"level":"warn","msg":"force-unlock"/);
          const line = JSON.parse(
            s
              .stderrSoFar()
              .split("\n")
              .find((l) => l.includes('"msg":"force-unlock"')) as string,
          ) as Record<string, unknown>;
          assert.deepEqual([line["workspace"], line["principal"], line["via"], line["lockId"]], ["held", "anonymous", "none", lock.ID]);
        }
      } finally {
        s.kill();
        await s.done;
      }
    }
  });
});
