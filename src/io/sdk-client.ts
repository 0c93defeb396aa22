/**
 * The one place the AWS SDK clients (S3, DynamoDB, STS) are configured, so that they all
 * behave the same way:
 *
 * - **Only where configured.** Every setting the SDK would otherwise read from
 *   `~/.aws/config` or `AWS_*` variables and that could change where a request goes or how
 *   long it waits is set explicitly: endpoint, region, defaults mode (`auto` would ask the
 *   instance metadata service for the region), retries, FIPS and dual-stack endpoints,
 *   auth scheme. Credentials always come from objstate's own chain, so the SDK's own
 *   credential search (and its metadata-service lookups) never runs.
 * - **Deadlines.** Per attempt: a connect timeout and an inactivity (idle) timeout, after
 *   which the SDK retries. Per request (all attempts and the waits between them): an
 *   overall deadline, longer for bodies by {@link DEADLINE_BYTES_PER_SECOND}, so that a
 *   large transfer that keeps moving is never cut off but a stalled server always ends
 *   in an `ENDPOINT_TIMEOUT` error naming the endpoint.
 * - **One clock.** Each client signs with the server's clock offset as last measured by
 *   any client of the same server (server-clock.ts).
 * - **Silence.** A logger that drops the SDK's own warnings: objstate reports problems as
 *   its own errors, never as raw SDK text on stderr.
 */
import type { Readable } from "node:stream";
import type { SdkCredentialsProvider } from "./sdk-credentials.js";
import { ObjstateError } from "../errors.js";
import { serverClockFor, type ServerClock } from "./server-clock.js";

/** How long requests may take (milliseconds). */
export interface Timeouts {
  /** To open a TCP (or TLS) connection, per attempt. Default 5 s. */
  readonly connectMs: number;
  /** Per attempt: no byte sent or received for this long ends the attempt, which is retried. Default 20 s. */
  readonly idleMs: number;
  /**
   * Per request, all attempts included: past this, the request fails with
   * `ENDPOINT_TIMEOUT`. A request that carries a body gets one more second per MiB of it
   * (see {@link DEADLINE_BYTES_PER_SECOND}). Default 60 s.
   */
  readonly requestMs: number;
}

/** The defaults of {@link Timeouts}. */
export const DEFAULT_TIMEOUTS: Timeouts = Object.freeze({ connectMs: 5_000, idleMs: 20_000, requestMs: 60_000 });

/**
 * The slowest average transfer rate the deadline allows for a body (1 MiB/s): a request
 * moving N bytes may take `requestMs + N / rate`. Slower links need a longer timeout.
 */
export const DEADLINE_BYTES_PER_SECOND = 1024 * 1024;

/** Attempts per request (the first one and two retries), whatever `AWS_MAX_ATTEMPTS` says. */
export const MAX_ATTEMPTS = 3;

/** Which server a client talks to, for messages. */
export type ServiceName = "object store" | "lock table" | "STS";

/**
 * Complete timeouts from partial ones: defaults for what is missing; a given `requestMs`
 * also caps the other two (a 5-second deadline makes no use of a 20-second idle timeout).
 * @throws ObjstateError `INVALID_TIMEOUT` for a value that is not a positive number.
 */
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
export function formatSeconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

const NODE_WARNING_SWITCH = "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED";

/**
 * Construct an SDK client without the SDK's Node-version warning (on Node 20 it warns,
 * once per process, that its releases after early 2027 need Node 22). The pinned SDK runs
 * on Node 20; a program that merely uses objstate did nothing to be warned about. The
 * SDK reads its switch when the first client is built, so it is set just for this
 * construction and put back: the caller's environment is left as it was.
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

/**
 * Drops the SDK's own messages. Its `info` is absent on purpose: unless a logger lacks one,
 * the SDK's logger middleware builds a redacted copy of every response to pass to it.
 */
const SILENT = Object.freeze({
  trace: () => undefined,
  debug: () => undefined,
  info: undefined as unknown as (...content: unknown[]) => void,
  warn: () => undefined,
  error: () => undefined,
});

/** The region every client signs with when none is set. */
export const DEFAULT_REGION = "us-east-1";

/** What a client needs to know about its server. */
export interface ClientTarget {
  readonly service: ServiceName;
  /** The endpoint URL as configured (may carry user info; never shown). */
  readonly endpoint: string;
  readonly region: string | undefined;
  readonly credentials: SdkCredentialsProvider;
  readonly timeouts: Timeouts;
}

/**
 * Constructor settings common to every SDK client objstate creates. Spread them first
 * and add the service's own (`forcePathStyle`, …).
 */
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

/** The slice of an SDK client that {@link armClient} works with. */
interface ArmableClient {
  send(command: unknown, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
  readonly middlewareStack: {
    add(
      middleware: (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown>,
      options: { step: "initialize"; name: string; override?: boolean },
    ): void;
  };
  readonly config: { systemClockOffset?: number };
}

/**
 * Give a client built from {@link sdkClientConfig} its deadlines and the shared server
 * clock. Every `send` goes through the deadline, also those of helpers that call the
 * client themselves (lib-storage's multipart `Upload`), which is why `send` is wrapped
 * on the instance rather than at each call site.
 */
export function armClient(client: object, t: Pick<ClientTarget, "service" | "endpoint" | "timeouts">): void {
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
        publish(clock, c.config.systemClockOffset);
      }
    },
    { step: "initialize", name: "objstateServerClock", override: true },
  );
}

function publish(clock: ServerClock, offset: number | undefined): void {
  if (typeof offset === "number" && Number.isFinite(offset)) clock.offsetMs = offset;
}

interface Where {
  readonly service: ServiceName;
  readonly url: string;
  readonly timeouts: Timeouts;
}

/** The error of a request that ran past its deadline. */
function deadlineError(w: Where, limitMs: number): ObjstateError {
  return new ObjstateError(
    "ENDPOINT_TIMEOUT",
    `no answer from the ${w.service} at ${w.url} within ${formatSeconds(limitMs)} (--timeout, or timeouts.requestMs): check that the server is running and not stalled (a full disk stalls Ceph), or allow more time`,
    { details: { endpoint: w.url, service: w.service, timeoutMs: limitMs } },
  );
}

/** The error of a request whose every attempt ran into the connect or idle timeout. */
function attemptsError(w: Where, e: unknown): ObjstateError {
  const connect = /establish a connection/i.test(messageOf(e));
  const limit = connect ? w.timeouts.connectMs : w.timeouts.idleMs;
  const attempts = attemptsOf(e);
  const waited = connect ? `could not connect within ${formatSeconds(limit)}` : `sent nothing for ${formatSeconds(limit)}`;
  return new ObjstateError(
    "ENDPOINT_TIMEOUT",
    `no answer from the ${w.service} at ${w.url}: ${attempts === undefined ? "the request" : `each of ${attempts} attempts`} ${waited} (--timeout, or timeouts.${connect ? "connectMs" : "idleMs"}): check that the server is running and not stalled`,
    { cause: e, details: { endpoint: w.url, service: w.service, timeoutMs: limit } },
  );
}

async function sendWithin(send: ArmableClient["send"], command: unknown, options: { abortSignal?: AbortSignal } | undefined, w: Where): Promise<unknown> {
  const limit = deadlineMs(w.timeouts, bodyLength(command));
  const controller = new AbortController();
  const outer = options?.abortSignal;
  if (outer !== undefined) {
    if (outer.aborted) controller.abort(outer.reason);
    else outer.addEventListener("abort", () => controller.abort(outer.reason), { once: true });
  }
  let expire: () => void = () => undefined;
  // Raced rather than left to the abort signal alone: the SDK may be sleeping between
  // retries, and an abort is only noticed when the next attempt starts.
  const expired = new Promise<never>((_, reject) => {
    expire = () => {
      const err = deadlineError(w, limit);
      controller.abort(err);
      reject(err);
    };
  });
  expired.catch(() => undefined);
  const timer = setTimeout(() => expire(), limit);
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

/**
 * A response body still streaming after `send` returned (GetObject) gets a deadline of
 * its own, scaled by its length, and its timeouts become `ENDPOINT_TIMEOUT` errors: the
 * reader sees them as the stream's error.
 */
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
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as Readable).destroy === "function" &&
    typeof (v as Readable).once === "function" &&
    typeof (v as Readable).read === "function"
  );
}

/** Bytes of the request body of a command (`input.Body`), 0 when there is none or it is a stream. */
function bodyLength(command: unknown): number {
  const body = field(field(command, "input"), "Body");
  if (typeof body === "string") return Buffer.byteLength(body);
  if (body instanceof Uint8Array) return body.byteLength;
  return 0;
}

/**
 * The HTTP handler's connect or idle timeout. Only the handler names errors so (servers'
 * timeouts are `RequestTimeout…`); one that struck while a body was being read carries
 * the status of the headers that came before it.
 */
function isTimeout(e: unknown): boolean {
  // The handler also names a connection the server cut ("socket hang up", ECONNRESET) a
  // TimeoutError, so that the SDK retries it: that is a lost reply, not a timeout, and is
  // left to the drivers' network mapping (and the streamed upload's own retries).
  const code = field(e, "code");
  return field(e, "name") === "TimeoutError" && !(typeof code === "string" && CUT_CODES.has(code));
}

/** Socket errors of a connection that was cut rather than left idle. */
const CUT_CODES = new Set(["ECONNRESET", "EPIPE", "ECONNREFUSED", "ECONNABORTED"]);

function attemptsOf(e: unknown): number | undefined {
  const n = field(field(e, "$metadata"), "attempts");
  return typeof n === "number" ? n : undefined;
}

function messageOf(e: unknown): string {
  const m = field(e, "message");
  return typeof m === "string" ? m : "";
}

function field(v: unknown, name: string): unknown {
  return typeof v === "object" && v !== null && name in v ? (v as Record<string, unknown>)[name] : undefined;
}

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
