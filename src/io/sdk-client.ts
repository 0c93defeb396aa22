/**
 * The one place the AWS SDK clients (S3, DynamoDB, STS) are configured: every setting the SDK
 * would read from `~/.aws` or `AWS_*` that could change where a request goes or how long it
 * waits is set here, credentials come from objstate's own chain; each attempt has a connect
 * and an idle timeout, each request (all attempts) an overall deadline that grows with its
 * body; clients sign by the server's clock as last measured (server-clock.ts); the SDK's own
 * warnings are dropped (objstate reports its own errors).
 */
import type { Readable } from "node:stream";
import type { SdkCredentialsProvider } from "./sdk-credentials.js";
import { ObjstateError } from "../errors.js";
import { field, sdkErrorMessage } from "./sdk-errors.js";
import { serverClockFor } from "./server-clock.js";

/** How long requests may take (milliseconds). */
export interface Timeouts {
  /** To open a connection, per attempt. Default 5 s. */
  readonly connectMs: number;
  /** Per attempt: no byte sent or received for this long ends the attempt (retried). Default 20 s. */
  readonly idleMs: number;
  /** Per request, all attempts: then `ENDPOINT_TIMEOUT`; a second more per MiB of body. Default 60 s. */
  readonly requestMs: number;
}

export const DEFAULT_TIMEOUTS: Timeouts = Object.freeze({ connectMs: 5_000, idleMs: 20_000, requestMs: 60_000 });

/** The slowest average rate the deadline allows for a body: N bytes may take `requestMs + N / rate`. */
export const DEADLINE_BYTES_PER_SECOND = 1024 * 1024;

/** Attempts per request (the first one and two retries), whatever `AWS_MAX_ATTEMPTS` says. */
export const MAX_ATTEMPTS = 3;

type ServiceName = "object store" | "lock table" | "STS";

/** Complete timeouts from partial ones; a given `requestMs` also caps the other two (`INVALID_TIMEOUT`). */
export function resolveTimeouts(partial: Partial<Timeouts> | undefined): Timeouts {
  const given = partial ?? {};
  for (const [k, v] of Object.entries(given) as [keyof Timeouts, unknown][]) {
    if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || v <= 0)) {
      throw new ObjstateError("INVALID_TIMEOUT", `timeouts.${k} must be a positive number of milliseconds, got ${JSON.stringify(v)}`);
    }
  }
  const requestMs = given.requestMs ?? DEFAULT_TIMEOUTS.requestMs;
  return {
    requestMs,
    connectMs: given.connectMs ?? Math.min(DEFAULT_TIMEOUTS.connectMs, requestMs),
    idleMs: given.idleMs ?? Math.min(DEFAULT_TIMEOUTS.idleMs, requestMs),
  };
}

/** The overall deadline of a request that moves `bytes` bytes of body (ms). */
export function deadlineMs(timeouts: Timeouts, bytes = 0): number {
  return Math.ceil(timeouts.requestMs + (bytes / DEADLINE_BYTES_PER_SECOND) * 1000);
}

/** `1.5 s`, `60 s`, `250 ms`. */
function formatSeconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

const NODE_WARNING_SWITCH = "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED";

/**
 * Construct an SDK client without the SDK's Node-version warning (on Node 20, about releases
 * after early 2027): the switch is set just for this construction, the environment left as it was.
 */
export function withoutNodeVersionWarning<T>(make: () => T): T {
  const env = process.env;
  if (env[NODE_WARNING_SWITCH] !== undefined) return make();
  env[NODE_WARNING_SWITCH] = "true";
  try {
    return make();
  } finally {
    delete env[NODE_WARNING_SWITCH];
  }
}

/** Drops the SDK's messages; no `info`, or the SDK's logger middleware copies every response for it. */
const SILENT = Object.freeze({
  trace: () => undefined,
  debug: () => undefined,
  info: undefined as unknown as (...content: unknown[]) => void,
  warn: () => undefined,
  error: () => undefined,
});

/** The region every client signs with when none is set. */
export const DEFAULT_REGION = "us-east-1";

interface ClientTarget {
  readonly service: ServiceName;
  /** As configured (may carry user info; never shown). */
  readonly endpoint: string;
  readonly region: string | undefined;
  readonly credentials: SdkCredentialsProvider;
  readonly timeouts: Timeouts;
}

/** Constructor settings common to every SDK client: spread them first, then the service's own. */
export function sdkClientConfig(t: ClientTarget) {
  return {
    endpoint: t.endpoint,
    region: t.region ?? DEFAULT_REGION,
    credentials: t.credentials,
    // "auto" would ask the instance metadata service for the region (169.254.169.254).
    defaultsMode: "standard" as const,
    maxAttempts: MAX_ATTEMPTS,
    retryMode: "standard",
    useFipsEndpoint: false,
    useDualstackEndpoint: false,
    authSchemePreference: ["sigv4"],
    systemClockOffset: serverClockFor(t.endpoint).offsetMs,
    logger: SILENT,
    requestHandler: {
      connectionTimeout: t.timeouts.connectMs,
      // Inactivity, not a total: a large transfer that keeps moving is never cut off here.
      socketTimeout: t.timeouts.idleMs,
      logger: SILENT,
    },
  };
}

type Handler = (args: unknown) => Promise<unknown>;
/** The slice of an SDK client that {@link newSdkClient} works with. */
interface ArmableClient {
  send(command: unknown, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
  readonly middlewareStack: { add(middleware: (next: Handler) => Handler, options: { step: "initialize"; name: string; override?: boolean }): void };
  readonly config: { systemClockOffset?: number };
}

/**
 * A client made by `make` from the common settings, without the SDK's Node-version warning, with
 * its deadlines and the shared clock; `send` is wrapped on the instance, so helpers' calls (lib-storage) are too.
 */
export function newSdkClient<C extends object>(t: ClientTarget, make: (config: ReturnType<typeof sdkClientConfig>) => C): C {
  const client = withoutNodeVersionWarning(() => make(sdkClientConfig(t)));
  const c = client as ArmableClient;
  const send = c.send.bind(c);
  const where = { service: t.service, url: displayUrl(t.endpoint), timeouts: t.timeouts };
  c.send = (command, options) => sendWithin(send, command, options, where);
  const clock = serverClockFor(t.endpoint);
  c.middlewareStack.add(
    (next) => async (args) => {
      c.config.systemClockOffset = clock.offsetMs;
      try {
        return await next(args);
      } finally {
        const offset = c.config.systemClockOffset;
        if (typeof offset === "number" && Number.isFinite(offset)) clock.offsetMs = offset;
      }
    },
    { step: "initialize", name: "objstateServerClock", override: true },
  );
  return client;
}

type Where = { readonly service: ServiceName; readonly url: string; readonly timeouts: Timeouts };

/** The error of a request that ran past its deadline. */
function deadlineError(w: Where, limitMs: number): ObjstateError {
  const why = `no answer from the ${w.service} at ${w.url} within ${formatSeconds(limitMs)} (--timeout, or timeouts.requestMs): check that the server is running and not stalled (a full disk stalls Ceph), or allow more time`;
  return new ObjstateError("ENDPOINT_TIMEOUT", why, { details: { endpoint: w.url, service: w.service, timeoutMs: limitMs } });
}

/** The error of a request whose every attempt ran into the connect or idle timeout. */
function attemptsError(w: Where, e: unknown): ObjstateError {
  const connect = /establish a connection/i.test(sdkErrorMessage(e));
  const limit = connect ? w.timeouts.connectMs : w.timeouts.idleMs;
  const attempts = field(field(e, "$metadata"), "attempts");
  const waited = connect ? `could not connect within ${formatSeconds(limit)}` : `sent nothing for ${formatSeconds(limit)}`;
  const why = `no answer from the ${w.service} at ${w.url}: ${typeof attempts === "number" ? `each of ${attempts} attempts` : "the request"} ${waited} (--timeout, or timeouts.${connect ? "connectMs" : "idleMs"}): check that the server is running and not stalled`;
  return new ObjstateError("ENDPOINT_TIMEOUT", why, { cause: e, details: { endpoint: w.url, service: w.service, timeoutMs: limit } });
}

async function sendWithin(send: ArmableClient["send"], command: unknown, options: { abortSignal?: AbortSignal } | undefined, w: Where): Promise<unknown> {
  const limit = deadlineMs(w.timeouts, bodyLength(command));
  const controller = new AbortController();
  const outer = options?.abortSignal;
  if (outer !== undefined) {
    if (outer.aborted) controller.abort(outer.reason);
    else outer.addEventListener("abort", () => controller.abort(outer.reason), { once: true });
  }
  // Raced rather than left to the abort signal alone: the SDK may be sleeping between retries.
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = deadlineError(w, limit);
      controller.abort(err);
      reject(err);
    }, limit);
  });
  expired.catch(() => undefined);
  let out: unknown;
  try {
    out = await Promise.race([send(command, { ...options, abortSignal: controller.signal }), expired]);
  } catch (e) {
    if (e instanceof ObjstateError) throw e;
    if (controller.signal.reason instanceof ObjstateError) throw controller.signal.reason;
    if (isTimeout(e)) throw attemptsError(w, e);
    throw e;
  } finally {
    clearTimeout(timer);
  }
  guardBody(out, w);
  return out;
}

/** A response body still streaming after `send` returned gets a deadline of its own, by its length. */
function guardBody(out: unknown, w: Where): void {
  const body = field(out, "Body");
  if (!isStream(body)) return;
  const length = field(out, "ContentLength");
  const limit = deadlineMs(w.timeouts, typeof length === "number" ? length : 0);
  const destroy = body.destroy.bind(body);
  // The SDK ends an idle body with destroy(TimeoutError); the reader gets our error instead.
  body.destroy = ((err?: Error) => destroy(err !== undefined && isTimeout(err) ? attemptsError(w, err) : err)) as Readable["destroy"];
  const timer = setTimeout(() => body.destroy(deadlineError(w, limit)), limit);
  // A body nobody reads must not keep the process alive until its deadline.
  timer.unref();
  body.once("close", () => clearTimeout(timer));
}

function isStream(v: unknown): v is Readable {
  return ["destroy", "once", "read"].every((m) => typeof field(v, m) === "function");
}

/** Bytes of the request body of a command (`input.Body`), 0 when there is none or it is a stream. */
function bodyLength(command: unknown): number {
  const body = field(field(command, "input"), "Body");
  if (typeof body === "string") return Buffer.byteLength(body);
  if (body instanceof Uint8Array) return body.byteLength;
  return 0;
}

/** The HTTP handler's connect or idle timeout (not a cut connection, which it names so too for a retry). */
function isTimeout(e: unknown): boolean {
  const code = field(e, "code");
  return field(e, "name") === "TimeoutError" && !(typeof code === "string" && CUT_CODES.has(code));
}

/** Socket errors of a connection that was cut rather than left idle. */
const CUT_CODES = new Set(["ECONNRESET", "EPIPE", "ECONNREFUSED", "ECONNABORTED"]);

/** The endpoint for messages: without user info, without a trailing slash. */
export function displayUrl(endpoint: string): string {
  try {
    const u = new URL(endpoint);
    u.username = "";
    u.password = "";
    return u.toString().replace(/\/+$/, "");
  } catch {
    return endpoint;
  }
}
