/** The options of `ObjstateServer`, and the TLS settings and defaults it applies. */
import type { ObjectStoreBackend } from "../backend/backend.js";
import type { AuditLogOptions } from "../backend/audit.js";
import type { EncryptionConfig } from "../encryption/index.js";
import type { LoginLimit } from "./auth.js";
import type { PublicOrigin } from "./gate.js";
import type { Identity } from "./identity/identity.js";
import type { Logger } from "./log.js";
import type { User } from "./users.js";

/** Options of {@link ObjstateServer}. */
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
  /**
   * Time a client has for its headers, and the window in which a request body must bring
   * at least 4 KiB (io/http-body.ts; default 30 s).
   */
  readonly clientTimeoutMs?: number | undefined;
  /** Open connections in all (default 1024); at the cap, see connections.ts for who makes room. */
  readonly maxConnections?: number | undefined;
  /** Open connections from one client address (default 64); more are closed at once. */
  readonly maxConnectionsPerClient?: number | undefined;
  /** PEM certificate and key (both, or TLS_INCOMPLETE): serve HTTPS. `ca`: require client certificates signed by it. */
  readonly tls?: { readonly cert?: string | Buffer; readonly key?: string | Buffer; readonly ca?: string | Buffer } | undefined;
  readonly logger?: Logger | undefined;
  /** Serve the web console at `/` (default true). */
  readonly console?: boolean | undefined;
  /**
   * Key of the console's CSRF tokens. Replicas behind a load balancer without sticky
   * sessions need the same key (default: random per process).
   */
  readonly csrfKey?: Buffer | undefined;
  /**
   * The origins clients use to reach this server (`--public-url`): requests naming another
   * `Host` (other than the listen address and loopback names) get 421, and the console's
   * forms must come from one of them (or from the loopback origin they were served on).
   */
  readonly publicUrls?: readonly PublicOrigin[] | undefined;
  /**
   * Accept a state write without `?ID` (a client without `lock_address`, or run with
   * `-lock=false`), which may overwrite changes its client never read (default false: 409
   * `UNLOCKED_WRITE`, naming the `lock_address` to set).
   */
  readonly allowUnlockedWrites?: boolean | undefined;
  /**
   * The audit log's options (its deadline, how many lines it holds through an outage), or
   * false for none. Default: on, over the backend's bucket (docs/decisions/076).
   */
  readonly audit?: AuditLogOptions | false | undefined;
  /**
   * The encryption the backend was connected with (encryption at rest): an envelope a client
   * POSTs is stored as it is only when this configuration opens it, else refused with the
   * decryption's error (docs/decisions/071). Without it, envelopes pass through (070).
   */
  readonly encryption?: EncryptionConfig | undefined;
}

/**
 * TLS 1.2 only with forward-secret AEAD suites (ECDHE with GCM or ChaCha20-Poly1305); TLS 1.3,
 * whose suites all are, as Node offers it.
 */
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
