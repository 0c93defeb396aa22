/**
 * The field table (docs/design.md §2): one row per field of the seed document. Types, builders, getters, validation,
 * resolution, synthesis, CLI flags and docs/fields.md derive from the rows: adding a field is adding a row.
 */
import { DEFAULT_REGION } from "../io/sdk-client.js";
import { RULES, type Rule } from "./rules.js";

/** The value kinds a field can hold (the seed's Java types, in TypeScript terms). */
export type FieldKind = "string" | "number" | "boolean" | "assumeRole" | "map";

/** One row of the field table. */
export interface FieldSpec {
  /** Field name as the seed spells it (builder setter, props key). */
  readonly name: string;
  /** Key in the tool JSON (snake_case of the name). */
  readonly jsonKey: string;
  /** Seed's Java type. */
  readonly javaType: string;
  readonly kind: FieldKind;
  readonly required: boolean;
  /** Environment variables, in the seed's order; the first non-empty one wins. */
  readonly env: readonly string[];
  /** Applied at resolution (never stored in the object). */
  readonly default?: string | number | undefined;
  /** Tool version the field appeared in (`0.12.8`), or undefined when always available. */
  readonly since?: string | undefined;
  /** Never printed, logged or put in an error message. */
  readonly secret: boolean;
  readonly deprecated: boolean;
  /** The value rule checked at build() / from() and on environment values. */
  readonly rule: Rule;
  /** One-line description for docs and `--help`. */
  readonly doc: string;
}

type RowInput<N extends string, K extends FieldKind, R extends boolean> = Partial<
  Pick<FieldSpec, "env" | "default" | "since" | "secret" | "deprecated" | "rule">
> & {
  readonly name: N;
  readonly kind?: K;
  readonly required?: R;
};

/** A typed row: keeps the literal name, kind and required flag so types can be derived from the table. */
export type Row<N extends string, K extends FieldKind, R extends boolean> = FieldSpec & { readonly name: N; readonly kind: K; readonly required: R };

const JAVA_TYPES: Readonly<Record<FieldKind, string>> = {
  string: "java.lang.String",
  number: "java.lang.Number",
  boolean: "java.lang.Boolean",
  assumeRole: "ObjectStoreAssumeRole",
  map: "java.util.Map<java.lang.String, java.lang.Object>",
};

/** A row and its one-line description; kind `string` and its type's rule unless told otherwise, the JSON key the name in snake_case. */
function row<const N extends string, const K extends FieldKind = "string", const R extends boolean = false>(
  spec: RowInput<N, K, R>,
  doc: string,
): Row<N, NoInfer<K>, R> {
  const kind = (spec.kind ?? "string") as K;
  // Every key in one order, so that all rows share one shape.
  return Object.freeze({
    name: spec.name,
    jsonKey: spec.name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
    javaType: JAVA_TYPES[kind],
    kind,
    required: (spec.required ?? false) as R,
    env: Object.freeze([...(spec.env ?? [])]),
    default: spec.default,
    since: spec.since,
    secret: spec.secret ?? false,
    deprecated: spec.deprecated ?? false,
    rule: spec.rule ?? (kind === "boolean" ? RULES.boolean : RULES.string),
    doc,
  });
}

/** Fields common to the backend config and the remote-state config, in the seed's order. */
export const COMMON_FIELDS = [
  row({ name: "bucket", required: true, rule: RULES.bucket }, "Name of the bucket."),
  row({ name: "accessKey", env: ["PROVIDER_ACCESS_KEY", "PROVIDER_ACCESS_KEY_ID"], secret: true }, "Access key of the account."),
  row({ name: "acl", rule: RULES.acl }, "Object ACL applied to the state file."),
  row({ name: "assumeRole", kind: "assumeRole", deprecated: true, rule: RULES.assumeRole }, "Deprecated; use the flattened assume-role fields."),
  row(
    { name: "assumeRolePolicy", since: "1.1.0", rule: RULES.policy },
    "A more restrictive policy applied to the temporary credentials; it can only narrow the assumed role's permissions.",
  ),
  row(
    { name: "assumeRoleRoleArn", env: ["PROVIDER_ASSUME_ROLE_ARN"], since: "1.1.0" },
    "Resource name of the role to assume. An empty string means no role switching.",
  ),
  row(
    {
      name: "assumeRoleSessionExpiration",
      kind: "number",
      env: ["PROVIDER_ASSUME_ROLE_SESSION_EXPIRATION"],
      default: 3600,
      since: "1.1.0",
      rule: RULES.sessionExpiration,
    },
    "Seconds after which the assumed-role session expires (900 to 3600).",
  ),
  row(
    { name: "assumeRoleSessionName", env: ["PROVIDER_ASSUME_ROLE_SESSION_NAME"], default: "tool", since: "1.1.0", rule: RULES.sessionName },
    "Session name used when assuming the role.",
  ),
  row({ name: "computeRoleName", since: "0.12.14" }, "Name of the role attached to a compute instance, used for API operations."),
  row({ name: "encrypt", kind: "boolean" }, "Server-side encryption of the state file (AES256) when true."),
  row(
    { name: "endpoint", env: ["PROVIDER_OBJECT_STORE_ENDPOINT", "OBJECT_STORE_ENDPOINT"], rule: RULES.storeEndpoint },
    "Custom endpoint of the storage API (http(s)://, a bare host, or file: for the embedded store).",
  ),
  row({ name: "key", default: "tool.tfstate", rule: RULES.key }, "Name of the state file."),
  row({ name: "prefix", default: "env:", rule: RULES.prefix }, "Path directory under which the state file is stored."),
  row({ name: "profile", env: ["PROVIDER_PROFILE"], since: "0.12.8" }, "Profile name as set in the shared credentials file."),
  row(
    { name: "region", env: ["PROVIDER_REGION", "PROVIDER_DEFAULT_REGION"], rule: RULES.region },
    `Region of the bucket (signs requests; ${DEFAULT_REGION} when unset).`,
  ),
  row({ name: "secretKey", env: ["PROVIDER_SECRET_KEY", "PROVIDER_ACCESS_KEY_SECRET"], secret: true }, "Secret access key of the account."),
  row({ name: "securityToken", env: ["PROVIDER_SECURITY_TOKEN"], secret: true }, "Temporary access token from the security token service."),
  row(
    { name: "sharedCredentialsFile", env: ["PROVIDER_SHARED_CREDENTIALS_FILE"], default: "~/.provider/config.json", since: "0.12.8" },
    "Path to the shared credentials file (default applies only when a profile is given).",
  ),
  row({ name: "stsEndpoint", env: ["PROVIDER_STS_ENDPOINT"], since: "1.0.11", rule: RULES.httpEndpoint }, "Custom endpoint of the security token service API."),
  row({ name: "kvstoreEndpoint", rule: RULES.lockEndpoint }, "Custom endpoint of the key-value table API (http(s)://, a bare host, or file:)."),
  row({ name: "kvstoreTable", rule: RULES.table }, "Key-value table for state locking and consistency; its primary key must be LockID (String)."),
] as const satisfies readonly FieldSpec[];

/** The two fields only `DataRemoteStateObjectStoreConfig` has. */
export const REMOTE_STATE_EXTRA_FIELDS = [
  row({ name: "defaults", kind: "map", rule: RULES.jsonObject }, "Output values used when the remote state does not define them."),
  row({ name: "workspace", default: "default", rule: RULES.workspace }, "Workspace whose state is read (default: default)."),
] as const satisfies readonly FieldSpec[];

/** Fields of the deprecated `ObjectStoreAssumeRole` block. */
export const ASSUME_ROLE_FIELDS = [
  row({ name: "roleArn", required: true }, "Resource name of the role to assume."),
  row({ name: "policy", rule: RULES.policy }, "A more restrictive policy applied to the temporary credentials."),
  row({ name: "sessionName", rule: RULES.sessionName }, "Session name used when assuming the role."),
  row({ name: "sessionExpiration", kind: "number", rule: RULES.sessionExpiration }, "Seconds after which the session expires (900 to 3600)."),
] as const satisfies readonly FieldSpec[];

export const REMOTE_STATE_FIELDS = [...COMMON_FIELDS, ...REMOTE_STATE_EXTRA_FIELDS] as const;
