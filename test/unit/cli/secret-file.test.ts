/**
 * `objstate serve --secret-file FILE`: the console's form secret shared by replicas. A form
 * token one replica issued verifies on another given the same file, not on one given
 * another; a file others may read or change, a short secret or a missing file is refused
 * before anything starts, without printing the secret.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { isObjstateError } from "../../../src/errors.js";
import { formKeyOf, MIN_SECRET_BYTES, readSecretFile } from "../../../src/cli/secret-file.js";
import { runCli, startCli, type RunningCli, loopbackAddress } from "../../support/cli.js";

const STORE = ["--bucket", "secret-file", "--endpoint", "file:./s", "--kvstore-endpoint", "file:./s", "--kvstore-table", "locks"];
const SECRET = "k7Qp2vXw9LmZ4rT8yB1nC6dF3gH5jK0aS2eU7iO9pQwE4rT6yU8iO1pA3sD5fG7h";

function secretFile(dir: string, name: string, text: string, mode = 0o600): string {
  const file = join(dir, name);
  writeFileSync(file, text, { mode });
  chmodSync(file, mode); // the umask may have taken bits off the mode asked for
  return file;
}

async function replica(cwd: string, file: string): Promise<{ cli: RunningCli; url: string }> {
  const cli = startCli(["serve", ...STORE, "--listen", await loopbackAddress(), "--log-level", "off", "--secret-file", file], { cwd });
  await cli.stderrMatches(/at http:\/\/127\.0\.0\.1:\d+\/state\/\{workspace\}/);
  return { cli, url: /at (http:\/\/127\.0\.0\.1:\d+)\/state/.exec(cli.stderrSoFar())?.[1] as string };
}

/** Post the console's force-unlock form to `url` as its own page would. */
function postForceUnlock(url: string, fields: Record<string, string>): Promise<Response> {
  return fetch(`${url}/workspaces/default/force-unlock`, {
    method: "POST",
    headers: { origin: url, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
    redirect: "manual",
  });
}

describe("serve --secret-file", () => {
  it("replicas given the same file accept each other's form tokens; a replica given another does not", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-secret-file-"));
    const shared = secretFile(cwd, "shared.key", `${SECRET}\n`);
    const other = secretFile(cwd, "other.key", `${SECRET.split("").reverse().join("")}\n`);
    const id = runCli(["lock", ...STORE], { cwd }).stdout.trim();
    assert.match(id, /^[0-9a-f-]{36}$/);
    const replicas: { cli: RunningCli; url: string }[] = [];
    try {
      for (const file of [shared, shared, other]) replicas.push(await replica(cwd, file));
      const [a, b, c] = replicas.map((r) => r.url) as [string, string, string];
      const page = await (await fetch(`${a}/workspaces/default/force-unlock?id=${id}`)).text();
      const token = /name="csrf" value="([^"]+)"/.exec(page)?.[1] as string;
      assert.ok(token !== undefined, "the confirmation carries a form token");
      const fields = { csrf: token, id, confirm: "default" };
      const refused = await postForceUnlock(c, fields);
      assert.equal(refused.status, 403, "another secret: the token does not verify");
      assert.match(await refused.text(), /the form&#39;s token is missing or has expired/);
      assert.equal(runCli(["lock", ...STORE], { cwd }).code, 3, "the lock is still held");
      const accepted = await postForceUnlock(b, fields);
      assert.equal(accepted.status, 303, await accepted.text());
      assert.equal(accepted.headers.get("location"), "/workspaces/default?done=force-unlock");
      const taken = runCli(["lock", ...STORE], { cwd });
      assert.equal(taken.code, 0, "released through the other replica");
      assert.equal(runCli(["unlock", taken.stdout.trim(), ...STORE], { cwd }).code, 0);
    } finally {
      for (const r of replicas) r.cli.kill();
      const stderr = (await Promise.all(replicas.map((r) => r.cli.done))).map((d) => d.stderr).join("");
      assert.ok(!stderr.includes(SECRET.slice(0, 16)), "the secret is never printed");
    }
  });

  it("refuses a file others may read or change, a short secret, and a missing file (exit 2, before serving), naming the file and the fix", () => {
    const cwd = mkdtempSync(join(tmpdir(), "objstate-secret-file-"));
    const serve = (file: string) => runCli(["serve", ...STORE, "--listen", "127.0.0.1:0", "--secret-file", file], { cwd });
    const open = secretFile(cwd, "open.key", SECRET, 0o644);
    const r = serve(open);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      `objstate: error: --secret-file ${open} can be read or changed by other users (mode 0644): a secret must be its owner's alone; run chmod 600 ${open}\n`,
    );
    assert.match(serve(secretFile(cwd, "group-writable.key", SECRET, 0o620)).stderr, /\(mode 0620\).*chmod 600/);
    const short = secretFile(cwd, "short.key", `${"s".repeat(MIN_SECRET_BYTES - 1)}\n`);
    const s = serve(short);
    assert.equal(s.code, 2);
    assert.equal(
      s.stderr,
      `objstate: error: --secret-file ${short} holds 31 bytes of secret; at least 32 are needed: make one with (umask 077; openssl rand -base64 48 > ${short})\n`,
    );
    const missing = serve(join(cwd, "missing.key"));
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot read --secret-file .*missing\.key: it does not exist/);
    mkdirSync(join(cwd, "dir.key"));
    assert.match(serve(join(cwd, "dir.key")).stderr, /cannot read --secret-file .*dir\.key: it is a directory/);
    for (const out of [r.stderr, s.stderr]) assert.ok(!out.includes(SECRET.slice(0, 8)) && !out.includes("ssss"), "no secret in the message");
  });

  it("surrounding whitespace is not part of the secret (a trailing newline must not split a fleet); the key is derived, not the secret itself", () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-secret-file-"));
    const a = readSecretFile(secretFile(dir, "a", SECRET));
    const b = readSecretFile(secretFile(dir, "b", ` ${SECRET}\r\n\n`));
    assert.deepEqual(b, a);
    assert.deepEqual(formKeyOf(b), formKeyOf(a));
    assert.notDeepEqual(formKeyOf(a), Buffer.from(SECRET));
    assert.notDeepEqual(formKeyOf(readSecretFile(secretFile(dir, "c", `${SECRET}x`))), formKeyOf(a));
    // Windows has no group and other mode bits: the check is left out there.
    assert.deepEqual(readSecretFile(secretFile(dir, "d", SECRET, 0o644), "win32"), a);
    assert.throws(
      () => readSecretFile(secretFile(dir, "e", SECRET, 0o640)),
      (e) => isObjstateError(e, "SECRET_FILE_OPEN"),
    );
    assert.throws(
      () => readSecretFile(secretFile(dir, "f", " \n")),
      (e) => isObjstateError(e, "SECRET_TOO_SHORT"),
    );
  });
});
