/** The JSON of objstate's objects, for the CLI's `--json`, `/api/v1` and the console alike (docs/decisions/060); every key present, null when unknown. */
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

/** A backend result as JSON: every key present, undefined as null, a Date as its ISO time, a principal as {@link principalJson}. */
type Wire<T> = { readonly [K in keyof T]-?: WireValue<Exclude<T[K], undefined>> | (undefined extends T[K] ? null : never) };
type WireValue<V> = V extends Principal ? PrincipalJson : V extends Date ? string : V;

/** `o`'s `keys` in that order and no others, as {@link Wire} says. */
function wire<T, K extends keyof T>(o: T, keys: readonly K[]): Pick<Wire<T>, K> {
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const v = o[k];
    out[k as string] = v === undefined ? null : v instanceof Date ? v.toISOString() : k === "principal" ? principalJson(v as Principal) : v;
  }
  return out as Pick<Wire<T>, K>;
}

/** A version of `state history --json` and `GET /api/v1/workspaces/{w}/history`. */
export type HistoryEntryJson = Wire<StateVersion>;
const HISTORY_KEYS = [
  "versionId",
  "isLatest",
  "deleteMarker",
  "lastModified",
  "size",
  "serial",
  "lineage",
  "writer",
  "who",
  "principal",
  "operation",
  "lockId",
  "sourceVersion",
] as const;

export function historyEntryJson(v: StateVersion): HistoryEntryJson {
  return wire(v, HISTORY_KEYS);
}

/** A lock of `locks --json`, `lock --json`, `/api/v1/locks` and a workspace's `lock`: the library's listing. */
export type LockJson = LockListing;

export function lockJson(l: LockListing): LockJson {
  return wire(l, ["workspace", "source", "path", "id", "who", "operation", "info", "version", "owner", "since", "expires", "expired"]);
}

/** A workspace's last write as its state object records it. */
export type LastWriteJson = Wire<LastWrite>;

export function lastWriteJson(w: LastWrite): LastWriteJson {
  return wire(w, ["size", "etag", "lastModified", "serial", "lineage", "who", "lockId", "operation", "principal"]);
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

export const SENSITIVE = "<sensitive>";

/** Outputs in the tool's `output -json` shape (`output --json`, `GET …/outputs`). */
export type OutputsJson = Readonly<Record<string, { readonly sensitive: boolean; readonly type: JsonValue; readonly value: JsonValue }>>;

/** Outputs as the tool's `output -json` writes them: indented by two, names sorted, numbers as the state has them, Go's escapes; `hidden` ones masked. */
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
export type RollbackJson = { readonly workspace: string } & Wire<RollbackResult>;

export function rollbackJson(workspace: string, r: RollbackResult): RollbackJson {
  return { workspace, ...wire(r, ["from", "serial", "lineage", "previousSerial", "restored", "md5"]) };
}

/** `state rekey --json`: per workspace, the method that read it before (`from`) and the one it is written under now. */
export function rekeyJson(results: readonly RekeyResult[]) {
  return { workspaces: results.map((r) => wire(r, ["workspace", "rekeyed", "from", "to", "serial", "md5"])) };
}
