/**
 * Property-based: over random props and env maps, building either succeeds with an object
 * that round-trips through from(obj.toProps()), or throws ConfigError — nothing else — and
 * no message ever contains a secret.
 */
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { describe, it } from "node:test";
import fc from "fast-check";
import { COMMON_FIELDS, ConfigError, DataRemoteStateObjectStoreConfig, ObjectStoreBackendConfig, resolveSettings } from "../../../src/index.js";

const SECRET_MARK = "S3CR3T";
const secretText = fc.string({ minLength: 0, maxLength: 12 }).map((s) => `${SECRET_MARK}${s}`);

const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer({ min: -5000, max: 5000 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.constantFrom("private", "public-read", "http://127.0.0.1:1", "file:./x", "env:", "tool.tfstate", "abc-bucket", "900", "ok-name"),
  fc.integer({ min: 850, max: 3650 }),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.oneof(fc.integer(), fc.string({ maxLength: 5 }), fc.constant(null)), { maxKeys: 3 }),
  fc.record(
    {
      roleArn: fc.oneof(fc.string({ maxLength: 10 }), fc.constant(undefined)),
      sessionExpiration: fc.oneof(fc.integer({ min: 800, max: 4000 }), fc.constant(undefined)),
    },
    { requiredKeys: [] },
  ),
);

const fieldNames = [...COMMON_FIELDS.map((f) => f.name), "defaults", "workspace"];
const secretNames = new Set(COMMON_FIELDS.filter((f) => f.secret).map((f) => f.name));

const propsArb = fc
  .record({
    bucket: fc.oneof(fc.constantFrom("state-bucket", "ab", "a.b.c", "Bad_Bucket"), fc.stringMatching(/^[a-z0-9][a-z0-9.-]{1,20}[a-z0-9]$/)),
    entries: fc.array(fc.tuple(fc.constantFrom(...fieldNames, "bukcet", "extra"), anyValue), { maxLength: 8 }),
    secrets: fc.array(
      fc.tuple(
        fc.constantFrom(...secretNames),
        fc.oneof(
          secretText,
          secretText.map((s) => [s]),
          secretText.map((s) => ({ s })),
        ),
      ),
      { maxLength: 3 },
    ),
  })
  .map(({ bucket, entries, secrets }) => {
    const p: Record<string, unknown> = { bucket };
    for (const [k, v] of [...entries, ...secrets]) p[k] = v;
    return p;
  });

function noSecretIn(text: string): void {
  assert.ok(!text.includes(SECRET_MARK), `secret leaked: ${text}`);
}

describe("property: build succeeds and round-trips, or throws ConfigError", () => {
  for (const Cls of [ObjectStoreBackendConfig, DataRemoteStateObjectStoreConfig]) {
    it(Cls.name, () => {
      process.removeAllListeners("warning");
      fc.assert(
        fc.property(propsArb, (props) => {
          let obj: ObjectStoreBackendConfig | DataRemoteStateObjectStoreConfig;
          try {
            obj = Cls.from(props as never);
          } catch (e) {
            assert.ok(e instanceof ConfigError, `not a ConfigError: ${String(e)}`);
            assert.equal(typeof e.code, "string");
            noSecretIn(e.message);
            return;
          }
          const again = Cls.from(obj.toProps() as never);
          assert.deepEqual(again.toProps(), obj.toProps());
          assert.deepEqual(Cls.from(obj.toBuilder().build().toProps() as never).toProps(), obj.toProps());
          noSecretIn(String(obj));
          noSecretIn(JSON.stringify(obj));
          noSecretIn(inspect(obj, { depth: 10 }));
          noSecretIn(JSON.stringify(obj.toJSON()));
        }),
        { numRuns: 400 },
      );
    });
  }

  it("env maps: resolution returns typed values or throws ConfigError naming the variable", () => {
    const envNames = COMMON_FIELDS.flatMap((f) => f.env);
    const secretEnv = COMMON_FIELDS.filter((f) => f.secret).flatMap((f) => f.env);
    const plainEnv = envNames.filter((n) => !secretEnv.includes(n));
    const config = ObjectStoreBackendConfig.from({ bucket: "state-bucket" });
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.constantFrom(...plainEnv),
          fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: 0, max: 5000 }).map(String), fc.constantFrom("http://127.0.0.1:1", "eu-west-1", "ok-name")),
        ),
        fc.dictionary(fc.constantFrom(...secretEnv), secretText),
        (plain, secrets) => {
          const env = { ...plain, ...secrets };
          try {
            const r = resolveSettings(config, env);
            const exp = r.assumeRoleSessionExpiration.value;
            assert.ok(typeof exp === "number" && Number.isInteger(exp) && exp >= 900 && exp <= 3600);
            for (const f of COMMON_FIELDS) {
              const s = (r as unknown as Record<string, { value: unknown; source: string }>)[f.name];
              assert.ok(s !== undefined);
              assert.equal(s.value === undefined, s.source === "unset");
            }
          } catch (e) {
            assert.ok(e instanceof ConfigError, `not a ConfigError: ${String(e)}`);
            assert.ok(e.variable !== undefined && envNames.includes(e.variable));
            assert.ok(!secretEnv.includes(e.variable), "secret env vars take any string");
            noSecretIn(e.message);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
