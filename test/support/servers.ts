/**
 * Where the real test servers are. `scripts/with-servers.sh` starts them and exports
 * these variables; an integration test that finds them missing fails loudly (never skips).
 */
export interface TestServers {
  /** Ceph RADOS Gateway (S3 + STS), e.g. http://127.0.0.1:17480 */
  readonly s3Endpoint: string;
  readonly accessKey: string;
  readonly secretKey: string;
  /** A role the test user may assume through STS. */
  readonly roleArn: string;
  /** dynalite (DynamoDB API), e.g. http://127.0.0.1:17481 */
  readonly dynamoEndpoint: string;
}

const VARS = {
  s3Endpoint: "OBJSTATE_TEST_S3_ENDPOINT",
  accessKey: "OBJSTATE_TEST_ACCESS_KEY",
  secretKey: "OBJSTATE_TEST_SECRET_KEY",
  roleArn: "OBJSTATE_TEST_ROLE_ARN",
  dynamoEndpoint: "OBJSTATE_TEST_DYNAMODB_ENDPOINT",
} as const;

export function testServers(): TestServers {
  const out: Partial<Record<keyof typeof VARS, string>> = {};
  const missing: string[] = [];
  for (const [k, v] of Object.entries(VARS) as [keyof typeof VARS, string][]) {
    const val = process.env[v];
    if (val === undefined || val === "") missing.push(v);
    else out[k] = val;
  }
  if (missing.length > 0) {
    throw new Error(
      `integration servers are not running (missing ${missing.join(", ")}). ` +
        "Run the tests with `npm test`, or wrap the command in scripts/with-servers.sh.",
    );
  }
  for (const u of [out.s3Endpoint, out.dynamoEndpoint]) {
    const host = new URL(u as string).hostname;
    if (host !== "127.0.0.1" && host !== "localhost") throw new Error(`test servers must be on loopback, got ${u}`);
  }
  return out as TestServers;
}
