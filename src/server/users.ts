/** The users file of `objstate serve --users FILE` (README "Security"): scrypt-hashed passwords and roles on workspace globs. */
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { ObjstateError } from "../errors.js";

/** `outputs`: the outputs (masked), lock and last write, never the state; `read`: the state with its secrets, and history; `admin`: all. */
export type Role = "outputs" | "read" | "write" | "lock" | "force" | "admin";
export const ROLES: readonly Role[] = ["outputs", "read", "write", "lock", "force", "admin"];

export interface User {
  readonly name: string;
  /** `scrypt$N$r$p$salt$hash` (base64 salt and hash); undefined: certificate login only. */
  readonly password: string | undefined;
  /** Roles by workspace glob (`*` any run of characters, `?` one). */
  readonly grants: readonly { readonly glob: string; readonly roles: ReadonlySet<Role> }[];
  /** The user these grants act for (an API token with roles of its own), whose grants cap them: a role needs both. */
  readonly cappedBy?: User | undefined;
}

const KEY_LENGTH = 32;
/** scrypt cost of new hashes (16 MiB of memory each): dear for a guesser, bearable once per login. */
const SCRYPT_DEFAULT = { N: 16384, r: 8, p: 1 } as const;

function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCb(password, salt, keylen, { ...options, maxmem: 256 * options.N! * options.r! }, (err, key) => (err === null ? resolve(key) : reject(err))),
  );
}

export async function hashPassword(password: string, cost: { N: number; r: number; p: number } = SCRYPT_DEFAULT): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LENGTH, cost);
  return `scrypt$${cost.N}$${cost.r}$${cost.p}$${salt.toString("base64")}$${key.toString("base64")}`;
}

type Parsed = { N: number; r: number; p: number; salt: Buffer; key: Buffer };

function parseHash(encoded: string): Parsed | undefined {
  const m = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/.exec(encoded);
  if (m === null) return undefined;
  const [N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // N a power of two; bounds keep a hostile users file from exhausting memory.
  if (N < 2 || N > 1 << 20 || (N & (N - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return undefined;
  return { N, r, p, salt: Buffer.from(m[4] as string, "base64"), key: Buffer.from(m[5] as string, "base64") };
}

/** A hash no password matches: unknown users cost the same scrypt as known ones. */
const DUMMY: Parsed = { ...SCRYPT_DEFAULT, salt: Buffer.alloc(16), key: Buffer.alloc(KEY_LENGTH) };

/** Does `password` match `encoded`? Always runs scrypt (a dummy hash when there is none), compares in constant time. */
export async function verifyPassword(password: string, encoded: string | undefined): Promise<boolean> {
  const parsed = encoded === undefined ? undefined : parseHash(encoded);
  const h = parsed ?? DUMMY;
  const key = await scrypt(password, h.salt, h.key.length === 0 ? KEY_LENGTH : h.key.length, { N: h.N, r: h.r, p: h.p });
  return parsed !== undefined && key.length === h.key.length && timingSafeEqual(key, h.key);
}

/** `*` any run of characters, `?` one; greedy two-pointer match: a `*` is only retried from the last one seen, so nothing backtracks. */
export function globMatches(glob: string, text: string): boolean {
  let [g, t, star, mark] = [0, 0, -1, 0];
  while (t < text.length) {
    if (glob[g] === "*") [star, mark] = [g++, t];
    else if (g < glob.length && (glob[g] === "?" || glob[g] === text[t])) [g, t] = [g + 1, t + 1];
    else if (star >= 0) [g, t] = [star + 1, ++mark];
    else return false;
  }
  while (glob[g] === "*") g++;
  return g === glob.length;
}

/** `admin` grants every role, `read` grants `outputs`, and `force` grants `lock` (a force-unlock is an UNLOCK: it needs both). */
function grants(roles: ReadonlySet<Role>, role: Role): boolean {
  return roles.has(role) || roles.has("admin") || (role === "outputs" && roles.has("read")) || (role === "lock" && roles.has("force"));
}

/** May `user` act in `role` on `workspace`? `admin` on a matching glob grants every role. */
export function allowed(user: User, role: Role, workspace: string): boolean {
  return (
    user.grants.some((g) => globMatches(g.glob, workspace) && grants(g.roles, role)) && (user.cappedBy === undefined || allowed(user.cappedBy, role, workspace))
  );
}

/** Has `user` `role` on every workspace, also ones no name matches? Only a grant on `*` itself says so (`?` or `**` match the name `*` too). */
export function allowedEverywhere(user: User, role: Role): boolean {
  return user.grants.some((g) => g.glob === "*" && grants(g.roles, role)) && (user.cappedBy === undefined || allowedEverywhere(user.cappedBy, role));
}

/** 401: the request proved no identity (the message says why, never quoting a credential). */
export function unauthorized(message: string): ObjstateError {
  return new ObjstateError("UNAUTHORIZED", message);
}

function fileError(file: string, problem: string): ObjstateError {
  return new ObjstateError("USERS_FILE_INVALID", `users file ${file}: ${problem}; see \`objstate serve hash-password --help\` for the format`);
}

export function parseJsonFile(text: string, bad: (problem: string) => ObjstateError): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw bad(`not valid JSON (${(e as Error).message})`);
  }
}

export function parseRoles(value: unknown, where: string, bad: (problem: string) => ObjstateError): Record<string, Role[]> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw bad(`${where} must be {"GLOB": ["read", …]}`);
  for (const [glob, list] of Object.entries(value))
    if (!Array.isArray(list) || list.some((r) => !ROLES.includes(r as Role))) throw bad(`${where}.${glob} must be a list of ${ROLES.join(", ")}`);
  return value as Record<string, Role[]>;
}

export function grantsOf(roles: Readonly<Record<string, readonly Role[]>>): User["grants"] {
  return Object.entries(roles).map(([glob, list]) => ({ glob, roles: new Set(list) }));
}

export function parseUsers(text: string, file: string): Map<string, User> {
  const bad = (problem: string): ObjstateError => fileError(file, problem);
  const doc = parseJsonFile(text, bad);
  const users = (doc as { users?: unknown } | null)?.users;
  if (typeof users !== "object" || users === null || Array.isArray(users)) throw fileError(file, 'expected {"users": {"NAME": {"password": …, "roles": {…}}}}');
  const out = new Map<string, User>();
  for (const [name, entry] of Object.entries(users as Record<string, unknown>)) {
    if (name === "" || name.includes(":")) throw fileError(file, `user name ${JSON.stringify(name)} must be non-empty and without ":"`);
    const e = entry as { password?: unknown; roles?: unknown } | null;
    if (typeof e !== "object" || e === null) throw fileError(file, `users.${name} must be an object`);
    if (e.password !== undefined && (typeof e.password !== "string" || parseHash(e.password) === undefined))
      throw fileError(file, `users.${name}.password is not an scrypt$N$r$p$salt$hash entry (make one with objstate serve hash-password)`);
    out.set(name, { name, password: e.password as string | undefined, grants: grantsOf(parseRoles(e.roles, `users.${name}.roles`, bad)) });
  }
  return out;
}

/** The file's mode when its group or others may read or change it (`mask` 0o022: change); undefined when not, or no such file. */
export function openToOthers(file: string, mask = 0o077): number | undefined {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    // Missing or unreadable: loading it says which, naming the file.
    return undefined;
  }
  return (mode & mask) === 0 ? undefined : mode;
}

export const octal = (mode: number): string => `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;

/** Refuse a users or tokens file (or its directory) others may change, as ssh refuses such a key: whoever can write it can add an admin. */
export function refuseOpenFile(file: string, what: "users file" | "tokens file", holds: string): void {
  const code = what === "users file" ? "USERS_FILE_PERMISSIONS" : "TOKENS_FILE_PERMISSIONS";
  const mode = openToOthers(file);
  if (mode !== undefined)
    throw new ObjstateError(
      code,
      `${what} ${file} has mode ${octal(mode)}: its group or others may read or change it, and it holds ${holds}. Run \`chmod 600 ${file}\` (owned by the user that runs objstate serve) and start again`,
    );
  const dir = dirname(file);
  const dirMode = openToOthers(dir, 0o022);
  if (dirMode !== undefined)
    throw new ObjstateError(
      code,
      `the directory ${dir} of ${what} ${file} has mode ${octal(dirMode)}: its group or others may put another file in its place. Run \`chmod go-w ${dir}\`, or keep the file in a directory only its owner may change`,
    );
}

export function loadUsers(file: string): Map<string, User> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ObjstateError(
      "USERS_FILE_UNREADABLE",
      `cannot read users file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; check --users`,
    );
  }
  return parseUsers(text, file);
}

/** The users file's text with `name` added or replaced; other entries are kept as they were. */
export function withUser(text: string | undefined, name: string, hash: string, roles: Record<string, Role[]>, file: string): string {
  const doc = text === undefined || text.trim() === "" ? { users: {} } : (JSON.parse(text) as { users?: Record<string, unknown> });
  if (text !== undefined && text.trim() !== "") parseUsers(text, file);
  const users = { ...(doc.users ?? {}), [name]: { password: hash, roles } };
  const next = `${JSON.stringify({ ...doc, users }, null, 2)}\n`;
  parseUsers(next, file);
  return next;
}
