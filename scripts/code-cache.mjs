// V8 code caches for the bundle's chunks (run by scripts/bundle.mjs, in a process of its own
// so that its V8 flags are Node's defaults): dist/pkg/<chunk>.<V8 version>.cache, used by
// dist/pkg/objstate.js when the same V8 runs it (see the loader in scripts/bundle.mjs).
//
// A cache holds the bytecode of the functions compiled when it was made. So each chunk is
// compiled first (a cache of what V8 compiles eagerly, which also makes the loader compile
// it through node:vm), then the work a user's first call does runs — a synthesis through
// the main entry, each module of the other chunks loaded — and the cache is made again
// from the compiled scripts.
//
//   node scripts/code-cache.mjs '<JSON: chunk file -> module ids to load>'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

const pkg = fileURLToPath(new URL("../dist/pkg/", import.meta.url));
const cacheOf = (file) => join(pkg, `${file}.${process.versions.v8}.cache`);
const warm = JSON.parse(process.argv[2]);
for (const file of readdirSync(pkg).filter((f) => f.endsWith(".cjs"))) {
  const path = join(pkg, file);
  writeFileSync(cacheOf(file), new Script(readFileSync(path, "utf8"), { filename: path }).createCachedData());
}

const { __scripts, load } = await import(join(pkg, "objstate.js"));
const lib = load("index");
load("config-entry");
load("state-entry");
const out = mkdtempSync(join(tmpdir(), "objstate-code-cache-"));
try {
  const backend = lib.ObjectStoreBackendConfig.builder().bucket("state-bucket").key("root.tfstate").kvstoreTable("locks").encrypt(true).region("eu-west-1").build();
  const docs = [backend.toToolJson()];
  for (let i = 0; i < 3; i++) {
    const config = lib.DataRemoteStateObjectStoreConfig.builder().bucket("state-bucket").key(`stack-${i}.tfstate`).prefix("states").region("eu-west-1").kvstoreTable("locks").endpoint("https://s3.example.com").workspace("prod").defaults({ vpc_id: "vpc-0" }).build();
    docs.push(new lib.DataRemoteStateObjectStore(`s_${i}`, config).toToolJson());
    docs.push(new lib.DataRemoteStateObjectStore(`f_${i}`, lib.DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", key: `other-${i}.tfstate` })).toToolJson());
  }
  lib.writeToolJson(join(out, "main.tf.json"), lib.mergeToolJson(...docs));
} finally {
  rmSync(out, { recursive: true, force: true });
}
for (const ids of Object.values(warm)) for (const id of ids) await load(id);

for (const [file, script] of __scripts) {
  if (script.cachedDataRejected !== false) throw new Error(`code-cache: V8 did not take the first cache of ${file}`);
  writeFileSync(cacheOf(file.replace(/^\.\//, "")), script.createCachedData());
}
