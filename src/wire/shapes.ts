/**
 * The JSON objstate prints of its objects, in one place: the CLI's `--json`, the server's
 * `/api/v1` and the console build them here, so one object prints the same JSON everywhere
 * (docs/decisions/060). Every key is always present (null when unknown). Pure functions.
 */
import type { LastWrite, LockListing, Principal, RekeyResult, RollbackResult, StateVersion, VersionDiff, WorkspaceStatus } from "../backend/backend.js";
import type { OidcIdentity } from "../backend/principal.js";
import type { RemoteOutputs } from "../remote-state/remote-outputs.js";
import type { JsonValue } from "../json/exact-json.js";
import type { StateDiff } from "../state/diff.js";

/** Who a write through `objstate serve` was made for: name, how it authenticated, a token's ID or an OIDC identity. Never a credential. */
export interface PrincipalJson {
  readonly name: string;
  readonly via: string;
  readonly tokenId: string | null;
  readonly oidc: OidcIdentity | null;
}

export function principalJson(p: Principal | undefined): PrincipalJson | null {
  if (p === undefined) return null;
  const oidc = p.oidc === undefined ? null : { issuer: p.oidc.issuer, subject: p.oidc.subject, claims: { ...p.oidc.claims } };
  return { name: p.name, via: p.via, tokenId: p.tokenId ?? null, oidc };
}

/** A principal in one line for people: `alice (password)`, `ci (token tok_1a2b)`, `oidc (oidc SUBJECT from ISSUER)`. Unescaped. */
export function principalText(p: Principal): string {
  if (p.tokenId !== undefined) return `${p.name} (${p.via} ${p.tokenId})`;
  if (p.oidc !== undefined) return `${p.name} (${p.via} ${p.oidc.subject} from ${p.oidc.issuer})`;
  return `${p.name} (${p.via})`;
}

/** A version of `state history --json` and `GET /api/v1/workspaces/{w}/history`. */
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
  /** The server user the write was made for: checked by the server. */
  readonly principal: PrincipalJson | null;
  readonly operation: string | null;
  readonly lockId: string | null;
  readonly sourceVersion: string | null;
}

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

/** A lock of `locks --json`, `lock --json`, `/api/v1/locks` and a workspace's `lock`: the library's listing. */
export type LockJson = LockListing;

/** The listing's fields in this order and no others. */
export function lockJson(l: LockListing): LockJson {
  const { workspace, source, path, id, who, operation, info, version, owner, since, expires, expired } = l;
  return { workspace, source, path, id, who, operation, info, version, owner, since, expires, expired };
}

/** A workspace's last write as its state object records it. */
export interface LastWriteJson {
  readonly size: number;
  readonly etag: string | null;
  readonly lastModified: string | null;
  readonly serial: number | null;
  readonly lineage: string | null;
  readonly who: string | null;
  readonly lockId: string | null;
  readonly operation: string | null;
  readonly principal: PrincipalJson | null;
}

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

/** A workspace of `workspace list --json`, `GET /api/v1/workspaces` and `GET /api/v1/workspaces/{w}`. */
export interface WorkspaceJson {
  readonly name: string;
  /** Does it have a state (false for `default` before its first write)? */
  readonly state: boolean;
  readonly lock: LockJson | null;
  readonly lastWrite: LastWriteJson | null;
}

export function workspaceJson(s: WorkspaceStatus): WorkspaceJson {
  const lastWrite = s.lastWrite === null ? null : lastWriteJson(s.lastWrite);
  return { name: s.name, state: s.lastWrite !== null, lock: s.lock === null ? null : lockJson(s.lock), lastWrite };
}

/** What a hidden sensitive value prints as. */
export const SENSITIVE = "<sensitive>";

/** Outputs in the tool's `output -json` shape (`output --json`, `GET …/outputs`). */
export type OutputsJson = Readonly<Record<string, { readonly sensitive: boolean; readonly type: JsonValue; readonly value: JsonValue }>>;

/**
 * Outputs as text exactly as the tool's `output -json` writes it: indented by two, names
 * sorted, numbers as the state has them (never through a JS number), Go's escapes. A
 * `hidden(name)` value prints as `"<sensitive>"`.
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

/** JSON text as Go's encoding/json writes it: `<`, `>`, `&`, U+2028 and U+2029 as `\uXXXX` (outside strings JSON has none). */
export function asToolWritesJson(text: string): string {
  return text.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A diff of two stored versions (`state diff --json`, `GET …/diff?from=&to=`); null `from`/`to`: no state. */
export type VersionDiffJson = { readonly workspace: string; readonly from: string | null; readonly to: string | null } & StateDiff;

export function versionDiffJson(workspace: string, d: VersionDiff): VersionDiffJson {
  return { workspace, from: d.from, to: d.to, ...d.diff };
}

/** What a rollback did (`state rollback --json`, `POST …/rollback`). */
export interface RollbackJson {
  readonly workspace: string;
  /** The version whose content was restored. */
  readonly from: string;
  readonly serial: number;
  readonly lineage: string | null;
  /** The serial of the state it replaced; null when the workspace was deleted. */
  readonly previousSerial: number | null;
  /** The workspace had no current state: the rollback restored it. */
  readonly restored: boolean;
  readonly md5: string;
}

export function rollbackJson(workspace: string, r: RollbackResult): RollbackJson {
  return { workspace, from: r.from, serial: r.serial, lineage: r.lineage ?? null, previousSerial: r.previousSerial ?? null, restored: r.restored, md5: r.md5 };
}

/** `state rekey --json`: per workspace, the method that read it before (`from`) and the one it is written under now. */
export function rekeyJson(results: readonly RekeyResult[]) {
  const workspaces = results.map((r) => ({
    workspace: r.workspace,
    rekeyed: r.rekeyed,
    from: r.from ?? null,
    to: r.to,
    serial: r.serial ?? null,
    md5: r.md5 ?? null,
  }));
  return { workspaces };
}
