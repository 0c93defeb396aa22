/**
 * The embedded store and lock table never follow a symbolic link (or open a special
 * file) planted inside their directories, and create everything owner-only whatever
 * the umask.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { isObjstateError, type ObjstateError } from "../../../src/errors.js";
import { encodeId, FileLockTable } from "../../../src/lock/file.js";
import { FileDriver } from "../../../src/store/file.js";

let root: string;
/** A directory outside the store that planted links point into. */
let outside: string;
let n = 0;

before(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), "objstate-file-safety-"));
  outside = path.join(root, "outside");
  await fs.mkdir(outside);
  await fs.writeFile(path.join(outside, "secret"), "do not read me");
});

after(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

/** A fresh store endpoint directory with one bucket in it. */
async function freshStore(): Promise<{ d: FileDriver; ep: string }> {
  const ep = path.join(root, `store-${++n}`);
  await fs.mkdir(ep);
  return { d: new FileDriver({ bucket: "bkt", endpoint: pathToFileURL(ep).href }), ep };
}

function unsafe(at: string): (e: unknown) => boolean {
  return (e) => isObjstateError(e, "UNSAFE_PATH") && (e as ObjstateError).message.includes(at) && (e as ObjstateError).details?.["path"] === at;
}

async function outsideUntouched(): Promise<void> {
  assert.deepEqual((await fs.readdir(outside)).sort(), ["secret"]);
  assert.equal(await fs.readFile(path.join(outside, "secret"), "utf8"), "do not read me");
}

describe("embedded store and symbolic links", () => {
  it("a bucket directory that is a link is refused by every call", async () => {
    const { d } = await freshStore();
    await fs.symlink(outside, d.bucketDir);
    await assert.rejects(d.put("k", Buffer.from("x")), unsafe(d.bucketDir));
    await assert.rejects(d.get("secret"), unsafe(d.bucketDir));
    await assert.rejects(d.head("secret"), unsafe(d.bucketDir));
    await assert.rejects(d.bucketExists(), unsafe(d.bucketDir));
    await assert.rejects(d.createBucket(), unsafe(d.bucketDir));
    await assert.rejects(d.delete("secret"), unsafe(d.bucketDir));
    await assert.rejects(d.listLeftovers(""), unsafe(d.bucketDir));
    await assert.rejects(
      (async () => {
        for await (const _k of d.list("")) void _k;
      })(),
      unsafe(d.bucketDir),
    );
    await outsideUntouched();
  });

  it("an object file that is a link is neither read, replaced nor deleted", async () => {
    const { d } = await freshStore();
    await d.put("k", Buffer.from("v"));
    const file = path.join(d.bucketDir, "planted");
    await fs.symlink(path.join(outside, "secret"), file);
    await assert.rejects(d.get("planted"), unsafe(file));
    await assert.rejects(d.head("planted"), unsafe(file));
    await assert.rejects(d.put("planted", Buffer.from("x")), unsafe(file));
    await assert.rejects(d.put("planted", Buffer.from("x"), { ifMatch: "abc" }), unsafe(file));
    await assert.rejects(d.delete("planted"), unsafe(file));
    assert.equal((await fs.lstat(file)).isSymbolicLink(), true);
    assert.equal((await d.get("k"))?.body.toString(), "v", "other objects still work");
    await outsideUntouched();
  });

  it("a FIFO or directory in place of an object is refused, not opened (no hang)", async () => {
    const { d } = await freshStore();
    await d.createBucket();
    const fifo = path.join(d.bucketDir, "fifo");
    execFileSync("mkfifo", [fifo]);
    await assert.rejects(d.get("fifo"), unsafe(fifo));
    const dir = path.join(d.bucketDir, "dir");
    await fs.mkdir(dir);
    await assert.rejects(d.head("dir"), unsafe(dir));
  });

  it("a metadata directory (all of them, or one key's) that is a link is refused", async () => {
    const { d } = await freshStore();
    await d.put("k", Buffer.from("v"));
    const metaRoot = path.join(d.bucketDir, ".meta");
    await fs.rm(metaRoot, { recursive: true });
    await fs.symlink(outside, metaRoot);
    await assert.rejects(d.put("k", Buffer.from("w")), unsafe(metaRoot));
    await assert.rejects(d.head("k"), unsafe(metaRoot));

    const { d: d2 } = await freshStore();
    await d2.put("k", Buffer.from("v"));
    const [hash] = await fs.readdir(path.join(d2.bucketDir, ".meta"));
    const keyDir = path.join(d2.bucketDir, ".meta", hash ?? "");
    await fs.rm(keyDir, { recursive: true });
    await fs.symlink(outside, keyDir);
    await assert.rejects(d2.put("k", Buffer.from("w")), unsafe(keyDir));
    await assert.rejects(d2.get("k"), unsafe(keyDir));
    await outsideUntouched();
  });

  it("the endpoint directory itself may be a link (the operator's choice)", async () => {
    const real = path.join(root, `real-${++n}`);
    await fs.mkdir(real);
    const link = path.join(root, `link-${n}`);
    await fs.symlink(real, link);
    const d = new FileDriver({ bucket: "bkt", endpoint: pathToFileURL(link).href });
    await d.put("k", Buffer.from("v"));
    assert.equal((await d.get("k"))?.body.toString(), "v");
    assert.equal(await fs.readFile(path.join(real, "bkt", "k"), "utf8"), "v");
  });
});

describe("embedded lock table and symbolic links", () => {
  async function freshTable(): Promise<FileLockTable> {
    const ep = path.join(root, `kv-${++n}`);
    await fs.mkdir(ep);
    return new FileLockTable({ table: "locks", endpoint: pathToFileURL(ep).href });
  }

  it("a table directory or .kvstore that is a link is refused", async () => {
    const t = await freshTable();
    await fs.mkdir(path.dirname(t.dir));
    await fs.symlink(outside, t.dir);
    for (const call of [
      () => t.describeKeySchema(),
      () => t.createTable(),
      () => t.putIfAbsent("a/b", "Info", "x"),
      () => t.get("a/b", "Info"),
      () => t.put("a/b", "Info", "x"),
      () => t.deleteIf("a/b", "Info", "x"),
      () => t.updateIf("a/b", "Info", "x", { E: "1" }),
    ]) {
      await assert.rejects(call(), unsafe(t.dir));
    }
    const t2 = await freshTable();
    const kv = path.dirname(t2.dir);
    await fs.symlink(outside, kv);
    await assert.rejects(t2.putIfAbsent("a/b", "Info", "x"), unsafe(kv));
    await assert.rejects(t2.get("a/b", "Info"), unsafe(kv));
    await outsideUntouched();
  });

  it("an item or schema file that is a link is refused", async () => {
    const t = await freshTable();
    await t.createTable();
    const item = path.join(t.dir, `i-${encodeId("a/b")}`);
    await fs.symlink(path.join(outside, "secret"), item);
    await assert.rejects(t.get("a/b", "Info"), unsafe(item));
    await assert.rejects(t.putIfAbsent("a/b", "Info", "x"), unsafe(item));
    await assert.rejects(t.put("a/b", "Info", "x"), unsafe(item));
    await assert.rejects(t.delete("a/b"), unsafe(item));
    await assert.rejects(t.deleteIf("a/b", "Info", "x"), unsafe(item));
    await assert.rejects(t.updateIf("a/b", "Info", "x", { E: "1" }), unsafe(item));

    const t2 = await freshTable();
    await t2.createTable();
    const schema = path.join(t2.dir, ".schema.json");
    await fs.rm(schema);
    await fs.symlink(path.join(outside, "secret"), schema);
    await assert.rejects(
      new FileLockTable({ table: "locks", endpoint: pathToFileURL(path.dirname(path.dirname(t2.dir))).href }).describeKeySchema(),
      unsafe(schema),
    );
    await outsideUntouched();
  });
});

describe("owner-only files whatever the umask", () => {
  const mode = async (p: string): Promise<number> => (await fs.lstat(p)).mode & 0o777;

  for (const umask of [0o000, 0o277]) {
    it(`umask ${umask.toString(8).padStart(3, "0")}: store and table directories 0700, files 0600`, async () => {
      const old = process.umask(umask);
      try {
        const ep = path.join(root, `umask-${++n}`);
        const d = new FileDriver({ bucket: "bkt", endpoint: pathToFileURL(ep).href });
        await d.put("env:/w/tool.tfstate", Buffer.from("{}"), { metadata: { "objstate-serial": "1" } });
        await d.put("env:/w/tool.tfstate", Buffer.from("[]"), { ifMatch: "99914b932bd37a50b983c5e7c90ae93b" });
        const t = new FileLockTable({ table: "locks", endpoint: pathToFileURL(ep).href });
        await t.putIfAbsent("bkt/env:/w/tool.tfstate", "Info", "{}");
        await t.put("bkt/env:/w/tool.tfstate-md5", "Digest", "abc");
        await t.updateIf("bkt/env:/w/tool.tfstate", "Info", "{}", { Expires: "1" });

        const dirs = [ep, d.bucketDir, path.join(d.bucketDir, ".meta"), path.dirname(t.dir), t.dir];
        const [hash] = await fs.readdir(path.join(d.bucketDir, ".meta"));
        dirs.push(path.join(d.bucketDir, ".meta", hash ?? ""));
        for (const dir of dirs) assert.equal(await mode(dir), 0o700, dir);
        const files = [path.join(d.bucketDir, encodeURIComponent("env:/w/tool.tfstate")), path.join(t.dir, ".schema.json")];
        for (const f of await fs.readdir(path.join(d.bucketDir, ".meta", hash ?? ""))) files.push(path.join(d.bucketDir, ".meta", hash ?? "", f));
        for (const f of await fs.readdir(t.dir)) if (f.startsWith("i-")) files.push(path.join(t.dir, f));
        const claimDir = path.join(t.dir, `.claim-i-${encodeId("bkt/env:/w/tool.tfstate")}`);
        dirs.push(claimDir);
        for (const f of await fs.readdir(claimDir)) files.push(path.join(claimDir, f));
        const [archive] = await fs.readdir(path.join(d.bucketDir, ".versions"));
        dirs.push(path.join(d.bucketDir, ".versions"), path.join(d.bucketDir, ".versions", archive ?? ""));
        for (const dir of dirs) assert.equal(await mode(dir), 0o700, dir);
        for (const f of await fs.readdir(path.join(d.bucketDir, ".versions", archive ?? ""))) files.push(path.join(d.bucketDir, ".versions", archive ?? "", f));
        assert.equal(files.length, 9, "object, schema, two metadata files and a spare, two lock items and a spare, one older version");
        for (const f of files) assert.equal(await mode(f), 0o600, f);
      } finally {
        process.umask(old);
      }
    });
  }
});
