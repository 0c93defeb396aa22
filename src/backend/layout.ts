/**
 * Where state lives in the bucket (DESIGN §5): default workspace at `{prefix}/{key}`,
 * workspace `w` at `{prefix}/{w}/{key}`; `prefix` trimmed of `/`, empty segments dropped.
 */
import { ObjstateError } from "../errors.js";
import { RULES } from "../config/rules.js";

/** The workspace every backend has, which cannot be deleted. */
export const DEFAULT_WORKSPACE = "default";

export interface Layout {
  readonly prefix: string;
  readonly key: string;
}

function join(...parts: string[]): string {
  return parts.filter((p) => p !== "").join("/");
}

function trimSlashes(s: string): string {
  return s.replace(/^\/+|\/+$/g, "");
}

/** Layout from the resolved prefix and key. */
export function layout(prefix: string, key: string): Layout {
  return { prefix: trimSlashes(prefix), key };
}

/** Throw unless `name` is a usable workspace name. */
export function checkWorkspace(name: unknown): asserts name is string {
  if (typeof name !== "string" || !RULES.workspace.valid(name)) {
    const got = typeof name === "string" ? JSON.stringify(name) : typeof name;
    throw new ObjstateError("INVALID_WORKSPACE", `workspace must be ${RULES.workspace.expected}, got ${got}`, { details: { workspace: name } });
  }
}

/** Object key of a workspace's state. */
export function statePath(l: Layout, workspace: string): string {
  checkWorkspace(workspace);
  return workspace === DEFAULT_WORKSPACE ? join(l.prefix, l.key) : join(l.prefix, workspace, l.key);
}

/** The prefix under which named workspaces are listed. */
export function workspacesPrefix(l: Layout): string {
  return l.prefix === "" ? "" : `${l.prefix}/`;
}

/**
 * The workspace a listed key belongs to, or undefined when the key is not exactly
 * `{prefix}/{w}/{key}` (stray objects do not count).
 */
export function workspaceOfKey(l: Layout, objectKey: string): string | undefined {
  const head = workspacesPrefix(l);
  const tail = `/${l.key}`;
  if (!objectKey.startsWith(head) || !objectKey.endsWith(tail)) return undefined;
  const w = objectKey.slice(head.length, objectKey.length - tail.length);
  if (w === "" || w.includes("/") || w === DEFAULT_WORKSPACE || !RULES.workspace.valid(w)) return undefined;
  return w;
}
