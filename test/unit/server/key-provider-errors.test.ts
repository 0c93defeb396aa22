/**
 * `objstate serve` at rest with an external key provider (a real process over the embedded
 * store): when the program fails, what it wrote on standard error (a token, an internal
 * address) goes to the server's log only; HTTP clients (an `outputs`-only user included)
 * get a generic message with a reference that the log line carries too. The CLI, run by the
 * operator, still shows the detail.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { hashPassword } from "../../../src/server/users.js";
import { runCli, startServeProcess, type ServeProcess } from "../../support/cli.js";
import { rawRequest, toolState, type Reply } from "../../support/http-backend-client.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";

const SECRET_LINE = "token hvs.CAESIJ7fKq2-not-for-clients rejected at https://vault.internal:8200";
const KEY_B64 = Buffer.alloc(32, 7).toString("base64");

describe("objstate serve at rest: an external key provider's failure", () => {
  let serve: ServeProcess;
  let child: ChildProcess;
  let dir: string;
  let configFile: string;
  let encryption: string;
  const ws = uniqueName("kms");
  const admin = { username: "admin", password: "admin-password" };
  const viewer = { username: "viewer", password: "viewer-password" };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "objstate-kms-"));
    // Gives a key to encrypt with; refuses every decryption, saying too much on standard error.
    const program = join(dir, "kms.mjs");
    writeFileSync(
      program,
      `process.stdout.write(JSON.stringify({ magic: "OpenTofu-External-Key-Provider", version: 1 }) + "\\n");
let input = "";
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => {
  if (input.trim() === "null") { process.stdout.write(JSON.stringify({ keys: { encryption_key: ${JSON.stringify(KEY_B64)} }, meta: { external_data: { kid: "k1" } } })); return; }
  process.stderr.write(${JSON.stringify(SECRET_LINE)} + "\\n");
  process.exit(1);
});
`,
    );
    encryption = JSON.stringify({
      key_provider: { external: { kms: { command: [process.execPath, program] } } },
      method: { aes_gcm: { main: { keys: "key_provider.external.kms" } } },
      state: { method: "method.aes_gcm.main" },
    });
    const cheap = { N: 1024, r: 8, p: 1 };
    const usersFile = join(dir, "users.json");
    writeFileSync(
      usersFile,
      JSON.stringify({
        users: {
          admin: { password: await hashPassword(admin.password, cheap), roles: { "*": ["admin"] } },
          viewer: { password: await hashPassword(viewer.password, cheap), roles: { "*": ["outputs"] } },
        },
      }),
    );
    chmodSync(usersFile, 0o600);
    const props = await embeddedTarget().setup({ locks: true });
    configFile = join(dir, "backend.json");
    writeFileSync(configFile, JSON.stringify(props));
    serve = await startServeProcess(["--config", configFile, "--users", usersFile, "--log-level", "info", "--allow-unlocked-writes"], {
      TF_ENCRYPTION: encryption,
    });
    child = serve.child;
    const wrote = await rawRequest(serve.url, "POST", `/state/${ws}`, toolState(1, "kms-lineage", { region: { value: "eu-west-1", type: "string" } }), admin);
    assert.equal(wrote.status, 200, wrote.body.toString());
  });
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });

  /** The reference an answer names, after checking it says nothing of the program's standard error. */
  function referenceIn(r: Reply): string {
    const text = r.body.toString();
    assert.ok(!text.includes("hvs.") && !text.includes("vault.internal"), `the answer quotes the program's standard error: ${text}`);
    const ref = /under reference ([0-9a-f]+)/.exec(text)?.[1];
    assert.ok(ref !== undefined, `the answer names a reference: ${text}`);
    return ref;
  }

  /** The server's log line with `ref`, once it was written. */
  async function logLine(ref: string): Promise<Record<string, unknown>> {
    for (;;) {
      const line = serve
        .stderr()
        .split("\n")
        .find((l) => l.includes(`"ref":"${ref}"`));
      if (line !== undefined) return JSON.parse(line) as Record<string, unknown>;
      await new Promise((r) => setImmediate(r));
    }
  }

  it("GET /state, /api/v1 outputs (an outputs-only user) and the console's Workspace page: a generic message and a reference; the log has the detail under it", async () => {
    const answers: [string, Reply][] = [
      ["state", await rawRequest(serve.url, "GET", `/state/${ws}`, undefined, admin)],
      ["outputs", await rawRequest(serve.url, "GET", `/api/v1/workspaces/${ws}/outputs`, undefined, viewer)],
      ["console", await rawRequest(serve.url, "GET", `/workspaces/${ws}`, undefined, viewer, { Accept: "text/html" })],
    ];
    const refs = new Set<string>();
    for (const [name, r] of answers) {
      assert.equal(r.status, 502, `${name}: ${r.body.toString()}`);
      if (name !== "console") assert.equal((JSON.parse(r.body.toString()) as { code: string }).code, "ENCRYPTION_KEY_PROVIDER_FAILED");
      const ref = referenceIn(r);
      refs.add(ref);
      const line = await logLine(ref);
      assert.equal(line["msg"], "key provider failed");
      if (name !== "console") assert.equal(line["workspace"], ws);
      assert.match(String(line["detail"]), new RegExp(SECRET_LINE.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
    }
    assert.equal(refs.size, answers.length, "a reference of its own per failure");
  });

  it("the CLI (the operator's own terminal) still shows what the program said", () => {
    const r = runCli(["state", "pull", "--config", configFile, "-w", ws], { env: { TF_ENCRYPTION: encryption } });
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes(SECRET_LINE), r.stderr);
  });
});
