/** The metadata-service client against a loopback server: no redirects, a size cap, typed answers only. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { isObjstateError } from "../../../src/errors.js";
import { fetchComputeRoleCredentials, METADATA_MAX_BYTES } from "../../../src/credentials/metadata.js";
import { startMetadataServer, success, type MetadataServer, type RoleAnswer } from "../../support/metadata-server.js";
import { freeLowPort } from "../../support/port.js";

const ok = success("AK-META", "SK-META");
const okBody = ok.body as Record<string, unknown>;
const pad = (n: number): string => "x".repeat(n);

/** Answers that are not credentials, each with what the message must say. */
const WRONG: Record<string, [RoleAnswer, RegExp]> = {
  null: [{ body: null }, /answered null instead of a JSON object/],
  number: [{ body: 42 }, /answered a number instead of a JSON object/],
  string: [{ body: "Success" }, /answered a string instead of a JSON object/],
  array: [{ body: [okBody] }, /answered an array instead of a JSON object/],
  "code-number": [{ body: { ...okBody, Code: 200 } }, /Code of type number \(not "Success"\)/],
  "code-missing": [{ body: { AccessKeyId: "a", AccessKeySecret: "b" } }, /Code \(none\) \(not "Success"\)/],
  "key-number": [{ body: { ...okBody, AccessKeyId: 12345 } }, /without AccessKeyId\/AccessKeySecret/],
  "secret-object": [{ body: { ...okBody, AccessKeySecret: { v: "SK" } } }, /without AccessKeyId\/AccessKeySecret/],
  "token-number": [{ body: { ...okBody, SecurityToken: 7 } }, /SecurityToken of type number/],
  "expiration-number": [{ body: { ...okBody, Expiration: 1700000000 } }, /Expiration that is not a date \(of type number\)/],
  "expiration-text": [{ body: { ...okBody, Expiration: "soon" } }, /Expiration that is not a date \("soon"\)/],
  "not-json": [{ raw: "Code=Success" }, /sent no JSON/],
  empty: [{ raw: "" }, /sent no JSON/],
  redirect: [
    { status: 302, headers: { location: "/latest/meta-data/ram/security-credentials/good" } },
    /answered a redirect \(302\), which objstate does not follow/,
  ],
  "redirect-307": [{ status: 307, headers: { location: "http://127.0.0.1:1/" } }, /answered a redirect \(307\)/],
  "too-large": [{ raw: JSON.stringify({ ...okBody, Padding: pad(METADATA_MAX_BYTES) }) }, /sent more than 65536 bytes/],
  "too-large-chunked": [
    { raw: JSON.stringify({ ...okBody, Padding: pad(METADATA_MAX_BYTES * 4) }), headers: { "transfer-encoding": "chunked" } },
    /sent more than 65536 bytes/,
  ],
};

describe("metadata client", () => {
  let md: MetadataServer;
  before(async () => {
    md = await startMetadataServer({
      good: ok,
      "near-limit": { body: { ...okBody, Padding: pad(METADATA_MAX_BYTES - 1024) } },
      "no-token": { body: { ...okBody, SecurityToken: null, Expiration: null } },
      ...Object.fromEntries(Object.entries(WRONG).map(([k, [answer]]) => [k, answer])),
    });
  });
  after(() => md.close());
  const fetchRole = (role: string, env: Record<string, string> = { PROVIDER_METADATA_ENDPOINT: md.url }) => fetchComputeRoleCredentials(role, env);

  it("a good answer, and one just under the size cap", async () => {
    assert.equal((await fetchRole("good")).secretAccessKey, "SK-META");
    assert.equal((await fetchRole("near-limit")).accessKeyId, "AK-META");
    const bare = await fetchRole("no-token");
    assert.equal(bare.sessionToken, undefined);
    assert.equal(bare.expiration, undefined);
  });

  for (const [role, [, pattern]] of Object.entries(WRONG)) {
    it(`${role}: a typed COMPUTE_ROLE_FAILED naming the role, never a TypeError`, async () => {
      await assert.rejects(fetchRole(role), (e) => {
        assert.ok(isObjstateError(e, "COMPUTE_ROLE_FAILED"), `got ${String(e)}`);
        assert.match(e.message, pattern);
        assert.match(e.message, new RegExp(`for compute role "${role}"$`));
        assert.ok(!e.message.includes("SK-META"));
        return true;
      });
    });
  }

  it("a redirect is not followed: the target is never requested", async () => {
    const before = md.requests.length;
    await assert.rejects(fetchRole("redirect"), (e) => isObjstateError(e, "COMPUTE_ROLE_FAILED"));
    assert.deepEqual(md.requests.slice(before), ["/latest/meta-data/ram/security-credentials/redirect"]);
  });

  it("credentials in PROVIDER_METADATA_ENDPOINT never reach the message", async () => {
    const port = await freeLowPort();
    await assert.rejects(fetchRole("good", { PROVIDER_METADATA_ENDPOINT: `http://user:md-pass-123@127.0.0.1:${port}` }), (e) => {
      assert.ok(isObjstateError(e, "METADATA_UNREACHABLE"), String(e));
      assert.ok(!e.message.includes("md-pass-123"), e.message);
      assert.match(e.message, /http:\/\/<redacted>@127\.0\.0\.1/);
      return true;
    });
  });
});
