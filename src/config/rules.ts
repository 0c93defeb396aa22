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
 * A frozen deep copy of JSON data, or {@link NOT_JSON} for anything else (a function, `undefined`, NaN, a cycle, a class
 * instance, nesting past `MAX_NESTING`). Walked with its own stack, so a hostile value meets the nesting bound, never the call stack's.
 */
export function frozenJsonCopy(root: unknown): unknown {
  if (typeof root !== "object" || root === null) return jsonLeaf(root);
  const path = new Set<object>();
  const stack: Frame[] = [];
  const open = (v: object): boolean => {
    if (path.has(v) || stack.length >= MAX_NESTING) return false;
    const array = Array.isArray(v);
    if (!array && !isPlainObject(v)) return false;
    const keys = array ? Array.from(v, (_, i) => i) : Object.keys(v);
    stack.push({ src: v as Record<string, unknown>, out: (array ? new Array(v.length) : {}) as Record<string, unknown>, keys, i: 0 });
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

export type NameTable<T> = { [name: string]: T };

/**
 * Tables keyed by remote-state names are filled without a prototype and get `Object.prototype`
 * once full: `__proto__` or `toString` is then a name like any other, and a thousand distinct
 * names cost no more than one (docs/decisions/026).
 */
export function nameTable<T>(fill: (table: NameTable<T>) => void): NameTable<T> {
  const table = Object.create(null) as NameTable<T>;
  fill(table);
  return Object.setPrototypeOf(table, Object.prototype) as NameTable<T>;
}

/** A rule for a string field: what a valid value is, for messages, and the check beyond the type. */
function text(expected: string, valid: (v: string) => boolean): { readonly type: "string"; readonly expected: string; readonly valid: (v: string) => boolean } {
  return { type: "string", expected, valid };
}

/** An endpoint: an http(s) URL of a host or a bare host, or with `allowFile` also a `file:` URL. */
function endpoint(host: string, allowFile: boolean, more = ""): ReturnType<typeof text> {
  const schemes = allowFile ? "http://, https:// or file:" : "http:// or https://";
  return text(`a URL (${schemes}) or a bare host such as ${host}, with no path, query or fragment after the host${more}`, (v) =>
    allowFile && /^file:/i.test(v) ? v.length > "file:".length && v !== "file://" : isHttpUrl(v) || BARE_HOST.test(v),
  );
}

/** The rules, by name. */
export const RULES = {
  string: { type: "string", expected: "a string" },
  boolean: { type: "boolean", expected: "a boolean (true or false)" },
  bucket: text("a bucket name of 3 to 63 characters from a-z, 0-9, '.' and '-', starting and ending with a letter or digit", (v) =>
    /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(v),
  ),
  acl: text("one of private, public-read, public-read-write", (v) => v === "private" || v === "public-read" || v === "public-read-write"),
  policy: text("a JSON policy document (an object)", (v) => {
    try {
      return isPlainObject(JSON.parse(v));
    } catch {
      return false;
    }
  }),
  sessionExpiration: {
    type: "number",
    expected: "an integer from 900 to 3600 (seconds)",
    valid: (v: number) => Number.isInteger(v) && v >= 900 && v <= 3600,
    code: "OUT_OF_RANGE",
  },
  sessionName: text("2 to 64 characters from letters, digits and +=,.@_-", (v) => /^[\w+=,.@-]{2,64}$/.test(v)),
  storeEndpoint: endpoint("s3.example.com", true, " (the bucket is never part of the endpoint)"),
  lockEndpoint: endpoint("dynamodb.example.com", true),
  httpEndpoint: endpoint("sts.example.com", false),
  key: text("a non-empty object name that does not start or end with '/'", (v) => v !== "" && !v.startsWith("/") && !v.endsWith("/")),
  prefix: text(
    "a path that does not start with '/' or './' and has no '.' or '..' segment",
    (v) => !v.startsWith("/") && !v.split("/").some((seg) => seg === "." || seg === ".."),
  ),
  region: text("a region name of letters, digits and '-' (e.g. us-east-1)", (v) => /^[A-Za-z0-9-]{1,64}$/.test(v)),
  table: text("a table name of 3 to 255 characters from letters, digits, '_', '-' and '.'", (v) => /^[A-Za-z0-9_.-]{3,255}$/.test(v)),
  // `.` and `..` would be path segments of the state's key, which some stores normalise away and others keep.
  workspace: text(
    "a non-empty workspace name of letters, digits and '-', '_', '.', '~' (no '/'; not '.' or '..')",
    (v) => /^[A-Za-z0-9._~-]+$/.test(v) && v !== "." && v !== "..",
  ),
  jsonObject: {
    type: "object",
    expected: `a plain object of JSON values (no functions, cycles or class instances; nested at most ${MAX_NESTING} levels)`,
    valid: (v: unknown) => isPlainObject(v) && frozenJsonCopy(v) !== NOT_JSON,
  },
  assumeRole: {
    type: "object",
    expected: "an ObjectStoreAssumeRole or its props ({ roleArn, policy?, sessionName?, sessionExpiration? })",
  },
} as const satisfies Record<string, Rule>;
