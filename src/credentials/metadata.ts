/**
 * The compute-instance role from the metadata service (docs/design.md §4). The answer is trusted only as far as its
 * shape: no redirect is followed (it would send the request, and trust, to another host), the size is capped, every field checked.
 */
import { ObjstateError } from "../errors.js";
import type { Env } from "../resolve/settings.js";
import type { Credentials } from "./types.js";

/** The metadata service answers within milliseconds or not at all. */
export const METADATA_TIMEOUT_MS = 1500;
/** A credentials answer is a few hundred bytes; anything past this is not one. */
export const METADATA_MAX_BYTES = 64 * 1024;

/** `PROVIDER_METADATA_ENDPOINT` or the link-local default. */
export function metadataBase(env: Env): string {
  const v = env["PROVIDER_METADATA_ENDPOINT"];
  return (v !== undefined && v !== "" ? v : "http://169.254.169.254").replace(/\/+$/, "");
}

/** Fetch the role's temporary credentials; every failure is an ObjstateError naming the role. */
export async function fetchComputeRoleCredentials(role: string, env: Env, timeoutMs: number = METADATA_TIMEOUT_MS): Promise<Credentials> {
  const base = metadataBase(env);
  // Messages may name `base` as it is: ObjstateError removes credentials inside URLs.
  const url = `${base}/latest/meta-data/ram/security-credentials/${encodeURIComponent(role)}`;
  const failed = (problem: string, cause?: unknown): ObjstateError =>
    new ObjstateError("COMPUTE_ROLE_FAILED", `the metadata service at ${base} ${problem} for compute role "${role}"`, { cause, details: { role } });
  const unreachable = (e: unknown): ObjstateError => {
    const timedOut = e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError");
    return new ObjstateError(
      "METADATA_UNREACHABLE",
      `the metadata service at ${base} ${timedOut ? `did not answer within ${timeoutMs} ms` : "could not be reached"} for compute role "${role}"; not on a compute instance? Set PROVIDER_METADATA_ENDPOINT, or use keys or a profile instead`,
      { cause: e },
    );
  };
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
  } catch (e) {
    throw unreachable(e);
  }
  if (!res.ok) {
    await res.body?.cancel();
    if (res.status >= 300 && res.status < 400)
      throw failed(`answered a redirect (${res.status}), which objstate does not follow; point PROVIDER_METADATA_ENDPOINT at the service itself`);
    if (res.status === 404)
      throw new ObjstateError(
        "COMPUTE_ROLE_UNKNOWN",
        `the metadata service at ${base} knows no role "${role}" (404): check computeRoleName against the role attached to this instance`,
      );
    throw failed(`answered ${res.status}`);
  }
  const text = await readCapped(res, METADATA_MAX_BYTES).catch((e: unknown) => {
    throw unreachable(e);
  });
  if (text === undefined) throw failed(`sent more than ${METADATA_MAX_BYTES} bytes (not a credentials answer)`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    // No cause: JSON.parse's message quotes the text, which may hold keys.
    throw failed("sent no JSON");
  }
  return credentialsOf(body, failed);
}

function credentialsOf(body: unknown, failed: (problem: string) => ObjstateError): Credentials {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw failed(`answered ${body === null ? "null" : Array.isArray(body) ? "an array" : `a ${typeof body}`} instead of a JSON object`);
  }
  const a = body as Record<string, unknown>;
  if (a["Code"] !== "Success") {
    const code = a["Code"];
    throw failed(`answered Code ${typeof code === "string" ? JSON.stringify(code) : code === undefined ? "(none)" : `of type ${typeof code}`} (not "Success")`);
  }
  const ak = a["AccessKeyId"];
  const sk = a["AccessKeySecret"];
  if (typeof ak !== "string" || typeof sk !== "string" || ak === "" || sk === "") {
    throw failed("answered without AccessKeyId/AccessKeySecret (both must be non-empty strings)");
  }
  const token = a["SecurityToken"];
  if (token !== undefined && token !== null && typeof token !== "string") throw failed(`answered a SecurityToken of type ${typeof token} (expected a string)`);
  const exp = a["Expiration"];
  let expiration: Date | undefined;
  if (exp !== undefined && exp !== null) {
    // A wrong expiry would keep expired credentials in use, so it is an error, not "no expiry".
    if (typeof exp !== "string" || Number.isNaN(Date.parse(exp)))
      throw failed(`answered an Expiration that is not a date (${typeof exp === "string" ? JSON.stringify(exp.slice(0, 40)) : `of type ${typeof exp}`})`);
    expiration = new Date(exp);
  }
  return { accessKeyId: ak, secretAccessKey: sk, sessionToken: typeof token === "string" && token !== "" ? token : undefined, expiration };
}

/** The body as UTF-8, or undefined (the body cancelled) once it passes `max` bytes. */
async function readCapped(res: Response, max: number): Promise<string | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Leaving the loop early cancels the stream.
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    if (size > max) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
