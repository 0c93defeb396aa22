/**
 * `objstate serve`: an HTTP(S) server over one connected backend. It keeps no state of
 * its own (every lock and version lives in the store and the table), so any number of
 * replicas over one bucket and table behave as one.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { ObjectStoreBackend } from "../backend/backend.js";
import { checkWorkspace } from "../config/layout.js";
import { StateEncryption, type EncryptionConfig } from "../encryption/index.js";
import { ANONYMOUS_PRINCIPAL, type Principal, type PrincipalVia } from "../backend/principal.js";
import type { AuditAction, AuditLog, AuditLogOptions } from "../backend/audit.js";
import { auditEntry } from "./audit.js";
import { codeOf, isObjstateError, ObjstateError, statusOf } from "../errors.js";
import { API_ROUTES, type Route } from "./api.js";
import { Authenticator, type Authenticated, type LoginLimit } from "./auth.js";
import type { Identity } from "./identity/identity.js";
import { isLoopbackHost, RequestGate, type PublicOrigin, type RouteKind } from "./gate.js";
import { checkDeclaredLength } from "./body.js";
import { diffInWorker } from "./diff-runner.js";
import { BodyBuffers } from "./body-buffers.js";
import { ConnectionGuard } from "./connections.js";
import { requireRole, send, sendEmpty, sendHeld, sendJson, type Ctx } from "./context.js";
import { Logger } from "./log.js";
import { Metrics, METRICS_CONTENT_TYPE } from "./metrics.js";
import { deleteState, getState, lockState, postState, unlockState } from "./protocol.js";
import { allowed, type User } from "./users.js";
import { backendConsoleApi } from "../console/adapter.js";
import { CsrfTokens } from "../console/csrf.js";
import { handleConsole } from "../console/handler.js";
import type { ConsoleAnswer, ConsoleApi, ConsoleContext, ConsoleLogEntry } from "../console/types.js";
import { nodeCrypto } from "../util/builtins.js";

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
   * at least 4 KiB (body.ts; default 30 s).
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
/** Browsers that reached the console over TLS keep to it for a year. */
const HSTS = "max-age=31536000";

export const DEFAULT_MAX_STATE_SIZE = 512 * 1024 * 1024;
export const DEFAULT_CLIENT_TIMEOUT_MS = 30_000;

/** The http backend protocol, plus the `lock_method = POST` / `unlock_method = DELETE` style on `/lock`. */
const STATE_ROUTES: readonly Route[] = [
  { method: "GET", path: "/state/:workspace", handler: getState },
  { method: "POST", path: "/state/:workspace", audit: "write", handler: postState },
  { method: "PUT", path: "/state/:workspace", audit: "write", handler: postState },
  { method: "DELETE", path: "/state/:workspace", audit: "delete-workspace", handler: deleteState },
  { method: "LOCK", path: "/state/:workspace", audit: "lock", handler: lockState },
  { method: "UNLOCK", path: "/state/:workspace", audit: "unlock", handler: unlockState },
  { method: "POST", path: "/state/:workspace/lock", audit: "lock", handler: lockState },
  { method: "LOCK", path: "/state/:workspace/lock", audit: "lock", handler: lockState },
  { method: "DELETE", path: "/state/:workspace/lock", audit: "unlock", handler: unlockState },
  { method: "UNLOCK", path: "/state/:workspace/lock", audit: "unlock", handler: unlockState },
];

/** Routes anyone may call (a load balancer's probes, a scraper). */
const OPEN_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

interface Match {
  readonly route: Route;
  readonly params: Record<string, string>;
}

/** A route's path split once into segments (`:name` segments are parameters). */
interface Compiled {
  readonly route: Route;
  readonly parts: readonly string[];
}

/** The parameters of `path` (already split) under a route's segments, or undefined when it does not match. */
function matchPath(parts: readonly string[], s: readonly string[]): Record<string, string> | undefined {
  if (parts.length !== s.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const want = parts[i] as string;
    const got = s[i] as string;
    if (want.startsWith(":")) {
      if (got === "") return undefined;
      try {
        params[want.slice(1)] = decodeURIComponent(got);
      } catch {
        return undefined;
      }
    } else if (want !== got) return undefined;
  }
  return params;
}

/** The request is `user`'s, who authenticated `via` (with a token's ID or an OIDC identity when so). */
function authenticated(ctx: Ctx, user: User, via: PrincipalVia, extra: Pick<Authenticated, "tokenId" | "oidc"> = {}): void {
  const c = ctx as { user: User; principal: Principal };
  c.user = user;
  // A server without users names no one: its records say `anonymous`, never the placeholder user.
  c.principal =
    via === ANONYMOUS_PRINCIPAL.via
      ? ANONYMOUS_PRINCIPAL
      : {
          name: user.name,
          via,
          ...(extra.tokenId === undefined ? {} : { tokenId: extra.tokenId }),
          ...(extra.oidc === undefined ? {} : { oidc: extra.oidc }),
        };
}

export class ObjstateServer {
  readonly metrics = new Metrics();
  /** The caps on connections and the body rate rule on every route. */
  readonly connections: ConnectionGuard;
  private readonly server: Server;
  private readonly auth: Authenticator;
  private readonly logger: Logger;
  /** Every route, its path split once (not on every request). */
  private readonly routes: readonly Compiled[];
  private readonly maxStateSize: number;
  private readonly clientTimeoutMs: number;
  /** One per server: keys are derived (or fetched) once, not per request. */
  private readonly encryption: StateEncryption | undefined;
  private inFlight = 0;
  private readonly bodyBuffers = new BodyBuffers();
  private drained: (() => void) | undefined;
  private closing = false;
  private readonly consoleApi: ConsoleApi | undefined;
  private readonly csrf: CsrfTokens;
  private readonly gate: RequestGate;
  /** Where every change through this server is recorded (undefined with `audit: false`). */
  readonly audit: AuditLog | undefined;

  /** Refuses what makes a server unsafe whatever its address, before anything is made. */
  constructor(private readonly options: ServerOptions) {
    refuseUnsafeOptions(options);
    this.auth = new Authenticator(options.users, options.loginLimit, Date.now, options.identity);
    this.logger = options.logger ?? new Logger("info");
    const logger = this.logger;
    this.audit =
      options.audit === false
        ? undefined
        : options.backend.auditLog({
            ...options.audit,
            // An event the store could not take is kept in the server's log rather than lost (it holds no secret).
            onLost: (line) => {
              this.metrics.auditSpill();
              logger.event("error", "audit event not stored", { event: line.trimEnd() });
            },
            onError: (e) => {
              this.metrics.auditFailure();
              logger.event("warn", "audit event write failed, retrying", { code: codeOf(e) });
            },
          });
    const audit = this.audit;
    if (audit !== undefined) this.metrics.auditPending = () => audit.pending;
    this.maxStateSize = options.maxStateSize ?? DEFAULT_MAX_STATE_SIZE;
    this.encryption = options.encryption === undefined ? undefined : StateEncryption.for(options.encryption);
    this.clientTimeoutMs = options.clientTimeoutMs ?? DEFAULT_CLIENT_TIMEOUT_MS;
    this.consoleApi = options.console === false ? undefined : backendConsoleApi(options.backend, { compare: diffInWorker });
    this.csrf = new CsrfTokens(options.csrfKey === undefined ? {} : { key: options.csrfKey });
    this.gate = new RequestGate({ publicUrls: options.publicUrls, tls: options.tls !== undefined });
    const routes: readonly Route[] = [
      { method: "GET", path: "/healthz", handler: (ctx) => Promise.resolve(sendJson(ctx, 200, { status: "ok" })) },
      { method: "GET", path: "/readyz", handler: (ctx) => this.ready(ctx) },
      {
        method: "GET",
        path: "/metrics",
        handler: async (ctx) => send(ctx, 200, await this.metrics.text(), { "Content-Type": METRICS_CONTENT_TYPE }),
      },
      ...STATE_ROUTES,
      ...API_ROUTES,
    ];
    this.routes = routes.map((route) => ({ route, parts: route.path.split("/") }));
    const handler = (req: IncomingMessage, res: ServerResponse): void => void this.handle(req, res).catch((e: unknown) => this.lastResort(res, e));
    const t = options.tls;
    // The tool's client sends custom methods (LOCK, UNLOCK): Node's parser accepts them.
    // Stalled headers are found by a periodic sweep: often enough for the timeout to mean what it says.
    const base = { connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(this.clientTimeoutMs / 2))) };
    this.server =
      t === undefined
        ? createHttpServer(base, handler)
        : createHttpsServer(
            {
              ...base,
              cert: t.cert,
              key: t.key,
              minVersion: "TLSv1.2",
              ciphers: TLS12_CIPHERS,
              honorCipherOrder: true,
              ...(t.ca === undefined ? {} : { ca: t.ca, requestCert: true, rejectUnauthorized: true }),
            },
            handler,
          );
    // Slow clients: headers must arrive within the client timeout; bodies keep a minimum
    // rate (body.ts, connections.ts), never a deadline, so a large upload on a slow link lives.
    this.server.headersTimeout = this.clientTimeoutMs;
    this.server.requestTimeout = 0;
    this.server.keepAliveTimeout = 5_000;
    this.connections = new ConnectionGuard(
      this.server,
      { maxConnections: options.maxConnections, maxPerClient: options.maxConnectionsPerClient, windowMs: this.clientTimeoutMs },
      this.logger,
    );
  }

  /** Start listening; resolves with the bound address. Refuses an unsafe address before binding it. */
  async listen(host: string, port: number): Promise<AddressInfo> {
    refuseUnsafeAddress(this.options, host, port);
    // Readiness requires the bucket: an embedded one is made now, not on the first write.
    await this.options.backend.prepareBucket();
    return new Promise((resolve, reject) => {
      const failed = (e: Error): void => reject(listenFailed(e, host, port));
      this.server.once("error", failed);
      this.server.listen(port, host, () => {
        this.server.off("error", failed);
        const a = this.server.address() as AddressInfo;
        this.gate.bound(a.address, a.port);
        resolve(a);
      });
    });
  }

  /** `http(s)://host:port` of the listening server. */
  get url(): string {
    const a = this.server.address() as AddressInfo;
    const host = a.family === "IPv6" ? `[${a.address}]` : a.address;
    return `${this.options.tls === undefined ? "http" : "https"}://${host}:${a.port}`;
  }

  /** What the listening server warns its operator of, each as [message, code]. */
  warnings(): [string, string][] {
    const { users, tls, backend } = this.options;
    const out: [string, string][] = [];
    const url = this.url;
    const loopback = isLoopbackHost((this.server.address() as AddressInfo).address);
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
    else if (this.options.allowUnlockedWrites === true)
      out.push([
        "--allow-unlocked-writes: a client without lock_address, or run with -lock=false, can overwrite changes it never read",
        "SERVE_UNLOCKED_WRITES",
      ]);
    return out;
  }

  /**
   * Graceful stop: accept nothing new, let requests in flight finish (a write completes),
   * then close every connection. After `graceMs` the rest are cut. Locks held by clients
   * stay held: they belong to the clients.
   */
  async close(graceMs = 30_000): Promise<void> {
    this.closing = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    if (this.inFlight > 0) {
      await Promise.race([new Promise<void>((resolve) => (this.drained = resolve)), new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref())]);
    }
    this.server.closeAllConnections();
    await closed;
    await this.options.identity?.close();
  }

  private async ready(ctx: Ctx): Promise<void> {
    if (this.closing) throw new ObjstateError("SHUTTING_DOWN", "this server is shutting down");
    await this.options.backend.probe();
    sendJson(ctx, 200, { status: "ready", locking: this.options.backend.lockingEnabled });
  }

  /**
   * The web console: same users and roles as the API, its own routes (`/`, `/workspaces/…`,
   * `/console/…`). True when it answered.
   */
  private async console(
    ctx: Ctx,
    origin: string | undefined,
    refusal: ConsoleContext["refusal"],
    onUser: (name: string) => void,
    onAnswer: (answer: ConsoleAnswer) => void,
  ): Promise<boolean> {
    const api = this.consoleApi;
    if (api === undefined) return false;
    // A request the gate refused is answered without asking who it is (no login prompt).
    const found: Authenticated = refusal === undefined ? await this.auth.authenticate(ctx.req) : { user: ctx.user, via: ctx.principal.via };
    const who = found.user;
    onUser(who.name);
    authenticated(ctx, who, found.via, found);
    return handleConsole(ctx.req, ctx.res, {
      user: who.name,
      principal: ctx.principal,
      can: (role, workspace) => allowed(who, role, workspace),
      log: (entry: ConsoleLogEntry) => {
        this.logger.event(entry.outcome === "ok" ? "info" : "warn", "console action", {
          user: entry.user,
          action: entry.action,
          workspace: entry.workspace,
          outcome: entry.outcome,
          detail: entry.detail,
        });
        // A change by someone the server authenticated (a refusal by the gate names no one); reveal changes nothing.
        if (refusal === undefined && entry.action !== "reveal") return this.auditConsole(ctx, entry);
      },
      onError: (e) => this.logger.event("error", "console failure", { name: e instanceof Error ? e.name : typeof e }),
      shown: (e) => this.shown(e, ctx),
      api,
      csrf: this.csrf,
      origin,
      refusal,
      onAnswer,
    });
  }

  /** The audit event of a console action. */
  private auditConsole(ctx: Ctx, entry: ConsoleLogEntry): Promise<boolean> | undefined {
    const outcome = entry.outcome;
    return this.audit?.record({
      principal: ctx.principal,
      action: entry.action,
      workspace: entry.workspace,
      surface: "console",
      outcome,
      lockId: entry.lockId,
      from: entry.from,
      serial: outcome === "ok" ? entry.serial : undefined,
      md5: outcome === "ok" ? entry.md5 : undefined,
      code: entry.code,
    });
  }

  private find(method: string, path: string): Match | "method" | undefined {
    let pathMatched = false;
    const segments = path.split("/");
    for (const { route, parts } of this.routes) {
      const params = matchPath(parts, segments);
      if (params === undefined) continue;
      if (route.method === method) return { route, params };
      pathMatched = true;
    }
    return pathMatched ? "method" : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = process.hrtime.bigint();
    // Read now: a request whose body reader destroyed it has no socket by the time it is logged.
    const remote = req.socket.remoteAddress;
    this.inFlight += 1;
    const method = req.method ?? "GET";
    const url = new URL(req.url ?? "/", "http://objstate.invalid");
    const found = this.find(method, url.pathname);
    let routeName = typeof found === "object" ? found.route.path : "unmatched";
    // The console's lock poll, repeated by every open page: a debug line when it succeeds.
    let routine = false;
    const workspace = typeof found === "object" ? found.params["workspace"] : undefined;
    const ctx: Ctx = {
      req,
      res,
      url,
      params: typeof found === "object" ? found.params : {},
      user: { name: "-", password: undefined, grants: [] },
      principal: ANONYMOUS_PRINCIPAL,
      backend: this.options.backend,
      limits: { maxBytes: this.maxStateSize, idleMs: this.clientTimeoutMs },
      bodyBuffers: this.bodyBuffers,
      metrics: this.metrics,
      logger: this.logger,
      origin: undefined,
      allowUnlockedWrites: this.options.allowUnlockedWrites === true,
      encryption: this.encryption,
      bytesIn: 0,
      bytesOut: 0,
      auditLog: this.audit,
      audit: {},
      held: this.audit !== undefined && typeof found === "object" && found.route.audit !== undefined ? null : undefined,
    };
    let user: string | undefined;
    let code: string | undefined;
    try {
      if (this.closing) res.setHeader("Connection", "close");
      if (this.options.tls !== undefined) res.setHeader("Strict-Transport-Security", HSTS);
      const kind: RouteKind = found === undefined ? "console" : OPEN_PATHS.has(url.pathname) ? "probe" : "api";
      // States and API answers (errors too) are never cached by a proxy or browser, nor sniffed as another type.
      if (found !== undefined || /^\/(?:state|api)\//.test(url.pathname))
        res.setHeader("Cache-Control", "no-store").setHeader("X-Content-Type-Options", "nosniff");
      let origin: string | undefined;
      let refusal: ConsoleContext["refusal"];
      try {
        origin = this.gate.check(req, kind);
        (ctx as { origin: string | undefined }).origin = origin;
      } catch (e) {
        // The console shows its refusals as a page; every other route answers JSON.
        if (kind !== "console" || !isObjstateError(e)) throw e;
        code = e.code;
        refusal = { status: statusOf(e), reason: typeof e.details?.["reason"] === "string" ? e.details["reason"] : e.code };
      }
      const answered = (a: ConsoleAnswer): void => {
        routeName = a.route;
        routine = a.routine;
        ctx.bytesOut += a.bytes;
      };
      if (found === undefined && (await this.console(ctx, origin, refusal, (name) => (user = name), answered))) return;
      if (refusal !== undefined) throw new ObjstateError("NOT_FOUND", `no route ${url.pathname}`);
      if (found === undefined)
        throw new ObjstateError("NOT_FOUND", `no route ${url.pathname}: the state lives at /state/{workspace}, the JSON API under /api/v1`);
      if (found === "method") throw new ObjstateError("METHOD_NOT_ALLOWED", `${method} is not allowed on ${url.pathname}`);
      if (!OPEN_PATHS.has(url.pathname)) {
        const who = await this.auth.authenticate(req);
        user = who.user.name;
        authenticated(ctx, who.user, who.via, who);
      }
      if (workspace !== undefined) checkWorkspace(workspace);
      if (found.route.role !== undefined && workspace !== undefined) requireRole(ctx, found.route.role, workspace);
      checkDeclaredLength(req, ctx.limits);
      await found.route.handler(ctx);
    } catch (e) {
      code = codeOf(e);
      this.fail(ctx, e);
    } finally {
      try {
        await this.answerAudited(ctx, typeof found === "object" ? found.route.audit : undefined, workspace, user, code);
      } finally {
        this.inFlight -= 1;
        if (this.inFlight === 0) this.drained?.();
      }
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      this.logger.request(
        {
          method,
          route: routeName,
          workspace,
          status: res.statusCode,
          ms: Math.round(ms * 10) / 10,
          user,
          remote,
          bytesIn: ctx.bytesIn,
          bytesOut: ctx.bytesOut,
          code,
        },
        routine,
      );
      this.metrics.request(routeName, method, res.statusCode, ms / 1000, ctx.bytesIn, ctx.bytesOut);
    }
  }

  /** A failure outside every handler's own catch (its logging included): logged and answered 500, never the process's end. */
  private lastResort(res: ServerResponse, e: unknown): void {
    try {
      if (res.headersSent) res.destroy();
      else
        res
          .writeHead(500, { "Content-Type": "application/json", Connection: "close" })
          .end('{"code":"INTERNAL","message":"internal error; see the server\'s log"}\n');
      this.logger.event("error", "request handling failed", { name: e instanceof Error ? e.name : typeof e });
    } catch {
      res.destroy();
    }
  }

  /**
   * The message a client is shown for `e`. The key provider's failure quotes its program's
   * standard error (a token, an internal address): only the log gets it, under a reference
   * the answer names.
   */
  private shown(e: ObjstateError, ctx: Ctx): string {
    if (!fromKeyProvider(e)) return e.message;
    const ref = nodeCrypto().randomBytes(6).toString("hex");
    this.logger.event("error", "key provider failed", { ref, workspace: ctx.params["workspace"], detail: e.message });
    return `the server's encryption key provider failed: the detail is in the server's log, under reference ${ref}`;
  }

  /**
   * Send an audited route's held answer once its event is stored or logged as not stored
   * (docs/decisions/087). Only a change asked by someone authenticated has one: an
   * unauthenticated request costs the store nothing.
   */
  private async answerAudited(
    ctx: Ctx,
    action: AuditAction | undefined,
    workspace: string | undefined,
    user: string | undefined,
    code: string | undefined,
  ): Promise<void> {
    const answer = ctx.held;
    ctx.held = undefined;
    if (answer === null || answer === undefined) return;
    if (action !== undefined && user !== undefined && workspace !== undefined) {
      const surface = ctx.url.pathname.startsWith("/api/") ? "api" : "http";
      await this.audit?.record(auditEntry(ctx, action, workspace, surface, answer.status, code));
    }
    sendHeld(ctx, answer);
  }

  /**
   * Answer a failure: the holder's lock info when the error carries one (the body the
   * tool's client parses on 409/423), else `{"code", "message"}`.
   */
  private fail(ctx: Ctx, e: unknown): void {
    const status = statusOf(e);
    const res = ctx.res;
    if (ctx.held) return; // answered before it failed: that answer stands
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // A body left unread is not read at all: the connection closes after this answer.
    if (!ctx.req.complete) res.setHeader("Connection", "close");
    if (status === 401) res.setHeader("WWW-Authenticate", 'Basic realm="objstate", charset="UTF-8"');
    const retry = isObjstateError(e) ? e.details?.["retryAfter"] : undefined;
    if (typeof retry === "number") res.setHeader("Retry-After", String(retry));
    const holder = isObjstateError(e) ? e.details?.["lockInfo"] : undefined;
    if (holder !== undefined && (status === 409 || status === 423)) {
      send(ctx, status, JSON.stringify(holder), { "Content-Type": "application/json" });
      return;
    }
    if (status === 500 && !isObjstateError(e)) {
      // Unexpected: no detail leaves the process (it may quote a request).
      sendJson(ctx, 500, { code: "INTERNAL", message: "internal error; see the server's log" });
      this.logger.event("error", "unexpected failure", { name: e instanceof Error ? e.name : typeof e });
      return;
    }
    if (status === 204) return sendEmpty(ctx, 204);
    // Why an issuer could not be asked is the operator's to know (its messages never hold a token).
    if (isObjstateError(e, "IDENTITY_PROVIDER_UNAVAILABLE")) this.logger.event("warn", "identity provider unavailable", { reason: e.message });
    // The one field a client is told to set: UNLOCKED_WRITE names the state's lock_address.
    const lockAddress = isObjstateError(e) ? e.details?.["lock_address"] : undefined;
    sendJson(ctx, status, {
      code: codeOf(e),
      message: isObjstateError(e) ? this.shown(e, ctx) : String(e),
      ...(typeof lockAddress === "string" ? { lock_address: lockAddress } : {}),
    });
  }
}

// What `objstate serve` refuses to start with, and warns of, for the CLI and a server made in code alike (decision 043).

/** TLS's parts go together: a certificate with its key, a client CA only with both. */
export function refuseIncompleteTls(tls: ServerOptions["tls"]): void {
  if (tls !== undefined && (tls.cert === undefined) !== (tls.key === undefined))
    throw new ObjstateError("TLS_INCOMPLETE", "--tls-cert and --tls-key go together: give both, or neither for plain HTTP");
  if (tls?.ca !== undefined && tls.cert === undefined)
    throw new ObjstateError("TLS_INCOMPLETE", "--tls-client-ca needs --tls-cert and --tls-key (client certificates are part of TLS)");
}

/** The constructor's refusals: the options alone make the server unsafe, whatever its address. */
function refuseUnsafeOptions(o: ServerOptions): void {
  refuseIncompleteTls(o.tls);
  if (o.backend.lockTtlMs !== undefined) {
    throw new ObjstateError(
      "SERVE_LEASE_UNSUPPORTED",
      "objstate serve takes no lease (--lock-ttl, or lockTtl in the --config file's objstate section): the tool's http client cannot renew one, so an apply that sends nothing for longer than the lease (while it waits for its confirmation, or for a slow resource) would lose its lock and its final write. Remove it; release a lock a crashed client left with terraform force-unlock (the force role)",
    );
  }
  if (!o.backend.lockingEnabled && o.allowUnlockedWrites !== true) {
    throw new ObjstateError(
      "SERVE_NO_LOCKING",
      "no lock table is configured (kvstoreTable, or --lockfile): every write through this server would be unlocked, and concurrent clients could overwrite each other's changes. Configure one, or start with --allow-unlocked-writes to serve without locking",
    );
  }
}

/** `listen`'s refusals, before anything is bound: an address off loopback needs users (or the insecure opt-out) and public URLs. */
function refuseUnsafeAddress(o: ServerOptions, host: string, port: number): void {
  if (isLoopbackHost(host)) return;
  if (o.users === undefined && o.insecureNoAuth !== true) {
    throw new ObjstateError(
      "AUTH_REQUIRED",
      `--listen ${host}:${port} is not a loopback address and there is no --users file: give --users FILE (objstate serve hash-password adds users), or --insecure-no-auth to let anyone who reaches it change every state`,
    );
  }
  // Without the list, a Host check could only trust what the request says (DNS rebinding).
  if ((o.publicUrls ?? []).length === 0) {
    throw new ObjstateError(
      "PUBLIC_URL_REQUIRED",
      `--listen ${host}:${port} is not a loopback address: give --public-url with the URL clients use to reach this server (e.g. --public-url https://state.example.com; repeatable), so that requests for other host names are refused`,
    );
  }
}

/** `listen`'s failure for the operator: LISTEN_FAILED saying why and what to do (the errno alone says little). */
function listenFailed(e: unknown, host: string, port: number): ObjstateError {
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

/** `e` is, or wraps, the external key provider's failure. */
function fromKeyProvider(e: unknown): boolean {
  return isObjstateError(e) && (e.code === "ENCRYPTION_KEY_PROVIDER_FAILED" || fromKeyProvider(e.cause));
}
