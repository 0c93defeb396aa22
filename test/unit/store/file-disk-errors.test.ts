/**
 * A full disk, a read-only file system and missing permissions under the embedded store
 * and lock table: typed codes, messages that name the path and the cause, and a doctor
 * that says so instead of suggesting credentials. Real conditions: a 256 KiB tmpfs (full,
 * then remounted read-only) and a child process running as `nobody`. Mounting and
 * changing user need root; the classification itself is also checked without them.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { diagnose, type CheckResult } from "../../../src/admin/diagnose.js";
import { isObjstateError, type ErrorCode, type ObjstateError } from "../../../src/errors.js";
import { ObjectStoreBackend, ObjectStoreBackendConfig, type LockInfo } from "../../../src/index.js";
import { Logger } from "../../../src/server/log.js";
import { ObjstateServer } from "../../../src/server/server.js";
import { HttpBackendClient } from "../../support/http-backend-client.js";
import { FileLockTable } from "../../../src/lock/file.js";
import { FileDriver } from "../../../src/store/file.js";
import { fsFailure } from "../../../src/io/local-fs.js";
import { withLowPort } from "../../support/port.js";

const AS_ROOT = process.getuid?.() === 0;
const NEEDS_ROOT = AS_ROOT ? false : "mounting a tmpfs and running as another user need root";
const DIST_SRC = new URL("../../../src/", import.meta.url).href;

let base: string;
const mounts: string[] = [];

async function mountTmpfs(name: string, options = "size=256k"): Promise<string> {
  const dir = path.join(base, name);
  await fs.mkdir(dir);
  execFileSync("mount", ["-t", "tmpfs", "-o", `${options},mode=0700`, "tmpfs", dir]);
  mounts.push(dir);
  return dir;
}

function errorWith(code: ErrorCode, re: RegExp): (e: unknown) => boolean {
  return (e) => {
    assert.ok(isObjstateError(e, code), `expected ${code}, got ${String(e)}`);
    assert.match((e as ObjstateError).message, re);
    return true;
  };
}

/** `objstate doctor` of the embedded store and table at `ep`. */
async function doctor(ep: string): Promise<readonly CheckResult[]> {
  const at = pathToFileURL(ep).href;
  const config = ObjectStoreBackendConfig.from({ bucket: "bkt", endpoint: at, kvstoreTable: "locks", kvstoreEndpoint: at });
  return (await diagnose(config, { env: {}, onWarning: () => undefined })).checks;
}

function check(results: readonly CheckResult[], name: string): CheckResult {
  const r = results.find((x) => x.name === name);
  assert.ok(r, name);
  return r;
}

before(async () => {
  base = await fs.mkdtemp(path.join(os.tmpdir(), "objstate-disk-errors-"));
});

after(async () => {
  for (const m of mounts) execFileSync("umount", ["-l", m]);
  await fs.rm(base, { recursive: true, force: true });
});

describe("embedded store on a full disk", { skip: NEEDS_ROOT }, () => {
  it("a write that does not fit fails with STORE_NO_SPACE naming the path; the old object stays, no temp is left", async () => {
    const ep = await mountTmpfs("full");
    const d = new FileDriver({ bucket: "bkt", endpoint: pathToFileURL(ep).href });
    const t = new FileLockTable({ table: "locks", endpoint: pathToFileURL(ep).href });
    await d.put("env:/tool.tfstate", Buffer.from("v1"));
    await t.createTable();
    await assert.rejects(
      d.put("env:/tool.tfstate", randomBytes(1024 * 1024)),
      errorWith("STORE_NO_SPACE", new RegExp(`^cannot write env:/tool.tfstate in file:${d.bucketDir}: no space left on device at ${d.bucketDir}; `)),
    );
    assert.equal((await d.get("env:/tool.tfstate"))?.body.toString(), "v1");
    assert.deepEqual(
      (await fs.readdir(d.bucketDir)).filter((f) => f.startsWith(".tmp-")),
      [],
    );

    // Fill what is left, then every kind of write fails the same way.
    const filler = path.join(ep, "filler");
    await fs.writeFile(filler, randomBytes(1024 * 1024)).catch(() => undefined);
    await assert.rejects(d.put("small", Buffer.from("x")), errorWith("STORE_NO_SPACE", /no space left on device at /));
    await assert.rejects(t.putIfAbsent("bkt/env:/tool.tfstate", "Info", "{}"), errorWith("STORE_NO_SPACE", new RegExp(`no space left on device at ${t.dir}`)));
    await assert.rejects(t.put("bkt/env:/tool.tfstate-md5", "Digest", "abc"), errorWith("STORE_NO_SPACE", /no space left on device/));

    const results = await doctor(ep);
    const bucket = check(results, "bucket");
    assert.equal(bucket.status, "fail");
    assert.match(bucket.detail, /no space left on device at /);
    assert.match(bucket.fix ?? "", new RegExp(`^free space on the device holding ${d.bucketDir}`));
    assert.doesNotMatch(bucket.fix ?? "", /credentials/);

    await fs.rm(filler);
    await d.put("small", Buffer.from("x"));
    assert.equal((await d.get("small"))?.body.toString(), "x");
  });
});

/**
 * Fill the file system at `ep` to its last block (a file written until ENOSPC) and, with
 * `inodes`, to its last inode (empty files until ENOSPC); returns how to make room again.
 */
async function fill(ep: string, inodes: boolean): Promise<() => Promise<void>> {
  const dir = path.join(ep, "filler");
  await fs.mkdir(dir);
  await fs.writeFile(path.join(dir, "blocks"), randomBytes(4 * 1024 * 1024)).catch((e: unknown) => assert.equal((e as NodeJS.ErrnoException).code, "ENOSPC"));
  for (let i = 0; inodes; i++) {
    try {
      await fs.writeFile(path.join(dir, `inode-${i}`), "");
    } catch (e) {
      assert.equal((e as NodeJS.ErrnoException).code, "ENOSPC");
      break;
    }
  }
  // Full indeed: not even an empty file (with inodes) or one byte fits.
  await assert.rejects(fs.writeFile(path.join(ep, "probe"), inodes ? "" : "x"), /ENOSPC/);
  return () => fs.rm(dir, { recursive: true, force: true });
}

const FULL_DISKS = [
  { what: "out of blocks", options: "size=256k", inodes: false },
  { what: "out of blocks and inodes", options: "size=256k,nr_inodes=200", inodes: true },
];

describe("a full disk leaves no lock behind (embedded store)", { skip: NEEDS_ROOT }, () => {
  for (const disk of FULL_DISKS) {
    for (const lockfile of [false, true]) {
      it(`${disk.what}, ${lockfile ? "lockfile" : "lock table"}: a second lock is answered with the holder (STATE_LOCKED), and the holder's unlock succeeds`, async () => {
        const ep = await mountTmpfs(`locks-${disk.inodes ? "inodes" : "blocks"}-${lockfile ? "file" : "table"}`, disk.options);
        const props = {
          bucket: "bkt",
          endpoint: pathToFileURL(ep).href,
          ...(lockfile ? {} : { kvstoreEndpoint: pathToFileURL(ep).href, kvstoreTable: "locks" }),
        };
        const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined, lockfile });
        try {
          await b.writeState("default", JSON.stringify({ version: 4, serial: 1, lineage: "L" }));
          // The workspace's first lock ever: nothing of its release was made before.
          const held = await b.lock("w", { operation: "apply" });
          const makeRoom = await fill(ep, disk.inodes);
          await assert.rejects(b.lock("w", { operation: "plan" }), (e) => {
            assert.ok(isObjstateError(e, "STATE_LOCKED"), `expected STATE_LOCKED, got ${String(e)}`);
            assert.equal((e.details?.["lockInfo"] as LockInfo | undefined)?.ID, held.ID, "the holder is named");
            return true;
          });
          await b.unlock("w", held.ID);
          assert.equal(await b.lockInfo("w"), null, "no lock left");
          await makeRoom();
          const again = await b.lock("w");
          await b.unlock("w", again.ID);
          await b.unlock("default", (await b.lock("default")).ID);
        } finally {
          b.close();
        }
      });
    }
  }

  it("through objstate serve: LOCK while another client holds the lock answers 423 with the holder, and UNLOCK answers 200, on a disk out of blocks and inodes", async () => {
    const ep = await mountTmpfs("locks-serve", "size=256k,nr_inodes=200");
    const props = { bucket: "bkt", endpoint: pathToFileURL(ep).href, kvstoreEndpoint: pathToFileURL(ep).href, kvstoreTable: "locks" };
    const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    const server = new ObjstateServer({ backend, logger: new Logger("off") });
    await withLowPort((port) => server.listen("127.0.0.1", port));
    try {
      const client = (): HttpBackendClient => new HttpBackendClient({ bases: [server.url], workspace: "w", retries: 0 });
      const holder = client();
      const waiter = client();
      const taken = await holder.lock("OperationTypeApply");
      assert.ok(taken.ok);
      const makeRoom = await fill(ep, true);
      const blocked = await waiter.lock("OperationTypePlan");
      assert.equal(blocked.ok, false);
      assert.equal(blocked.ok ? 0 : blocked.status, 423, "-lock-timeout keeps waiting on 423; a 500 would end it");
      assert.equal(blocked.ok ? "" : blocked.holder?.ID, taken.id);
      assert.equal((await holder.unlock()).status, 200);
      assert.equal(await backend.lockInfo("w"), null);
      await makeRoom();
      const next = await waiter.lock("OperationTypePlan");
      assert.ok(next.ok, "the lock is free again once there is room");
      assert.equal((await waiter.unlock()).status, 200);
    } finally {
      await server.close(500);
      backend.close();
    }
  });
});

describe("embedded store on a read-only file system", { skip: NEEDS_ROOT }, () => {
  it("writes fail with STORE_READ_ONLY naming the path; reads still work; doctor names the cause", async () => {
    const ep = await mountTmpfs("ro");
    const d = new FileDriver({ bucket: "bkt", endpoint: pathToFileURL(ep).href });
    const t = new FileLockTable({ table: "locks", endpoint: pathToFileURL(ep).href });
    await d.put("k", Buffer.from("v"), { metadata: { "objstate-serial": "1" } });
    await t.put("bkt/k-md5", "Digest", "abc");
    execFileSync("mount", ["-o", "remount,ro", ep]);

    await assert.rejects(d.put("k", Buffer.from("w")), errorWith("STORE_READ_ONLY", new RegExp(`read-only file system at ${d.bucketDir}`)));
    await assert.rejects(d.delete("k"), errorWith("STORE_READ_ONLY", /read-only file system at /));
    await assert.rejects(t.putIfAbsent("bkt/k", "Info", "{}"), errorWith("STORE_READ_ONLY", new RegExp(`read-only file system at ${t.dir}`)));
    await assert.rejects(t.updateIf("bkt/k-md5", "Digest", "abc", { Digest: "def" }), errorWith("STORE_READ_ONLY", /read-only file system at /));
    assert.equal((await d.get("k"))?.meta.metadata?.["objstate-serial"], "1");
    assert.equal(await t.get("bkt/k-md5", "Digest"), "abc");

    const results = await doctor(ep);
    const endpoint = check(results, "object-store endpoint");
    assert.equal(endpoint.status, "fail");
    assert.match(endpoint.detail, new RegExp(`${ep} is on a read-only file system`));
    assert.doesNotMatch(results.map((r) => r.fix ?? "").join(" "), /credentials/);
  });
});

describe("embedded store without write permission", { skip: NEEDS_ROOT }, () => {
  it("a user who may not write the directory gets STORE_PERMISSION naming it", async () => {
    const ep = path.join(base, "perm");
    await fs.mkdir(ep, { mode: 0o700 });
    await fs.chmod(base, 0o755);
    const code = `
      import { FileDriver } from ${JSON.stringify(`${DIST_SRC}store/file.js`)};
      import { FileLockTable } from ${JSON.stringify(`${DIST_SRC}lock/file.js`)};
      const ep = ${JSON.stringify(pathToFileURL(ep).href)};
      const out = [];
      for (const call of [() => new FileDriver({ bucket: "bkt", endpoint: ep }).put("k", Buffer.from("x")), () => new FileLockTable({ table: "locks", endpoint: ep }).putIfAbsent("a", "Info", "x")]) {
        try { await call(); out.push("written"); } catch (e) { out.push(e.code + " " + e.message); }
      }
      process.stdout.write(JSON.stringify(out));`;
    const out = await new Promise<string>((resolve, reject) => {
      const c = spawn(process.execPath, ["--input-type=module", "-e", code], { uid: 65534, gid: 65534, stdio: ["ignore", "pipe", "pipe"] });
      let o = "";
      let err = "";
      c.stdout.on("data", (b: Buffer) => (o += b.toString()));
      c.stderr.on("data", (b: Buffer) => (err += b.toString()));
      c.on("close", (rc) => (rc === 0 ? resolve(o) : reject(new Error(err))));
    });
    const [store, table] = JSON.parse(out) as string[];
    assert.match(store ?? "", new RegExp(`^STORE_PERMISSION .*permission denied at ${path.join(ep, "bkt")}; `));
    assert.match(table ?? "", new RegExp(`^STORE_PERMISSION .*permission denied at ${path.join(ep, ".kvstore")}; `));
  });
});

describe("classification of local-disk errors", () => {
  const err = (code: string): NodeJS.ErrnoException => Object.assign(new Error(`${code}: x`), { code, path: "/from/error" });
  it("maps ENOSPC, EDQUOT, EROFS, EACCES, EPERM and ELOOP to typed codes naming the path; others keep the fallback", () => {
    const cases: [string, string, RegExp][] = [
      ["ENOSPC", "STORE_NO_SPACE", /^cannot write k: no space left on device at \/d; /],
      ["EDQUOT", "STORE_NO_SPACE", /disk quota exceeded at \/d/],
      ["EROFS", "STORE_READ_ONLY", /read-only file system at \/d/],
      ["EACCES", "STORE_PERMISSION", /permission denied at \/d/],
      ["EPERM", "STORE_PERMISSION", /permission denied at \/d/],
      ["ELOOP", "UNSAFE_PATH", /refusing \/d: it is a symbolic link/],
      ["EIO", "STORE_ERROR", /^cannot write k \(EIO at \/d\)$/],
    ];
    for (const [errnoCode, code, re] of cases) {
      const e = fsFailure(err(errnoCode), "cannot write k", "STORE_ERROR", "/d");
      assert.equal(e.code, code, errnoCode);
      assert.match(e.message, re, errnoCode);
      assert.equal(e.details?.["path"], "/d");
    }
    assert.match(fsFailure(err("ENOSPC"), "cannot write k", "STORE_ERROR").message, /at \/from\/error/, "the error's own path when none is given");
  });
});
