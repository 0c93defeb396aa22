/** API tokens of `objstate serve token create`, in a file beside the users file that holds only their SHA-256 (docs/decisions/073-api-tokens-hashed-sha256.md). */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { makeDir } from "../../io/local-fs.js";
import { acquireClaim } from "../../store/claim.js";
import { ObjstateError } from "../../errors.js";
import { parseJsonFile, parseRoles, refuseOpenFile, unauthorized, type Role } from "../users.js";

/** One token of the tokens file, as stored (never the token itself). */
export interface TokenRecord {
  readonly id: string;
  readonly user: string;
  /** Hex SHA-256 of the whole token string. */
  readonly sha256: string;
  /** Roles by workspace glob; undefined: the user's own roles in the users file. */
  readonly roles: Readonly<Record<string, readonly Role[]>> | undefined;
  readonly created: string;
  readonly expires: string;
  readonly revoked?: string | undefined;
  readonly lastUsed?: string | undefined;
}

/** `objst_` + 12 hex ID + `_` + 43 base64url characters (256 bits). */
const TOKEN_RE = /^objst_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
const TOKEN_PREFIX = "objst_";

/** The tokens file that belongs to a users file: `users.json` → `users.tokens.json`. */
export function tokensFileFor(usersFile: string): string {
  return `${usersFile.replace(/\.json$/i, "")}.tokens.json`;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function fileError(file: string, problem: string): ObjstateError {
  return new ObjstateError("TOKENS_FILE_INVALID", `tokens file ${file}: ${problem}; make tokens with objstate serve token create`);
}

function parseTokens(text: string | undefined, file: string): Map<string, TokenRecord> {
  const out = new Map<string, TokenRecord>();
  if (text === undefined || text.trim() === "") return out;
  const bad = (problem: string): ObjstateError => fileError(file, problem);
  const doc = parseJsonFile(text, bad);
  const tokens = (doc as { tokens?: unknown } | null)?.tokens;
  if (typeof tokens !== "object" || tokens === null || Array.isArray(tokens)) throw fileError(file, 'expected {"tokens": {"ID": {…}}}');
  for (const [id, raw] of Object.entries(tokens as Record<string, unknown>)) {
    const { user, sha256, created, expires, roles, revoked, lastUsed } = (raw ?? {}) as Partial<Record<keyof TokenRecord, unknown>>;
    const invalid = typeof user !== "string" || typeof created !== "string" || typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256);
    if (invalid || typeof expires !== "string" || Number.isNaN(Date.parse(expires)))
      throw fileError(file, `tokens.${id} needs user, sha256 (64 hex), created and expires`);
    out.set(id, {
      id,
      user,
      sha256,
      roles: roles === undefined ? undefined : parseRoles(roles, `tokens.${id}.roles`, bad),
      created,
      expires,
      revoked: typeof revoked === "string" ? revoked : undefined,
      lastUsed: typeof lastUsed === "string" ? lastUsed : undefined,
    });
  }
  return out;
}

/** The file's text (undefined when absent), refused when others may change it (users.ts). */
function readText(file: string): string | undefined {
  refuseOpenFile(file, "tokens file", "the API tokens' hashes and roles");
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw fileError(file, `cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

/** Read-modify-write under a claim beside the file (store/claim.ts), so `create`/`revoke` and a server's `last used` flush never undo each other. */
async function updateTokens(file: string, change: (tokens: Map<string, TokenRecord>) => void): Promise<Map<string, TokenRecord>> {
  const dir = `${file}.claim`;
  const claim = await acquireClaim(dir, { what: `tokens file ${file}`, prepare: () => makeDir(dir).then(() => undefined) });
  try {
    const tokens = parseTokens(readText(file), file);
    change(tokens);
    const doc: Record<string, Omit<TokenRecord, "id">> = {};
    for (const { id, ...rest } of tokens.values()) doc[id] = rest;
    // Replaced whole (written beside, renamed), mode 0600: a reader never sees half a file.
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ tokens: doc }, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, file);
    return tokens;
  } finally {
    await claim.release();
  }
}

/** `token create`: add a new token to the file; the token string is returned once and never stored. */
export async function createToken(
  file: string,
  user: string,
  ttlMs: number,
  roles: Record<string, Role[]> | undefined,
  now = Date.now(),
): Promise<{ token: string; record: TokenRecord }> {
  const id = randomBytes(6).toString("hex");
  const token = `${TOKEN_PREFIX}${id}_${randomBytes(32).toString("base64url")}`;
  const record: TokenRecord = { id, user, sha256: sha256(token), roles, created: new Date(now).toISOString(), expires: new Date(now + ttlMs).toISOString() };
  await updateTokens(file, (t) => t.set(id, record));
  return { token, record };
}

/** `token revoke ID`: mark it revoked (kept, so `token list` still shows it and when). */
export async function revokeToken(file: string, id: string, now = Date.now()): Promise<TokenRecord> {
  let out: TokenRecord | undefined;
  await updateTokens(file, (t) => {
    const r = t.get(id);
    if (r === undefined) throw new ObjstateError("TOKEN_NOT_FOUND", `no token ${id} in ${file}: objstate serve token list shows the IDs`);
    out = { ...r, revoked: r.revoked ?? new Date(now).toISOString() };
    t.set(id, out);
  });
  return out as TokenRecord;
}

export function listTokens(file: string): TokenRecord[] {
  return [...parseTokens(readText(file), file).values()];
}

/** Is this string shaped like one of our tokens (so it is never tried as a password)? */
export function looksLikeToken(text: string): boolean {
  return text.startsWith(TOKEN_PREFIX);
}

/** How long `last used` times are held in memory before they are written to the file (`OBJSTATE_TEST_TOKEN_FLUSH_MS`: tests only). */
const LAST_USED_FLUSH_MS = Number(process.env["OBJSTATE_TEST_TOKEN_FLUSH_MS"] ?? "") || 60_000;

/** The tokens file, re-read when its stat changes; `last used` written at most once a {@link LAST_USED_FLUSH_MS}, merged so replicas each add theirs. */
export class TokenStore {
  private tokens = new Map<string, TokenRecord>();
  private seen = "";
  private readonly used = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly file: string,
    private readonly now: () => number = Date.now,
  ) {
    this.reload();
  }

  private reload(): void {
    let stamp: string;
    try {
      const s = statSync(this.file);
      stamp = `${s.size}:${s.mtimeMs}:${s.ino}:${s.mode}`;
    } catch {
      stamp = "absent";
    }
    if (stamp === this.seen) return;
    this.tokens = parseTokens(readText(this.file), this.file);
    this.seen = stamp;
  }

  /** The record of a valid token, or UNAUTHORIZED naming neither the token nor its hash (only its public ID). */
  check(token: string): TokenRecord {
    this.reload();
    const m = TOKEN_RE.exec(token);
    const record = m === null ? undefined : this.tokens.get(m[1] as string);
    const given = Buffer.from(sha256(token), "hex");
    if (record === undefined || !timingSafeEqual(given, Buffer.from(record.sha256, "hex")))
      throw unauthorized("unknown API token: make one with objstate serve token create");
    if (record.revoked !== undefined)
      throw unauthorized(`API token ${record.id} was revoked at ${record.revoked}: make a new one with objstate serve token create`);
    if (Date.parse(record.expires) <= this.now())
      throw unauthorized(`API token ${record.id} expired at ${record.expires}: make a new one with objstate serve token create`);
    this.used.set(record.id, this.now());
    this.timer ??= setTimeout(() => void this.flush(), LAST_USED_FLUSH_MS).unref();
    return record;
  }

  async flush(): Promise<void> {
    // The timer stays set (cleared) while the write runs: one flush at a time, the next armed after it.
    clearTimeout(this.timer);
    if (this.used.size === 0) return void (this.timer = undefined);
    const used = new Map(this.used);
    this.used.clear();
    try {
      await updateTokens(this.file, (t) => {
        for (const [id, at] of used) {
          const r = t.get(id);
          if (r !== undefined && (r.lastUsed === undefined || Date.parse(r.lastUsed) < at)) t.set(id, { ...r, lastUsed: new Date(at).toISOString() });
        }
      });
    } catch {
      // A file that cannot be written loses only `last used` times: never a request.
    } finally {
      this.timer = this.used.size === 0 ? undefined : setTimeout(() => void this.flush(), LAST_USED_FLUSH_MS).unref();
    }
  }
}
