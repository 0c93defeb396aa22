/**
 * Secret hygiene: a sweep over every public object that can hold a secret, and the
 * redaction helpers they share.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { inspect } from "node:util";
import {
  DataRemoteStateObjectStore,
  DataRemoteStateObjectStoreConfig,
  ObjectStoreBackend,
  ObjectStoreBackendConfig,
  resolveSettings,
} from "../../../src/index.js";
import { COMMON_FIELDS } from "../../../src/config/fields.js";
import { resolveEffectiveSettings } from "../../../src/credentials/index.js";
import { ObjstateError, SanitizedCause } from "../../../src/errors.js";
import { redactText, redactUrl } from "../../../src/util/redact.js";

const SECRET_FIELDS = COMMON_FIELDS.filter((f) => f.secret).map((f) => f.name);
const ENV_OF: Record<string, string> = { accessKey: "PROVIDER_ACCESS_KEY", secretKey: "PROVIDER_SECRET_KEY", securityToken: "PROVIDER_SECURITY_TOKEN" };

/** A distinctive secret: long enough that no accident produces it. */
const secretValue = (): string => `S3CR3T-${randomBytes(12).toString("hex")}`;

/** The secret appears in none of the three ways an object is printed. */
function assertHidden(label: string, x: unknown, secrets: readonly string[]): void {
  const texts = {
    inspect: inspect(x, { showHidden: true, depth: Infinity, getters: true }),
    json: JSON.stringify(x) ?? "",
    string: String(x),
  };
  for (const [how, text] of Object.entries(texts)) {
    for (const s of secrets) assert.ok(!text.includes(s), `${label}: ${how} shows a secret:\n${text}`);
  }
}

const work = mkdtempSync(join(tmpdir(), "objstate-redact-"));
const endpoint = `file://${join(work, "store")}`;
const open: ObjectStoreBackend[] = [];
after(() => {
  for (const b of open) b.close();
});

describe("no public object shows a secret (sweep)", () => {
  for (const field of SECRET_FIELDS) {
    it(`${field}: builders, configs, settings, backends, remote states`, async () => {
      const s = secretValue();
      const props = { bucket: "state-bucket", endpoint, accessKey: "AKID-visible", secretKey: "placeholder", [field]: s };
      const builder = ObjectStoreBackendConfig.builder().bucket("state-bucket")[field as "secretKey"](s);
      const config = ObjectStoreBackendConfig.from(props);
      const remote = DataRemoteStateObjectStoreConfig.from({ ...props, defaults: { a: 1 } });
      const settings = resolveSettings(config);
      const fromEnv = resolveSettings(ObjectStoreBackendConfig.from({ bucket: "state-bucket" }), { [ENV_OF[field] as string]: s });
      const backend = await ObjectStoreBackend.connect(config, { env: {}, onWarning: () => undefined });
      open.push(backend);
      const objects: [string, unknown][] = [
        ["builder", builder],
        ["remote-state builder", DataRemoteStateObjectStoreConfig.builder()[field as "secretKey"](s)],
        ["config", config],
        ["config.toBuilder()", config.toBuilder()],
        ["remote-state config", remote],
        ["remote-state config.toBuilder()", remote.toBuilder()],
        ["resolveSettings()", settings],
        ["a resolved secret entry", (settings as unknown as Record<string, unknown>)[field]],
        ["resolveSettings() from env", fromEnv],
        ["resolveEffectiveSettings()", resolveEffectiveSettings(config, {})],
        ["resolveSettings() of a remote-state config", resolveSettings(remote)],
        ["connected backend", backend],
        ["backend.settings", backend.settings],
        ["DataRemoteStateObjectStore", new DataRemoteStateObjectStore("net", { ...props })],
        ["an array of them", [config, settings, backend]],
      ];
      for (const [label, x] of objects) assertHidden(label, x, [s]);
      // Reading the value is still possible where the API says so.
      assert.equal((settings as unknown as Record<string, { value: unknown }>)[field]?.value, s);
      assert.equal(config.toProps()[field as "secretKey"], s);
    });
  }

  it("a secret from the selected profile of the shared credentials file", () => {
    const s = secretValue();
    const file = join(work, "credentials.json");
    writeFileSync(
      file,
      JSON.stringify({ current: "p", profiles: [{ name: "p", mode: "StsToken", access_key_id: "AKID-p", access_key_secret: s, sts_token: `${s}-token` }] }),
    );
    const settings = resolveEffectiveSettings(ObjectStoreBackendConfig.from({ bucket: "state-bucket", profile: "p", sharedCredentialsFile: file }), {});
    assert.equal(settings.secretKey.value, s);
    assertHidden("profile settings", settings, [s]);
  });

  it("the printed forms still say what is set and where it came from", () => {
    const settings = resolveSettings(ObjectStoreBackendConfig.from({ bucket: "state-bucket" }), { PROVIDER_SECRET_KEY: "xyz-secret-xyz" });
    assert.deepEqual(JSON.parse(JSON.stringify(settings.secretKey)), { value: "<redacted>", source: "env:PROVIDER_SECRET_KEY" });
    assert.match(inspect(settings), /^ResolvedSettings \{/);
    assert.match(
      String(ObjectStoreBackendConfig.builder().bucket("b-1").secretKey("zz")),
      /^ObjectStoreBackendConfigBuilder \{"bucket":"b-1","secretKey":"<redacted>"\}$/,
    );
    assert.deepEqual(settings.bucket, { value: "state-bucket", source: "explicit" }, "entries still compare as plain data");
  });
});

describe("errors keep no foreign error object", () => {
  const s = secretValue();
  /** Shaped like an AWS SDK v3 service error: hidden `$response` with the signed request. */
  function sdkError(): Error {
    const e = Object.assign(
      new Error(
        `The request signature we calculated does not match. Authorization=AWS4-HMAC-SHA256 Credential=AKIDVISIBLE/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=${s}`,
      ),
      {
        name: "SignatureDoesNotMatch",
        $fault: "client",
        $metadata: { httpStatusCode: 403, requestId: "req-1", extendedRequestId: "ext" },
        Code: "SignatureDoesNotMatch",
      },
    );
    Object.defineProperty(e, "$response", {
      enumerable: false,
      value: {
        statusCode: 403,
        headers: { "x-amz-security-token": s },
        body: `<Error><StringToSign>${s}</StringToSign></Error>`,
        request: { headers: { authorization: `AWS4-HMAC-SHA256 Credential=AKIDVISIBLE/x, Signature=${s}` } },
      },
    });
    return e;
  }

  it("the cause is sanitized: name, redacted message, HTTP status; no $response", () => {
    const err = new ObjstateError("ACCESS_DENIED", "access denied: check the secret key", { cause: sdkError() });
    assertHidden("ObjstateError with an SDK cause", err, [s, "StringToSign"]);
    const cause = err.cause;
    assert.ok(cause instanceof SanitizedCause && cause instanceof Error);
    assert.equal(cause.name, "SignatureDoesNotMatch");
    assert.equal(cause.httpStatus, 403);
    assert.equal(cause.$metadata?.httpStatusCode, 403);
    assert.ok(!("$response" in cause));
    assert.match(cause.message, /^The request signature we calculated does not match\. Authorization=<redacted>$/);
  });

  it("network codes survive, through nested causes and AggregateError members", () => {
    const net = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
    const fetchFailed = new TypeError("fetch failed", { cause: new AggregateError([net], "all failed") });
    const err = new ObjstateError("ENDPOINT_UNREACHABLE", "x", { cause: fetchFailed });
    const inner = (err.cause as SanitizedCause).cause as SanitizedCause;
    assert.equal(inner.errors?.[0]?.code, "ECONNREFUSED");
  });

  it("an ObjstateError cause is kept as it is", () => {
    const own = new ObjstateError("STATE_LOCKED", "locked");
    assert.equal(new ObjstateError("STATE_LOCKED", "still locked", { cause: own }).cause, own);
  });

  it("messages and string details lose URL credentials", () => {
    const err = new ObjstateError("ENDPOINT_UNREACHABLE", `cannot reach http://ak:${s}@127.0.0.1:9000/b`, { details: { endpoint: `https://ak:${s}@h`, n: 1 } });
    assertHidden("message with a URL", err, [s]);
    assert.equal(err.message, "cannot reach http://<redacted>@127.0.0.1:9000/b");
    assert.deepEqual(err.details, { endpoint: "https://<redacted>@h", n: 1 });
  });
});

describe("redactUrl / redactText", () => {
  it("removes user info from every URL in a text, nothing else", () => {
    assert.equal(redactUrl("http://user:pass@host:9000"), "http://<redacted>@host:9000");
    assert.equal(redactUrl("https://token@h/p?q=a@b"), "https://<redacted>@h/p?q=a@b");
    assert.equal(redactUrl("see http://a:b@x and file://u@y/dir"), "see http://<redacted>@x and file://<redacted>@y/dir");
    for (const same of ["http://host:9000/a@b", "user@example.com", "s3.example.com", "file:./dir@x"]) assert.equal(redactUrl(same), same);
  });

  it("removes signing material: signatures, credential scopes, tokens, authorization headers", () => {
    const t = redactText(
      "GET /b?X-Amz-Credential=AK%2F2024&X-Amz-Signature=abc123&X-Amz-Security-Token=tok&x=1\nAuthorization: AWS4-HMAC-SHA256 Credential=AK/x, Signature=ff\nok",
    );
    for (const leaked of ["AK%2F2024", "abc123", "tok&", "Credential=AK/x", "ff\n"]) assert.ok(!t.includes(leaked), t);
    assert.match(t, /&x=1/);
    assert.match(t, /\nok$/);
    assert.equal(redactText("SignatureDoesNotMatch: the signature did not match"), "SignatureDoesNotMatch: the signature did not match");
  });
});
