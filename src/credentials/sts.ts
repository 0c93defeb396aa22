/** Role assumption through the STS query API (AWS SDK's STS client). */
import { ObjstateError } from "../errors.js";
import type { Credentials, CredentialsProvider } from "./types.js";
import { newSdkClient, resolveTimeouts, type Timeouts } from "../io/sdk-client.js";
import { sdkCredentials } from "../io/sdk-credentials.js";

export interface AssumeRoleParams {
  readonly endpoint: string;
  readonly region: string | undefined;
  readonly base: CredentialsProvider;
  readonly roleArn: string;
  readonly sessionName: string;
  readonly durationSeconds: number;
  readonly policy?: string | undefined;
  readonly timeouts?: Partial<Timeouts> | undefined;
}

/** Call AssumeRole signed with the base identity (including its session token): temporary credentials and the session's ARN (`arn:aws:sts:::assumed-role/ROLE/SESSION`). */
export async function assumeRole(p: AssumeRoleParams): Promise<Credentials & { readonly assumedRoleArn: string | undefined }> {
  const { STSClient, AssumeRoleCommand } = await import("@aws-sdk/client-sts");
  const timeouts = resolveTimeouts(p.timeouts);
  // Armed: also measures the server's clock (Date header) for the expiry of what it hands out.
  const client = newSdkClient(
    { service: "STS", endpoint: p.endpoint, region: p.region, credentials: sdkCredentials(p.base), timeouts },
    (c) => new STSClient(c),
  );
  try {
    const res = await client.send(
      new AssumeRoleCommand({
        RoleArn: p.roleArn,
        RoleSessionName: p.sessionName,
        DurationSeconds: p.durationSeconds,
        Policy: p.policy === "" ? undefined : p.policy,
      }),
    );
    const c = res.Credentials;
    if (c?.AccessKeyId === undefined || c.SecretAccessKey === undefined) {
      throw new ObjstateError("ASSUME_ROLE_FAILED", `STS at ${p.endpoint} returned no credentials for role ${p.roleArn}`);
    }
    return {
      accessKeyId: c.AccessKeyId,
      secretAccessKey: c.SecretAccessKey,
      sessionToken: c.SessionToken,
      expiration: c.Expiration,
      assumedRoleArn: res.AssumedRoleUser?.Arn,
    };
  } catch (e) {
    if (e instanceof ObjstateError) throw e;
    const status = (e as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
    const name = e instanceof Error ? e.name : "Error";
    const code = status === 403 || /AccessDenied/i.test(name) ? "ACCESS_DENIED" : "ASSUME_ROLE_FAILED";
    throw new ObjstateError(
      code,
      `could not assume role ${p.roleArn} (session "${p.sessionName}", ${p.durationSeconds} s) at ${p.endpoint}: ${name}${status === undefined ? "" : ` (HTTP ${status})`}. Check the role ARN, its trust policy for the base identity, and the role's maximum session duration`,
      { cause: e },
    );
  } finally {
    client.destroy();
  }
}
