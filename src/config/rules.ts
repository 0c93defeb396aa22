/** Value rules of the field table: the JavaScript type a field takes and, for messages, what a valid value looks like. */
import { MAX_NESTING } from "../json/scan.js";

export interface Rule {
  readonly type: "string" | "number" | "boolean" | "object";
  /** What a valid value is, phrased to follow "must be …". */
  readonly expected: string;
  /** Extra check beyond the type; absent means any value of the type. */
  readonly valid?: (value: never) => boolean;
  /** Error code when the type is right but `valid` fails. */
  readonly code?: "INVALID_VALUE" | "OUT_OF_RANGE";
}

const BARE_HOST = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?$/;

/**
 * An http(s) URL of a host and nothing after it but `/`. The S3 SDK's path-style addressing
 * would take a path as the bucket; a query or fragment means nothing for an API endpoint.
 */
function isHttpUrl(v: string): boolean {
  if (!/^https?:\/\//i.test(v) || /[?#]/.test(v) || !URL.canParse(v)) return false;
  const u = new URL(v);
  return u.hostname !== "" && (u.pathname === "/" || u.pathname === "");
}

function isEndpoint(v: string, allowFile: boolean): boolean {
  if (allowFile && /^file:/i.test(v)) return v.length > "file:".length && v !== "file://";
  return isHttpUrl(v) || BARE_HOST.test(v);
}

/** Plain object whose values are all JSON (no functions, undefined, NaN, cycles, class instances, nesting past `MAX_NESTING`). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return isPlainObject(v) && frozenJsonCopy(v) !== NOT_JSON;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** What {@link frozenJsonCopy} returns for a value that is not JSON data. */
export const NOT_JSON: unique symbol = Symbol("not JSON");

/** A container being copied: its source, its copy so far, its keys (indices for an array) and the next one. */
interface Frame {
  readonly src: Record<string, unknown>;
  readonly out: Record<string, unknown>;
  readonly keys: readonly (string | number)[];
  i: number;
}

function jsonLeaf(v: unknown): unknown {
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  return typeof v === "number" && Number.isFinite(v) ? v : NOT_JSON;
}

/**
 * A frozen deep copy of JSON data, or {@link NOT_JSON} for anything else: a function,
 * `undefined`, NaN, a cycle, a class instance, or nesting deeper than the tool's JSON decoder
 * reads (`MAX_NESTING`, the top counting as one). Walked with a stack of its own, not by
 * recursion, so a hostile value meets the nesting bound, never the call stack's.
 */
export function frozenJsonCopy(root: unknown): unknown {
  if (typeof root !== "object" || root === null) return jsonLeaf(root);
  const path = new Set<object>();
  const stack: Frame[] = [];
  const open = (v: object): boolean => {
    if (path.has(v) || stack.length >= MAX_NESTING) return false;
    if (Array.isArray(v))
      stack.push({
        src: v as unknown as Record<string, unknown>,
        out: new Array(v.length) as unknown as Record<string, unknown>,
        keys: Array.from(v, (_, i) => i),
        i: 0,
      });
    else if (isPlainObject(v)) stack.push({ src: v, out: {}, keys: Object.keys(v), i: 0 });
    else return false;
    path.add(v);
    return true;
  };
  if (!open(root)) return NOT_JSON;
  for (;;) {
    const f = stack[stack.length - 1] as Frame;
    if (f.i === f.keys.length) {
      stack.pop();
      path.delete(f.src);
      const parent = stack[stack.length - 1];
      if (parent === undefined) return Object.freeze(f.out);
      parent.out[parent.keys[parent.i++] as string] = Object.freeze(f.out);
      continue;
    }
    const v = f.src[f.keys[f.i] as string];
    if (typeof v === "object" && v !== null) {
      if (!open(v)) return NOT_JSON;
      continue;
    }
    const leaf = jsonLeaf(v);
    if (leaf === NOT_JSON) return NOT_JSON;
    f.out[f.keys[f.i++] as string] = leaf;
  }
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
    expected:
      "a URL (http://, https:// or file:) or a bare host such as s3.example.com, with no path, query or fragment after the host (the bucket is never part of the endpoint)",
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
    expected: `a plain object of JSON values (no functions, cycles or class instances; nested at most ${MAX_NESTING} levels)`,
    valid: (v: unknown) => isJsonObject(v),
  },
  assumeRole: {
    type: "object",
    expected: "an ObjectStoreAssumeRole or its props ({ roleArn, policy?, sessionName?, sessionExpiration? })",
  },
} as const satisfies Record<string, Rule>;
