/**
 * Every row of the seed's field table, checked against an independent transcription of
 * the seed: setter, getter, readonly prop, env fallback order, default, since, JSON key.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  COMMON_FIELDS,
  DataRemoteStateObjectStoreConfig,
  ObjectStoreAssumeRole,
  ObjectStoreBackendConfig,
  REMOTE_STATE_FIELDS,
  resolveSettings,
} from "../../../src/index.js";

interface SeedRow {
  name: string;
  jsonKey: string;
  javaType: string;
  env: string[];
  def?: string | number;
  since?: string;
  secret?: boolean;
  sample: unknown;
  envSample?: [string, unknown];
}

// Transcribed from ../shared/seed (common fields), in the seed's order.
const SEED: SeedRow[] = [
  { name: "bucket", jsonKey: "bucket", javaType: "java.lang.String", env: [], sample: "state-bucket" },
  {
    name: "accessKey",
    jsonKey: "access_key",
    javaType: "java.lang.String",
    env: ["PROVIDER_ACCESS_KEY", "PROVIDER_ACCESS_KEY_ID"],
    secret: true,
    sample: "AK-explicit",
  },
  { name: "acl", jsonKey: "acl", javaType: "java.lang.String", env: [], sample: "public-read" },
  { name: "assumeRole", jsonKey: "assume_role", javaType: "ObjectStoreAssumeRole", env: [], sample: { roleArn: "arn:aws:iam:::role/x" } },
  {
    name: "assumeRolePolicy",
    jsonKey: "assume_role_policy",
    javaType: "java.lang.String",
    env: [],
    since: "1.1.0",
    sample: '{"Version":"2012-10-17","Statement":[]}',
  },
  {
    name: "assumeRoleRoleArn",
    jsonKey: "assume_role_role_arn",
    javaType: "java.lang.String",
    env: ["PROVIDER_ASSUME_ROLE_ARN"],
    since: "1.1.0",
    sample: "arn:aws:iam:::role/r",
  },
  {
    name: "assumeRoleSessionExpiration",
    jsonKey: "assume_role_session_expiration",
    javaType: "java.lang.Number",
    env: ["PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION"],
    def: 3600,
    since: "1.1.0",
    sample: 1200,
    envSample: ["1800", 1800],
  },
  {
    name: "assumeRoleSessionName",
    jsonKey: "assume_role_session_name",
    javaType: "java.lang.String",
    env: ["PROVIDER_ASSUME_ROLE_SESSION_NAME"],
    def: "tool",
    since: "1.1.0",
    sample: "deploy-session",
  },
  { name: "computeRoleName", jsonKey: "compute_role_name", javaType: "java.lang.String", env: [], since: "0.12.14", sample: "ecs-role" },
  { name: "encrypt", jsonKey: "encrypt", javaType: "java.lang.Boolean", env: [], sample: true },
  {
    name: "endpoint",
    jsonKey: "endpoint",
    javaType: "java.lang.String",
    env: ["PROVIDER_OBJECT_STORE_ENDPOINT", "OBJECT_STORE_ENDPOINT"],
    sample: "http://127.0.0.1:9000",
  },
  { name: "key", jsonKey: "key", javaType: "java.lang.String", env: [], def: "tool.tfstate", sample: "net.tfstate" },
  { name: "prefix", jsonKey: "prefix", javaType: "java.lang.String", env: [], def: "env:", sample: "states" },
  { name: "profile", jsonKey: "profile", javaType: "java.lang.String", env: ["PROVIDER_PROFILE"], since: "0.12.8", sample: "prod" },
  { name: "region", jsonKey: "region", javaType: "java.lang.String", env: ["PROVIDER_REGION", "PROVIDER_DEFAULT_REGION"], sample: "eu-west-1" },
  {
    name: "secretKey",
    jsonKey: "secret_key",
    javaType: "java.lang.String",
    env: ["PROVIDER_SECRET_KEY", "PROVIDER_ACCESS_KEY_SECRET"],
    secret: true,
    sample: "SK-explicit",
  },
  { name: "securityToken", jsonKey: "security_token", javaType: "java.lang.String", env: ["PROVIDER_SECURITY_TOKEN"], secret: true, sample: "TOKEN-explicit" },
  {
    name: "sharedCredentialsFile",
    jsonKey: "shared_credentials_file",
    javaType: "java.lang.String",
    env: ["PROVIDER_SHARED_CREDENTIALS_FILE"],
    def: "~/.provider/config.json",
    since: "0.12.8",
    sample: "/etc/creds.json",
  },
  {
    name: "stsEndpoint",
    jsonKey: "sts_endpoint",
    javaType: "java.lang.String",
    env: ["PROVIDER_STS_ENDPOINT"],
    since: "1.0.11",
    sample: "https://sts.example.com",
  },
  { name: "kvstoreEndpoint", jsonKey: "kvstore_endpoint", javaType: "java.lang.String", env: [], sample: "http://127.0.0.1:8000" },
  { name: "kvstoreTable", jsonKey: "kvstore_table", javaType: "java.lang.String", env: [], sample: "locks" },
];

const cap = (s: string): string => s[0]?.toUpperCase() + s.slice(1);
type Dyn = Record<string, unknown>;
const call = (o: unknown, m: string, ...args: unknown[]): unknown => (o as Record<string, (...a: unknown[]) => unknown>)[m]?.(...args);

function envSampleOf(row: SeedRow, variable: string): { text: string; value: unknown } {
  if (row.envSample !== undefined) return { text: row.envSample[0], value: row.envSample[1] };
  const text = `${String(row.sample)}-${variable.toLowerCase().replace(/_/g, "-")}`;
  return { text: row.name === "stsEndpoint" || row.name === "endpoint" ? `http://${variable.toLowerCase().replace(/_/g, "-")}.test` : text, value: undefined };
}

describe("field table matches the seed", () => {
  it("has exactly the seed's common fields, in order", () => {
    assert.deepEqual(
      COMMON_FIELDS.map((f) => f.name),
      SEED.map((r) => r.name),
    );
    assert.deepEqual(
      REMOTE_STATE_FIELDS.map((f) => f.name),
      [...SEED.map((r) => r.name), "defaults", "workspace"],
    );
  });

  for (const row of SEED) {
    describe(row.name, () => {
      const spec = COMMON_FIELDS.find((f) => f.name === row.name);
      it("row: JSON key, type, env vars in order, default, since, secret", () => {
        assert.ok(spec);
        assert.equal(spec.jsonKey, row.jsonKey);
        assert.equal(spec.javaType, row.javaType);
        assert.deepEqual([...spec.env], row.env);
        assert.equal(spec.default, row.def);
        assert.equal(spec.since, row.since);
        assert.equal(spec.secret, row.secret ?? false);
        assert.equal(spec.required, row.name === "bucket");
        assert.equal(spec.deprecated, row.name === "assumeRole");
      });

      for (const Cls of [ObjectStoreBackendConfig, DataRemoteStateObjectStoreConfig]) {
        it(`${Cls.name}: setter, getter, prop and from()`, () => {
          let b: unknown = Cls.builder();
          if (row.name !== "bucket") b = call(b, "bucket", "state-bucket");
          b = call(b, row.name, row.sample);
          const built = call(b, "build") as Dyn;
          const fromProps = Cls.from({ bucket: "state-bucket", [row.name]: row.sample } as never) as unknown as Dyn;
          for (const obj of [built, fromProps]) {
            const got = call(obj, `get${cap(row.name)}`);
            if (row.name === "assumeRole") {
              assert.ok(got instanceof ObjectStoreAssumeRole);
              assert.equal(got.getRoleArn(), "arn:aws:iam:::role/x");
            } else {
              assert.deepEqual(got, row.sample);
            }
            assert.equal(obj[row.name], got);
          }
          if (row.name !== "bucket") {
            const bare = Cls.from({ bucket: "state-bucket" }) as unknown as Dyn;
            assert.equal(call(bare, `get${cap(row.name)}`), undefined, "unset getter returns undefined (defaults belong to resolution)");
          }
        });
      }

      it("JSON key in synthesis", () => {
        const c = ObjectStoreBackendConfig.from({ bucket: "state-bucket", [row.name]: row.sample } as never);
        const block = c.toToolJson().tool.backend.objectstore;
        assert.ok(row.jsonKey in block, `${row.jsonKey} in ${JSON.stringify(Object.keys(block))}`);
        if (row.name === "assumeRole") assert.deepEqual(block[row.jsonKey], { role_arn: "arn:aws:iam:::role/x" });
        else assert.deepEqual(block[row.jsonKey], row.sample);
      });

      it("resolution: explicit wins, then env vars in order (first non-empty), then default", () => {
        const base = ObjectStoreBackendConfig.from({ bucket: "state-bucket" });
        const noEnv = resolveSettings(base, {}) as unknown as Record<string, { value: unknown; source: string }>;
        if (row.name === "sharedCredentialsFile") {
          // Its default applies only when a profile is given.
          assert.deepEqual(noEnv[row.name], { value: undefined, source: "unset" });
          const withProfile = resolveSettings(base, { PROVIDER_PROFILE: "p" });
          assert.deepEqual(withProfile.sharedCredentialsFile, { value: row.def, source: "default" });
        } else if (row.name !== "bucket") {
          assert.deepEqual(noEnv[row.name], row.def === undefined ? { value: undefined, source: "unset" } : { value: row.def, source: "default" });
        }
        if (row.env.length === 0) return;
        const env: Record<string, string> = {};
        for (const v of row.env) env[v] = envSampleOf(row, v).text;
        // The first variable wins when all are set …
        const all = resolveSettings(base, env) as unknown as Record<string, { value: unknown; source: string }>;
        const first = row.env[0] as string;
        assert.equal(all[row.name]?.source, `env:${first}`);
        const expected = envSampleOf(row, first).value ?? env[first];
        assert.deepEqual(all[row.name]?.value, expected);
        // … an empty first variable falls through to the next …
        if (row.env.length > 1) {
          const second = row.env[1] as string;
          const r = resolveSettings(base, { ...env, [first]: "" }) as unknown as Record<string, { value: unknown; source: string }>;
          assert.equal(r[row.name]?.source, `env:${second}`);
          assert.deepEqual(r[row.name]?.value, envSampleOf(row, second).value ?? env[second]);
        }
        // … and an explicit value beats them all.
        const explicit = ObjectStoreBackendConfig.from({ bucket: "state-bucket", [row.name]: row.sample } as never);
        const e = resolveSettings(explicit, env) as unknown as Record<string, { value: unknown; source: string }>;
        assert.deepEqual(e[row.name], { value: row.sample, source: "explicit" });
      });
    });
  }

  it("remote-state extras: defaults and workspace", () => {
    const r = DataRemoteStateObjectStoreConfig.builder().bucket("state-bucket").defaults({ vpc: "none", n: 1 }).workspace("staging").build();
    assert.deepEqual(r.getDefaults(), { vpc: "none", n: 1 });
    assert.equal(r.getWorkspace(), "staging");
    const bare = DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket" });
    assert.deepEqual(resolveSettings(bare, {}).workspace, { value: "default", source: "default" });
    assert.deepEqual(resolveSettings(bare, {}).defaults, { value: undefined, source: "unset" });
  });

  it("ObjectStoreAssumeRole: roleArn required, all getters", () => {
    const a = ObjectStoreAssumeRole.builder().roleArn("arn:r").policy('{"a":1}').sessionName("ss").sessionExpiration(900).build();
    assert.deepEqual([a.getRoleArn(), a.getPolicy(), a.getSessionName(), a.getSessionExpiration()], ["arn:r", '{"a":1}', "ss", 900]);
    assert.throws(() => ObjectStoreAssumeRole.builder().policy('{"a":1}').build(), {
      name: "ConfigError",
      code: "REQUIRED",
      field: "roleArn",
      message: "roleArn is required",
    });
  });
});
