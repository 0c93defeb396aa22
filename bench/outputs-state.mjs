// A realistic large state for the outputs benchmark: the tool's state format version 4,
// pretty-printed with two-space indentation as the tool writes it, with many resources
// whose instances carry nested attributes (tags, blocks, lists, IAM policies as JSON-encoded
// strings full of escapes, base64 blobs, the odd non-ASCII tag), and a few root outputs
// placed first (where the tool puts them) or last.
//
//   realisticState({ bytes: 100 * 1024 * 1024, outputsFirst: true }) -> Buffer
//
// Deterministic (seeded PRNG), so every run measures the same document.

function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TYPES = [
  "aws_instance",
  "aws_security_group",
  "aws_iam_role",
  "aws_s3_bucket",
  "aws_subnet",
  "aws_route_table",
  "aws_lb_target_group",
  "aws_lambda_function",
];
const WORDS = ["web", "api", "db", "cache", "queue", "worker", "edge", "batch", "search", "auth", "billing", "metrics"];
const TAG_VALUES = ["production", "staging", "team-α", "Zürich", "東京", "owner@example.com", "cost-center-42", 'a "quoted" value', "path\\with\\backslashes"];

/** The root outputs every generated state carries (names → {value, type}). */
export function benchOutputs() {
  return {
    vpc_id: { value: "vpc-0a1b2c3d4e5f", type: "string" },
    subnet_ids: { value: ["subnet-01", "subnet-02", "subnet-03"], type: ["list", "string"] },
    instance_count: { value: 1234, type: "number" },
    public: { value: false, type: "bool" },
    endpoints: { value: { api: "https://api.example.com", 'db "primary"': "db.internal:5432" }, type: ["object", { api: "string", 'db "primary"': "string" }] },
  };
}

function hex(r, n) {
  let s = "";
  for (let i = 0; i < n; i++) s += "0123456789abcdef"[Math.floor(r() * 16)];
  return s;
}

function base64(r, n) {
  const A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let s = "";
  for (let i = 0; i < n; i++) s += A[Math.floor(r() * 64)];
  return `${s}==`;
}

function pick(r, xs) {
  return xs[Math.floor(r() * xs.length)];
}

function policy(r) {
  return JSON.stringify({
    Version: "2012-10-17",
    Statement: [
      { Effect: "Allow", Action: ["s3:GetObject", "s3:PutObject"], Resource: `arn:aws:s3:::bucket-${hex(r, 8)}/*` },
      {
        Effect: "Allow",
        Principal: { Service: "ec2.amazonaws.com" },
        Action: "sts:AssumeRole",
        Condition: { StringEquals: { "aws:SourceAccount": "123456789012" } },
      },
    ],
  });
}

function resource(r, i) {
  const type = pick(r, TYPES);
  const name = `${pick(r, WORDS)}_${i}`;
  const instances = [];
  const count = 1 + Math.floor(r() * 3);
  for (let k = 0; k < count; k++) {
    const id = `${type.split("_")[1]}-${hex(r, 17)}`;
    const tags = {};
    const nTags = 2 + Math.floor(r() * 5);
    for (let t = 0; t < nTags; t++) tags[`${pick(r, ["Name", "Env", "Owner", "Team", "Cost", "App"])}${t}`] = pick(r, TAG_VALUES);
    instances.push({
      ...(count > 1 ? { index_key: k } : {}),
      schema_version: Math.floor(r() * 3),
      attributes: {
        arn: `arn:aws:${type.split("_")[1]}:eu-west-1:123456789012:${id}`,
        id,
        ami: `ami-${hex(r, 17)}`,
        associate_public_ip_address: r() < 0.5,
        availability_zone: pick(r, ["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
        cpu_core_count: 1 + Math.floor(r() * 16),
        cpu_threads_per_core: 2,
        credit_specification: [],
        disable_api_termination: false,
        ebs_block_device: [],
        ebs_optimized: r() < 0.3,
        ephemeral_block_device: [],
        get_password_data: false,
        host_id: null,
        iam_instance_profile: "",
        instance_state: "running",
        instance_type: pick(r, ["t3.micro", "m5.large", "c6g.xlarge", "r6i.2xlarge"]),
        ipv6_address_count: 0,
        ipv6_addresses: [],
        key_name: `key-${pick(r, WORDS)}`,
        metadata_options: [{ http_endpoint: "enabled", http_put_response_hop_limit: 1, http_tokens: "required", instance_metadata_tags: "disabled" }],
        monitoring: r() < 0.5,
        network_interface: [],
        policy: policy(r),
        private_dns: `ip-10-0-${Math.floor(r() * 255)}-${Math.floor(r() * 255)}.eu-west-1.compute.internal`,
        private_ip: `10.0.${Math.floor(r() * 255)}.${Math.floor(r() * 255)}`,
        root_block_device: [
          {
            delete_on_termination: true,
            device_name: "/dev/xvda",
            encrypted: true,
            iops: 3000,
            kms_key_id: `arn:aws:kms:eu-west-1:123456789012:key/${hex(r, 32)}`,
            tags: {},
            throughput: 125,
            volume_id: `vol-${hex(r, 17)}`,
            volume_size: 8 + Math.floor(r() * 500),
            volume_type: "gp3",
          },
        ],
        security_groups: [],
        source_dest_check: true,
        subnet_id: `subnet-${hex(r, 17)}`,
        tags,
        tags_all: { ...tags, ManagedBy: "tool" },
        tenancy: "default",
        timeouts: null,
        user_data: base64(r, 40 + Math.floor(r() * 200)),
        vpc_security_group_ids: [`sg-${hex(r, 17)}`, `sg-${hex(r, 17)}`],
        ingress: Array.from({ length: Math.floor(r() * 4) }, () => ({
          cidr_blocks: ["10.0.0.0/8"],
          description: 'from the "internal" net',
          from_port: 443,
          ipv6_cidr_blocks: [],
          prefix_list_ids: [],
          protocol: "tcp",
          security_groups: [],
          self: false,
          to_port: 443,
        })),
        ratio: Math.round(r() * 1e6) / 1e3,
        big: -1.5e-7,
      },
      sensitive_attributes: [],
      private: base64(r, 60),
      dependencies: [`aws_subnet.${pick(r, WORDS)}`, `aws_security_group.${pick(r, WORDS)}`],
    });
  }
  return { mode: "managed", type, name, provider: 'provider["registry.tool.io/hashicorp/aws"]', instances };
}

function indent(text, spaces) {
  return text.replace(/\n/g, `\n${" ".repeat(spaces)}`);
}

/**
 * A state of about `bytes` bytes (JSON text, UTF-8). `outputsFirst`: outputs before the
 * resources (the tool's own order) or after them.
 */
export function realisticState({ bytes, outputsFirst = true, seed = 42 }) {
  const r = prng(seed);
  const head = `{\n  "version": 4,\n  "terraform_version": "1.5.7",\n  "serial": 4711,\n  "lineage": "${hex(r, 8)}-${hex(r, 4)}-${hex(r, 4)}-${hex(r, 4)}-${hex(r, 12)}",\n`;
  const outputs = `  "outputs": ${indent(JSON.stringify(benchOutputs(), null, 2), 2)}`;
  const parts = [];
  let size = head.length + outputs.length + 64;
  for (let i = 0; size < bytes; i++) {
    const text = `    ${indent(JSON.stringify(resource(r, i), null, 2), 4)}`;
    parts.push(text);
    size += Buffer.byteLength(text) + 2;
  }
  const resources = `  "resources": [\n${parts.join(",\n")}\n  ]`;
  const members = outputsFirst ? [outputs, resources] : [resources, outputs];
  return Buffer.from(`${head}${members.join(",\n")},\n  "check_results": null\n}\n`, "utf8");
}
