import { DEFAULT_WORKSPACE } from "../../config/layout.js";
import { ObjstateError } from "../../errors.js";
import { nodeOs } from "../../util/builtins.js";

/** The lock ID that names a lock item with no readable lock info (hand-written, another tool's): `force-unlock no-id` clears it. */
export const NO_LOCK_ID = "no-id";

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
  /** When the lease ends, epoch seconds (docs/design.md §10); absent on a lock that never expires. The tool ignores it. */
  readonly Expires?: number;
  /** The server user that took the lock: only it (or the `force` role) may release it or write under it; any replica can check it. */
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

/** May `owner` act on the lock? Undefined asks for no check; otherwise the lock must carry exactly that owner (a CLI lock belongs to no one). */
export function ownedBy(info: LockInfo, owner: string | undefined): boolean {
  return owner === undefined || info.Owner === owner;
}

/** The ID a holder is released with: its own, or {@link NO_LOCK_ID} when it has none. */
export function lockIdOf(holder: LockInfo): string {
  return holder.ID === "" ? NO_LOCK_ID : holder.ID;
}

export function workspaceFlag(workspace: string): string {
  return workspace === DEFAULT_WORKSPACE ? "" : ` -w ${workspace}`;
}

export function lockedError(where: string, workspace: string, raw: string, holder: LockInfo): ObjstateError {
  if (holder.ID === "") {
    return new ObjstateError(
      "STATE_LOCKED",
      `the state at ${where} is locked by an item with no readable lock info (${raw === "" ? "no Info attribute" : "Info has no ID"}; written by hand or by another tool). If nothing holds it, clear it with \`objstate force-unlock ${NO_LOCK_ID}${workspaceFlag(workspace)}\`.`,
      { details: { lockInfo: holder } },
    );
  }
  return new ObjstateError(
    "STATE_LOCKED",
    `the state at ${where} is locked: ${describeHolder(holder)}. If that holder is gone, unlock it with \`objstate force-unlock ${holder.ID}${workspaceFlag(workspace)}\` (through the tool: \`terraform force-unlock ${holder.ID}\`).`,
    { details: { lockInfo: holder } },
  );
}

/** `LOCK_NOT_OWNED`: server user `asking` may not release or write under `holder`, which is another's (or no one's). */
export function notOwned(where: string, asking: string, holder: LockInfo, action: "release" | "write"): ObjstateError {
  const owner =
    holder.Owner === undefined
      ? `no server user: it was taken outside objstate serve (by the CLI or the library, as ${holder.Who || "unknown"})`
      : `user ${holder.Owner}`;
  return new ObjstateError(
    "LOCK_NOT_OWNED",
    `user ${asking} may not ${action === "release" ? "release" : "write under"} lock ${lockIdOf(holder)} on ${where}: the lock belongs to ${owner}. Only the user who took the lock, or a user with the force role, may release it or write under it.`,
    { details: { lockId: lockIdOf(holder), owner: holder.Owner ?? null, user: asking, lockInfo: holder } },
  );
}
