import { nodeCrypto, nodeOs } from "../../util/builtins.js";

/** The lock information stored in the lock table's `Info` attribute (docs/design.md §5). */
export interface LockInfo {
  /** A UUID; unlock and force-unlock need it. */
  readonly ID: string;
  /** What the holder is doing (`apply`, `plan`, `writeState` …). */
  readonly Operation: string;
  /** Free text from the holder. */
  readonly Info: string;
  /** `user@host` of the holder. */
  readonly Who: string;
  /** Tool version of the holder. */
  readonly Version: string;
  /** UTC ISO time the lock was taken. */
  readonly Created: string;
  /** The lock item's LockID: `{bucket}/{statePath}`. */
  readonly Path: string;
  /**
   * When the lease ends, epoch seconds (docs/design.md §10); absent on a lock that never expires
   * (the tool's own). The tool ignores the field.
   */
  readonly Expires?: number;
  /**
   * The principal (server user) that took the lock through `objstate serve`: only it, or a
   * user with the `force` role, may release the lock or write under it there. Stored in the
   * lock itself, so any replica can check it; absent on a lock taken by the CLI or the
   * library. The tool ignores the field.
   */
  readonly Owner?: string;
}

/** `user@host` of this process. */
export function defaultWho(): string {
  let user = process.env["USER"] ?? "unknown";
  try {
    user = nodeOs().userInfo().username;
  } catch {
    // no passwd entry (containers): keep $USER
  }
  return `${user}@${nodeOs().hostname()}`;
}

export function newLockInfo(fields: { operation: string; info: string; who: string; version: string; path: string }): LockInfo {
  return {
    ID: nodeCrypto().randomUUID(),
    Operation: fields.operation,
    Info: fields.info,
    Who: fields.who,
    Version: fields.version,
    Created: new Date().toISOString(),
    Path: fields.path,
  };
}

/** Parse stored lock info; tolerant of items written by other tools (missing fields become ""). */
export function parseLockInfo(raw: string, path: string): LockInfo {
  let o: Record<string, unknown> = {};
  try {
    const v: unknown = JSON.parse(raw);
    if (typeof v === "object" && v !== null) o = v as Record<string, unknown>;
  } catch {
    // not JSON: report what we can
  }
  const s = (k: string): string => (typeof o[k] === "string" ? (o[k] as string) : "");
  const info: LockInfo = {
    ID: s("ID"),
    Operation: s("Operation"),
    Info: s("Info"),
    Who: s("Who"),
    Version: s("Version"),
    Created: s("Created"),
    Path: s("Path") || path,
  };
  const expires = o["Expires"];
  const owner = o["Owner"];
  const leased = typeof expires === "number" && Number.isFinite(expires) ? { ...info, Expires: expires } : info;
  return typeof owner === "string" && owner !== "" ? { ...leased, Owner: owner } : leased;
}

/** One line describing a holder, for messages; a lease says when it expires. */
export function describeHolder(info: LockInfo, nowMs: number = Date.now()): string {
  const lease =
    info.Expires === undefined ? "" : `; its lease ${info.Expires * 1000 <= nowMs ? "expired" : "expires"} at ${new Date(info.Expires * 1000).toISOString()}`;
  const owner = info.Owner === undefined ? "" : ` (server user ${info.Owner})`;
  return `ID ${info.ID || "(none)"}, held by ${info.Who || "unknown"}${owner} since ${info.Created || "unknown"} for ${info.Operation || "an unknown operation"}${info.Info ? ` (${info.Info})` : ""}${lease}`;
}

/**
 * May `owner` act on the lock `info` (release it, write under it)? Undefined asks for no
 * check (the library's own callers, a server user with the `force` role); otherwise the
 * lock must carry exactly that owner, so a lock without one (taken by the CLI or the
 * library) belongs to no server user.
 */
export function ownedBy(info: LockInfo, owner: string | undefined): boolean {
  return owner === undefined || info.Owner === owner;
}
