/** Credentials against the real Ceph RGW (S3 + STS) and dynalite. */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { AssumeRoleCommand, STSClient } from "@aws-sdk/client-sts";
import {
  ConfigError,
  ObjectStoreBackend,
  ObjectStoreBackendConfig,
  isObjstateError,
  type ConnectOptions,
  type ObjectStoreBackendConfigProps,
} from "../../../src/index.js";
import { openStore } from "../../../src/store/index.js";
import type { WireRequest } from "../../../src/store/s3.js";
import { startMetadataServer, success, type MetadataServer } from "../../support/metadata-server.js";
import { testServers } from "../../support/servers.js";
import { cephTarget, type Target } from "../../support/targets.js";
import { listenLow } from "../../support/port.js";

const s = testServers();
const admin = () => Promise.resolve({ accessKeyId: s.accessKey, secretAccessKey: s.secretKey });
const keyIdOf = (r: WireRequest): string | undefined => /Credential=([^/]+)\//.exec(r.headers["authorization"] ?? "")?.[1];
const READ_ONLY = JSON.stringify({
  Version: "2012-10-17",
  Statement: [{ Effect: "Allow", Action: ["s3:GetObject", "s3:ListBucket"], Resource: ["arn:aws:s3:::*"] }],
});

describe("credentials against Ceph RGW STS", () => {
  let target: Target;
  const open: ObjectStoreBackend[] = [];
  before(() => {
    target = cephTarget();
  });
  after(() => {
    for (const b of open) b.close();
  });

  async function connect(props: ObjectStoreBackendConfigProps, options: ConnectOptions = {}): Promise<ObjectStoreBackend> {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined, ...options });
    open.push(b);
    return b;
  }

  /** Props for a fresh bucket + table, with the static keys removed (the test decides the identity). */
  async function fresh(extra: Partial<ObjectStoreBackendConfigProps> = {}): Promise<ObjectStoreBackendConfigProps> {
    const { accessKey: _a, secretKey: _s, ...props } = await target.setup({ locks: true });
    return { ...props, ...extra };
  }

  it("assumes the role (session name and duration reach the server) and writes state with it", async () => {
    const props = await fresh({
      accessKey: s.accessKey,
      secretKey: s.secretKey,
      assumeRoleRoleArn: s.roleArn,
      assumeRoleSessionName: "objstate-it",
      assumeRoleSessionExpiration: 900,
    });
    const wire: WireRequest[] = [];
    const b = await connect(props, { s3: { onRequest: (r) => wire.push(r) } });
    assert.equal(b.identity?.assumedRoleArn, "arn:aws:sts:::assumed-role/s3-test-role/objstate-it");
    const exp = b.identity?.expiration?.getTime() ?? 0;
    assert.ok(Math.abs(exp - Date.now() - 900_000) < 60_000, `expiry ${new Date(exp).toISOString()} is about 900 s away`);
    assert.match(
      b.identitySource ?? "",
      /^role arn:aws:iam:::role\/s3-test-role \(explicit\) assumed as session "objstate-it" for 900 s, on top of static keys \(explicit\)$/,
    );
    await b.writeState("default", '{"version":4,"by":"role"}');
    assert.equal((await b.readState("default"))?.toString(), '{"version":4,"by":"role"}');
    const ids = new Set(wire.map(keyIdOf));
    assert.ok(ids.size === 1 && !ids.has(s.accessKey), "S3 requests were signed with the temporary keys, not the static ones");
  });

  it("with a read-only session policy a write fails with a clear access-denied error and nothing is written", async () => {
    const props = await fresh({ accessKey: s.accessKey, secretKey: s.secretKey, assumeRoleRoleArn: s.roleArn, assumeRolePolicy: READ_ONLY });
    const b = await connect(props);
    await assert.rejects(b.writeState("default", '{"version":4,"x":1}'), (e) => {
      assert.ok(isObjstateError(e, "ACCESS_DENIED"), String(e));
      assert.ok(!e.message.includes(s.secretKey) && !e.message.includes(s.accessKey));
      return true;
    });
    const raw = await openStore({ bucket: props.bucket, endpoint: s.s3Endpoint, credentials: admin });
    const keys: string[] = [];
    for await (const k of raw.list("")) keys.push(k);
    assert.deepEqual(keys, [], "nothing written");
    assert.equal(await b.lockInfo("default"), null, "the write's own lock was released");
    raw.close();
    // Reads are still allowed by the policy.
    assert.equal(await b.readState("default"), null);
  });

  it("899 and 3601 are refused before any call to STS", async () => {
    let calls = 0;
    const sts = createServer((_req, res) => ((calls += 1), res.writeHead(500).end()));
    await listenLow(sts);
    const stsEndpoint = `http://127.0.0.1:${(sts.address() as AddressInfo).port}`;
    try {
      for (const bad of [899, 3601]) {
        assert.throws(
          () => ObjectStoreBackendConfig.from({ bucket: "state-bucket", assumeRoleRoleArn: s.roleArn, assumeRoleSessionExpiration: bad }),
          ConfigError,
        );
        const props = await fresh({ accessKey: s.accessKey, secretKey: s.secretKey, assumeRoleRoleArn: s.roleArn, stsEndpoint });
        await assert.rejects(
          connect(props, { env: { PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION: String(bad) } }),
          (e) => e instanceof ConfigError && e.code === "OUT_OF_RANGE" && e.variable === "PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION",
        );
      }
      assert.equal(calls, 0);
    } finally {
      sts.close();
    }
  });

  it("temporary base credentials (key + secret + session token) are the identity for AssumeRole", async () => {
    const client = new STSClient({ endpoint: s.s3Endpoint, region: "us-east-1", credentials: { accessKeyId: s.accessKey, secretAccessKey: s.secretKey } });
    const base = (await client.send(new AssumeRoleCommand({ RoleArn: s.roleArn, RoleSessionName: "base-session", DurationSeconds: 900 }))).Credentials;
    client.destroy();
    assert.ok(base?.AccessKeyId && base.SecretAccessKey && base.SessionToken);
    const props = await fresh({
      accessKey: base.AccessKeyId,
      secretKey: base.SecretAccessKey,
      securityToken: base.SessionToken,
      assumeRoleRoleArn: s.roleArn,
      assumeRoleSessionName: "chained",
    });
    const b = await connect(props);
    assert.equal(b.identity?.assumedRoleArn, "arn:aws:sts:::assumed-role/s3-test-role/chained");
    assert.match(b.identitySource ?? "", /on top of static keys \(explicit\) with a security token$/);
    await b.writeState("default", '{"version":4}');
    // The token matters: without it the same temporary keys are refused.
    const { securityToken: _t, ...noToken } = props;
    await assert.rejects(connect(noToken), (e) => isObjstateError(e) && (e.code === "ACCESS_DENIED" || e.code === "ASSUME_ROLE_FAILED"));
  });

  it("precedence: flattened role ARN beats the deprecated block; the block alone applies; an env role ARN applies", async () => {
    process.removeAllListeners("warning");
    const keys = { accessKey: s.accessKey, secretKey: s.secretKey };
    const flatWins = await connect(
      await fresh({ ...keys, assumeRoleRoleArn: s.roleArn, assumeRole: { roleArn: "arn:aws:iam:::role/no-such-role", sessionName: "from-block" } }),
    );
    assert.equal(flatWins.identity?.assumedRoleArn, "arn:aws:sts:::assumed-role/s3-test-role/tool");
    const blockOnly = await connect(await fresh({ ...keys, assumeRole: { roleArn: s.roleArn, sessionName: "from-block" } }));
    assert.equal(blockOnly.identity?.assumedRoleArn, "arn:aws:sts:::assumed-role/s3-test-role/from-block");
    const envArn = await connect(await fresh(keys), { env: { PROVIDER_ASSUME_ROLE_ARN: s.roleArn, PROVIDER_ASSUME_ROLE_SESSION_NAME: "env-session" } });
    assert.equal(envArn.identity?.assumedRoleArn, "arn:aws:sts:::assumed-role/s3-test-role/env-session");
    assert.match(envArn.identitySource ?? "", /\(env:PROVIDER_ASSUME_ROLE_ARN\)/);
    const noSwitch = await connect(await fresh({ ...keys, assumeRoleRoleArn: "" }));
    assert.equal(noSwitch.identity?.assumedRoleArn, undefined, "an empty role ARN means no role switching");
  });

  it("refresh: with a 900-second session and a controlled clock, a write renews the credentials before expiry", async () => {
    let now = Date.now();
    const seen: { method: string; path: string; key: string }[] = [];
    const props = await fresh({ accessKey: s.accessKey, secretKey: s.secretKey, assumeRoleRoleArn: s.roleArn, assumeRoleSessionExpiration: 900 });
    const b = await connect(props, {
      clock: () => now,
      s3: {
        onRequest: (r) => {
          seen.push({ method: r.method, path: r.path, key: keyIdOf(r) ?? "" });
          // Eleven minutes pass once the write's first request (the guard's read) is out: inside the 5-minute margin, a
          // minute past its start. The lifetime is measured against STS's Date header, in whole seconds, and one second
          // past the start of the margin failed once in a loaded CI run.
          if (seen.length === 1) now += 660_000;
        },
      },
    });
    const state = Buffer.from(JSON.stringify({ version: 4, serial: 1, lineage: "refresh", pad: "y".repeat(4 * 1024 * 1024) }));
    await b.writeState("default", state);
    const put = seen.find((r) => r.method === "PUT");
    assert.ok(seen.length >= 2 && put !== undefined, JSON.stringify(seen));
    assert.notEqual(put.key, seen[0]?.key, "the state was written with renewed credentials");
    assert.ok(!seen.some((r) => r.key === s.accessKey), "never the base identity's keys");
    assert.ok((await b.readState("default"))?.equals(state));
  });

  it("a RamRoleArn profile of the shared credentials file supplies keys, role, session name and duration", async () => {
    const dir = mkdtempSync(join(tmpdir(), "objstate-profile-"));
    const file = join(dir, "config.json");
    const profiles = [
      {
        name: "deploy",
        mode: "RamRoleArn",
        access_key_id: s.accessKey,
        access_key_secret: s.secretKey,
        ram_role_arn: s.roleArn,
        ram_session_name: "from-profile",
        expired_seconds: 900,
        region_id: "us-east-1",
      },
    ];
    writeFileSync(file, JSON.stringify({ current: "other", profiles }), { mode: 0o600 });
    const b = await connect(await fresh({ profile: "deploy", sharedCredentialsFile: file }));
    assert.equal(b.identity?.assumedRoleArn, "arn:aws:sts:::assumed-role/s3-test-role/from-profile");
    assert.match(b.identitySource ?? "", /\(profile:deploy\) assumed as session "from-profile" for 900 s, on top of static keys \(profile:deploy\)$/);
    assert.equal(b.settings.region.source, "profile:deploy");
    await b.writeState("default", '{"version":4}');
  });

  describe("compute-instance role from a loopback metadata service", () => {
    let md: MetadataServer;
    before(async () => {
      md = await startMetadataServer({ "state-writer": { body: { ...(success(s.accessKey, s.secretKey).body as object), SecurityToken: "" } } });
    });
    after(() => md.close());

    it("supplies the identity without keys, and as the base for AssumeRole", async () => {
      const env = { PROVIDER_METADATA_ENDPOINT: md.url };
      const direct = await connect(await fresh({ computeRoleName: "state-writer" }), { env });
      assert.match(direct.identitySource ?? "", /^compute role "state-writer" \(explicit\)/);
      await direct.writeState("default", '{"version":4,"via":"metadata"}');
      const viaRole = await connect(await fresh({ computeRoleName: "state-writer", assumeRoleRoleArn: s.roleArn, assumeRoleSessionName: "from-instance" }), {
        env,
      });
      assert.equal(viaRole.identity?.assumedRoleArn, "arn:aws:sts:::assumed-role/s3-test-role/from-instance");
      await viaRole.writeState("default", '{"version":4}');
    });
  });
});
