/**
 * Value rules referenced by the field table. A rule names the JavaScript type a field
 * takes and, in words for the error message, what a valid value looks like.
 */

export type RuleType = "string" | "number" | "boolean" | "object";

export interface Rule {
  readonly type: RuleType;
  /** What a valid value is, phrased to follow "must be …". */
  readonly expected: string;
  /** Extra check beyond the type; absent means any value of the type. */
  readonly valid?: (value: never) => boolean;
  /** Error code when the type is right but `valid` fails. */
  readonly code?: "INVALID_VALUE" | "OUT_OF_RANGE";
}

const BARE_HOST = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?$/;

// Parsing a URL is the costliest check of all; configs repeat the same few endpoints.
const urlMemo = new Map<string, boolean>();
/**
 * An http(s) URL of a host and nothing after it but `/`. A path would be taken by the
 * S3 SDK's path-style addressing as the bucket (every request would go to the bucket the
 * path names, while objstate reports the configured one); a query or fragment has no
 * meaning for an API endpoint.
 */
function isHttpUrl(v: string): boolean {
  if (!/^https?:\/\//i.test(v)) return false;
  let ok = urlMemo.get(v);
  if (ok === undefined) {
    try {
      const u = new URL(v);
      // `search`/`hash` are empty for a bare `?` or `#` too, so the text is checked as well.
      ok = u.hostname !== "" && (u.pathname === "/" || u.pathname === "") && !/[?#]/.test(v);
    } catch {
      ok = false;
    }
    if (urlMemo.size > 256) urlMemo.clear();
    urlMemo.set(v, ok);
  }
  return ok;
}

function isEndpoint(v: string, allowFile: boolean): boolean {
  if (allowFile && /^file:/i.test(v)) return v.length > "file:".length && v !== "file://";
  return isHttpUrl(v) || BARE_HOST.test(v);
}

/** Plain object whose values are all JSON (no functions, undefined, NaN, cycles, class instances). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return isPlainObject(v) && isJson(v, new Set());
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function isJson(v: unknown, seen: Set<object>): boolean {
  if (v === null || typeof v === "string" || typeof v === "boolean") return true;
  if (typeof v === "number") return Number.isFinite(v);
  if (typeof v !== "object") return false;
  if (seen.has(v)) return false;
  seen.add(v);
  const ok = Array.isArray(v) ? v.every((x) => isJson(x, seen)) : isPlainObject(v) && Object.values(v).every((x) => isJson(x, seen));
  seen.delete(v);
  return ok;
}

function isJsonPolicy(v: string): boolean {
  try {
    return isPlainObject(JSON.parse(v));
  } catch {
    return false;
  }
}

/** The rules, by name. */
export const RULES = {
  string: { type: "string", expected: "a string" },
  boolean: { type: "boolean", expected: "a boolean (true or false)" },
  bucket: {
    type: "string",
    expected: "a bucket name of 3 to 63 characters from a-z, 0-9, '.' and '-', starting and ending with a letter or digit",
    valid: (v: string) => /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(v),
  },
  acl: {
    type: "string",
    expected: "one of private, public-read, public-read-write",
    valid: (v: string) => v === "private" || v === "public-read" || v === "public-read-write",
  },
  policy: {
    type: "string",
    expected: "a JSON policy document (an object)",
    valid: (v: string) => isJsonPolicy(v),
  },
  sessionExpiration: {
    type: "number",
    expected: "an integer from 900 to 3600 (seconds)",
    valid: (v: number) => Number.isInteger(v) && v >= 900 && v <= 3600,
    code: "OUT_OF_RANGE",
  },
  sessionName: {
    type: "string",
    expected: "2 to 64 characters from letters, digits and +=,.@_-",
    valid: (v: string) => /^[\w+=,.@-]{2,64}$/.test(v),
  },
  storeEndpoint: {
    type: "string",
    expected: "a URL (http://, https:// or file:) or a bare host such as s3.example.com, with no path, query or fragment after the host (the bucket is never part of the endpoint)",
    valid: (v: string) => isEndpoint(v, true),
  },
  lockEndpoint: {
    type: "string",
    expected: "a URL (http://, https:// or file:) or a bare host such as dynamodb.example.com, with no path, query or fragment after the host",
    valid: (v: string) => isEndpoint(v, true),
  },
  httpEndpoint: {
    type: "string",
    expected: "a URL (http:// or https://) or a bare host such as sts.example.com, with no path, query or fragment after the host",
    valid: (v: string) => isEndpoint(v, false),
  },
  key: {
    type: "string",
    expected: "a non-empty object name that does not start or end with '/'",
    valid: (v: string) => v !== "" && !v.startsWith("/") && !v.endsWith("/"),
  },
  prefix: {
    type: "string",
    expected: "a path that does not start with '/' or './' and has no '.' or '..' segment",
    valid: (v: string) => !v.startsWith("/") && !v.split("/").some((seg) => seg === "." || seg === ".."),
  },
  region: {
    type: "string",
    expected: "a region name of letters, digits and '-' (e.g. us-east-1)",
    valid: (v: string) => /^[A-Za-z0-9-]{1,64}$/.test(v),
  },
  table: {
    type: "string",
    expected: "a table name of 3 to 255 characters from letters, digits, '_', '-' and '.'",
    valid: (v: string) => /^[A-Za-z0-9_.-]{3,255}$/.test(v),
  },
  workspace: {
    type: "string",
    expected: "a non-empty workspace name of letters, digits and '-', '_', '.', '~' (no '/'; not '.' or '..')",
    // `.` and `..` would be path segments of the state's key: stores normalise them away
    // (the embedded one, and S3 clients that clean paths) or keep them literally (S3), so
    // one name would mean different objects on different stores.
    valid: (v: string) => /^[A-Za-z0-9._~-]+$/.test(v) && v !== "." && v !== "..",
  },
  jsonObject: {
    type: "object",
    expected: "a plain object of JSON values",
    valid: (v: unknown) => isJsonObject(v),
  },
  assumeRole: {
    type: "object",
    expected: "an ObjectStoreAssumeRole or its props ({ roleArn, policy?, sessionName?, sessionExpiration? })",
  },
} as const satisfies Record<string, Rule>;
