/**
 * The JSON objstate prints of its objects, in one place: the CLI's `--json`, the server's
 * `/api/v1` and the console's JSON all build a version, a lock, a workspace, outputs, a diff
 * of versions and a rollback with these functions, so the same object prints the same JSON
 * wherever it is asked for (docs/decisions/060). Every key is always present (null when
 * unknown), so a client never tells "absent" from "unknown". The functions are pure: the
 * shells make the library call, then render its result here.
 */
import type { LastWrite, LockListing, Principal, RekeyResult, RollbackResult, StateVersion, VersionDiff, WorkspaceStatus } from "../backend/backend.js";
import type { OidcIdentity } from "../backend/principal.js";
import type { RemoteOutputs } from "../remote-state/remote-outputs.js";
import type { JsonValue } from "../json/exact-json.js";
import type { StateDiff } from "../state/diff.js";

// ---------------------------------------------------------------- principals

/**
 * Who a write through `objstate serve` was made for (a version's, a last write's): the user
 * and how it authenticated, an API token's ID (`via: token`), an OIDC identity (`via: oidc`:
 * issuer, subject and the claims its rule used). Never a credential.
 */
export interface PrincipalJson {
  readonly name: string;
  readonly via: string;
  readonly tokenId: string | null;
  readonly oidc: OidcIdentity | null;
}

/** A {@link Principal} as {@link PrincipalJson}; null for none. */
export function principalJson(p: Principal | undefined): PrincipalJson | null {
  if (p === undefined) return null;
  return {
    name: p.name,
    via: p.via,
    tokenId: p.tokenId ?? null,
    oidc: p.oidc === undefined ? null : { issuer: p.oidc.issuer, subject: p.oidc.subject, claims: { ...p.oidc.claims } },
  };
}

/**
 * A principal in one line for people (`state history`, the console's History page): `alice
 * (password)`, `ci (token tok_1a2b)`, `oidc (oidc repo:org/infra:ref:refs/heads/main from
 * https://token.actions.githubusercontent.com)`. Unescaped: the caller makes it safe for its medium.
 */
export function principalText(p: Principal): string {
  if (p.tokenId !== undefined) return `${p.name} (${p.via} ${p.tokenId})`;
  if (p.oidc !== undefined) return `${p.name} (${p.via} ${p.oidc.subject} from ${p.oidc.issuer})`;
  return `${p.name} (${p.via})`;
}

// ---------------------------------------------------------------- versions

/**
 * A history entry: `objstate state history --json` (its `versions`), the server's
 * `GET /api/v1/workspaces/{w}/history` (its `versions`). `isLatest` is the library's name.
 */
export interface HistoryEntryJson {
  readonly versionId: string;
  readonly isLatest: boolean;
  readonly deleteMarker: boolean;
  /** UTC ISO time, null when the store does not say. */
  readonly lastModified: string | null;
  readonly size: number;
  readonly serial: number | null;
  readonly lineage: string | null;
  readonly writer: "objstate" | "other" | null;
  /** What the writing client said it was (`Who`): unchecked. */
  readonly who: string | null;
  /** The server user the write was made for, and how it authenticated: checked by the server. */
  readonly principal: PrincipalJson | null;
  readonly operation: string | null;
  readonly lockId: string | null;
  readonly sourceVersion: string | null;
}

/** {@link StateVersion} as {@link HistoryEntryJson}. */
export function historyEntryJson(v: StateVersion): HistoryEntryJson {
  return {
    versionId: v.versionId,
    isLatest: v.isLatest,
    deleteMarker: v.deleteMarker,
    lastModified: v.lastModified?.toISOString() ?? null,
    size: v.size,
    serial: v.serial ?? null,
    lineage: v.lineage ?? null,
    writer: v.writer ?? null,
    who: v.who ?? null,
    principal: principalJson(v.principal),
    operation: v.operation ?? null,
    lockId: v.lockId ?? null,
    sourceVersion: v.sourceVersion ?? null,
  };
}

// ---------------------------------------------------------------- locks

/**
 * A lock: each entry of `objstate locks --json` and `GET /api/v1/locks` (its `locks`),
 * `objstate lock --json`, `GET /api/v1/workspaces/{w}/lock` (its `lock`) and the `lock` of
 * a workspace. The lock-table item's `Info` (the tool's `ID`, `Who` …) in objstate's names:
 * the library's listing itself, its fields copied in this order (and no others) by {@link lockJson}.
 */
export type LockJson = LockListing;

/** A lock as the library lists it ({@link ObjectStoreBackend.locks}, `currentLock`, `listedLock`) as {@link LockJson}. */
export function lockJson(l: LockListing): LockJson {
  return {
    workspace: l.workspace,
    source: l.source,
    path: l.path,
    id: l.id,
    who: l.who,
    operation: l.operation,
    info: l.info,
    version: l.version,
    owner: l.owner,
    since: l.since,
    expires: l.expires,
    expired: l.expired,
  };
}

// ---------------------------------------------------------------- workspaces

/** A workspace's last write as its state object records it. */
export interface LastWriteJson {
  readonly size: number;
  readonly etag: string | null;
  /** UTC ISO time, null when the store does not say. */
  readonly lastModified: string | null;
  readonly serial: number | null;
  readonly lineage: string | null;
  /** What the writing client said it was (`Who`): unchecked. */
  readonly who: string | null;
  readonly lockId: string | null;
  readonly operation: string | null;
  /** The server user the write was made for, and how it authenticated. */
  readonly principal: PrincipalJson | null;
}

/** {@link LastWrite} as {@link LastWriteJson}. */
export function lastWriteJson(w: LastWrite): LastWriteJson {
  return {
    size: w.size,
    etag: w.etag ?? null,
    lastModified: w.lastModified ?? null,
    serial: w.serial ?? null,
    lineage: w.lineage ?? null,
    who: w.who ?? null,
    lockId: w.lockId ?? null,
    operation: w.operation ?? null,
    principal: principalJson(w.principal),
  };
}

/**
 * A workspace: each entry of `objstate workspace list --json` and `GET /api/v1/workspaces`
 * (its `workspaces`), and `GET /api/v1/workspaces/{w}`.
 */
export interface WorkspaceJson {
  readonly name: string;
  /** Does it have a state (false for `default` before its first write)? */
  readonly state: boolean;
  readonly lock: LockJson | null;
  readonly lastWrite: LastWriteJson | null;
}

/** {@link WorkspaceStatus} as {@link WorkspaceJson}. */
export function workspaceJson(s: WorkspaceStatus): WorkspaceJson {
  return {
    name: s.name,
    state: s.lastWrite !== null,
    lock: s.lock === null ? null : lockJson(s.lock),
    lastWrite: s.lastWrite === null ? null : lastWriteJson(s.lastWrite),
  };
}

// ---------------------------------------------------------------- outputs

/** What a hidden sensitive value prints as, in text and (as a JSON string) in JSON. */
export const SENSITIVE = "<sensitive>";

/**
 * Outputs in the tool's `output -json` shape: `objstate output --json` and the `outputs` of
 * `GET /api/v1/workspaces/{w}/outputs`. A hidden value is `"<sensitive>"`.
 */
export type OutputsJson = Readonly<Record<string, { readonly sensitive: boolean; readonly type: JsonValue; readonly value: JsonValue }>>;

/**
 * {@link OutputsJson} as text, exactly as the tool's `output -json` writes it: indented by
 * two, names sorted, types in the tool's notation, numbers exactly as the state has them
 * (never through a JS number), `<`, `>`, `&` escaped as Go does. `hidden(name)`: print
 * that output's value as `"<sensitive>"` (its type and flag are still given).
 */
export function outputsJsonText(outputs: RemoteOutputs, hidden: (name: string) => boolean): string {
  const names = outputs.names();
  if (names.length === 0) return "{}";
  // Strings in JSON text hold no raw newline, so indenting every line of a value is safe.
  const member = (key: string, text: string): string => `    ${JSON.stringify(key)}: ${text.replace(/\n/g, "\n    ")}`;
  const entries = names.map((n) => {
    const value = hidden(n) ? JSON.stringify(SENSITIVE) : asToolWritesJson(outputs.toJSONText(n, 2));
    const members = [member("sensitive", String(outputs.isSensitive(n))), member("type", asToolWritesJson(outputs.toolTypeText(n, 2))), member("value", value)];
    return `  ${asToolWritesJson(JSON.stringify(n))}: {\n${members.join(",\n")}\n  }`;
  });
  return `{\n${entries.join(",\n")}\n}`;
}

/**
 * JSON text as the tool writes it (Go's encoding/json): `<`, `>` and `&` as `\u003c`,
 * `\u003e` and `\u0026`, and U+2028 and U+2029 escaped, so that objstate's JSON is byte
 * for byte the tool's. Outside strings JSON text has none of these characters.
 */
export function asToolWritesJson(text: string): string {
  return text.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

// ---------------------------------------------------------------- diffs and rollbacks

/**
 * A diff of two stored versions: `objstate state diff --json` and
 * `GET /api/v1/workspaces/{w}/diff?from=&to=`. `from`/`to` null stand for "no state".
 */
export type VersionDiffJson = { readonly workspace: string; readonly from: string | null; readonly to: string | null } & StateDiff;

/** {@link VersionDiff} of `workspace` as {@link VersionDiffJson}. */
export function versionDiffJson(workspace: string, d: VersionDiff): VersionDiffJson {
  return { workspace, from: d.from, to: d.to, ...d.diff };
}

/** What a rollback did: `objstate state rollback --json` (beside `path`, `locked`) and `POST /api/v1/workspaces/{w}/rollback`. */
export interface RollbackJson {
  readonly workspace: string;
  /** The version whose content was restored. */
  readonly from: string;
  /** The serial the restored content now carries. */
  readonly serial: number;
  readonly lineage: string | null;
  /** The serial of the state it replaced; null when the workspace was deleted. */
  readonly previousSerial: number | null;
  /** The workspace had no current state (deleted): the rollback restored it. */
  readonly restored: boolean;
  readonly md5: string;
}

/** One workspace rekeyed: `objstate state rekey --json` prints `{"workspaces": [...]}`. */
export interface RekeyJson {
  readonly workspace: string;
  /** False: the workspace had no state (nothing written). */
  readonly rekeyed: boolean;
  /** The method that read the state before (`method.TYPE.NAME`); null without a state. */
  readonly from: string | null;
  /** The primary method it is written under now. */
  readonly to: string;
  /** The serial it carries now; null without a state. */
  readonly serial: number | null;
  readonly md5: string | null;
}

/** {@link RekeyResult}s as `state rekey --json` prints them. */
export function rekeyJson(results: readonly RekeyResult[]): { readonly workspaces: RekeyJson[] } {
  return {
    workspaces: results.map((r) => ({
      workspace: r.workspace,
      rekeyed: r.rekeyed,
      from: r.from ?? null,
      to: r.to,
      serial: r.serial ?? null,
      md5: r.md5 ?? null,
    })),
  };
}

/** {@link RollbackResult} of `workspace` as {@link RollbackJson}. */
export function rollbackJson(workspace: string, r: RollbackResult): RollbackJson {
  return { workspace, from: r.from, serial: r.serial, lineage: r.lineage ?? null, previousSerial: r.previousSerial ?? null, restored: r.restored, md5: r.md5 };
}
