/**
 * The two state layouts (docs/design.md §5): paths, workspace listing and the keys of locks, digests
 * and lockfiles, checked against a transcription of the tool's S3 backend (`path()`,
 * `keyEnv()`, `lockPath()`: internal/backend/remote-state/s3) and, end to end, on the
 * embedded store: objstate in the `s3` layout and a writer that does what the tool's S3
 * client does (a plain PUT of the state, then a PutItem replacing the digest item) share one
 * bucket and one table.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, isObjstateError, type ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { commonPrefix, layout, layoutNameOf, listPrefixes, statePath, workspaceOfKey, workspacesPrefix, type LayoutName } from "../../../src/config/layout.js";
import { openLockTable } from "../../../src/lock/index.js";
import { embeddedTarget } from "../../support/targets.js";

process.removeAllListeners("warning");

/** The tool's S3 backend `path(name)` (`path.Join` cleans nothing in these inputs). */
function toolPath(prefix: string, key: string, name: string): string {
  return name === "default" ? key : [prefix, name, key].filter((p) => p !== "").join("/");
}

/** The tool's S3 backend `keyEnv(key)`: the workspace a listed key names, or "". */
function toolKeyEnv(prefix: string, keyName: string, key: string): string {
  if (prefix === "") {
    const i = key.indexOf("/");
    return i >= 0 && key.slice(i + 1) === keyName ? key.slice(0, i) : "";
  }
  const head = `${prefix}/`;
  if (!key.startsWith(head)) return "";
  const rest = key.slice(head.length);
  const i = rest.indexOf("/");
  if (i < 0 || rest.slice(i + 1) !== keyName) return "";
  return rest.slice(0, i);
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of items) out.push(x);
  return out;
}

const md5 = (b: string): string => createHash("md5").update(b).digest("hex");
const stateOf = (serial: number, value: string): string =>
  JSON.stringify({
    version: 4,
    terraform_version: "1.11.4",
    serial,
    lineage: "7d4a0c43-0000-4000-8000-00000000000a",
    outputs: { y: { value, type: "string" } },
    resources: [],
  });

describe("layout paths", () => {
  const cases: Array<[prefix: string, key: string]> = [
    ["env:", "tool.tfstate"],
    ["", "tool.tfstate"],
    ["teams/web", "app.tfstate"],
    ["env:", "dir/app.tfstate"],
  ];

  it("seed: default at {prefix}/{key}; s3: default at {key} (the tool's path()); named workspaces at {prefix}/{w}/{key} in both", () => {
    assert.equal(statePath(layout("env:", "tool.tfstate"), "default"), "env:/tool.tfstate");
    assert.equal(statePath(layout("env:", "tool.tfstate", undefined, "s3"), "default"), "tool.tfstate");
    assert.equal(statePath(layout("/env:/", "tool.tfstate", undefined, "s3"), "prod"), "env:/prod/tool.tfstate");
    for (const [prefix, key] of cases) {
      const s3 = layout(prefix, key, undefined, "s3");
      const seed = layout(prefix, key, undefined, "seed");
      for (const w of ["default", "prod", "a.b-c_d"]) {
        assert.equal(statePath(s3, w), toolPath(prefix, key, w), `${prefix} ${key} ${w}`);
        if (w !== "default") assert.equal(statePath(seed, w), statePath(s3, w));
      }
      // With an empty prefix the two layouts are one.
      if (prefix === "") assert.equal(statePath(seed, "default"), statePath(s3, "default"));
      else assert.notEqual(statePath(seed, "default"), statePath(s3, "default"));
    }
  });

  it("a listed key names the workspace the tool's keyEnv() names (never default: the tool reads that at its own key)", () => {
    for (const [prefix, key] of cases) {
      for (const name of ["seed", "s3"] as const) {
        const l = layout(prefix, key, undefined, name);
        const keys = [
          statePath(l, "default"),
          statePath(l, "prod"),
          `${statePath(l, "prod")}.tflock`,
          `${workspacesPrefix(l)}a/b/${key}`,
          `${workspacesPrefix(l)}x/other.tfstate`,
          `${workspacesPrefix(l)}/${key}`,
          `elsewhere/prod/${key}`,
          key,
        ];
        for (const k of keys) assert.equal(workspaceOfKey(l, k) ?? "", toolKeyEnv(prefix, key, k), `${name} ${prefix} ${key}: ${k}`);
        // The tool lists `env:/default/KEY` as a second "default"; objstate skips it.
        assert.equal(toolKeyEnv(prefix, key, `${workspacesPrefix(l)}default/${key}`), "default");
        assert.equal(workspaceOfKey(l, `${workspacesPrefix(l)}default/${key}`), undefined);
      }
    }
  });

  it("listings: the s3 layout lists the default workspace's key beside the prefix unless the prefix holds it", () => {
    assert.deepEqual(listPrefixes(layout("env:", "tool.tfstate")), ["env:/"]);
    assert.deepEqual(listPrefixes(layout("env:", "tool.tfstate", undefined, "s3")), ["env:/", "tool.tfstate"]);
    assert.deepEqual(listPrefixes(layout("", "tool.tfstate", undefined, "s3")), [""]);
    // A key that is a beginning of the prefix: one listing covers both.
    assert.deepEqual(listPrefixes(layout("states", "states", undefined, "s3")), ["states"]);
    assert.equal(commonPrefix(layout("env:", "tool.tfstate")), "env:/");
    assert.equal(commonPrefix(layout("env:", "tool.tfstate", undefined, "s3")), "");
    assert.equal(commonPrefix(layout("team/env", "team/app.tfstate", undefined, "s3")), "team/");
  });

  it("a layout name is seed or s3; anything else is INVALID_LAYOUT naming where it came from", () => {
    assert.equal(layoutNameOf(undefined, "layout"), "seed");
    assert.equal(layoutNameOf("s3", "layout"), "s3");
    for (const bad of ["S3", "oss", "", 3, null]) {
      assert.throws(
        () => layoutNameOf(bad, "the layout option"),
        (e) => isObjstateError(e, "INVALID_LAYOUT") && /^the layout option must be "seed" .* or "s3"/.test(e.message),
      );
    }
  });
});

describe("the s3 layout on the embedded store, beside a writer that does what the tool's S3 client does", () => {
  const target = embeddedTarget();
  const connect = (props: ObjectStoreBackendConfigProps, layoutName: LayoutName | undefined, lockfile = false): Promise<ObjectStoreBackend> =>
    ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), {
      env: {},
      layout: layoutName,
      lockfile,
      onWarning: () => undefined,
      digestRetry: { timeoutMs: 0, intervalMs: 0 },
    });

  it("states, lock items, digest items and lockfiles are at the tool's keys; listings find the default workspace", async () => {
    const props = await target.setup({ locks: true });
    const bucket = props.bucket;
    const backend = await connect(props, "s3", true);
    const table = await openLockTable({ table: props.kvstoreTable as string, endpoint: props.kvstoreEndpoint as string });
    const raw = await target.raw(bucket);
    try {
      assert.equal(backend.statePath(), "tool.tfstate");
      assert.equal(backend.describe("prod"), `${bucket}/env:/prod/tool.tfstate`);
      await backend.writeState("default", stateOf(1, "d"));
      await backend.writeState("prod", stateOf(1, "p"));
      assert.deepEqual((await collect(raw.list(""))).sort(), ["env:/prod/tool.tfstate", "tool.tfstate"]);
      // The digest items are the tool's lockPath() + "-md5", holding the hex MD5 it compares.
      assert.equal(await table.get(`${bucket}/tool.tfstate-md5`, "Digest"), md5(stateOf(1, "d")));
      assert.equal(await table.get(`${bucket}/env:/prod/tool.tfstate-md5`, "Digest"), md5(stateOf(1, "p")));

      // A stray object under the prefix is no workspace; the default one is listed from its own key.
      await raw.put("env:/default/tool.tfstate", Buffer.from("{}"), { contentType: "application/json" });
      await raw.put("env:/a/b/tool.tfstate", Buffer.from("{}"), { contentType: "application/json" });
      assert.deepEqual(await backend.listWorkspaces(), ["default", "prod"]);
      assert.deepEqual(
        (await backend.listWorkspaceObjects()).map((o) => o.workspace),
        ["default", "prod"],
      );

      const lock = await backend.lock("default", { operation: "apply" });
      try {
        // The lock item's LockID and the lock info's Path are the tool's lockPath(); the lockfile is path() + ".tflock".
        const info = JSON.parse((await table.get(`${bucket}/tool.tfstate`, "Info")) as string) as { ID: string; Path: string };
        assert.equal(info.ID, lock.ID);
        assert.equal(info.Path, `${bucket}/tool.tfstate`);
        const lockfile = await raw.get("tool.tfstate.tflock");
        assert.deepEqual(
          JSON.parse((lockfile?.body ?? Buffer.from("null")).toString("utf8")),
          JSON.parse((await table.get(`${bucket}/tool.tfstate`, "Info")) as string),
        );
        // The lock list finds the default workspace's lockfile outside the prefix.
        assert.deepEqual(
          (await backend.locks()).map((l) => [l.source, l.path, l.workspace]),
          [
            ["table", `${bucket}/tool.tfstate`, "default"],
            ["lockfile", "tool.tfstate.tflock", "default"],
          ],
        );
      } finally {
        await backend.unlock("default", lock.ID);
      }
      assert.equal(await raw.head("tool.tfstate.tflock"), null);

      // The seed layout on the same bucket keeps its default workspace elsewhere.
      const seed = await connect(props, undefined);
      try {
        assert.equal(await seed.readState("default"), null);
        assert.equal(((await seed.readState("prod")) as Buffer).toString("utf8"), stateOf(1, "p"));
      } finally {
        seed.close();
      }
    } finally {
      backend.close();
      table.close();
      raw.close();
    }
  });

  it("writes alternate with the tool's: a digest item replaced without Generation or CommitLockID reads and commits as generation 0", async () => {
    const props = await target.setup({ locks: true });
    const bucket = props.bucket;
    const backend = await connect(props, "s3");
    const table = await openLockTable({ table: props.kvstoreTable as string, endpoint: props.kvstoreEndpoint as string });
    const raw = await target.raw(bucket);
    const digestId = `${bucket}/tool.tfstate-md5`;
    /** The tool's RemoteClient.put: the object, then a PutItem of {LockID, Digest} only. */
    const toolWrite = async (body: string): Promise<void> => {
      await raw.put("tool.tfstate", Buffer.from(body), { contentType: "application/json" });
      await table.put(digestId, "Digest", md5(body));
    };
    try {
      await toolWrite(stateOf(1, "tool-1"));
      assert.equal(((await backend.readState()) as Buffer).toString("utf8"), stateOf(1, "tool-1"));

      await backend.writeState("default", stateOf(2, "objstate-2"));
      const afterOurs = await table.getDigest(digestId);
      assert.equal(afterOurs?.digest, md5(stateOf(2, "objstate-2")));
      assert.equal(afterOurs?.generation, 1);
      assert.notEqual(afterOurs?.lockId, undefined);

      // The tool's next write drops Generation and CommitLockID.
      await toolWrite(stateOf(3, "tool-3"));
      assert.deepEqual(await table.getDigest(digestId), { digest: md5(stateOf(3, "tool-3")), generation: 0, lockId: undefined });
      assert.equal(((await backend.readState()) as Buffer).toString("utf8"), stateOf(3, "tool-3"));

      // objstate commits over it (generation 0 → 1 again), and the lineage guard saw the tool's serial.
      await assert.rejects(backend.writeState("default", stateOf(2, "stale")), (e) => isObjstateError(e, "STATE_CONFLICT"));
      await backend.writeState("default", stateOf(4, "objstate-4"));
      assert.equal((await table.getDigest(digestId))?.generation, 1);
      assert.equal(((await backend.readState()) as Buffer).toString("utf8"), stateOf(4, "objstate-4"));
      assert.deepEqual(
        (await collect(backend.history("default"))).map((v) => [v.serial, v.writer]),
        [
          [4, "objstate"],
          [3, "other"],
          [2, "objstate"],
          [1, "other"],
        ],
      );
    } finally {
      backend.close();
      table.close();
      raw.close();
    }
  });

  it("ConnectOptions.layout is checked before anything is opened", async () => {
    const props = await target.setup({ locks: true });
    await assert.rejects(
      ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, layout: "tool" as LayoutName }),
      (e) => isObjstateError(e, "INVALID_LAYOUT") && /ConnectOptions\.layout/.test(e.message),
    );
  });
});
