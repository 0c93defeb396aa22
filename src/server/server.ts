/**
 * `objstate serve`: an HTTP(S) server over one connected backend. It keeps no state of
 * its own (every lock and version lives in the store and the table), so any number of
 * replicas over one bucket and table behave as one.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { checkWorkspace } from "../config/layout.js";
import { StateEncryption } from "../encryption/index.js";
import { ANONYMOUS_PRINCIPAL, type Principal, type PrincipalVia } from "../backend/principal.js";
import type { AuditAction, AuditLog } from "../backend/audit.js";
import { auditEntry } from "./audit.js";
import { codeOf, isObjstateError, ObjstateError, statusOf } from "../errors.js";
import { API_ROUTES, type Route } from "./api.js";
import { Authenticator, type Authenticated } from "./auth.js";
import { isLoopbackHost, RequestGate, type RouteKind } from "./gate.js";
import { checkDeclaredLength } from "../io/http-body.js";
import { diffInWorker } from "./diff-runner.js";
import { ConnectionGuard } from "./connections.js";
import { requireRole, send, sendHeld, sendJson, type Ctx } from "./context.js";
import { Logger } from "./log.js";
import { Metrics, METRICS_CONTENT_TYPE } from "./metrics.js";
import { deleteState, getState, lockState, postState, unlockState } from "./protocol.js";
import { allowed, type User } from "./users.js";
import { backendConsoleApi } from "../console/adapter.js";
import { CsrfTokens } from "../console/csrf.js";
import { handleConsole } from "../console/handler.js";
import type { ConsoleAnswer, ConsoleApi, ConsoleContext, ConsoleLogEntry } from "../console/types.js";
import { answerFailure, lastResort, shownMessage } from "./failure.js";
import { decodeParams, Router } from "../util/router.js";
import { DEFAULT_CLIENT_TIMEOUT_MS, DEFAULT_MAX_STATE_SIZE, TLS12_CIPHERS, type ServerOptions } from "./options.js";
import { listenFailed, refuseUnsafeAddress, refuseUnsafeOptions, serveWarnings } from "./safety.js";

export type { ServerOptions } from "./options.js";

/** Browsers that reached the console over TLS keep to it for a year. */
const HSTS = "max-age=31536000";

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

/** What a request's log line and metrics say, filled in as the request is answered. */
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
  private readonly router: Router<Route>;
  private readonly maxStateSize: number;
  private readonly clientTimeoutMs: number;
  /** One per server: keys are derived (or fetched) once, not per request. */
  private readonly encryption: StateEncryption | undefined;
  private inFlight = 0;
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
    this.router = new Router(routes);
    const handler = (req: IncomingMessage, res: ServerResponse): void => void this.handle(req, res).catch((e: unknown) => lastResort(res, e, this.logger));
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
    // rate (io/http-body.ts, connections.ts), never a deadline, so a large upload on a slow link lives.
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
    return serveWarnings(this.options, this.url, isLoopbackHost((this.server.address() as AddressInfo).address));
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
  private async console(ctx: Ctx, origin: string | undefined, refusal: ConsoleContext["refusal"], trace: Trace): Promise<boolean> {
    const api = this.consoleApi;
    if (api === undefined) return false;
    // A request the gate refused is answered without asking who it is (no login prompt).
    const found: Authenticated = refusal === undefined ? await this.auth.authenticate(ctx.req) : { user: ctx.user, via: ctx.principal.via };
    const who = found.user;
    trace.user = who.name;
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
      shown: (e) => shownMessage(e, ctx, this.logger),
      api,
      csrf: this.csrf,
      clientTimeoutMs: this.clientTimeoutMs,
      origin,
      refusal,
      onAnswer: (a: ConsoleAnswer) => {
        trace.route = a.route;
        trace.routine = a.routine;
        ctx.bytesOut += a.bytes;
      },
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

  /** The route of a request, its parameters decoded (one that does not decode is no route's). */
  private find(method: string, path: string): Match | "method" | undefined {
    const found = this.router.find(method, path, true);
    return typeof found === "object" ? { route: found.route, params: decodeParams(found.raw) ?? {} } : found;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.inFlight += 1;
    const method = req.method ?? "GET";
    const url = new URL(req.url ?? "/", "http://objstate.invalid");
    const found = this.find(method, url.pathname);
    const route = typeof found === "object" ? found.route : undefined;
    const trace: Trace = {
      started: process.hrtime.bigint(),
      // Read now: a request whose body reader destroyed it has no socket by the time it is logged.
      remote: req.socket.remoteAddress,
      method,
      route: route?.path ?? "unmatched",
      routine: false,
      workspace: typeof found === "object" ? found.params["workspace"] : undefined,
      user: undefined,
      code: undefined,
    };
    const ctx: Ctx = {
      req,
      res,
      url,
      params: typeof found === "object" ? found.params : {},
      user: { name: "-", password: undefined, grants: [] },
      principal: ANONYMOUS_PRINCIPAL,
      backend: this.options.backend,
      limits: { maxBytes: this.maxStateSize, idleMs: this.clientTimeoutMs },
      metrics: this.metrics,
      logger: this.logger,
      origin: undefined,
      allowUnlockedWrites: this.options.allowUnlockedWrites === true,
      encryption: this.encryption,
      bytesIn: 0,
      bytesOut: 0,
      auditLog: this.audit,
      audit: {},
      held: this.audit !== undefined && route?.audit !== undefined ? null : undefined,
    };
    try {
      await this.dispatch(ctx, found, trace);
    } catch (e) {
      trace.code = codeOf(e);
      answerFailure(ctx, e, this.logger);
    } finally {
      try {
        await this.answerAudited(ctx, route?.audit, trace.workspace, trace.user, trace.code);
      } finally {
        this.inFlight -= 1;
        if (this.inFlight === 0) this.drained?.();
      }
      this.logRequest(ctx, trace);
    }
  }

  /** Check a request at the gate and by its route, then run the route (the console's, or one of {@link routes}). */
  private async dispatch(ctx: Ctx, found: Match | "method" | undefined, trace: Trace): Promise<void> {
    const { req, res, url } = ctx;
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
      trace.code = e.code;
      refusal = { status: statusOf(e), reason: typeof e.details?.["reason"] === "string" ? e.details["reason"] : e.code };
    }
    if (found === undefined && (await this.console(ctx, origin, refusal, trace))) return;
    if (refusal !== undefined) throw new ObjstateError("NOT_FOUND", `no route ${url.pathname}`);
    if (found === undefined)
      throw new ObjstateError("NOT_FOUND", `no route ${url.pathname}: the state lives at /state/{workspace}, the JSON API under /api/v1`);
    if (found === "method") throw new ObjstateError("METHOD_NOT_ALLOWED", `${trace.method} is not allowed on ${url.pathname}`);
    if (!OPEN_PATHS.has(url.pathname)) {
      const who = await this.auth.authenticate(req);
      trace.user = who.user.name;
      authenticated(ctx, who.user, who.via, who);
    }
    const workspace = trace.workspace;
    if (workspace !== undefined) checkWorkspace(workspace);
    if (found.route.role !== undefined && workspace !== undefined) requireRole(ctx, found.route.role, workspace);
    checkDeclaredLength(req, ctx.limits);
    await found.route.handler(ctx);
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
}
