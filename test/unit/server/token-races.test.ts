/**
 * The tokens file under concurrent writers of different processes (issue 37): a running
 * `objstate serve` writes `last used` times after (nearly) every token request while the CLI's
 * `serve token create` and `revoke` change the file. None may undo another's change.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { listTokens } from "../../../src/server/identity/tokens.js";
import { runCli, startCli, startServeProcess } from "../../support/cli.js";

describe("objstate serve: the tokens file's writers", () => {
  it("a server flushing last-used times in a loop while the CLI creates and revokes tokens: every revoked token is refused, every created one is there and works", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-token-races-"));
    const users = join(dir, "users.json");
    const store = ["--bucket", "races", "--endpoint", `file:${dir}/s`, "--kvstore-endpoint", `file:${dir}/s`, "--kvstore-table", "locks"];
    assert.equal(runCli(["serve", "hash-password", "--user", "ci", "--users", users], { input: "p" }).code, 0);
    const create = async (): Promise<string> => {
      const r = await startCli(["serve", "token", "create", "--user", "ci", "--users", users]).done;
      assert.equal(r.code, 0, r.stderr);
      return r.stdout.trim();
    };
    const idOf = (token: string): string => token.slice(6, 18);
    const busy = [await create(), await create()];
    // Every token request arms a flush 5 ms later: the server rewrites the file all the time.
    const server = await startServeProcess([...store, "--users", users, "--log-level", "off"], { OBJSTATE_TEST_TOKEN_FLUSH_MS: "5" });
    const status = async (token: string): Promise<number> =>
      (await fetch(`${server.url}/state/races`, { headers: { authorization: `Bearer ${token}` } })).status;
    let running = true;
    const load = (async () => {
      while (running) await Promise.all(busy.map(status));
    })();
    const kept: string[] = [];
    const revoked: string[] = [];
    try {
      // Each round: two creates and a revoke of the last round's second token, all at once.
      let next = await create();
      for (let i = 0; i < 15; i++) {
        const [made, after, r] = await Promise.all([create(), create(), startCli(["serve", "token", "revoke", idOf(next), "--users", users]).done]);
        assert.equal(r.code, 0, r.stderr);
        revoked.push(next);
        kept.push(made);
        next = after;
      }
      kept.push(next);
      running = false;
      await load;
      const file = new Map(listTokens(join(dir, "users.tokens.json")).map((t) => [t.id, t]));
      for (const t of revoked) assert.ok(file.get(idOf(t))?.revoked !== undefined, `token ${idOf(t)} was revoked, and the file says so`);
      for (const t of kept) assert.ok(file.get(idOf(t)) !== undefined && file.get(idOf(t))?.revoked === undefined, `token ${idOf(t)} was created`);
      for (const t of revoked) assert.equal(await status(t), 401, `revoked token ${idOf(t)} is refused`);
      for (const t of kept) assert.equal(await status(t), 204, `token ${idOf(t)} works`);
      assert.ok(
        busy.every((t) => file.get(idOf(t))?.lastUsed !== undefined),
        "the server did write last-used times meanwhile",
      );
    } finally {
      running = false;
      await load;
      server.child.kill("SIGTERM");
      await server.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
