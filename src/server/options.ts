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
