import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isObjstateError } from "../../../src/errors.js";
import { parseEndpoint } from "../../../src/io/endpoint.js";

const CWD = "/base/dir";

describe("parseEndpoint", () => {
  it("keeps http and https URLs, dropping trailing slashes", () => {
    assert.deepEqual(parseEndpoint("http://127.0.0.1:17480", CWD), { kind: "http", url: "http://127.0.0.1:17480" });
    assert.deepEqual(parseEndpoint("https://s3.example.test/", CWD), { kind: "http", url: "https://s3.example.test" });
    assert.deepEqual(parseEndpoint("HTTP://Host:9000//", CWD), { kind: "http", url: "HTTP://Host:9000" });
  });

  it("treats a bare host (with or without port) as https", () => {
    assert.deepEqual(parseEndpoint("s3.example.test", CWD), { kind: "http", url: "https://s3.example.test" });
    assert.deepEqual(parseEndpoint("storage.local:9000", CWD), { kind: "http", url: "https://storage.local:9000" });
    assert.deepEqual(parseEndpoint("  s3.example.test/  ", CWD), { kind: "http", url: "https://s3.example.test" });
  });

  it("reads absolute file URLs", () => {
    assert.deepEqual(parseEndpoint("file:///var/lib/objstate", CWD), { kind: "file", dir: "/var/lib/objstate" });
    assert.deepEqual(parseEndpoint("file:///tmp/with%20space", CWD), { kind: "file", dir: "/tmp/with space" });
    assert.deepEqual(parseEndpoint("FILE:///x", CWD), { kind: "file", dir: "/x" });
  });

  it("resolves relative file paths against cwd", () => {
    assert.deepEqual(parseEndpoint("file:./.objstate", CWD), { kind: "file", dir: "/base/dir/.objstate" });
    assert.deepEqual(parseEndpoint("file:state/store", CWD), { kind: "file", dir: "/base/dir/state/store" });
    assert.deepEqual(parseEndpoint("file:../up", CWD), { kind: "file", dir: "/base/up" });
    assert.deepEqual(parseEndpoint("file:/abs/path", CWD), { kind: "file", dir: "/abs/path" });
  });

  it("defaults cwd to the process's working directory", () => {
    assert.deepEqual(parseEndpoint("file:rel"), { kind: "file", dir: `${process.cwd()}/rel` });
  });

  it("rejects what it cannot use, with INVALID_ENDPOINT", () => {
    for (const bad of ["file:", "ftp://host/x", "s3://bucket", "file://otherhost/path"]) {
      assert.throws(
        () => parseEndpoint(bad, CWD),
        (e) => isObjstateError(e, "INVALID_ENDPOINT") && e.message.includes(bad),
        bad,
      );
    }
  });
});
