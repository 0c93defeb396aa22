/**
 * Synthesis for the real tool (`toTerraformJson`, issue 24): golden files of each backend's
 * output, and the mapping table's rows driving the checks (a new row is tested without a new
 * test). Regenerate the golden files with UPDATE_GOLDEN=1 after a deliberate change.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  ASSUME_ROLE_FIELDS,
  COMMON_FIELDS,
  ConfigError,
  DataRemoteStateObjectStore,
  DataRemoteStateObjectStoreConfig,
  formatToolJson,
  mappingRows,
  mergeToolJson,
  ObjectStoreBackendConfig,
  TERRAFORM_BACKENDS,
  TERRAFORM_MAPPING,
  terraformWarnings,
  writeToolJson,
  type ArgumentCell,
  type JsonObject,
  type ObjectStoreBackendConfigProps,
  type TerraformBackendOptions,
  type TerraformBackendType,
  type ToolJson,
} from "../../../src/index.js";

process.removeAllListeners("warning");
const GOLDEN = new URL("../../../../test/golden/", import.meta.url);

function golden(name: string, doc: ToolJson): void {
  const file = new URL(name, GOLDEN);
  const text = formatToolJson(doc);
  if (process.env["UPDATE_GOLDEN"] === "1") writeFileSync(file, text);
  assert.equal(text, readFileSync(file, "utf8"));
}

/** A valid value for every field (the block's fields under `assumeRole.NAME`). */
const VALUES: Readonly<Record<string, unknown>> = {
  bucket: "state-bucket",
  accessKey: "<ACCESS_KEY>",
  acl: "private",
  assumeRolePolicy: '{"Version":"2012-10-17","Statement":[]}',
  assumeRoleRoleArn: "arn:aws:iam::123456789012:role/deployer",
  assumeRoleSessionExpiration: 900,
  assumeRoleSessionName: "deploy",
  computeRoleName: "ecs-state-role",
  encrypt: true,
  endpoint: "https://s3.example.com",
  key: "network.tfstate",
  prefix: "states",
  profile: "prod",
  region: "eu-west-1",
  secretKey: "<SECRET_KEY>",
  securityToken: "<SECURITY_TOKEN>",
  sharedCredentialsFile: "/etc/provider/config.json",
  stsEndpoint: "https://sts.example.com",
  kvstoreEndpoint: "https://dynamodb.example.com",
  kvstoreTable: "state-locks",
  "assumeRole.roleArn": "arn:aws:iam::123456789012:role/old",
  "assumeRole.policy": '{"Statement":[]}',
  "assumeRole.sessionName": "old-session",
  "assumeRole.sessionExpiration": 1800,
};

/** Props with one row's field set (the block's fields inside `assumeRole`), plus the bucket. */
function propsWith(field: string): ObjectStoreBackendConfigProps {
  const v = VALUES[field];
  if (field.startsWith("assumeRole.")) {
    const inner = field.slice("assumeRole.".length);
    return { bucket: "state-bucket", assumeRole: { roleArn: VALUES["assumeRole.roleArn"] as string, [inner]: v } };
  }
  // The S3 backend's assume_role needs a role ARN beside its other members.
  const arn = field.startsWith("assumeRole") && field !== "assumeRoleRoleArn" ? { assumeRoleRoleArn: VALUES["assumeRoleRoleArn"] as string } : {};
  return { bucket: "state-bucket", ...arn, [field]: v } as ObjectStoreBackendConfigProps;
}

const HTTP = { backend: "http", serveUrl: "http://127.0.0.1:8080", username: "ci" } as const;
function optionsFor(backend: TerraformBackendType): TerraformBackendOptions {
  return backend === "http" ? HTTP : { backend };
}

/** The value at a dotted argument path of a backend block. */
function at(block: JsonObject, path: string): unknown {
  return path.split(".").reduce<unknown>((o, k) => (o as JsonObject | undefined)?.[k], block);
}

function backendBlock(config: ObjectStoreBackendConfig, options: TerraformBackendOptions): JsonObject {
  return config.toTerraformJson(options).terraform.backend[options.backend] as JsonObject;
}

/** Every field the backend takes (no `none` cell), each with its value. */
function supported(backend: TerraformBackendType, except: readonly string[] = []): ObjectStoreBackendConfigProps {
  const props: Record<string, unknown> = {};
  for (const f of COMMON_FIELDS) {
    const cell = TERRAFORM_MAPPING[f.name as keyof typeof TERRAFORM_MAPPING][backend];
    if (cell.kind === "none" || except.includes(f.name)) continue;
    props[f.name] = f.kind === "assumeRole" ? Object.fromEntries(ASSUME_ROLE_FIELDS.map((g) => [g.name, VALUES[`assumeRole.${g.name}`]])) : VALUES[f.name];
  }
  return props as ObjectStoreBackendConfigProps;
}

describe("the mapping table", () => {
  it("has a row for every field of the field table and of the deprecated block, with a cell for every backend", () => {
    const names = [...COMMON_FIELDS.map((f) => f.name), ...ASSUME_ROLE_FIELDS.map((g) => `assumeRole.${g.name}`), "lockfile"];
    assert.deepEqual(Object.keys(TERRAFORM_MAPPING), names);
    for (const row of mappingRows()) assert.ok(TERRAFORM_BACKENDS.includes(row.backend) && row.cell !== undefined, `${row.field}/${row.backend}`);
    assert.equal(mappingRows().length, names.length * TERRAFORM_BACKENDS.length);
  });

  it("writes every set field to its row's argument, for every backend (server cells write nothing)", () => {
    for (const { field, backend, cell } of mappingRows()) {
      if (field === "lockfile" || cell.kind === "none" || cell.kind === "block") continue;
      const block = backendBlock(ObjectStoreBackendConfig.from(propsWith(field)), optionsFor(backend));
      if (cell.kind === "server") {
        assert.deepEqual(Object.keys(block).sort(), ["address", "lock_address", "unlock_address", "username"], `${field} with ${backend}`);
        continue;
      }
      const written = at(block, cell.argument);
      assert.notEqual(written, undefined, `${field} → ${backend} ${cell.argument}`);
      const v = VALUES[field];
      const expected = { undefined: v, nonEmpty: v, list: [v], seconds: `${String(v)}s`, path: v, url: v, httpsHost: String(v).replace(/^https:\/\//, "") }[
        cell.transform ?? "undefined"
      ];
      assert.deepEqual(written, expected, `${field} → ${backend} ${cell.argument}`);
      for (const [k, x] of Object.entries(cell.alongside ?? {})) assert.equal(block[k], x, `${k} beside ${cell.argument}`);
    }
  });

  it("refuses every set field whose row has no argument for the backend, naming the field and the backend", () => {
    let checked = 0;
    for (const { field, backend, cell } of mappingRows()) {
      if (cell.kind !== "none") continue;
      checked++;
      const run =
        field === "lockfile"
          ? () => ObjectStoreBackendConfig.from({ bucket: "state-bucket" }).toTerraformJson({ backend: backend as "s3" | "oss", lockfile: true })
          : () => backendBlock(ObjectStoreBackendConfig.from(propsWith(field)), optionsFor(backend));
      assert.throws(
        run,
        (e: unknown) =>
          e instanceof ConfigError &&
          e.code === "UNSUPPORTED_FIELD" &&
          e.field === field &&
          e.message.includes(`${field} is set`) &&
          e.message.includes(`${backend} backend`),
        `${field} with ${backend}`,
      );
      // The same for a remote state (the backend's rows are the same).
      if (field !== "lockfile") {
        const remote = new DataRemoteStateObjectStore("r", propsWith(field) as never);
        assert.throws(() => remote.toTerraformJson(optionsFor(backend) as never), { code: "UNSUPPORTED_FIELD" });
      }
    }
    assert.ok(checked >= 2, "computeRoleName with s3, lockfile with oss");
  });

  it("writes objstate's defaults where the backend's differ or it needs the argument, and only those", () => {
    const bare = ObjectStoreBackendConfig.from({ bucket: "state-bucket" });
    assert.deepEqual(backendBlock(bare, { backend: "s3" }), { bucket: "state-bucket", key: "tool.tfstate", region: "us-east-1" });
    assert.deepEqual(backendBlock(bare, { backend: "oss" }), { bucket: "state-bucket", key: "tool.tfstate" });
    assert.deepEqual(backendBlock(bare, { backend: "http", serveUrl: "http://127.0.0.1:8080" }), {
      address: "http://127.0.0.1:8080/state/default",
      lock_address: "http://127.0.0.1:8080/state/default",
      unlock_address: "http://127.0.0.1:8080/state/default",
    });
  });
});

describe("toTerraformJson golden files", () => {
  it("s3 with every field it supports (the flattened role fields) and the lockfile", () => {
    golden("terraform-s3-all-fields.json", ObjectStoreBackendConfig.from(supported("s3", ["assumeRole"])).toTerraformJson({ backend: "s3", lockfile: true }));
  });
  it("oss with every field (deprecated block included)", () => {
    golden("terraform-oss-all-fields.json", ObjectStoreBackendConfig.from(supported("oss")).toTerraformJson({ backend: "oss" }));
  });
  it("http with every field set: the server holds them, only its address and the user are written", () => {
    golden(
      "terraform-http.json",
      ObjectStoreBackendConfig.from(supported("http")).toTerraformJson({ ...HTTP, serveUrl: "https://state.example.com/", workspace: "prod" }),
    );
  });
  it("remote states through each backend, merged with a backend and a seed remote state", () => {
    const cfg = (extra: object) =>
      DataRemoteStateObjectStoreConfig.from({
        bucket: "state-bucket",
        key: "network.tfstate",
        kvstoreTable: "state-locks",
        endpoint: "s3.example.com",
        ...extra,
      });
    const viaS3 = new DataRemoteStateObjectStore("net", cfg({ defaults: { vpc_id: "vpc-none", SubnetIDs: ["a", "b"] }, workspace: "staging" }));
    const viaOss = new DataRemoteStateObjectStore("dns", cfg({ stsEndpoint: "https://sts.example.com:8443" }));
    const viaHttp = new DataRemoteStateObjectStore("app", cfg({ workspace: "prod-eu", defaults: { url: "" } }));
    const seed = new DataRemoteStateObjectStore("old", { bucket: "state-bucket" });
    golden(
      "terraform-remote-state.json",
      mergeToolJson(
        ObjectStoreBackendConfig.from({ bucket: "state-bucket", prefix: "" }).toTerraformJson({ backend: "s3" }),
        viaS3.toTerraformJson({ backend: "s3" }),
        viaOss.toTerraformJson({ backend: "oss" }),
        viaHttp.toTerraformJson({ backend: "http", serveUrl: "http://127.0.0.1:8080", username: "reader" }),
        seed.toToolJson(),
      ),
    );
  });
  it("the seed's tool JSON is unchanged (toToolJson and its golden file)", () => {
    assert.equal(
      formatToolJson(ObjectStoreBackendConfig.from({ bucket: "state-bucket" }).toToolJson()),
      readFileSync(new URL("backend-bucket-only.json", GOLDEN), "utf8"),
    );
  });
});

describe("values as each backend reads them", () => {
  const s3 = (props: Omit<ObjectStoreBackendConfigProps, "bucket">, options: Partial<TerraformBackendOptions> = {}) =>
    backendBlock(ObjectStoreBackendConfig.from({ bucket: "state-bucket", ...props }), { backend: "s3", ...options } as TerraformBackendOptions);
  const oss = (props: Omit<ObjectStoreBackendConfigProps, "bucket">) =>
    backendBlock(ObjectStoreBackendConfig.from({ bucket: "state-bucket", ...props }), { backend: "oss" });

  it("endpoints: a bare host is https://host, as objstate reads it; a file: endpoint is refused (the tool cannot reach the embedded store)", () => {
    assert.deepEqual(s3({ endpoint: "s3.example.com:9000", kvstoreEndpoint: "http://127.0.0.1:8000/" })["endpoints"], {
      s3: "https://s3.example.com:9000",
      dynamodb: "http://127.0.0.1:8000",
    });
    assert.equal(oss({ endpoint: "oss.example.com" })["endpoint"], "https://oss.example.com");
    for (const field of ["endpoint", "kvstoreEndpoint"] as const) {
      for (const backend of ["s3", "oss"] as const) {
        assert.throws(
          () => backendBlock(ObjectStoreBackendConfig.from({ bucket: "state-bucket", [field]: "file:./states" }), { backend }),
          (e: unknown) =>
            e instanceof ConfigError &&
            e.code === "UNSUPPORTED_VALUE" &&
            e.field === field &&
            /embedded store/.test(e.message) &&
            /http backend/.test(e.message),
        );
      }
    }
  });

  it("the OSS backend's sts_endpoint is a host (it adds https:// itself); plain http is refused", () => {
    assert.equal(oss({ stsEndpoint: "https://sts.example.com:8443" })["sts_endpoint"], "sts.example.com:8443");
    assert.equal(oss({ stsEndpoint: "sts.example.com" })["sts_endpoint"], "sts.example.com");
    assert.throws(() => oss({ stsEndpoint: "http://sts.example.com" }), { code: "UNSUPPORTED_VALUE", message: /https only/ });
  });

  it("the S3 backend's assume_role: duration as a string, an empty role ARN means none, and it needs a role ARN", () => {
    assert.deepEqual(s3({ assumeRoleRoleArn: "arn:aws:iam::1:role/r", assumeRoleSessionExpiration: 3600 })["assume_role"], {
      role_arn: "arn:aws:iam::1:role/r",
      duration: "3600s",
    });
    assert.deepEqual(s3({ assumeRole: { roleArn: "arn:aws:iam::1:role/old", sessionExpiration: 900 } })["assume_role"], {
      role_arn: "arn:aws:iam::1:role/old",
      duration: "900s",
    });
    assert.equal(s3({ assumeRoleRoleArn: "" })["assume_role"], undefined);
    assert.throws(() => s3({ assumeRoleRoleArn: "", assumeRoleSessionName: "deploy" }), {
      code: "UNSUPPORTED_VALUE",
      message: /assumeRoleSessionName is set, but no role ARN/,
    });
  });

  it("the deprecated block and the flattened fields may not both set one argument of the S3 backend", () => {
    assert.throws(
      () => s3({ assumeRoleRoleArn: "arn:aws:iam::1:role/new", assumeRole: { roleArn: "arn:aws:iam::1:role/old" } }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.code === "CONFLICTING_FIELDS" &&
        /assumeRole\.roleArn and assumeRoleRoleArn both set assume_role\.role_arn/.test(e.message),
    );
    // The OSS backend has both (its own precedence applies): written as set.
    const both = oss({ assumeRoleRoleArn: "arn:aws:iam::1:role/new", assumeRole: { roleArn: "arn:aws:iam::1:role/old" } });
    assert.equal(both["assume_role_role_arn"], "arn:aws:iam::1:role/new");
    assert.deepEqual(both["assume_role"], { role_arn: "arn:aws:iam::1:role/old" });
  });

  it("prefix trimmed of '/', a list of shared credentials files, use_lockfile only when asked", () => {
    const b = s3({ prefix: "team/states/", sharedCredentialsFile: "/creds" });
    assert.equal(b["workspace_key_prefix"], "team/states");
    assert.deepEqual(b["shared_credentials_files"], ["/creds"]);
    assert.equal(b["use_lockfile"], undefined);
    assert.equal(s3({}, { lockfile: false })["use_lockfile"], undefined);
    assert.equal(s3({}, { lockfile: true })["use_lockfile"], true);
  });

  it("http: the workspace's address, URL-encoded, on the serve URL's path; a remote state reads its workspace there", () => {
    const cfg = ObjectStoreBackendConfig.from({ bucket: "state-bucket" });
    assert.equal(
      backendBlock(cfg, { backend: "http", serveUrl: "https://proxy.example.com/objstate/", workspace: "a~b" })["address"],
      "https://proxy.example.com/objstate/state/a~b",
    );
    const remote = DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", workspace: "prod" }).toTerraformJson({
      backend: "http",
      serveUrl: "http://127.0.0.1:8080",
    });
    assert.deepEqual(remote, { backend: "http", config: { address: "http://127.0.0.1:8080/state/prod" } });
    const viaS3 = DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", workspace: "prod", defaults: { a: 1 } }).toTerraformJson({ backend: "s3" });
    assert.deepEqual(viaS3, {
      backend: "s3",
      config: { bucket: "state-bucket", key: "tool.tfstate", region: "us-east-1" },
      defaults: { a: 1 },
      workspace: "prod",
    });
  });
});

describe("options", () => {
  const cfg = ObjectStoreBackendConfig.from({ bucket: "state-bucket" });
  const remote = DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket" });
  const cases: [string, unknown, string, RegExp][] = [
    ["an unknown backend", { backend: "gcs" }, "INVALID_VALUE", /backend must be one of s3, oss, http, got "gcs"/],
    ["no backend", {}, "INVALID_VALUE", /backend must be one of/],
    ["http without serveUrl", { backend: "http" }, "REQUIRED", /serveUrl is required for the http backend/],
    ["a serveUrl with credentials", { backend: "http", serveUrl: "http://ci:pw@127.0.0.1:8080" }, "INVALID_VALUE", /must not carry credentials/],
    ["a serveUrl with a query", { backend: "http", serveUrl: "http://127.0.0.1:8080/?x=1" }, "INVALID_VALUE", /no query or fragment/],
    ["a serveUrl that is not http", { backend: "http", serveUrl: "ftp://127.0.0.1" }, "INVALID_VALUE", /http:\/\/ or https:\/\//],
    ["a username with ':'", { backend: "http", serveUrl: "http://127.0.0.1:8080", username: "a:b" }, "INVALID_VALUE", /without ':'/],
    ["a workspace that is no name", { backend: "http", serveUrl: "http://127.0.0.1:8080", workspace: "a/b" }, "INVALID_VALUE", /workspace must be/],
    ["serveUrl for s3", { backend: "s3", serveUrl: "http://127.0.0.1:8080" }, "INVALID_PROPS", /serveUrl is not an option for backend s3/],
  ];
  for (const [what, options, code, message] of cases) {
    it(`refuses ${what}`, () => {
      assert.throws(
        () => cfg.toTerraformJson(options as TerraformBackendOptions),
        (e: unknown) => e instanceof ConfigError && e.code === code && message.test(e.message),
      );
    });
  }
  it("a remote state takes no workspace or lockfile option (its config has the workspace)", () => {
    assert.throws(() => remote.toTerraformJson({ backend: "http", serveUrl: "http://127.0.0.1:8080", workspace: "x" } as never), {
      code: "INVALID_PROPS",
      message: /reads the workspace of its config/,
    });
    assert.throws(() => remote.toTerraformJson({ backend: "s3", lockfile: true } as never), { code: "INVALID_PROPS" });
  });
});

describe("warnings", () => {
  it("names the tool's environment variable for each secret written, never the value; none for http", () => {
    const config = ObjectStoreBackendConfig.from({
      bucket: "state-bucket",
      prefix: "",
      accessKey: "AK-VALUE",
      secretKey: "SK-VALUE",
      securityToken: "TOK-VALUE",
    });
    const s3 = terraformWarnings(config, { backend: "s3" });
    assert.deepEqual(
      s3.map((w) => /set (\S+) instead/.exec(w)?.[1]),
      ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"],
    );
    assert.deepEqual(
      terraformWarnings(config, { backend: "oss" }).map((w) => /set (\S+) instead/.exec(w)?.[1]),
      ["ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN"],
    );
    assert.deepEqual(terraformWarnings(config, HTTP), []);
    assert.ok(!s3.join().includes("VALUE"));
  });

  it("s3: warns that the default workspace is another object unless the prefix is empty or the workspace is named", () => {
    const [w] = terraformWarnings(ObjectStoreBackendConfig.from({ bucket: "state-bucket", key: "app.tfstate" }), { backend: "s3" });
    assert.match(w ?? "", /s3 backend keeps the default workspace's state at app\.tfstate, objstate at env:\/app\.tfstate/);
    assert.deepEqual(terraformWarnings(ObjectStoreBackendConfig.from({ bucket: "state-bucket", prefix: "" }), { backend: "s3" }), []);
    assert.deepEqual(terraformWarnings(DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket", workspace: "prod" }), { backend: "s3" }), []);
    assert.equal(terraformWarnings(DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket" }), { backend: "s3" }).length, 1);
    assert.deepEqual(terraformWarnings(ObjectStoreBackendConfig.from({ bucket: "state-bucket" }), { backend: "oss" }), []);
  });

  it("the layout warning follows objstate's layout: gone with layout s3 for s3, given for oss (whose default workspace is the seed layout's)", () => {
    const config = ObjectStoreBackendConfig.from({ bucket: "state-bucket", key: "app.tfstate" });
    const [seed] = terraformWarnings(config, { backend: "s3", layout: "seed" });
    assert.match(seed ?? "", /objstate at env:\/app\.tfstate \(its seed layout\).*--layout s3/);
    assert.deepEqual(terraformWarnings(config, { backend: "s3", layout: "s3" }), []);
    assert.deepEqual(terraformWarnings(DataRemoteStateObjectStoreConfig.from({ bucket: "state-bucket" }), { backend: "s3", layout: "s3" }), []);
    const [oss] = terraformWarnings(config, { backend: "oss", layout: "s3" });
    assert.match(oss ?? "", /oss backend keeps the default workspace's state at env:\/app\.tfstate, objstate at app\.tfstate \(its s3 layout\)/);
    assert.deepEqual(terraformWarnings(ObjectStoreBackendConfig.from({ bucket: "state-bucket", prefix: "" }), { backend: "oss", layout: "s3" }), []);
    // The layout changes no argument; a wrong one is refused, and http takes none (the server has its own).
    assert.deepEqual(config.toTerraformJson({ backend: "s3", layout: "s3" }), config.toTerraformJson({ backend: "s3" }));
    assert.throws(() => config.toTerraformJson({ backend: "s3", layout: "tool" as "s3" }), {
      code: "INVALID_VALUE",
      message: /^layout must be "seed" or "s3", got "tool"/,
    });
    assert.throws(() => config.toTerraformJson({ backend: "http", serveUrl: "http://127.0.0.1:8080", layout: "s3" } as TerraformBackendOptions), {
      code: "INVALID_PROPS",
      message: /layout is not an option for backend http/,
    });
  });
});

describe("documents", () => {
  it("merge keeps one backend of either kind and unique names per kind; write and format work on them", () => {
    const tf = ObjectStoreBackendConfig.from({ bucket: "state-bucket" }).toTerraformJson({ backend: "oss" });
    assert.throws(() => mergeToolJson(tf, ObjectStoreBackendConfig.from({ bucket: "state-bucket" }).toToolJson()), { code: "INVALID_PROPS" });
    assert.throws(() => mergeToolJson(tf, tf), { code: "INVALID_PROPS" });
    const net = new DataRemoteStateObjectStore("net", { bucket: "state-bucket" });
    assert.throws(() => mergeToolJson(net.toTerraformJson({ backend: "s3" }), net.toTerraformJson({ backend: "oss" })), {
      code: "INVALID_NAME",
      message: /"net" is defined twice/,
    });
    const doc = mergeToolJson(net.toToolJson(), net.toTerraformJson({ backend: "s3" }), tf);
    assert.deepEqual(Object.keys(doc), ["data", "terraform"]);
    assert.deepEqual(Object.keys(doc.data ?? {}), ["tool_remote_state", "terraform_remote_state"]);
    const dir = mkdtempSync(join(tmpdir(), "objstate-tf-"));
    try {
      writeToolJson(join(dir, "main.tf.json"), doc);
      assert.deepEqual(JSON.parse(readFileSync(join(dir, "main.tf.json"), "utf8")), JSON.parse(formatToolJson(doc)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("references to a remote state's outputs in the tool's own document", () => {
    const net = new DataRemoteStateObjectStore("net", { bucket: "state-bucket" });
    assert.equal(net.terraformRef("vpc_id"), "${data.terraform_remote_state.net.outputs.vpc_id}");
    assert.throws(() => net.terraformRef("bad name"), { code: "INVALID_NAME" });
  });

  it("the names each cell uses are the tool's (a sample checked against the backends' schemas)", () => {
    const s3 = TERRAFORM_MAPPING.endpoint.s3 as ArgumentCell;
    assert.equal(s3.argument, "endpoints.s3");
    assert.equal((TERRAFORM_MAPPING.kvstoreTable.oss as ArgumentCell).argument, "tablestore_table");
    assert.equal((TERRAFORM_MAPPING.computeRoleName.oss as ArgumentCell).argument, "ecs_role_name");
  });
});
