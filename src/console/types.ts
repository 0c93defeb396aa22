/** What the console needs from its server: the data and actions ({@link ConsoleApi}) and who asks ({@link ConsoleContext}). */
import type { StateDiff } from "../state/diff.js";
import type { LockListing, Principal, StateVersion } from "../backend/backend.js";
import { isObjstateError, type ObjstateError } from "../errors.js";
import type { CsrfTokens } from "./csrf.js";

/** Roles the console checks. `outputs`: the Workspace page's masked outputs, lock and last write; `read` implies it. */
export type ConsoleRole = "outputs" | "read" | "write" | "lock" | "force" | "admin";

/** A lock: UTC ISO times it was taken ("" when the holder did not say) and its lease runs out (undefined: never). */
export type LockView = Pick<LockListing, "id" | "who" | "operation" | "info"> & { readonly created: string; readonly expires?: string | undefined };

export interface LastWrite {
  readonly time?: string | undefined;
  readonly who?: string | undefined;
  readonly serial: number | null;
  /** Who and serial are still being read (a HEAD per workspace; time and size come from the listing). */
  readonly pending?: boolean | undefined;
}

/** One row of the Workspaces page. */
export interface WorkspaceSummary {
  readonly name: string;
  readonly lock: LockView | null;
  /** Null when the workspace has no state. */
  readonly lastWrite: LastWrite | null;
  readonly size: number;
  /** Resource instances; undefined while a background count has not run. */
  readonly resources?: number | Encrypted | undefined;
}

/** Shown instead of content for an encryption envelope the server has no key for. */
export const ENCRYPTED = "encrypted";
export type Encrypted = typeof ENCRYPTED;

/** {@link ENCRYPTED} for a `STATE_ENCRYPTED` failure; any other is thrown again. */
export function encryptedOr(e: unknown): Encrypted {
  if (isObjstateError(e, "STATE_ENCRYPTED")) return ENCRYPTED;
  throw e;
}

/** One root output; `value` is JSON text. */
export interface OutputView {
  readonly name: string;
  readonly value: string;
  readonly sensitive: boolean;
}

/** The library's version, its time as UTC ISO text, and its resource instances when counted (the chart). */
export type VersionView = Pick<StateVersion, "versionId" | "size" | "isLatest" | "deleteMarker"> &
  Partial<Pick<StateVersion, "who" | "principal" | "operation">> & {
    readonly lastModified: string;
    readonly serial: number | null;
    readonly lineage: string | null;
    readonly resources?: number | Encrypted | undefined;
  };

/** The console's data and actions (`backendConsoleApi`; tests implement it in memory). */
export interface ConsoleApi {
  listWorkspaces(): Promise<WorkspaceSummary[]>;
  workspace(workspace: string): Promise<WorkspaceSummary>;
  /** `default`, or has a state, a lock or kept versions (a deleted workspace can be rolled back)? Others answer 404. */
  exists(workspace: string): Promise<boolean>;
  /** Only the lock: polled by the pages' script, so it must be cheap. */
  lock(workspace: string): Promise<LockView | null>;
  /** Every workspace's lock, no state read. */
  locks(): Promise<ReadonlyMap<string, LockView | null>>;
  /** Root outputs, sensitive values included (the console masks them). */
  outputs(workspace: string): Promise<OutputView[] | Encrypted>;
  /** Does the store keep versions (bucket versioning not off)? */
  hasHistory(): Promise<boolean>;
  /** Versions, newest first. */
  history(workspace: string, options: { readonly limit: number }): Promise<VersionView[]>;
  /** One version among the newest `limit`, or null; may answer from an earlier description, so `isLatest` may be stale. */
  version(workspace: string, versionId: string, options: { readonly limit: number }): Promise<VersionView | null>;
  diff(workspace: string, from: string, to: string): Promise<StateDiff>;
  /** Write version `to`'s content as a new version under the lock, for `principal`; `STATE_CONFLICT` when written since `expectCurrent`. */
  rollback(
    workspace: string,
    to: string,
    options?: { readonly principal?: Principal | undefined; readonly expectCurrent?: string | undefined },
  ): Promise<{ readonly serial: number; readonly md5?: string | undefined }>;
  /** Release the lock with this ID (refused when the lock has another ID). */
  forceUnlock(workspace: string, id: string): Promise<void>;
}

/** One line of the action log; never a secret. */
export interface ConsoleLogEntry {
  readonly user: string;
  readonly action: "force-unlock" | "rollback" | "reveal";
  readonly workspace: string;
  readonly outcome: "ok" | "refused" | "failed";
  readonly detail: string;
  /** For the audit log: the lock a force-unlock named; a rollback's source version, serial and MD5; a failure's code. */
  readonly lockId?: string | undefined;
  readonly from?: string | undefined;
  readonly serial?: number | undefined;
  readonly md5?: string | undefined;
  readonly code?: string | undefined;
}

/** Per-request context the server hands to `handleConsole`. */
export interface ConsoleContext {
  readonly user: string;
  /** `user` with how they authenticated, recorded with what the actions write. */
  readonly principal?: Principal | undefined;
  can(role: ConsoleRole, workspace: string): boolean;
  /** Records the actions (request log, audit log); a change is answered once its promise settles. */
  log(entry: ConsoleLogEntry): Promise<unknown> | void;
  /** Errors that are not an `ObjstateError` (the page then says only "internal error"). */
  onError?: ((error: unknown) => void) | undefined;
  /** The text a failure's page shows (default: its message). */
  shown?: ((error: ObjstateError) => string) | undefined;
  readonly api: ConsoleApi;
  readonly csrf: CsrfTokens;
  /** The origin POSTs must come from (default: the request's Host, https on a TLS socket). */
  readonly origin?: string | undefined;
  /** The server's gate refused this request: the console answers with a page and logs an action's refusal. */
  readonly refusal?: { readonly status: number; readonly reason: string } | undefined;
  /** Mount path (default ""). */
  readonly base?: string | undefined;
  /** Lock polling period of the pages' script (default 3,000 ms). */
  readonly pollMs?: number | undefined;
  /** The window of a form body's minimum-rate rule (default 30 s). */
  readonly clientTimeoutMs?: number | undefined;
  /** Told once per answered request: its route pattern (a metric label), body bytes sent, and whether it is the lock poll (a debug line). */
  onAnswer?: ((answer: { readonly route: string; readonly bytes: number; readonly routine: boolean }) => void) | undefined;
}
