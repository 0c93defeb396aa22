/** `objstate serve`: an HTTP(S) server over one backend, with no state of its own, so replicas over one bucket and table behave as one; what it refuses to start with and warns of, for the CLI and code alike (decision 043). */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { ObjectStoreBackend } from "../backend/backend.js";
import type { AuditLogOptions } from "../backend/audit.js";
import type { EncryptionConfig } from "../encryption/index.js";
import type { LoginLimit } from "./auth.js";
import type { Identity } from "./identity/identity.js";
import type { User } from "./users.js";
import { checkWorkspace } from "../config/layout.js";
import { StateEncryption } from "../encryption/index.js";
import { ANONYMOUS_PRINCIPAL } from "../backend/principal.js";
import type { AuditAction, AuditLog } from "../backend/audit.js";
import { codeOf, isObjstateError, ObjstateError, statusOf } from "../errors.js";
import { API_ROUTES, type Route } from "./api.js";
import { Authenticator, type Authenticated } from "./auth.js";
import { isLoopbackHost, RequestGate, type PublicOrigin } from "./gate.js";
import { checkDeclaredLength } from "../io/http-body.js";
import { diffInWorker } from "./diff-runner.js";
import { ConnectionGuard } from "./connections.js";
import { requireRole, send, sendHeld, sendJson, type Ctx } from "./context.js";
import { Logger } from "./log.js";
import { Metrics, METRICS_CONTENT_TYPE } from "./metrics.js";
import { STATE_ROUTES } from "./protocol.js";
import { allowed } from "./users.js";
import { backendConsoleApi } from "../console/adapter.js";
import { CsrfTokens } from "../console/csrf.js";
import { handleConsole } from "../console/handler.js";
import type { ConsoleApi, ConsoleContext, ConsoleLogEntry } from "../console/types.js";
import { nodeCrypto } from "../util/builtins.js";
import { decodeParams, Router } from "../util/router.js";

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
const TLS12_CIPHERS = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
].join(":");

const DEFAULT_MAX_STATE_SIZE = 512 * 1024 * 1024;
const DEFAULT_CLIENT_TIMEOUT_MS = 30_000;

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

/** Routes anyone may call (a load balancer's probes, a scraper). */
const OPEN_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

/** What a request's log line and metrics say, filled in as it is answered. */
interface Trace {
  readonly started: bigint;
  readonly remote: string | undefined;
  readonly method: string;
  route: string;
  routine: boolean;
  readonly workspace: string | undefined;
  user: string | undefined;
  code: string | undefined;
}

type Shared = Pick<Ctx, "backend" | "limits" | "metrics" | "logger" | "allowUnlockedWrites" | "encryption" | "auditLog">;

export class ObjstateServer {
  readonly metrics = new Metrics();
  readonly connections: ConnectionGuard;
  readonly audit: AuditLog | undefined;
  private readonly server: Server;
  private readonly auth: Authenticator;
  private readonly logger: Logger;
  private readonly router: Router<Route>;
  private readonly shared: Shared;
  private readonly clientTimeoutMs: number;
  private readonly consoleApi: ConsoleApi | undefined;
  private readonly csrf: CsrfTokens;
  private readonly gate: RequestGate;
  private inFlight = 0;
  private drained: (() => void) | undefined;
  private closing = false;

  constructor(private readonly options: ServerOptions) {
    refuseUnsafeOptions(options);
    this.auth = new Authenticator(options.users, options.loginLimit, Date.now, options.identity);
    const logger = (this.logger = options.logger ?? new Logger("info"));
    const audit = (this.audit =
      options.audit === false
        ? undefined
        : options.backend.auditLog({
            ...options.audit,
            // An event the store could not take is kept in the server's log rather than lost (it holds no secret).
            onLost: (line) => {
              this.metrics.auditSpilled.inc();
              logger.event("error", "audit event not stored", { event: line.trimEnd() });
            },
            onError: (e) => {
              this.metrics.auditFailures.inc();
              logger.event("warn", "audit event write failed, retrying", { code: codeOf(e) });
            },
          }));
    if (audit !== undefined) this.metrics.auditPending = () => audit.pending;
    this.clientTimeoutMs = options.clientTimeoutMs ?? DEFAULT_CLIENT_TIMEOUT_MS;
    this.shared = {
      backend: options.backend,
      limits: { maxBytes: options.maxStateSize ?? DEFAULT_MAX_STATE_SIZE, idleMs: this.clientTimeoutMs },
      metrics: this.metrics,
      logger,
      allowUnlockedWrites: options.allowUnlockedWrites === true,
      // One per server: keys are derived (or fetched) once, not per request.
      encryption: options.encryption === undefined ? undefined : StateEncryption.for(options.encryption),
      auditLog: audit,
    };
    this.consoleApi = options.console === false ? undefined : backendConsoleApi(options.backend, { compare: diffInWorker });
    this.csrf = new CsrfTokens(options.csrfKey === undefined ? {} : { key: options.csrfKey });
    this.gate = new RequestGate({ publicUrls: options.publicUrls, tls: options.tls !== undefined });
    this.router = new Router<Route>([
      { method: "GET", path: "/healthz", handler: (ctx) => Promise.resolve(sendJson(ctx, 200, { status: "ok" })) },
      { method: "GET", path: "/readyz", handler: (ctx) => this.ready(ctx) },
      { method: "GET", path: "/metrics", handler: async (ctx) => send(ctx, 200, await this.metrics.text(), { "Content-Type": METRICS_CONTENT_TYPE }) },
      ...STATE_ROUTES,
      ...API_ROUTES,
    ]);
    const t = options.tls;
    // Stalled headers are found by a periodic sweep: often enough for the timeout to mean what it says.
    const base = { connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(this.clientTimeoutMs / 2))) };
    const mtls = t?.ca === undefined ? {} : { ca: t.ca, requestCert: true, rejectUnauthorized: true };
    const handler = (req: IncomingMessage, res: ServerResponse): void => void this.handle(req, res).catch((e: unknown) => lastResort(res, e, logger));
    const server = (this.server =
      t === undefined
        ? createHttpServer(base, handler)
        : createHttpsServer({ ...base, cert: t.cert, key: t.key, minVersion: "TLSv1.2", ciphers: TLS12_CIPHERS, honorCipherOrder: true, ...mtls }, handler));
    // Headers have a deadline; bodies only a minimum rate (connections.ts), so a large upload on a slow link lives.
    server.headersTimeout = this.clientTimeoutMs;
    server.requestTimeout = 0;
    server.keepAliveTimeout = 5_000;
    this.connections = new ConnectionGuard(
      server,
      { maxConnections: options.maxConnections, maxPerClient: options.maxConnectionsPerClient, windowMs: this.clientTimeoutMs },
      logger,
    );
  }

  async listen(host: string, port: number): Promise<AddressInfo> {
    // Before anything is bound: an address off loopback needs users (or the insecure opt-out) and public URLs.
    if (!isLoopbackHost(host) && this.options.users === undefined && this.options.insecureNoAuth !== true)
      throw new ObjstateError(
        "AUTH_REQUIRED",
        `--listen ${host}:${port} is not a loopback address and there is no --users file: give --users FILE (objstate serve hash-password adds users), or --insecure-no-auth to let anyone who reaches it change every state`,
      );
    // Without the list, a Host check could only trust what the request says (DNS rebinding).
    if (!isLoopbackHost(host) && (this.options.publicUrls ?? []).length === 0)
      throw new ObjstateError(
        "PUBLIC_URL_REQUIRED",
        `--listen ${host}:${port} is not a loopback address: give --public-url with the URL clients use to reach this server (e.g. --public-url https://state.example.com; repeatable), so that requests for other host names are refused`,
      );
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

  get url(): string {
    const a = this.server.address() as AddressInfo;
    const host = a.family === "IPv6" ? `[${a.address}]` : a.address;
    return `${this.options.tls === undefined ? "http" : "https"}://${host}:${a.port}`;
  }

  warnings(): [string, string][] {
    const { users, tls, backend, allowUnlockedWrites } = this.options;
    const url = this.url;
    const loopback = isLoopbackHost((this.server.address() as AddressInfo).address);
    const out: [string, string][] = [];
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
    else if (allowUnlockedWrites === true)
      out.push([
        "--allow-unlocked-writes: a client without lock_address, or run with -lock=false, can overwrite changes it never read",
        "SERVE_UNLOCKED_WRITES",
      ]);
    return out;
  }

  /** Accept nothing new, let requests in flight finish, then close every connection (after `graceMs`, cut). Locks held stay held. */
  async close(graceMs = 30_000): Promise<void> {
    this.closing = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    if (this.inFlight > 0)
      await Promise.race([new Promise<void>((resolve) => (this.drained = resolve)), new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref())]);
    this.server.closeAllConnections();
    await closed;
    await this.options.identity?.close();
  }

  private async ready(ctx: Ctx): Promise<void> {
    if (this.closing) throw new ObjstateError("SHUTTING_DOWN", "this server is shutting down");
    await this.options.backend.probe();
    sendJson(ctx, 200, { status: "ready", locking: this.options.backend.lockingEnabled });
  }

  /** The web console (`/`, `/workspaces/…`, `/console/…`): same users and roles as the API. True when it answered. */
  private async console(ctx: Ctx, refusal: ConsoleContext["refusal"], trace: Trace): Promise<boolean> {
    const api = this.consoleApi;
    if (api === undefined) return false;
    // A request the gate refused is answered without asking who it is (no login prompt).
    const found: Authenticated = refusal === undefined ? await this.auth.authenticate(ctx.req) : ctx;
    trace.user = found.user.name;
    Object.assign(ctx, found);
    return handleConsole(ctx.req, ctx.res, {
      user: found.user.name,
      principal: ctx.principal,
      can: (role, workspace) => allowed(found.user, role, workspace),
      log: (entry: ConsoleLogEntry) => {
        const { user, action, workspace, outcome, detail, lockId, from, code } = entry;
        this.logger.event(outcome === "ok" ? "info" : "warn", "console action", { user, action, workspace, outcome, detail });
        // A change by someone the server authenticated (a refusal by the gate names no one); reveal changes nothing.
        if (refusal !== undefined || action === "reveal") return;
        const done = outcome === "ok" ? { serial: entry.serial, md5: entry.md5 } : {};
        return this.audit?.record({ principal: ctx.principal, surface: "console", action, workspace, outcome, lockId, from, code, ...done });
      },
      onError: (e) => this.logger.event("error", "console failure", { name: e instanceof Error ? e.name : typeof e }),
      shown: (e) => shownMessage(e, ctx, this.logger),
      api,
      csrf: this.csrf,
      clientTimeoutMs: this.clientTimeoutMs,
      origin: ctx.origin,
      refusal,
      onAnswer: (a) => {
        trace.route = a.route;
        trace.routine = a.routine;
        ctx.bytesOut += a.bytes;
      },
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.inFlight += 1;
    const method = req.method ?? "GET";
    const url = new URL(req.url ?? "/", "http://objstate.invalid");
    const raw = this.router.find(method, url.pathname, true);
    const found = typeof raw === "object" ? { route: raw.route, params: decodeParams(raw.raw) ?? {} } : undefined;
    const route = found?.route;
    const trace: Trace = {
      started: process.hrtime.bigint(),
      // Read now: a request whose body reader destroyed it has no socket by the time it is logged.
      remote: req.socket.remoteAddress,
      method,
      route: route?.path ?? "unmatched",
      routine: false,
      workspace: found?.params["workspace"],
      user: undefined,
      code: undefined,
    };
    const ctx: Ctx = {
      ...this.shared,
      req,
      res,
      url,
      params: found?.params ?? {},
      user: { name: "-", password: undefined, grants: [] },
      principal: ANONYMOUS_PRINCIPAL,
      origin: undefined,
      bytesIn: 0,
      bytesOut: 0,
      audit: {},
      held: this.audit !== undefined && route?.audit !== undefined ? null : undefined,
    };
    try {
      await this.dispatch(ctx, typeof raw === "object" ? raw.route : raw, trace);
    } catch (e) {
      trace.code = codeOf(e);
      answerFailure(ctx, e, this.logger);
    } finally {
      try {
        await this.answerAudited(ctx, route?.audit, trace);
      } finally {
        this.inFlight -= 1;
        if (this.inFlight === 0) this.drained?.();
      }
      this.logRequest(ctx, trace);
    }
  }

  private async dispatch(ctx: Ctx, route: Route | "method" | undefined, trace: Trace): Promise<void> {
    const { req, res, url } = ctx;
    if (this.closing) res.setHeader("Connection", "close");
    if (this.options.tls !== undefined) res.setHeader("Strict-Transport-Security", "max-age=31536000");
    const kind = route === undefined ? "console" : OPEN_PATHS.has(url.pathname) ? "probe" : "api";
    // States and API answers (errors too) are never cached by a proxy or browser, nor sniffed as another type.
    if (route !== undefined || /^\/(?:state|api)\//.test(url.pathname))
      res.setHeader("Cache-Control", "no-store").setHeader("X-Content-Type-Options", "nosniff");
    let refusal: ConsoleContext["refusal"];
    try {
      (ctx as { origin: string | undefined }).origin = this.gate.check(req, kind);
    } catch (e) {
      // The console shows its refusals as a page; every other route answers JSON.
      if (kind !== "console" || !isObjstateError(e)) throw e;
      trace.code = e.code;
      refusal = { status: statusOf(e), reason: typeof e.details?.["reason"] === "string" ? e.details["reason"] : e.code };
    }
    if (route === undefined && (await this.console(ctx, refusal, trace))) return;
    if (refusal !== undefined) throw new ObjstateError("NOT_FOUND", `no route ${url.pathname}`);
    if (route === undefined)
      throw new ObjstateError("NOT_FOUND", `no route ${url.pathname}: the state lives at /state/{workspace}, the JSON API under /api/v1`);
    if (route === "method") throw new ObjstateError("METHOD_NOT_ALLOWED", `${trace.method} is not allowed on ${url.pathname}`);
    if (kind !== "probe") {
      Object.assign(ctx, await this.auth.authenticate(req));
      trace.user = ctx.user.name;
    }
    const workspace = trace.workspace;
    if (workspace !== undefined) checkWorkspace(workspace);
    if (route.role !== undefined && workspace !== undefined) requireRole(ctx, route.role, workspace);
    checkDeclaredLength(req, ctx.limits);
    await route.handler(ctx, workspace ?? "");
  }

  /** The request's log line (the console's lock poll, repeated by every open page, at debug) and its metrics. */
  private logRequest(ctx: Ctx, t: Trace): void {
    const ms = Number(process.hrtime.bigint() - t.started) / 1e6;
    const { statusCode: status } = ctx.res;
    const { bytesIn, bytesOut } = ctx;
    const line = { method: t.method, route: t.route, workspace: t.workspace, status, ms: Math.round(ms * 10) / 10, user: t.user, remote: t.remote };
    this.logger.request({ ...line, bytesIn, bytesOut, code: t.code }, t.routine);
    this.metrics.request(t.route, t.method, status, ms / 1000, bytesIn, bytesOut);
  }

  /** Send an audited route's held answer once the event of a change by someone authenticated is stored or logged (docs/decisions/087). */
  private async answerAudited(ctx: Ctx, action: AuditAction | undefined, t: Trace): Promise<void> {
    const answer = ctx.held;
    ctx.held = undefined;
    if (answer === null || answer === undefined) return;
    if (action !== undefined && t.user !== undefined && t.workspace !== undefined) {
      const { status } = answer;
      const { action: named = action, lockId, from, serial, md5 } = ctx.audit;
      // 5xx: it broke on the way; other 4xx: turned down (a role, a lock held by another, a bad body).
      const outcome = status < 400 ? "ok" : status >= 500 ? "failed" : "refused";
      const surface = ctx.url.pathname.startsWith("/api/") ? "api" : "http";
      const done = outcome === "ok" ? { serial, md5 } : { code: t.code, status };
      await this.audit?.record({ principal: ctx.principal, action: named, workspace: t.workspace, surface, outcome, lockId, from, ...done });
    }
    sendHeld(ctx, answer);
  }
}

/** Every route's failure: status from the code (errors.ts); the holder's lock info when the error carries one (what the tool parses on 409/423), else `{"code", "message"}` quoting nothing only the log may see. */
function answerFailure(ctx: Ctx, e: unknown, logger: Logger): void {
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
    sendJson(ctx, 500, INTERNAL);
    logger.event("error", "unexpected failure", { name: e instanceof Error ? e.name : typeof e });
    return;
  }
  // Why an issuer could not be asked is the operator's to know (its messages never hold a token).
  if (isObjstateError(e, "IDENTITY_PROVIDER_UNAVAILABLE")) logger.event("warn", "identity provider unavailable", { reason: e.message });
  // The one field a client is told to set: UNLOCKED_WRITE names the state's lock_address.
  const lockAddress = isObjstateError(e) ? e.details?.["lock_address"] : undefined;
  sendJson(ctx, status, {
    code: codeOf(e),
    message: isObjstateError(e) ? shownMessage(e, ctx, logger) : String(e),
    ...(typeof lockAddress === "string" ? { lock_address: lockAddress } : {}),
  });
}

/** The message a client is shown: a key provider's failure (it quotes its program's stderr) goes to the log under a reference. */
function shownMessage(e: ObjstateError, ctx: Ctx, logger: Logger): string {
  if (!fromKeyProvider(e)) return e.message;
  const ref = nodeCrypto().randomBytes(6).toString("hex");
  logger.event("error", "key provider failed", { ref, workspace: ctx.params["workspace"], detail: e.message });
  return `the server's encryption key provider failed: the detail is in the server's log, under reference ${ref}`;
}

const INTERNAL = { code: "INTERNAL", message: "internal error; see the server's log" };

/** A failure outside every handler's own catch (its logging included): logged and answered 500, never the process's end. */
function lastResort(res: ServerResponse, e: unknown, logger: Logger): void {
  try {
    if (res.headersSent) res.destroy();
    else res.writeHead(500, { "Content-Type": "application/json", Connection: "close" }).end(`${JSON.stringify(INTERNAL)}\n`);
    logger.event("error", "request handling failed", { name: e instanceof Error ? e.name : typeof e });
  } catch {
    res.destroy();
  }
}

function fromKeyProvider(e: unknown): boolean {
  return isObjstateError(e) && (e.code === "ENCRYPTION_KEY_PROVIDER_FAILED" || fromKeyProvider(e.cause));
}
