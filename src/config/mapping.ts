/**
 * The mapping table (docs/design.md §12): one row per seed field, one cell per backend of the tool naming its
 * argument, how the value is written, or why there is none. Argument names are Terraform ≥ 1.10's (and OpenTofu's).
 */
import { DEFAULT_REGION } from "../io/sdk-client.js";
import type { ASSUME_ROLE_FIELDS, COMMON_FIELDS } from "./fields.js";

/** A backend of the tool objstate can synthesize a configuration for. */
export type TerraformBackendType = "s3" | "oss" | "http";

/** The backends, in the order the docs list them. */
export const TERRAFORM_BACKENDS: readonly TerraformBackendType[] = Object.freeze(["s3", "oss", "http"] as const);

/** How a value is written, when not as it is (docs/fields.md describes each). */
export type ValueTransform = "url" | "httpsHost" | "path" | "list" | "seconds" | "nonEmpty";

/** A JSON scalar a cell may write. */
export type JsonScalar = string | number | boolean;

/** The field is written to `argument` of the backend. */
export interface ArgumentCell {
  readonly kind: "argument";
  /** Argument of the backend; a dot nests it (`endpoints.s3`, `assume_role.role_arn`). */
  readonly argument: string;
  readonly transform?: ValueTransform | undefined;
  /** The tool's environment variable for this argument, named in secret warnings. */
  readonly env?: string | undefined;
  /** Written when the field is unset (`"default"`: the field table's), where the backend's default differs or it requires one. */
  readonly whenUnset?: JsonScalar | "default" | undefined;
  /** Arguments written beside this one when the field is set (a custom endpoint's switches). */
  readonly alongside?: Readonly<Record<string, JsonScalar>> | undefined;
}

/** The backend has no argument for the field: setting it is an error (`UNSUPPORTED_FIELD`), never a silent drop. */
export interface NoneCell {
  readonly kind: "none";
  /** What to do instead, for the error message. */
  readonly hint: string;
}

/** The field belongs to the server the backend talks to (`objstate serve` holds the store settings): not written, not an error. */
export interface ServerCell {
  readonly kind: "server";
}

/** The deprecated block: written through the rows of its own fields (`assumeRole.roleArn`, …). */
export interface BlockCell {
  readonly kind: "block";
}

export type MappingCell = ArgumentCell | NoneCell | ServerCell | BlockCell;

/** One row: a cell per backend. */
export type MappingRow = { readonly [T in TerraformBackendType]: MappingCell };

type CommonName = (typeof COMMON_FIELDS)[number]["name"];
type BlockName = `assumeRole.${(typeof ASSUME_ROLE_FIELDS)[number]["name"]}`;
/** objstate's own `--lockfile` setting: the S3 backend has the same lockfile. */
type OwnName = "lockfile";

const arg = (argument: string, more: Omit<ArgumentCell, "kind" | "argument"> = {}): ArgumentCell => Object.freeze({ kind: "argument", argument, ...more });
const none = (hint: string): NoneCell => Object.freeze({ kind: "none", hint });
const SERVER: ServerCell = Object.freeze({ kind: "server" });
const BLOCK: BlockCell = Object.freeze({ kind: "block" });
/** A row of a store field: `objstate serve` holds it for the http backend. */
const store = (s3: MappingCell, oss: MappingCell): MappingRow => ({ s3, oss, http: SERVER });

/** Without these the S3 backend calls STS and IAM (leaving the machine for AWS), checks the region against AWS's list and addresses buckets as virtual hosts. */
const CUSTOM_S3_ENDPOINT = Object.freeze({
  use_path_style: true,
  skip_credentials_validation: true,
  skip_requesting_account_id: true,
  skip_region_validation: true,
});

/** The rows, keyed by field name; the order is the field table's. */
export const TERRAFORM_MAPPING: { readonly [N in CommonName | BlockName | OwnName]: MappingRow } = Object.freeze({
  bucket: store(arg("bucket"), arg("bucket")),
  accessKey: store(arg("access_key", { env: "AWS_ACCESS_KEY_ID" }), arg("access_key", { env: "ALICLOUD_ACCESS_KEY" })),
  acl: store(arg("acl"), arg("acl")),
  assumeRole: store(BLOCK, BLOCK),
  assumeRolePolicy: store(arg("assume_role.policy"), arg("assume_role_policy")),
  assumeRoleRoleArn: store(arg("assume_role.role_arn", { transform: "nonEmpty" }), arg("assume_role_role_arn")),
  assumeRoleSessionExpiration: store(arg("assume_role.duration", { transform: "seconds" }), arg("assume_role_session_expiration")),
  assumeRoleSessionName: store(arg("assume_role.session_name"), arg("assume_role_session_name")),
  computeRoleName: store(none("the S3 backend finds an instance's role through the AWS credential chain by itself"), arg("ecs_role_name")),
  encrypt: store(arg("encrypt"), arg("encrypt")),
  endpoint: store(arg("endpoints.s3", { transform: "url", alongside: CUSTOM_S3_ENDPOINT }), arg("endpoint", { transform: "url" })),
  // Written when unset: the backends' own default is terraform.tfstate, objstate's tool.tfstate (and s3 requires it).
  key: store(arg("key", { whenUnset: "default" }), arg("key", { whenUnset: "default" })),
  prefix: store(arg("workspace_key_prefix", { transform: "path" }), arg("prefix", { transform: "path" })),
  profile: store(arg("profile"), arg("profile")),
  // The S3 backend requires a region; objstate signs with DEFAULT_REGION when none is set (docs/decisions/018).
  region: store(arg("region", { whenUnset: DEFAULT_REGION }), arg("region")),
  secretKey: store(arg("secret_key", { env: "AWS_SECRET_ACCESS_KEY" }), arg("secret_key", { env: "ALICLOUD_SECRET_KEY" })),
  securityToken: store(arg("token", { env: "AWS_SESSION_TOKEN" }), arg("security_token", { env: "ALICLOUD_SECURITY_TOKEN" })),
  sharedCredentialsFile: store(arg("shared_credentials_files", { transform: "list" }), arg("shared_credentials_file")),
  // The OSS backend's STS endpoint is a host: it adds https:// itself.
  stsEndpoint: store(arg("endpoints.sts", { transform: "url" }), arg("sts_endpoint", { transform: "httpsHost" })),
  kvstoreEndpoint: store(arg("endpoints.dynamodb", { transform: "url" }), arg("tablestore_endpoint", { transform: "url" })),
  kvstoreTable: store(arg("dynamodb_table"), arg("tablestore_table")),
  "assumeRole.roleArn": store(arg("assume_role.role_arn", { transform: "nonEmpty" }), arg("assume_role.role_arn")),
  "assumeRole.policy": store(arg("assume_role.policy"), arg("assume_role.policy")),
  "assumeRole.sessionName": store(arg("assume_role.session_name"), arg("assume_role.session_name")),
  "assumeRole.sessionExpiration": store(arg("assume_role.duration", { transform: "seconds" }), arg("assume_role.session_expiration")),
  lockfile: store(arg("use_lockfile"), none("the OSS backend locks only through its TableStore table: drop --lockfile and set kvstoreTable")),
});

/** What else a backend's output needs, beside the rows. */
export interface BackendSpec {
  /** Nested arguments that need a member once written: the S3 backend's `assume_role` needs `role_arn`. */
  readonly requires: Readonly<Record<string, string>>;
  /** The tool versions that read the output, for docs. */
  readonly versions: string;
}

export const TERRAFORM_BACKEND_SPECS: { readonly [T in TerraformBackendType]: BackendSpec } = Object.freeze({
  s3: { requires: { assume_role: "role_arn" }, versions: "Terraform ≥ 1.7 and OpenTofu ≥ 1.6 (with `use_lockfile`, both ≥ 1.10)" },
  oss: { requires: {}, versions: "Terraform ≥ 1.1 (the flattened `assume_role_*` arguments) and every OpenTofu version" },
  http: { requires: {}, versions: "every Terraform and OpenTofu version" },
});

/** One cell as a flat row (field, backend, cell): the table's form for docs and tests. */
export interface FlatMappingRow {
  readonly field: string;
  readonly backend: TerraformBackendType;
  readonly cell: MappingCell;
}

/** Every cell of the table, field by field in table order, backends in {@link TERRAFORM_BACKENDS} order. */
export function mappingRows(): FlatMappingRow[] {
  const out: FlatMappingRow[] = [];
  for (const [field, row] of Object.entries(TERRAFORM_MAPPING) as [string, MappingRow][]) {
    for (const backend of TERRAFORM_BACKENDS) out.push({ field, backend, cell: row[backend] });
  }
  return out;
}
