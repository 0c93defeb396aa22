/**
 * The compute-instance role from the metadata service (DESIGN §4):
 * `GET {base}/latest/meta-data/ram/security-credentials/{role}`.
 */
import { ObjstateError } from "../errors.js";
import type { Env } from "../resolve/settings.js";
import type { Credentials } from "../store/types.js";

export const DEFAULT_METADATA_ENDPOINT = "http://169.254.169.254";
/** The metadata service answers within milliseconds or not at all. */
export const METADATA_TIMEOUT_MS = 1500;

/** The metadata service's base URL: `PROVIDER_METADATA_ENDPOINT` or the link-local default. */
export function metadataBase(env: Env): string {
  const v = env["PROVIDER_METADATA_ENDPOINT"];
  return (v !== undefined && v !== "" ? v : DEFAULT_METADATA_ENDPOINT).replace(/\/+$/, "");
}

interface MetadataAnswer {
  Code?: unknown;
  AccessKeyId?: unknown;
  AccessKeySecret?: unknown;
  SecurityToken?: unknown;
  Expiration?: unknown;
  Message?: unknown;
}

/** Fetch the role's temporary credentials; every failure is an ObjstateError naming the role. */
export async function fetchComputeRoleCredentials(role: string, env: Env, timeoutMs: number = METADATA_TIMEOUT_MS): Promise<Credentials> {
  const base = metadataBase(env);
  const url = `${base}/latest/meta-data/ram/security-credentials/${encodeURIComponent(role)}`;
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    const timedOut = e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError");
    throw new ObjstateError(
      "METADATA_UNREACHABLE",
      `the metadata service at ${base} ${timedOut ? `did not answer within ${timeoutMs} ms` : "could not be reached"} for compute role "${role}"; not on a compute instance? Set PROVIDER_METADATA_ENDPOINT, or use keys or a profile instead`,
      { cause: e },
    );
  }
  if (res.status === 404) {
    throw new ObjstateError("COMPUTE_ROLE_UNKNOWN", `the metadata service at ${base} knows no role "${role}" (404): check computeRoleName against the role attached to this instance`);
  }
  if (!res.ok) throw new ObjstateError("COMPUTE_ROLE_FAILED", `the metadata service at ${base} answered ${res.status} for compute role "${role}"`);
  let body: MetadataAnswer;
  try {
    body = (await res.json()) as MetadataAnswer;
  } catch (e) {
    throw new ObjstateError("COMPUTE_ROLE_FAILED", `the metadata service at ${base} sent no JSON for compute role "${role}"`, { cause: e });
  }
  if (body.Code !== "Success") {
    throw new ObjstateError("COMPUTE_ROLE_FAILED", `the metadata service at ${base} answered Code ${JSON.stringify(body.Code)} (not "Success") for compute role "${role}"`);
  }
  const { AccessKeyId: ak, AccessKeySecret: sk, SecurityToken: token, Expiration: exp } = body;
  if (typeof ak !== "string" || typeof sk !== "string" || ak === "" || sk === "") {
    throw new ObjstateError("COMPUTE_ROLE_FAILED", `the metadata service at ${base} answered without AccessKeyId/AccessKeySecret for compute role "${role}"`);
  }
  const expiration = typeof exp === "string" && !Number.isNaN(Date.parse(exp)) ? new Date(exp) : undefined;
  return { accessKeyId: ak, secretAccessKey: sk, sessionToken: typeof token === "string" && token !== "" ? token : undefined, expiration };
}
