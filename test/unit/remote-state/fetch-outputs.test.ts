/**
 * Reading remote outputs on the embedded store and lock table (no servers), and the
 * RemoteOutputs value itself.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, statSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { DataRemoteStateObjectStore, ObjectStoreBackend, ObjectStoreBackendConfig, RemoteOutputs, isObjstateError } from "../../../src/index.js";
import { embeddedTarget } from "../../support/targets.js";
import { FAST_DIGEST, outputsSuite, rejectsWith, stateWith } from "./outputs-suite.js";

/** Every file and directory under the endpoint's directory, with sizes. */
function listTree(root: string): string[] {
  if (!existsSync(root)) return [];
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      const st = statSync(full);
      out.push(`${relative(root, full)}${st.isDirectory() ? "/" : ` ${st.size}`}`);
      if (st.isDirectory()) walk(full);
    }
  };
  walk(root);
  return out.sort();
}

describe("fetchOutputs on the embedded store + embedded lock table", () =>
  outputsSuite(embeddedTarget, { snapshot: (props) => Promise.resolve(listTree(fileURLToPath(props.endpoint as string))) }));

describe("fetchOutputs, embedded specifics", () => {
  const quiet = { env: {}, digestRetry: FAST_DIGEST, onWarning: () => undefined };

  it("does not create a configured embedded lock table that does not exist yet, and does not call it missing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-outputs-"));
    const endpoint = `file://${dir}`;
    // The state was written by a backend without a lock table: the table was never created.
    const w = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ bucket: "states", endpoint }), quiet);
    await w.writeState("default", stateWith({ a: 1 }));
    w.close();
    const before = listTree(dir);
    const warnings: string[] = [];
    const remote = new DataRemoteStateObjectStore("net", { bucket: "states", endpoint, kvstoreEndpoint: endpoint, kvstoreTable: "locks" });
    const out = await remote.fetchOutputs({ env: {}, onWarning: (_m, code) => warnings.push(code) });
    assert.deepEqual(out.toJSON(), { a: 1 });
    assert.deepEqual(listTree(dir), before);
    assert.ok(!existsSync(join(dir, ".kvstore")), "no lock table directory");
    assert.deepEqual(warnings, [], "a configured (not yet created) table is not reported as no locking");
  });

  it("uses an existing embedded table (digest-checked) without adding anything to it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-outputs-"));
    const endpoint = `file://${dir}`;
    const props = { bucket: "states", endpoint, kvstoreEndpoint: endpoint, kvstoreTable: "locks" };
    const w = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), quiet);
    await w.writeState("default", stateWith({ a: 1 }));
    const before = listTree(dir);
    assert.ok(
      before.some((l) => l.startsWith(".kvstore/locks/i-")),
      "the digest item exists",
    );
    assert.deepEqual((await new DataRemoteStateObjectStore("net", props).fetchOutputs(quiet)).toJSON(), { a: 1 });
    assert.deepEqual(listTree(dir), before);
    w.close();
  });

  it("resolves a relative file: endpoint against the cwd option", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-outputs-"));
    const w = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from({ bucket: "states", endpoint: "file:./store" }), { ...quiet, cwd: dir });
    await w.writeState("default", stateWith({ rel: true }));
    w.close();
    const remote = new DataRemoteStateObjectStore("net", { bucket: "states", endpoint: "file:./store" });
    assert.equal((await remote.fetchOutputs({ ...quiet, cwd: dir })).boolean("rel"), true);
    await rejectsWith(remote.fetchOutputs({ ...quiet, cwd: join(dir, "elsewhere") }), "STATE_NOT_FOUND");
  });

  it("keeps the synthesis-time references as they were", () => {
    const remote = new DataRemoteStateObjectStore("net", { bucket: "states" });
    assert.equal(remote.getString("vpc_id"), "${data.tool_remote_state.net.outputs.vpc_id}");
    assert.equal(remote.getNumber("n"), "${data.tool_remote_state.net.outputs.n}");
    assert.equal(remote.getList("l"), "${data.tool_remote_state.net.outputs.l}");
    assert.equal(remote.getBoolean("b"), "${data.tool_remote_state.net.outputs.b}");
  });
});

describe("RemoteOutputs", () => {
  it("copies and freezes its values; toJSON gives a fresh plain copy", () => {
    const list = [1, { x: "y" }];
    const out = new RemoteOutputs({ list, s: "v" });
    list.push(3);
    assert.deepEqual(out.list("list"), [1, { x: "y" }], "later changes to the caller's objects do not leak in");
    assert.ok(Object.isFrozen(out.list("list")) && Object.isFrozen(out.list("list")[1]));
    assert.ok(!Object.isFrozen(list), "the caller's objects are not frozen");
    const json = out.toJSON();
    assert.deepEqual(json, { list: [1, { x: "y" }], s: "v" });
    (json["list"] as unknown[]).push("mine");
    assert.deepEqual(out.get("list"), [1, { x: "y" }]);
    assert.equal(JSON.stringify(out), '{"list":[1,{"x":"y"}],"s":"v"}');
  });

  it("treats __proto__ as an ordinary output name", () => {
    const values = JSON.parse('{"__proto__": "p", "a": 1}') as Record<string, string | number>;
    const out = new RemoteOutputs(values);
    assert.deepEqual(out.names(), ["__proto__", "a"]);
    assert.equal(out.string("__proto__"), "p");
    const json = out.toJSON();
    assert.equal(Object.getPrototypeOf(json), Object.prototype);
    assert.ok(Object.hasOwn(json, "__proto__"));
    assert.equal(JSON.stringify(json), '{"__proto__":"p","a":1}');
  });

  it("has(), names() sorted, and errors with and without a source", () => {
    const out = new RemoteOutputs({ b: 1, a: "x" });
    assert.equal(out.has("a"), true);
    assert.equal(out.has("c"), false);
    assert.deepEqual(out.names(), ["a", "b"]);
    assert.throws(() => out.number("a"), { code: "OUTPUT_TYPE_MISMATCH", message: 'output "a" is a string, not a number' });
    assert.throws(() => out.get("c"), { code: "OUTPUT_NOT_FOUND", message: 'no output "c"; available: a, b' });
    const sourced = new RemoteOutputs({ a: "x" }, { name: "net", workspace: "prod", location: "b/env:/prod/tool.tfstate" });
    assert.throws(() => sourced.number("a"), {
      message: 'output "a" is a string, not a number (remote state "net", workspace prod at b/env:/prod/tool.tfstate)',
    });
    assert.throws(
      () => sourced.get("zz"),
      (e: unknown) => isObjstateError(e, "OUTPUT_NOT_FOUND") && e.message.includes('remote state "net"') && e.message.endsWith("available: a"),
    );
  });
});
