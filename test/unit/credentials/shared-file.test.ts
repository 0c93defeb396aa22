/** The shared credentials file: format, mode rules, errors naming the file, warnings, precedence. */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ObjectStoreBackendConfig, isObjstateError } from "../../../src/index.js";
import { resolveEffectiveSettings } from "../../../src/credentials/index.js";

const dir = mkdtempSync(join(tmpdir(), "objstate-creds-"));
let n = 0;
function file(content: unknown, mode = 0o600): string {
  const p = join(dir, `config-${++n}.json`);
  writeFileSync(p, typeof content === "string" ? content : JSON.stringify(content, null, 2));
  chmodSync(p, mode);
  return p;
}

const PROFILES = {
  current: "ak",
  profiles: [
    {
      name: "ak",
      mode: "AK",
      access_key_id: "AK-FROM-FILE",
      access_key_secret: "SK-FROM-FILE",
      sts_token: "ignored-in-AK-mode",
      ram_role_arn: "arn:ignored",
      region_id: "cn-file-1",
    },
    { name: "sts", mode: "StsToken", access_key_id: "AK2", access_key_secret: "SK2", sts_token: "TOKEN2" },
    {
      name: "role",
      mode: "RamRoleArn",
      access_key_id: "AK3",
      access_key_secret: "SK3",
      ram_role_arn: "arn:aws:iam:::role/from-file",
      ram_session_name: "file-session",
      expired_seconds: 1200,
    },
    { name: "ecs", mode: "EcsRamRole", ram_role_name: "instance-role", access_key_id: "ignored", region_id: "cn-ecs-1" },
  ],
};

const B = (p: Record<string, unknown> = {}): ObjectStoreBackendConfig => ObjectStoreBackendConfig.from({ bucket: "state-bucket", ...p } as never);
type R = Record<string, { value: unknown; source: string }>;
const resolve = (p: Record<string, unknown>, env: Record<string, string> = {}): R =>
  resolveEffectiveSettings(B(p), env, { onWarning: () => undefined }) as unknown as R;

describe("shared credentials file", () => {
  const f = file(PROFILES);

  it("AK mode: keys and region, other keys ignored; provenance profile:NAME", () => {
    const r = resolve({ profile: "ak", sharedCredentialsFile: f });
    assert.deepEqual(r["accessKey"], { value: "AK-FROM-FILE", source: "profile:ak" });
    assert.deepEqual(r["secretKey"], { value: "SK-FROM-FILE", source: "profile:ak" });
    assert.deepEqual(r["region"], { value: "cn-file-1", source: "profile:ak" });
    assert.deepEqual(r["securityToken"], { value: undefined, source: "unset" });
    assert.deepEqual(r["assumeRoleRoleArn"], { value: undefined, source: "unset" });
  });

  it("StsToken mode adds the token; RamRoleArn mode the role, session name and duration; EcsRamRole the compute role", () => {
    assert.equal(resolve({ profile: "sts", sharedCredentialsFile: f })["securityToken"]?.value, "TOKEN2");
    const role = resolve({ profile: "role", sharedCredentialsFile: f });
    assert.deepEqual(role["assumeRoleRoleArn"], { value: "arn:aws:iam:::role/from-file", source: "profile:role" });
    assert.deepEqual(role["assumeRoleSessionName"], { value: "file-session", source: "profile:role" });
    assert.deepEqual(role["assumeRoleSessionExpiration"], { value: 1200, source: "profile:role" });
    const ecs = resolve({ profile: "ecs", sharedCredentialsFile: f });
    assert.deepEqual(ecs["computeRoleName"], { value: "instance-role", source: "profile:ecs" });
    assert.deepEqual(ecs["accessKey"], { value: undefined, source: "unset" });
    assert.equal(ecs["region"]?.value, "cn-ecs-1");
  });

  it("explicit beats env beats profile", () => {
    const env = { PROVIDER_ACCESS_KEY: "AK-ENV", PROVIDER_REGION: "eu-env-1" };
    const r = resolve({ profile: "ak", sharedCredentialsFile: f, accessKey: "AK-EXPLICIT" }, env);
    assert.deepEqual(r["accessKey"], { value: "AK-EXPLICIT", source: "explicit" });
    assert.deepEqual(r["region"], { value: "eu-env-1", source: "env:PROVIDER_REGION" });
    assert.deepEqual(r["secretKey"], { value: "SK-FROM-FILE", source: "profile:ak" });
    const r2 = resolve({ profile: "ak", sharedCredentialsFile: f }, env);
    assert.deepEqual(r2["accessKey"], { value: "AK-ENV", source: "env:PROVIDER_ACCESS_KEY" });
  });

  it("`current` in the file selects nothing; `profile` does (explicit or PROVIDER_PROFILE)", () => {
    const none = resolve({ sharedCredentialsFile: f });
    assert.deepEqual(none["accessKey"], { value: undefined, source: "unset" });
    assert.equal(resolve({}, { PROVIDER_PROFILE: "sts", PROVIDER_SHARED_CREDENTIALS_FILE: f })["accessKey"]?.source, "profile:sts");
  });

  it("the file is read only when a profile is given; ~ is expanded against HOME", () => {
    assert.doesNotThrow(() => resolve({ sharedCredentialsFile: join(dir, "missing.json") }));
    const home = mkdtempSync(join(tmpdir(), "objstate-home-"));
    mkdirSync(join(home, ".provider"));
    writeFileSync(join(home, ".provider", "config.json"), JSON.stringify(PROFILES), { mode: 0o600 });
    const r = resolve({ profile: "ak" }, { HOME: home });
    assert.deepEqual(r["sharedCredentialsFile"], { value: "~/.provider/config.json", source: "default" });
    assert.equal(r["accessKey"]?.value, "AK-FROM-FILE");
  });

  const bad: [string, string | object, RegExp][] = [
    ["malformed JSON (with the line)", '{\n  "profiles": [\n    {"name": "ak",, }\n  ]\n}', /is not valid JSON at line 3/],
    ["not an object", "[]", /must hold a JSON object/],
    ["profiles not an array", { profiles: {} }, /"profiles" must be an array/],
    [
      "missing profile",
      {
        profiles: [
          { name: "a", mode: "AK" },
          { name: "b", mode: "AK" },
        ],
      },
      /has no profile "ak" \(profiles there: a, b\)/,
    ],
    ["profile with no mode", { profiles: [{ name: "ak", access_key_id: "x" }] }, /profile "ak" has no "mode"/],
    ["unknown mode", { profiles: [{ name: "ak", mode: "Password" }] }, /mode "Password"; expected one of AK, StsToken, RamRoleArn, EcsRamRole/],
    [
      "wrong value type",
      { profiles: [{ name: "ak", mode: "AK", access_key_id: 123, access_key_secret: "s" }] },
      /"access_key_id" must be a string, got number/,
    ],
    [
      "expired_seconds out of range",
      { profiles: [{ name: "ak", mode: "RamRoleArn", access_key_id: "a", access_key_secret: "s", ram_role_arn: "arn:r", expired_seconds: 600 }] },
      /"expired_seconds" must be an integer from 900 to 3600/,
    ],
  ];
  for (const [name, content, pattern] of bad) {
    it(`error: ${name}, naming the file`, () => {
      const p = file(content);
      assert.throws(
        () => resolve({ profile: "ak", sharedCredentialsFile: p }),
        (e: unknown) => {
          assert.ok(isObjstateError(e, "CREDENTIALS_FILE_INVALID"), String(e));
          assert.ok(e.message.includes(p), e.message);
          assert.match(e.message, pattern);
          assert.ok(!e.message.includes("SK-FROM-FILE"));
          return true;
        },
      );
    });
  }

  it("a missing file names the file", () => {
    assert.throws(() => resolve({ profile: "ak", sharedCredentialsFile: join(dir, "nope.json") }), /nope\.json: does not exist/);
  });

  it("warns when other users can read the file, not otherwise", () => {
    const warnings: string[] = [];
    const open = file(PROFILES, 0o644);
    resolveEffectiveSettings(B({ profile: "ak", sharedCredentialsFile: open }), {}, { onWarning: (m) => warnings.push(m) });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] as string, /can be read by other users; restrict it with chmod 600/);
    resolveEffectiveSettings(B({ profile: "ak", sharedCredentialsFile: f }), {}, { onWarning: (m) => warnings.push(m) });
    assert.equal(warnings.length, 1);
  });
});
