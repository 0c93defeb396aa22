/**
 * One JSON per object (docs/decisions/060): for the same workspaces of one embedded store
 * and lock table, the CLI's `--json` (the built `objstate`, as a subprocess) and the body of
 * the in-process server's `/api/v1` route print the same JSON — history, a lock, the lock
 * list, the workspace list, outputs (exact numbers, masked secrets) and a diff of versions —
 * once the API's envelope (`{workspace, versions}`, `{lock}` …) is taken off.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import type { ObjstateServer } from "../../../src/server/server.js";
import { runCli } from "../../support/cli.js";
import { rawRequest } from "../../support/http-backend-client.js";
import { startServer } from "../../support/server-fixture.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-wire-shapes-"));
const props = { bucket: "wire", endpoint: `file:${dir}`, prefix: "p", key: "s.tfstate", kvstoreEndpoint: `file:${dir}`, kvstoreTable: "locks" };
const STORE = [
  "--bucket",
  props.bucket,
  "--endpoint",
  props.endpoint,
  "--prefix",
  props.prefix,
  "--key",
  props.key,
  "--kvstore-endpoint",
  props.kvstoreEndpoint,
  "--kvstore-table",
  props.kvstoreTable,
];
const LINEAGE = "6d0c9a52-5b1c-4f7e-9a55-2f8a3a0c1d11";

/** A state with outputs that tell shapes apart: a number too precise for JS, a string with `<`, a secret. */
function state(serial: number, extra: Record<string, unknown> = {}): string {
  const outputs = {
    big: { value: 0, type: "number" },
    tag: { value: "<b>&", type: "string" },
    secret: { value: "hunter2", type: "string", sensitive: true },
    list: { value: [1, 2], type: ["list", "number"] },
    ...extra,
  };
  // The number goes in as text: 2^53 + 1 read through a JS number would print ...992.
  return JSON.stringify({ version: 4, terraform_version: "1.9.0", serial, lineage: LINEAGE, outputs, resources: [] }).replace(
    '"big":{"value":0',
    '"big":{"value":9007199254740993',
  );
}

function cli(args: string[]): unknown {
  const r = runCli([...args, ...STORE]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as unknown;
}

describe("the CLI's --json and /api/v1 print the same JSON for the same object", () => {
  let backend: ObjectStoreBackend;
  let server: ObjstateServer;
  const versions: string[] = [];

  const api = async (path: string): Promise<{ text: string; json: Record<string, unknown> }> => {
    const r = await rawRequest(server.url, "GET", path, undefined);
    assert.equal(r.status, 200, r.body.toString());
    const text = r.body.toString();
    return { text, json: JSON.parse(text) as Record<string, unknown> };
  };

  before(async () => {
    let n = 0;
    const push = (ws: string, body: string): void => {
      const file = join(dir, `state-${n++}.json`);
      writeFileSync(file, body);
      const r = runCli(["state", "push", file, "-w", ws, ...STORE]);
      assert.equal(r.code, 0, r.stderr);
    };
    push("prod", state(1));
    push("prod", state(2, { added: { value: "x", type: "string" } }));
    assert.equal(runCli(["workspace", "new", "staging", ...STORE]).code, 0);
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    server = await startServer(backend);
    for await (const v of backend.history("prod")) versions.push(v.versionId);
  });
  after(async () => {
    await server.close(500);
    backend.close();
  });

  it("history: `state history --json` versions = GET …/history versions", async () => {
    const c = cli(["state", "history", "-w", "prod", "--json"]) as { workspace: string; versions: unknown[] };
    const a = (await api("/api/v1/workspaces/prod/history")).json;
    assert.equal(c.versions.length, 2);
    assert.deepEqual(c.versions, a["versions"]);
    assert.equal(a["workspace"], c.workspace);
  });

  it("outputs: `output --json` = GET …/outputs outputs, in the tool's shape, byte for byte", async () => {
    const r = runCli(["output", "-w", "prod", "--json", ...STORE]);
    assert.equal(r.code, 0, r.stderr);
    const a = await api("/api/v1/workspaces/prod/outputs");
    assert.deepEqual(JSON.parse(r.stdout), a.json["outputs"]);
    // Text, not parsed values: the exact number and the tool's escapes are the same too.
    assert.equal(a.text, `{"outputs":${r.stdout.trimEnd()}}\n`);
    assert.match(a.text, /"value": 9007199254740993\b/);
    assert.deepEqual((a.json["outputs"] as Record<string, unknown>)["secret"], { sensitive: true, type: "string", value: "<sensitive>" });
    assert.deepEqual((a.json["outputs"] as Record<string, unknown>)["list"], { sensitive: false, type: ["list", "number"], value: [1, 2] });
  });

  it("diff: `state diff --json` = GET …/diff", async () => {
    const [to, from] = versions as [string, string];
    const c = cli(["state", "diff", "-w", "prod", "--from", from, "--to", to, "--json"]);
    const a = (await api(`/api/v1/workspaces/prod/diff?from=${from}&to=${to}`)).json;
    assert.deepEqual(c, a);
    assert.equal(a["workspace"], "prod");
  });

  it("a lock: `lock --json` = GET …/lock lock; `locks --json` = GET /api/v1/locks locks; `workspace list --json` = GET /api/v1/workspaces workspaces", async () => {
    const taken = cli(["lock", "-w", "prod", "--operation", "apply", "--info", "CI 7", "--lock-ttl", "10m", "--json"]) as Record<string, unknown>;
    try {
      const one = (await api("/api/v1/workspaces/prod/lock")).json;
      assert.deepEqual(taken, one["lock"]);
      assert.deepEqual(
        [taken["workspace"], taken["source"], taken["operation"], taken["info"], taken["owner"], taken["expired"]],
        ["prod", "table", "apply", "CI 7", null, false],
      );

      const list = cli(["locks", "--json"]);
      assert.deepEqual(list, (await api("/api/v1/locks")).json["locks"]);
      assert.deepEqual(list, [taken]);

      const workspaces = cli(["workspace", "list", "--json"]) as { name: string; state: boolean; lock: unknown; lastWrite: { serial: number | null } | null }[];
      assert.deepEqual(workspaces, (await api("/api/v1/workspaces")).json["workspaces"]);
      assert.deepEqual(
        workspaces.map((w) => [w.name, w.state, w.lock === null ? null : "locked", w.lastWrite?.serial ?? null]),
        [
          ["default", false, null, null],
          ["prod", true, "locked", 2],
          ["staging", true, null, 0],
        ],
      );
      assert.deepEqual(workspaces[1]?.lock, taken);
      assert.deepEqual(workspaces[1], (await api("/api/v1/workspaces/prod")).json);
    } finally {
      assert.equal(runCli(["unlock", String(taken["id"]), "-w", "prod", ...STORE]).code, 0);
    }
  });
});
