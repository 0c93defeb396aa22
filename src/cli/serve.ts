/** `objstate serve` (the server over the configured store), `serve hash-password` and `serve token …`. */
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { buffer } from "node:stream/consumers";
import { interactive, readSecret } from "./confirm.js";
import { durationOf } from "../config/setting-parsers.js";
import { printJson, table, warn } from "./term.js";
import { usageError } from "./io.js";
import type { Opts } from "./options.js";
import { adminOptionsOf } from "./runtime.js";
import { ObjectStoreBackend } from "../backend/backend.js";
import { formKeyOf, readSecretFile } from "./secret-file.js";
import { backendConfigOf, gatherSettings } from "./settings.js";
import { parsePublicUrl } from "../server/gate.js";
import { Logger } from "../server/log.js";
import { ObjstateServer, refuseIncompleteTls } from "../server/server.js";
import { Identity } from "../server/identity/identity.js";
import { loadIdentityRules } from "../server/identity/oidc.js";
import { createToken, listTokens, revokeToken, tokensFileFor, type TokenRecord } from "../server/identity/tokens.js";
import { hashPassword, loadUsers, octal, openToOthers, refuseOpenFile, ROLES, withUser, type Role } from "../server/users.js";

/** The PEM in `file` given by `flag`, if any. */
function readPem(flag: string, file: string | undefined): Buffer | undefined {
  try {
    return file === undefined ? undefined : readFileSync(file);
  } catch (e) {
    throw usageError(`cannot read ${flag} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, "FILE_UNREADABLE");
  }
}

/** `objstate serve`: runs until SIGTERM or SIGINT, then stops gracefully. What it refuses and warns of is the server's. */
export async function serveAction(opts: Opts): Promise<void> {
  const input = gatherSettings(opts);
  const v = input.settings.values;
  const { host, port } = v.listen;
  const { users: usersFile, tlsCert: certFile, tlsKey: keyFile, tlsClientCa: caFile } = v;
  const publicUrls = v.publicUrl.map((text) => parsePublicUrl(text));
  // Before the files are read: a missing key is named before an unreadable certificate.
  refuseIncompleteTls({ cert: certFile, key: keyFile, ca: caFile });
  const logger = new Logger(v.logLevel);
  if (usersFile !== undefined) refuseOpenFile(usersFile, "users file", "password hashes and roles");
  const users = usersFile === undefined ? undefined : loadUsers(usersFile);
  const identity =
    users === undefined || usersFile === undefined
      ? undefined
      : new Identity(users, { tokensFile: tokensFileFor(usersFile), identities: loadIdentityRules(usersFile) });
  const tls =
    certFile === undefined && keyFile === undefined && caFile === undefined
      ? undefined
      : { cert: readPem("--tls-cert", certFile), key: readPem("--tls-key", keyFile), ca: readPem("--tls-client-ca", caFile) };
  // Without it each process makes its own key: a form served by one replica fails on another.
  const csrfKey = v.secretFile === undefined ? undefined : formKeyOf(readSecretFile(v.secretFile));
  // Repairs a request made on its own (a torn write committed by a GET) are the operator's to know.
  const backend = await ObjectStoreBackend.connect(backendConfigOf(input), {
    ...adminOptionsOf(input.settings),
    onRepair: ({ workspace, action, md5, generation, serial, lockId, message }) =>
      logger.event("warn", "state repaired", { workspace, action, md5, generation, serial, lockId, detail: message }),
  });
  const { allowUnlockedWrites, console: withConsole } = v;
  let server: ObjstateServer;
  try {
    server = new ObjstateServer({
      backend,
      users,
      insecureNoAuth: v.insecureNoAuth,
      identity,
      maxStateSize: v.maxStateSize,
      clientTimeoutMs: v.clientTimeout,
      maxConnections: v.maxConnections,
      maxConnectionsPerClient: v.maxConnectionsPerClient,
      tls,
      logger,
      console: withConsole,
      csrfKey,
      publicUrls,
      allowUnlockedWrites,
      // The configuration the backend was connected with (connect takes it from the same settings).
      encryption: backend.encrypts ? v.encryption : undefined,
    });
    await server.listen(host, port);
  } catch (e) {
    backend.close();
    throw e;
  }
  for (const [message, code] of server.warnings()) warn(message, code);
  logger.event("info", "listening", {
    url: server.url,
    state: backend.describe(),
    auth: users !== undefined,
    tls: tls !== undefined,
    clientCertificates: tls?.ca !== undefined,
    sharedFormSecret: csrfKey !== undefined,
    unlockedWrites: allowUnlockedWrites,
    // At rest: states are stored as envelopes; else a client's envelopes pass through.
    encryption: backend.encrypts ? "at rest" : "pass-through",
  });
  const stopped = untilSignal(server, backend, logger, v.shutdownGrace);
  process.stderr.write(
    `objstate: serving ${backend.describe()} at ${server.url}/state/{workspace}${withConsole ? `, web console at ${server.url}/` : " (no web console: --no-console)"}\n`,
  );
  await stopped;
}

/** Stop gracefully on SIGTERM or SIGINT (a second quits at once). Installed before the "serving" line: whoever waits for it may signal at once. */
function untilSignal(server: ObjstateServer, backend: { close(): void }, logger: Logger, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) {
        logger.event("warn", "second signal: quitting now", { signal });
        process.exit(1);
      }
      stopping = true;
      logger.event("info", "shutting down: finishing requests in flight", { signal });
      void server.close(graceMs).then(() => {
        backend.close();
        logger.event("info", "stopped");
        resolve();
      });
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
}

/** `objstate serve hash-password`: the password from standard input or the terminal (never a flag: flags show in the process list), added to FILE or printed. */
export async function hashPasswordAction(opts: Opts): Promise<void> {
  const name = opts.user ?? "";
  if (name === "" || name.includes(":")) throw usageError('--user must be a non-empty name without ":"', "INVALID_USER");
  const roles = parseRoleFlags(opts.role ?? ["*=read"]);
  const password = interactive() ? await promptTwice(name) : (await buffer(process.stdin)).toString("utf8").replace(/\r?\n$/, "");
  if (password === "")
    throw usageError("no password on standard input: pipe it in (printf '%s' \"$PASSWORD\" | objstate serve hash-password --user NAME)", "NO_PASSWORD");
  const hash = await hashPassword(password);
  const file = opts.users;
  if (file === undefined) return printJson({ [name]: { password: hash, roles } });
  const before = existsSync(file) ? readFileSync(file, "utf8") : undefined;
  const next = withUser(before, name, hash, roles, file);
  // The mode option applies only to a file being created: an existing one is fixed before the new hash goes in.
  const mode = before === undefined ? undefined : openToOthers(file);
  if (mode !== undefined) {
    chmodSync(file, 0o600);
    process.stderr.write(`objstate: ${file} had mode ${octal(mode)} (its group or others could read or change it): changed it to 0600\n`);
  }
  writeFileSync(file, next, { mode: 0o600 });
  process.stderr.write(`objstate: user ${name} ${before?.includes(`"${name}"`) === true ? "updated" : "added"} in ${file}\n`);
}

/** The roles of `--role GLOB=ROLE,…` flags (hash-password, token create). */
function parseRoleFlags(specs: readonly string[]): Record<string, Role[]> {
  const roles: Record<string, Role[]> = {};
  for (const spec of specs) {
    const eq = spec.lastIndexOf("=");
    const glob = eq < 0 ? "" : spec.slice(0, eq);
    const list = spec.slice(eq + 1).split(",");
    if (glob === "" || list.length === 0 || list.some((r) => !ROLES.includes(r.trim() as Role))) {
      throw usageError(
        `--role must be GLOB=ROLE[,ROLE…] with roles among ${ROLES.join(", ")} (e.g. 'staging-*=read,write,lock'), got ${JSON.stringify(spec)}`,
        "INVALID_ROLE",
      );
    }
    roles[glob] = [...new Set([...(roles[glob] ?? []), ...list.map((r) => r.trim() as Role)])];
  }
  return roles;
}

/** The tokens file beside the users file (`--users` is required of the token commands). */
const tokensFileOf = (opts: Opts): string => tokensFileFor(opts.users as string);

/** `objstate serve token create --user NAME --ttl 30d [--role GLOB=roles]… --users FILE`: prints the token once. */
export async function tokenCreateAction(opts: Opts): Promise<void> {
  const file = opts.users as string;
  const name = opts.user as string;
  if (!loadUsers(file).has(name))
    throw usageError(`--user ${JSON.stringify(name)} is not in the users file ${file}: add it with objstate serve hash-password first`, "INVALID_USER");
  const ttl = durationOf(opts.ttl ?? "30d", { kind: "flag", flag: "--ttl" });
  const roles = opts.role === undefined ? undefined : parseRoleFlags(opts.role);
  const { token, record } = await createToken(tokensFileFor(file), name, ttl, roles);
  process.stderr.write(`objstate: token ${record.id} for ${name}, expires ${record.expires}; it is shown once, here:\n`);
  process.stdout.write(`${token}\n`);
}

export function tokenListAction(opts: Opts): void {
  const tokens = listTokens(tokensFileOf(opts));
  const roles = (r: TokenRecord): string =>
    r.roles === undefined
      ? "(the user's)"
      : Object.entries(r.roles)
          .map(([g, rs]) => `${g}=${rs.join(",")}`)
          .join(" ");
  const now = Date.now();
  const state = (r: TokenRecord): string => (r.revoked !== undefined ? "revoked" : Date.parse(r.expires) <= now ? "expired" : "valid");
  const rows = [
    ["ID", "USER", "STATE", "ROLES", "CREATED", "EXPIRES", "LAST USED"],
    ...tokens.map((r) => [r.id, r.user, state(r), roles(r), r.created, r.expires, r.lastUsed ?? "never"]),
  ];
  process.stdout.write(`${table(rows)}\n`);
}

export async function tokenRevokeAction(id: string, opts: Opts): Promise<void> {
  const r = await revokeToken(tokensFileOf(opts), id);
  process.stderr.write(`objstate: token ${r.id} of ${r.user} revoked at ${r.revoked}\n`);
}

/** On a terminal: the password typed twice, never echoed, so a typo is caught here and not at the first login. */
async function promptTwice(name: string): Promise<string> {
  const first = await readSecret(`Password for ${name}: `);
  if (first === "") throw usageError("no password was typed: nothing was written", "NO_PASSWORD");
  const again = await readSecret(`The same password again: `);
  if (again !== first) throw usageError("the two passwords differ: nothing was written; run the command again", "PASSWORDS_DIFFER");
  return first;
}
