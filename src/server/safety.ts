/** `ObjstateServer`'s options, and what it refuses to start with and warns of, for the CLI and code alike (decision 043). */
import type { ObjectStoreBackend } from "../backend/backend.js";
import type { AuditLogOptions } from "../backend/audit.js";
import type { EncryptionConfig } from "../encryption/index.js";
import type { LoginLimit } from "./auth.js";
import type { Identity } from "./identity/identity.js";
import type { Logger } from "./log.js";
import type { User } from "./users.js";
import { ObjstateError } from "../errors.js";
import { isLoopbackHost, type PublicOrigin } from "./gate.js";

export interface ServerOptions {
  readonly backend: ObjectStoreBackend;
  /** Users and roles; undefined: every request is allowed everything (loopback or `insecureNoAuth`). */
  readonly users?: ReadonlyMap<string, User> | undefined;
  /** Without `users`, listen off loopback anyway (`--insecure-no-auth`; default false: AUTH_REQUIRED). */
  readonly insecureNoAuth?: boolean | undefined;
  readonly loginLimit?: LoginLimit | undefined;
  /** API tokens and OIDC identities (identity/identity.ts), asked before passwords; needs `users`. */
  readonly identity?: Identity | undefined;
  /** Largest request body (default 512 MiB). */
  readonly maxStateSize?: number | undefined;
  /** Time a client has for its headers, and the window in which a body must bring 4 KiB (default 30 s). */
  readonly clientTimeoutMs?: number | undefined;
  /** Open connections in all (default 1024) and from one client address (default 64): connections.ts. */
  readonly maxConnections?: number | undefined;
  readonly maxConnectionsPerClient?: number | undefined;
  /** PEM certificate and key (both, or TLS_INCOMPLETE): serve HTTPS. `ca`: require client certificates signed by it. */
  readonly tls?: { readonly cert?: string | Buffer; readonly key?: string | Buffer; readonly ca?: string | Buffer } | undefined;
  readonly logger?: Logger | undefined;
  /** Serve the web console at `/` (default true). */
  readonly console?: boolean | undefined;
  /** Key of the console's CSRF tokens: replicas without sticky sessions need one key (default: random per process). */
  readonly csrfKey?: Buffer | undefined;
  /** The origins clients use to reach this server (`--public-url`): another `Host` gets 421 (gate.ts). */
  readonly publicUrls?: readonly PublicOrigin[] | undefined;
  /** Accept a state write without `?ID`, which may overwrite changes its client never read (default false: 409 `UNLOCKED_WRITE`). */
  readonly allowUnlockedWrites?: boolean | undefined;
  /** The audit log's options, or false for none. Default: on, over the backend's bucket (docs/decisions/076). */
  readonly audit?: AuditLogOptions | false | undefined;
  /** The backend's encryption at rest: a client's envelope is stored only when it opens it (docs/decisions/071); without, envelopes pass through. */
  readonly encryption?: EncryptionConfig | undefined;
}

/** TLS 1.2 only with forward-secret AEAD suites; TLS 1.3 (whose suites all are) as Node offers it. */
export const TLS12_CIPHERS = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
].join(":");

export const DEFAULT_MAX_STATE_SIZE = 512 * 1024 * 1024;
export const DEFAULT_CLIENT_TIMEOUT_MS = 30_000;

/** TLS's parts go together: a certificate with its key, a client CA only with both. */
export function refuseIncompleteTls(tls: ServerOptions["tls"]): void {
  if (tls !== undefined && (tls.cert === undefined) !== (tls.key === undefined))
    throw new ObjstateError("TLS_INCOMPLETE", "--tls-cert and --tls-key go together: give both, or neither for plain HTTP");
  if (tls?.ca !== undefined && tls.cert === undefined)
    throw new ObjstateError("TLS_INCOMPLETE", "--tls-client-ca needs --tls-cert and --tls-key (client certificates are part of TLS)");
}

/** The constructor's refusals: the options alone make the server unsafe, whatever its address. */
export function refuseUnsafeOptions(o: ServerOptions): void {
  refuseIncompleteTls(o.tls);
  if (o.backend.lockTtlMs !== undefined)
    throw new ObjstateError(
      "SERVE_LEASE_UNSUPPORTED",
      "objstate serve takes no lease (--lock-ttl, or lockTtl in the --config file's objstate section): the tool's http client cannot renew one, so an apply that sends nothing for longer than the lease (while it waits for its confirmation, or for a slow resource) would lose its lock and its final write. Remove it; release a lock a crashed client left with terraform force-unlock (the force role)",
    );
  if (!o.backend.lockingEnabled && o.allowUnlockedWrites !== true)
    throw new ObjstateError(
      "SERVE_NO_LOCKING",
      "no lock table is configured (kvstoreTable, or --lockfile): every write through this server would be unlocked, and concurrent clients could overwrite each other's changes. Configure one, or start with --allow-unlocked-writes to serve without locking",
    );
}

/** `listen`'s refusals, before anything is bound: an address off loopback needs users (or the insecure opt-out) and public URLs. */
export function refuseUnsafeAddress(o: ServerOptions, host: string, port: number): void {
  if (isLoopbackHost(host)) return;
  if (o.users === undefined && o.insecureNoAuth !== true)
    throw new ObjstateError(
      "AUTH_REQUIRED",
      `--listen ${host}:${port} is not a loopback address and there is no --users file: give --users FILE (objstate serve hash-password adds users), or --insecure-no-auth to let anyone who reaches it change every state`,
    );
  // Without the list, a Host check could only trust what the request says (DNS rebinding).
  if ((o.publicUrls ?? []).length === 0)
    throw new ObjstateError(
      "PUBLIC_URL_REQUIRED",
      `--listen ${host}:${port} is not a loopback address: give --public-url with the URL clients use to reach this server (e.g. --public-url https://state.example.com; repeatable), so that requests for other host names are refused`,
    );
}

/** `listen`'s failure for the operator: LISTEN_FAILED saying why and what to do (the errno alone says little). */
export function listenFailed(e: unknown, host: string, port: number): ObjstateError {
  const code = (e as NodeJS.ErrnoException).code;
  const why =
    code === "EADDRINUSE"
      ? `port ${port} is in use (another objstate serve, or another program, listens there: \`ss -ltnp 'sport = :${port}'\` names it); stop it, or give another port with --listen ${host}:PORT (--listen ${host}:0 picks a free one)`
      : code === "EACCES"
        ? `permission denied: ports below 1024 need root or CAP_NET_BIND_SERVICE; give a port of 1024 or more with --listen ${host}:PORT`
        : code === "EADDRNOTAVAIL"
          ? `${host} is not an address of this machine; give one of its addresses, or 127.0.0.1, with --listen`
          : (code ?? (e instanceof Error ? e.message : String(e)));
  return new ObjstateError("LISTEN_FAILED", `cannot listen on ${host}:${port}: ${why}`, { cause: e });
}

export function serveWarnings(o: ServerOptions, url: string, loopback: boolean): [string, string][] {
  const { users, tls, backend } = o;
  const out: [string, string][] = [];
  // Off loopback without users, listen required insecureNoAuth.
  if (users === undefined && !loopback)
    out.push([
      `SERVING ${url} WITHOUT AUTHENTICATION (--insecure-no-auth): anyone who can reach this address can read, overwrite and unlock every state in ${backend.describe()}`,
      "SERVE_INSECURE",
    ]);
  else if (users === undefined) out.push([`no --users file: serving on loopback only (${url}), and every local client may do everything`, "SERVE_NO_USERS"]);
  else if (tls === undefined && !loopback)
    out.push([
      `SERVING PASSWORDS OVER PLAIN HTTP on ${url}: Basic credentials cross the network in clear text. Give --tls-cert and --tls-key, or make sure only a TLS-terminating proxy on a private network reaches this address`,
      "SERVE_PLAINTEXT_PASSWORDS",
    ]);
  const unlocked = "no lock table is configured (--allow-unlocked-writes): LOCK always succeeds and concurrent clients can overwrite each other's changes";
  if (!backend.lockingEnabled) out.push([unlocked, "SERVE_NO_LOCKING"]);
  else if (o.allowUnlockedWrites === true)
    out.push(["--allow-unlocked-writes: a client without lock_address, or run with -lock=false, can overwrite changes it never read", "SERVE_UNLOCKED_WRITES"]);
  return out;
}
