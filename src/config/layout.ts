/**
 * Where state lives in the bucket (docs/design.md §5): workspace `w` at `{prefix}/{w}/{key}`, the
 * default one at `{prefix}/{key}` (layout `seed`, the tool's OSS backend's) or `{key}` (`s3`).
 */
import { ObjstateError } from "../errors.js";
import { RULES } from "./rules.js";

/** The workspace every backend has, which cannot be deleted. */
export const DEFAULT_WORKSPACE = "default";

/** Longest workspace name (ASCII), one limit for every store (docs/decisions/008). */
export const WORKSPACE_MAX_LENGTH = 128;

/** Longest object key of each store, and how a key is measured: the embedded store's is a percent-encoded file name (a leading `.` as `%2E`). */
const KEY_LIMITS = {
  s3: { max: 1024, size: (k: string): number => Buffer.byteLength(k, "utf8"), leadingDot: 0 },
  file: { max: 255, size: (k: string): number => encodeURIComponent(k).replace(/\*/g, "%2A").length, leadingDot: 2 },
} as const;

/** Longest suffix objstate adds to a state's key. */
const KEY_SUFFIX = ".tflock";

export const LAYOUT_NAMES = ["seed", "s3"] as const;

/** A layout's name: `seed` (default workspace at `{prefix}/{key}`) or `s3` (at `{key}`). */
export type LayoutName = (typeof LAYOUT_NAMES)[number];

/** How a bad layout name is refused, after where it came from. */
export const LAYOUT_EXPECTED = `must be "seed" (the default workspace at {prefix}/{key}) or "s3" (at {key}, as the tool's S3 backend keeps it)`;

export const DEFAULT_LAYOUT: LayoutName = "seed";

export function isLayoutName(value: unknown): value is LayoutName {
  return typeof value === "string" && (LAYOUT_NAMES as readonly string[]).includes(value);
}

/** `value` as a layout's name (undefined: the default); `INVALID_LAYOUT` naming `label` otherwise. */
export function layoutNameOf(value: unknown, label: string): LayoutName {
  if (value === undefined) return DEFAULT_LAYOUT;
  if (isLayoutName(value)) return value;
  throw new ObjstateError("INVALID_LAYOUT", `${label} ${LAYOUT_EXPECTED}, got ${typeof value === "string" ? JSON.stringify(value) : typeof value}`, {
    details: { layout: value },
  });
}

export interface Layout {
  /** Where the default workspace lives: `seed` at `{prefix}/{key}`, `s3` at `{key}`. */
  readonly name: LayoutName;
  readonly prefix: string;
  readonly key: string;
  /** Longest workspace name whose keys fit the store under this prefix and key. */
  readonly maxWorkspace: number;
}

const join = (...parts: string[]): string => parts.filter((p) => p !== "").join("/");

/** Layout from the resolved prefix and key; `store` (the driver's kind) lowers the workspace limit when a long prefix and key leave less room. */
export function layout(prefix: string, key: string, store?: keyof typeof KEY_LIMITS, name: LayoutName = DEFAULT_LAYOUT): Layout {
  const p = prefix.replace(/^\/+|\/+$/g, "");
  let maxWorkspace = WORKSPACE_MAX_LENGTH;
  if (store !== undefined) {
    const limit = KEY_LIMITS[store];
    // What the key takes besides the name, measured with a one-character name.
    const rest = limit.size(`${join(p, "w", key)}${KEY_SUFFIX}`) - 1 + (p === "" ? limit.leadingDot : 0);
    maxWorkspace = Math.min(maxWorkspace, limit.max - rest);
  }
  return { name, prefix: p, key, maxWorkspace };
}

/** `"abc…"` (at most 40 characters of it): a name quoted in a message without its whole length. */
const quote = (name: string): string =>
  name.length <= 40 ? JSON.stringify(name) : `${JSON.stringify(name.slice(0, 40)).slice(0, -1)}…" (${name.length} characters)`;

/** Throw unless `name` is a usable workspace name of at most `max` characters (a layout's `maxWorkspace`). */
export function checkWorkspace(name: unknown, max: number = WORKSPACE_MAX_LENGTH): asserts name is string {
  if (typeof name !== "string" || !RULES.workspace.valid(name)) {
    const got = typeof name === "string" ? quote(name) : typeof name;
    throw new ObjstateError("INVALID_WORKSPACE", `workspace must be ${RULES.workspace.expected}, got ${got}`, { details: { workspace: name } });
  }
  if (name.length > max) {
    const why = max < WORKSPACE_MAX_LENGTH ? " on this backend (its prefix and key take the rest of the store's longest key)" : "";
    throw new ObjstateError("INVALID_WORKSPACE", `workspace names may have at most ${max} characters${why}; ${quote(name)} is longer: choose a shorter name`, {
      details: { workspace: name.slice(0, max), maxLength: max },
    });
  }
}

/** Object key of a workspace's state (the tool's S3 backend's `path()` in the `s3` layout). */
export function statePath(l: Layout, workspace: string): string {
  checkWorkspace(workspace, l.maxWorkspace);
  if (workspace !== DEFAULT_WORKSPACE) return join(l.prefix, workspace, l.key);
  return l.name === "s3" ? l.key : join(l.prefix, l.key);
}

/** The prefix under which named workspaces are listed. */
export function workspacesPrefix(l: Layout): string {
  return l.prefix === "" ? "" : `${l.prefix}/`;
}

/**
 * The prefixes whose listings together hold every state of the layout (and its lockfile): the workspaces' prefix, and in
 * the `s3` layout also the default workspace's key. None is under another, so the listings never overlap.
 */
export function listPrefixes(l: Layout): string[] {
  const named = workspacesPrefix(l);
  const own = statePath(l, DEFAULT_WORKSPACE);
  if (own.startsWith(named)) return [named];
  return named.startsWith(own) ? [own] : [named, own];
}

/** The longest prefix every state of the layout shares (a lifecycle rule's scope; in the `s3` layout usually ""). */
export function commonPrefix(l: Layout): string {
  const [a = "", b = a] = listPrefixes(l);
  let n = 0;
  while (n < a.length && a[n] === b[n]) n++;
  return a.slice(0, n);
}

/** The workspace of a listed key, or undefined unless it is exactly `{prefix}/{w}/{key}` with a usable name. */
export function workspaceOfKey(l: Layout, objectKey: string): string | undefined {
  const head = workspacesPrefix(l);
  const tail = `/${l.key}`;
  if (!objectKey.startsWith(head) || !objectKey.endsWith(tail)) return undefined;
  const w = objectKey.slice(head.length, objectKey.length - tail.length);
  if (w === "" || w.includes("/") || w === DEFAULT_WORKSPACE || !RULES.workspace.valid(w) || w.length > l.maxWorkspace) return undefined;
  return w;
}

/** The segment under the prefix for objstate's own objects: `@` is in no workspace name (docs/decisions/076). */
const OWN_SEGMENT = "@objstate";

/** Where the audit log's day objects live: `{prefix}/@objstate/audit/` (`@objstate/audit/` without a prefix). */
export function auditPrefix(l: Layout): string {
  return `${join(l.prefix, OWN_SEGMENT, "audit")}/`;
}

/** The default workspace's state would lie under {@link auditPrefix} (a key starting `@objstate/`): the audit log refuses such a layout. */
export function auditClash(l: Layout): boolean {
  return statePath(l, DEFAULT_WORKSPACE).startsWith(auditPrefix(l));
}
