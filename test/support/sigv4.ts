/**
 * Re-signing an S3 request after a test proxy changed its headers (SigV4 signs them, so a
 * store that "ignores" a header is shown by stripping it and signing again with the same
 * keys). Only what the fault tests need: header-signed requests, path-style, one region.
 */
import { createHash, createHmac } from "node:crypto";

type Headers = Record<string, string | string[] | undefined>;

const hmac = (key: Buffer | string, data: string): Buffer => createHmac("sha256", key).update(data, "utf8").digest();
const sha256 = (data: string): string => createHash("sha256").update(data, "utf8").digest("hex");
const encode = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function canonicalQuery(query: string): string {
  if (query === "") return "";
  return query
    .split("&")
    .map((kv) => {
      const [k = "", v = ""] = kv.split("=");
      return [encode(decodeURIComponent(k)), encode(decodeURIComponent(v))] as const;
    })
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
}

/** `headers` without `drop`, signed again with `secretKey` (the scope, date and payload hash are the client's). */
export function stripAndResign(req: { method: string; path: string; headers: Headers }, drop: readonly string[], secretKey: string): Headers {
  const headers: Headers = {};
  for (const [k, v] of Object.entries(req.headers)) if (!drop.includes(k.toLowerCase())) headers[k.toLowerCase()] = v;
  const auth = String(headers["authorization"] ?? "");
  const m = /Credential=([^/]+)\/([^,]+), ?SignedHeaders=([^,]+), ?Signature=/.exec(auth);
  if (m === null) return headers;
  const [, accessKey, scope, signed] = m as unknown as [string, string, string, string];
  const names = signed.split(";").filter((n) => !drop.includes(n));
  const [date = "", region = "", service = ""] = scope.split("/");
  const [path = "/", query = ""] = req.path.split("?");
  const canonicalHeaders = names
    .map(
      (n) =>
        `${n}:${String(headers[n] ?? "")
          .trim()
          .replace(/\s+/g, " ")}\n`,
    )
    .join("");
  const canonical = [
    req.method,
    path,
    canonicalQuery(query),
    canonicalHeaders,
    names.join(";"),
    String(headers["x-amz-content-sha256"] ?? "UNSIGNED-PAYLOAD"),
  ].join("\n");
  const amzDate = String(headers["x-amz-date"] ?? "");
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
  const key = hmac(hmac(hmac(hmac(`AWS4${secretKey}`, date), region), service), "aws4_request");
  headers["authorization"] =
    `AWS4-HMAC-SHA256 Credential=${accessKey}/${scope}, SignedHeaders=${names.join(";")}, Signature=${hmac(key, toSign).toString("hex")}`;
  return headers;
}
