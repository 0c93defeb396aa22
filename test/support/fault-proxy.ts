/**
 * A loopback HTTP proxy that injects faults between objstate and one upstream server
 * (Ceph RGW or dynalite), so the fault tests can stall a gateway or lose a reply without
 * touching the shared servers other tests use concurrently.
 *
 * Requests are forwarded verbatim: method, path, every header including `Host` (SigV4 signs
 * `Host`; the client signs for the proxy's address and the upstream verifies against the
 * same header). Bodies stream through unless a fault needs the whole request first (a held
 * request, or a rule that looks at the body). Connections on both sides are kept alive.
 */
import { Agent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { listenLow } from "./port.js";

/** Which requests a fault applies to; every given field must match. */
export interface RequestMatch {
  readonly method?: string;
  /** The request target (path and query) exactly, or a pattern tested against it. */
  readonly path?: string | RegExp;
  /** DynamoDB operation, the `x-amz-target` header (e.g. `DynamoDB_20120810.PutItem`), or a pattern tested against it. */
  readonly target?: string | RegExp;
  /** A substring of the request body, or a pattern tested against it (the body is read first). */
  readonly body?: string | RegExp;
}

/** What became of a request that reached the proxy. */
export type ProxyOutcome =
  /** The upstream's status, relayed to the client (or to nobody, if the client had gone). */
  | number
  /** Not answered yet: held by `pause`/`stall`, or on its way. */
  | "pending"
  /** Forwarded and completed upstream; the client's connection was then cut without a reply. */
  | "dropped"
  /** The client went away before its request was complete; nothing was forwarded. */
  | "aborted"
  /** The upstream could not be reached or failed mid-response. */
  | "upstream-error";

/** One request as the proxy saw it. */
export interface ProxyLogEntry {
  readonly seq: number;
  readonly method: string;
  readonly path: string;
  /** The `x-amz-target` header (DynamoDB operation), when present. */
  readonly target: string | undefined;
  /** Whether the request was held by `pause` or `stall` before it was forwarded. */
  held: boolean;
  /** Whether the client was still connected when the upstream answered. */
  clientGone: boolean;
  outcome: ProxyOutcome;
  /** The request body, kept only when the proxy had to read it whole (held or body-matched). */
  body: Buffer | undefined;
}

/** A running fault proxy; see {@link startFaultProxy}. */
export interface FaultProxy {
  /** `http://127.0.0.1:PORT`, to pass as `--endpoint` / `--kvstore-endpoint`. */
  readonly url: string;
  /** Every request so far, in arrival order (entries are updated as requests finish). */
  readonly log: readonly ProxyLogEntry[];
  /** Accept and hold every new request, forwarding none (a stopped gateway). */
  pause(): void;
  /**
   * Forward every held request, in arrival order, and clear `pause` and all `stall`
   * rules. A held request whose client has since gone is still forwarded when it had
   * arrived whole: a stopped gateway that resumes serves what is in its socket buffers.
   * Resolves when the upstream has answered all of them.
   */
  resume(): Promise<void>;
  /** Hold every matching request until {@link resume}. */
  stall(match: RequestMatch): void;
  /**
   * Forward the next matching request, let the upstream finish it, then destroy the
   * client's connection without sending the response (a lost reply). One request only.
   * Resolves with its log entry once the upstream has finished it.
   */
  dropReplyOnce(match: RequestMatch): Promise<ProxyLogEntry>;
  /**
   * Answer the next `times` matching requests (all of them by default) with DynamoDB's
   * throttling error (400 `ThrottlingException`) without forwarding them: a table over its
   * capacity. A pending {@link dropReplyOnce} for the same request comes first.
   */
  throttle(match: RequestMatch, times?: number): void;
  /** End every {@link throttle}. */
  unthrottle(): void;
  /** Resolves with the first logged request (past or future) matching `match`. */
  waitFor(match: RequestMatch, timeoutMs?: number): Promise<ProxyLogEntry>;
  /** How many requests are held right now. */
  heldCount(): number;
  /**
   * Rewrite the headers of every matching request before it is forwarded (a store that
   * ignores a header: strip it, and re-sign what the client signed). `fn` gets the
   * request's method, target and headers and returns the headers to send.
   */
  rewriteHeaders(
    match: RequestMatch,
    fn: (req: { method: string; path: string; headers: Record<string, string | string[] | undefined> }) => Record<string, string | string[] | undefined>,
  ): void;
  /** Log entries matching `match` (body rules test only bodies the proxy kept). */
  find(match: RequestMatch): ProxyLogEntry[];
  /** Stop listening, cut every connection, drop held requests. */
  close(): Promise<void>;
}

interface Held {
  readonly entry: ProxyLogEntry;
  readonly forward: () => Promise<void>;
}

interface DropRule {
  readonly match: RequestMatch;
  readonly done: (entry: ProxyLogEntry) => void;
}

interface Waiter {
  readonly match: RequestMatch;
  readonly done: (entry: ProxyLogEntry) => void;
}

function headMatches(m: RequestMatch, method: string, path: string, target: string | undefined): boolean {
  if (m.method !== undefined && m.method.toUpperCase() !== method) return false;
  if (m.path !== undefined && (typeof m.path === "string" ? m.path !== path : !m.path.test(path))) return false;
  if (m.target !== undefined && (typeof m.target === "string" ? m.target !== target : target === undefined || !m.target.test(target))) return false;
  return true;
}

function bodyMatches(m: RequestMatch, body: Buffer | undefined): boolean {
  if (m.body === undefined) return true;
  if (body === undefined) return false;
  const text = body.toString("utf8");
  return typeof m.body === "string" ? text.includes(m.body) : m.body.test(text);
}

function matches(m: RequestMatch, e: ProxyLogEntry): boolean {
  return headMatches(m, e.method, e.path, e.target) && bodyMatches(m, e.body);
}

/** The whole request body; `complete` is false when the client went away first. */
function readWhole(req: IncomingMessage): Promise<{ body: Buffer; complete: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const settle = (complete: boolean): void => {
      if (settled) return;
      settled = true;
      resolve({ body: Buffer.concat(chunks), complete });
    };
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => settle(true));
    req.on("aborted", () => settle(false));
    req.on("error", () => settle(false));
    req.on("close", () => settle(req.complete));
  });
}

/**
 * Start a fault proxy on 127.0.0.1 (a free port) in front of `upstream`
 * (`http://127.0.0.1:PORT`). Loopback only, on both sides.
 */
export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const up = new URL(upstream);
  if (up.protocol !== "http:" || (up.hostname !== "127.0.0.1" && up.hostname !== "localhost")) {
    throw new Error(`the fault proxy forwards to loopback http only, got ${upstream}`);
  }
  const agent = new Agent({ keepAlive: true });
  const log: ProxyLogEntry[] = [];
  const held: Held[] = [];
  const stalls: RequestMatch[] = [];
  const drops: DropRule[] = [];
  const waiters: Waiter[] = [];
  const rewrites: { match: RequestMatch; fn: Parameters<FaultProxy["rewriteHeaders"]>[1] }[] = [];
  const throttles: { match: RequestMatch; left: number }[] = [];
  let paused = false;
  let closed = false;

  const notify = (entry: ProxyLogEntry): void => {
    for (const w of [...waiters]) {
      if (matches(w.match, entry)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.done(entry);
      }
    }
  };

  /** Send the request upstream; relay, or drop, the answer. `body` undefined = stream from `req`. */
  const forward = (entry: ProxyLogEntry, req: IncomingMessage, res: ServerResponse, body: Buffer | undefined, drop: DropRule | undefined): Promise<void> =>
    new Promise<void>((resolve) => {
      const upReq = httpRequest({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers, agent }, (upRes) => {
        if (drop !== undefined) {
          // Let the upstream finish the request and its reply, then lose the reply.
          upRes.resume();
          upRes.on("end", () => {
            entry.outcome = "dropped";
            req.socket.destroy();
            drop.done(entry);
            resolve();
          });
          upRes.on("error", () => {
            entry.outcome = "upstream-error";
            req.socket.destroy();
            drop.done(entry);
            resolve();
          });
          return;
        }
        entry.outcome = upRes.statusCode ?? 0;
        if (res.destroyed || req.socket.destroyed) {
          entry.clientGone = true;
          upRes.resume();
          upRes.on("end", resolve);
          upRes.on("error", () => resolve());
          return;
        }
        res.writeHead(upRes.statusCode ?? 502, upRes.rawHeaders);
        upRes.pipe(res);
        upRes.on("end", resolve);
        upRes.on("error", () => {
          entry.outcome = "upstream-error";
          res.destroy();
          resolve();
        });
      });
      upReq.on("error", () => {
        entry.outcome = "upstream-error";
        if (drop !== undefined) drop.done(entry);
        if (!res.headersSent && !res.destroyed) res.writeHead(502).end();
        else res.destroy();
        resolve();
      });
      if (body !== undefined) upReq.end(body);
      else {
        req.pipe(upReq);
        req.on("aborted", () => upReq.destroy());
      }
    });

  const server = createServer((req, res) => {
    const method = (req.method ?? "GET").toUpperCase();
    const path = req.url ?? "/";
    const targetHeader = req.headers["x-amz-target"];
    const target = Array.isArray(targetHeader) ? targetHeader[0] : targetHeader;
    const entry: ProxyLogEntry = { seq: log.length, method, path, target, held: false, clientGone: false, outcome: "pending", body: undefined };
    log.push(entry);

    const head = (m: RequestMatch): boolean => headMatches(m, method, path, target);
    const throttled = drops.some((d) => head(d.match)) ? undefined : throttles.find((t) => t.left > 0 && head(t.match));
    if (throttled !== undefined) {
      throttled.left--;
      entry.outcome = 400;
      notify(entry);
      req.resume();
      req.on("end", () => {
        res.writeHead(400, { "Content-Type": "application/x-amz-json-1.0" });
        res.end(
          JSON.stringify({ __type: "com.amazonaws.dynamodb.v20120810#ThrottlingException", message: "Rate of requests exceeds the allowed throughput." }),
        );
      });
      return;
    }
    const rewrite = rewrites.find((r) => head(r.match));
    if (rewrite !== undefined) req.headers = rewrite.fn({ method, path, headers: { ...req.headers } }) as typeof req.headers;
    const needsBody = paused || stalls.some(head) || drops.some((d) => d.match.body !== undefined && head(d.match));
    if (!needsBody) {
      notify(entry);
      const drop = drops.find((d) => head(d.match));
      if (drop !== undefined) drops.splice(drops.indexOf(drop), 1);
      void forward(entry, req, res, undefined, drop);
      return;
    }
    void readWhole(req).then(({ body, complete }) => {
      entry.body = body;
      notify(entry);
      if (!complete) {
        entry.outcome = "aborted";
        return;
      }
      if (paused || stalls.some((m) => matches(m, entry))) {
        entry.held = true;
        held.push({ entry, forward: () => forward(entry, req, res, body, undefined) });
        return;
      }
      const drop = drops.find((d) => matches(d.match, entry));
      if (drop !== undefined) drops.splice(drops.indexOf(drop), 1);
      void forward(entry, req, res, body, drop);
    });
  });
  // A held request waits as long as the test needs; the test's own bounds end it.
  server.requestTimeout = 0;
  server.keepAliveTimeout = 30_000;
  const port = await listenLow(server);

  return {
    url: `http://127.0.0.1:${port}`,
    log,
    pause: () => {
      paused = true;
    },
    resume: async () => {
      paused = false;
      stalls.length = 0;
      const queue = held.splice(0, held.length);
      // In order, one at a time: the order a resumed gateway would serve them in.
      for (const h of queue) await h.forward();
    },
    stall: (match) => {
      stalls.push(match);
    },
    dropReplyOnce: (match) =>
      new Promise<ProxyLogEntry>((resolve) => {
        drops.push({ match, done: resolve });
      }),
    waitFor: (match, timeoutMs = 30_000) => {
      const seen = log.find((e) => matches(match, e));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<ProxyLogEntry>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(
            new Error(
              `no request matching ${JSON.stringify(match, (_k, v: unknown) => (v instanceof RegExp ? String(v) : v))} reached the proxy within ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
        const waiter: Waiter = {
          match,
          done: (e) => {
            clearTimeout(timer);
            resolve(e);
          },
        };
        waiters.push(waiter);
      });
    },
    throttle: (match, times = Infinity) => {
      throttles.push({ match, left: times });
    },
    unthrottle: () => {
      throttles.length = 0;
    },
    heldCount: () => held.length,
    rewriteHeaders: (match, fn) => {
      rewrites.push({ match, fn });
    },
    find: (match) => log.filter((e) => matches(match, e)),
    close: async () => {
      if (closed) return;
      closed = true;
      held.length = 0;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      agent.destroy();
    },
  };
}
