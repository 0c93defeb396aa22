/**
 * The one reading of the AWS SDK's errors (src/io/sdk-errors.ts) that the S3 and DynamoDB
 * drivers share: errors shaped as the SDK and Node's sockets make them, no SDK needed.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isAccessDenied, isForeignAnswer, isTlsToPlainHttp, networkFailure, sdkErrorName, sdkHttpStatus } from "../../../src/io/sdk-errors.js";
import { toObjstateError } from "../../../src/lock/dynamodb.js";

/** An error as the SDK throws for an answer: a name and `$metadata.httpStatusCode`. */
function answered(name: string, status: number, message = "m"): Error {
  return Object.assign(new Error(message), { name, $metadata: { httpStatusCode: status } });
}
function socket(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:1`), { code });
}

describe("reading the SDK's errors", () => {
  it("name and HTTP status of an answer; none for what is not an error", () => {
    assert.equal(sdkErrorName(answered("NoSuchBucket", 404)), "NoSuchBucket");
    assert.equal(sdkHttpStatus(answered("NoSuchBucket", 404)), 404);
    assert.equal(sdkHttpStatus(new Error("no answer")), undefined);
    assert.equal(sdkErrorName("text"), undefined);
  });

  it("no answer: a socket's code bare, inside an AggregateError or a cause; the SDK's timeout without a status", () => {
    assert.equal(networkFailure(socket("ECONNREFUSED")), "ECONNREFUSED");
    assert.equal(networkFailure(new AggregateError([new Error("v6"), socket("EHOSTUNREACH")], "dual stack")), "EHOSTUNREACH");
    assert.equal(networkFailure(new Error("wrapped", { cause: socket("ECONNABORTED") })), "ECONNABORTED");
    assert.equal(networkFailure(Object.assign(new Error("slow"), { name: "TimeoutError" })), "TimeoutError");
  });

  it("an answer is never a network failure, not even S3's own RequestTimeout (HTTP 400)", () => {
    assert.equal(networkFailure(answered("RequestTimeout", 400)), undefined);
    assert.equal(networkFailure(answered("InternalError", 500)), undefined);
    assert.equal(networkFailure(Object.assign(new Error("x"), { code: "ENOENT" })), undefined);
  });

  it("access denied by status or by either service's name", () => {
    for (const e of [
      answered("Whatever", 403),
      answered("InvalidAccessKeyId", 400),
      answered("UnrecognizedClientException", 400),
      answered("AccessDeniedException", 400),
    ])
      assert.ok(isAccessDenied(e), e.name);
    assert.equal(isAccessDenied(answered("NoSuchKey", 404)), false);
  });

  it("another server's answer: a body the SDK could not read", () => {
    assert.ok(isForeignAnswer(new Error("Deserialization error: to see the raw response, inspect the hidden field {error}.$response")));
    assert.ok(isForeignAnswer(answered("SyntaxError", 200, "Unexpected token < in JSON")));
    assert.equal(isForeignAnswer(new SyntaxError("not from an answer")), false);
  });

  it("TLS meeting plain HTTP, also inside a cause", () => {
    const tls = Object.assign(new Error("write EPROTO 40E8:error:0A00010B:SSL routines:ssl3_get_record:wrong version number"), { code: "EPROTO" });
    assert.ok(isTlsToPlainHttp(tls));
    assert.ok(isTlsToPlainHttp(new Error("wrapped", { cause: tls })));
    assert.equal(isTlsToPlainHttp(socket("ECONNRESET")), false);
  });

  it("the lock table's driver reads them the same way: a refused connect inside a cause is unreachable, not a table error", () => {
    const loc = 'DynamoDB table "t" at http://127.0.0.1:1';
    assert.equal(toObjstateError(new Error("request failed", { cause: socket("ECONNREFUSED") }), "read", loc).code, "ENDPOINT_UNREACHABLE");
    assert.equal(toObjstateError(answered("RequestTimeout", 400), "read", loc).code, "LOCK_TABLE_ERROR");
  });
});
