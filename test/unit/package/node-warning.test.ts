import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const entry = fileURLToPath(new URL("../../../src/index.js", import.meta.url));
const SWITCH = "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED";

// A program that uses the library, in a process of its own without the SDK's switch (the
// test scripts set it): objstate builds S3 clients for a read of an endpoint where nothing
// listens. On Node 20 the SDK would warn about its future Node support; on 22+ it never does.
const program = `
import { DataRemoteStateObjectStore } from ${JSON.stringify(entry)};
const remote = new DataRemoteStateObjectStore("x", { bucket: "bkt-1", key: "k", endpoint: "http://127.0.0.1:9", accessKey: "a", secretKey: "b" });
let code = "none";
try { await remote.fetchOutputs({ timeouts: { requestMs: 5000 } }); } catch (e) { code = e.code; }
console.log(JSON.stringify({ code, switch: process.env[${JSON.stringify(SWITCH)}] ?? null }));
`;

test("a library user sees no AWS SDK Node-version warning, and the environment is left as it was", () => {
  const env: Record<string, string> = { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "" };
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", program], { env, encoding: "utf8", timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /NodeVersionSupportWarning|AWS SDK for JavaScript/);
  const out = JSON.parse(r.stdout.trim()) as { code: string; switch: string | null };
  assert.notEqual(out.code, "none", "the read must have failed: nothing listens there");
  assert.equal(out.switch, null);
});

test("a switch the user set is respected and kept", () => {
  const env: Record<string, string> = { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", [SWITCH]: "false" };
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", program], { env, encoding: "utf8", timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout.trim()) as { switch: string }).switch, "false");
});
