import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";

const INDEX_URL = new URL("../../../src/store/index.js", import.meta.url).href;

/** A resolve hook that makes every import of the AWS SDK fail, so any eager import shows. */
const BLOCK_SDK = `export async function resolve(specifier, context, next) {
  if (specifier.startsWith("@aws-sdk/")) throw new Error("blocked import of " + specifier);
  return next(specifier, context);
}`;

function runModule(code: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("openStore", () => {
  it("does not load the AWS SDK until an S3 endpoint is opened", () => {
    const r = runModule(
      `import { register } from "node:module";
       register("data:text/javascript," + encodeURIComponent(${JSON.stringify(BLOCK_SDK)}));
       const { openStore } = await import(${JSON.stringify(INDEX_URL)});
       const f = await openStore({ bucket: "abc", endpoint: "file:///tmp/objstate-never-written" });
       console.log("file driver:", f.kind);
       try { await openStore({ bucket: "abc", endpoint: "http://127.0.0.1:9" }); console.log("s3 loaded"); }
       catch (e) { console.log("s3:", e.message); }`,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^file driver: file$/m);
    assert.match(r.stdout, /^s3: blocked import of @aws-sdk\/client-s3$/m);
  });

  it("opens the S3 driver for http endpoints and bare hosts", () => {
    const r = runModule(
      `const { openStore } = await import(${JSON.stringify(INDEX_URL)});
       for (const endpoint of ["http://127.0.0.1:9", "storage.invalid"]) {
         const d = await openStore({ bucket: "abc", endpoint });
         console.log(d.kind, d.location);
         d.close();
       }`,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, "s3 http://127.0.0.1:9/abc\ns3 https://storage.invalid/abc\n");
  });
});
