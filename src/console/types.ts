/**
 * What the console needs from the server it is mounted in: the data and actions
 * ({@link ConsoleApi}), who is asking and what they may do ({@link ConsoleContext}).
 * The console implements no operation itself: every read and action goes through the
 * `ConsoleApi`, which the server backs with the same library calls as its JSON API.
 */
import type { StateDiff } from "../state/diff.js";
import type { Principal } from "../backend/principal.js";
import { isObjstateError, type ObjstateError } from "../errors.js";

/**
 * Roles the console checks (the server's user table grants them per workspace). `outputs`:
 * the Workspace page's outputs (masked), lock and last write, not its versions; `read`
 * implies it.
 */
export type ConsoleRole = "outputs" | "read" | "write" | "lock" | "force" | "admin";

/** A lock as the console shows it. */
export interface LockView {
  readonly id: string;
  readonly who: string;
  readonly operation: string;
  readonly info: string;
  /** UTC ISO time the lock was taken ("" when the holder did not say). */
  readonly created: string;
  /** UTC ISO time a lease runs out; undefined for a lock without a lease (it never expires). */
  readonly expires?: string | undefined;
}

/** The last write to a workspace, as far as the store knows it. */
export interface LastWrite {
  /** UTC ISO time; undefined when the store does not say. */
  readonly time?: string | undefined;
  readonly who?: string | undefined;
  readonly serial: number | null;
  /**
   * Who and serial are still being read (they are object metadata, one request per
   * workspace, while time and size come from the listing): shown as "…" until then.
   */
  readonly pending?: boolean | undefined;
}

/** One row of the Workspaces page. */
export interface WorkspaceSummary {
  readonly name: string;
  readonly lock: LockView | null;
  /** Null when the workspace has no state. */
  readonly lastWrite: LastWrite | null;
  /** State size in bytes; 0 without a state. */
  readonly size: number;
  /**
   * Resource instances in the state; undefined while not counted yet (counting reads the
   * whole state, so the Workspaces page shows it once a background count has run);
   * {@link ENCRYPTED} for an envelope there is no key for.
   */
  readonly resources?: number | Encrypted | undefined;
}

/**
 * What the console shows instead of content when the state is an encryption envelope and
 * the server has no key (a client that encrypts itself: the server passes its states through).
 */
export const ENCRYPTED = "encrypted";
export type Encrypted = typeof ENCRYPTED;

/** A state's content is an envelope the server has no key for: {@link ENCRYPTED}, not a failure. */
export function encryptedOr(e: unknown): Encrypted {
  if (isObjstateError(e, "STATE_ENCRYPTED")) return ENCRYPTED;
  throw e;
}

/** One root output of a state. `value` is JSON text. */
export interface OutputView {
  readonly name: string;
  readonly value: string;
  readonly sensitive: boolean;
}

/** One stored version of a workspace's state (newest first in lists). */
export interface VersionView {
  readonly versionId: string;
  /** UTC ISO time. */
  readonly lastModified: string;
  readonly size: number;
  readonly serial: number | null;
  readonly lineage: string | null;
  /** Who wrote it, as its client said (`Who`, from objstate's metadata; undefined for writes by other clients). */
  readonly who?: string | undefined;
  /** The server user the write was made for, when it went through `objstate serve` (checked, unlike `who`). */
  readonly principal?: Principal | undefined;
  readonly operation?: string | undefined;
  readonly isLatest: boolean;
  readonly deleteMarker: boolean;
  /** Resource instances, when known (drives the chart; undefined is left out of it). */
  readonly resources?: number | Encrypted | undefined;
}

/** What a rollback wrote. */
export interface RollbackResult {
  readonly serial: number | null;
  /** MD5 of the state written. */
  readonly md5?: string | undefined;
  readonly versionId?: string | undefined;
}

/**
 * The console's data and actions. The server implements it over its backend
 * (`backendConsoleApi`); tests may implement it in memory.
 */
export interface ConsoleApi {
  /** Every workspace with its lock, last write, size and resource count. */
  listWorkspaces(): Promise<WorkspaceSummary[]>;
  /** One workspace's summary (as in the list). */
  workspace(workspace: string): Promise<WorkspaceSummary>;
  /**
   * Does the workspace exist: is it `default`, or has it a state, a lock, or kept versions
   * (a deleted workspace can still be rolled back)? Pages of others answer 404.
   */
  exists(workspace: string): Promise<boolean>;
  /** Only the lock (polled by the page's live script, so it must be cheap). */
  lock(workspace: string): Promise<LockView | null>;
  /** Every workspace's lock (polled by the Workspaces page: no state is read). */
  locks(): Promise<ReadonlyMap<string, LockView | null>>;
  /** Root outputs of the current state, sensitive values included (the console masks them); {@link ENCRYPTED} for an envelope there is no key for. */
  outputs(workspace: string): Promise<OutputView[] | Encrypted>;
  /** Whether the store keeps versions (bucket versioning not off); without them history pages say so. */
  hasHistory(): Promise<boolean>;
  /** Versions, newest first, at most `limit`. */
  history(workspace: string, options: { readonly limit: number }): Promise<VersionView[]>;
  /**
   * One version by ID, or null when it is not among the newest `limit` versions. May answer
   * from versions described earlier (their content never changes); `isLatest` is as it was
   * then: compare with the current version.
   */
  version(workspace: string, versionId: string, options: { readonly limit: number }): Promise<VersionView | null>;
  /** Diff between two versions (`from` older, `to` newer, by version ID). */
  diff(workspace: string, from: string, to: string): Promise<StateDiff>;
  /**
   * Write version `to`'s content as a new version (serial = current + 1), under the lock,
   * recording `principal` (the console's user) as who it was made for. With `expectCurrent`
   * (the current version the confirmed diff was made from), refused with `STATE_CONFLICT`
   * when the workspace was written since, checked under the lock.
   */
  rollback(
    workspace: string,
    to: string,
    options?: { readonly principal?: ConsolePrincipal | undefined; readonly expectCurrent?: string | undefined },
  ): Promise<RollbackResult>;
  /** Release the lock with this ID (refused when the lock has another ID). */
  forceUnlock(workspace: string, id: string): Promise<void>;
}

/** One line of the action log. */
export interface ConsoleLogEntry {
  readonly user: string;
  readonly action: "force-unlock" | "rollback" | "reveal";
  readonly workspace: string;
  readonly outcome: "ok" | "refused" | "failed";
  /** Lock ID, version ID, or why it was refused; never a secret. */
  readonly detail: string;
  /** For the audit log: the lock a force-unlock named. */
  readonly lockId?: string | undefined;
  /** A rollback: the version it restored, and the serial and MD5 it wrote. */
  readonly from?: string | undefined;
  readonly serial?: number | undefined;
  readonly md5?: string | undefined;
  /** A failed action's error code. */
  readonly code?: string | undefined;
}

/** The authenticated user and how they authenticated (`password`, `certificate`, `token`, `oidc`, `none` …), with a token's ID or an OIDC identity. */
export type ConsolePrincipal = Principal;

/** What the console answered, for the server's request log and metrics. */
export interface ConsoleAnswer {
  /** The route's name (`/workspaces/:workspace/history`, `/console/locks`): a fixed set, fit for a metric label. */
  readonly route: string;
  /** Response body bytes sent (0 for HEAD and 304). */
  readonly bytes: number;
  /** A request a page's script repeats on its own (the lock poll): worth a debug line, not an info one. */
  readonly routine: boolean;
}

/** Per-request context the server hands to `handleConsole`. */
export interface ConsoleContext {
  /** The authenticated user's name. */
  readonly user: string;
  /** `user` with how they authenticated: recorded with what the console's actions write. */
  readonly principal?: ConsolePrincipal | undefined;
  /** May `user` do `role` on `workspace`? */
  can(role: ConsoleRole, workspace: string): boolean;
  /** Records the console's actions (the server's request log, the audit log); a change is answered once its promise settles. */
  log(entry: ConsoleLogEntry): Promise<unknown> | void;
  /** Receives errors that are not an `ObjstateError` (the page then says only "internal error"). */
  onError?: ((error: unknown) => void) | undefined;
  /** The text a failure's page shows (default: its message): a host may keep a detail for its log. */
  shown?: ((error: ObjstateError) => string) | undefined;
  readonly api: ConsoleApi;
  /** CSRF tokens (one instance per process, see `CsrfTokens`). */
  readonly csrf: import("./csrf.js").CsrfTokens;
  /**
   * The console's own origin (`https://host:port`), which POSTs must come from. Default:
   * the request's `Host` header with `https` when the socket is TLS, else `http`.
   */
  readonly origin?: string | undefined;
  /**
   * The server's request gate refused this request (a browser's cross-site request, a body
   * that is not a form): the console answers with a page saying so, and logs an action's
   * refusal. `reason` is short and quotes no header value.
   */
  readonly refusal?: { readonly status: number; readonly reason: string } | undefined;
  /** Path the console is mounted under (default "", i.e. `/`). */
  readonly base?: string | undefined;
  /** How often the pages' script polls lock state, in ms (default 3,000). */
  readonly pollMs?: number | undefined;
  /** The window of a form body's minimum-rate rule (the server's client timeout; default 30 s). */
  readonly clientTimeoutMs?: number | undefined;
  /** Told once per request the console answered (not for paths it leaves to the server). */
  onAnswer?: ((answer: ConsoleAnswer) => void) | undefined;
}
