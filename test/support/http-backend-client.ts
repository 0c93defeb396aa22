/**
 * A replay of the tool's http backend client (hashicorp/terraform and opentofu/opentofu,
 * internal/backend/remote-state/http/client.go), request for request: the same methods,
 * headers (Content-Type, Content-MD5, Basic auth), `?ID=` on writes under a lock, the lock
 * info bodies and the status codes it accepts. It behaves like the real one by default:
 * - go-retryablehttp as the http backend sets it up (retry_max 2, retry_wait_min 1 s,
 *   retry_wait_max 30 s): a request is retried after a network error or a 429 / 5xx other
 *   than 501, after 1 s and then 2 s (`Retry-After` honoured on 429 and 503), and given up
 *   as an error after the third attempt. The decision is made on the status alone, before
 *   the caller reads the body: a body that fails to arrive is an error, never retried.
 *   A certificate that does not verify is not retried;
 * - statemgr.LockWithContext (`-lock-timeout`): the same lock info (one ID) sent again after
 *   1 s, 2 s, 4 s … up to 16 s between attempts, while the answer names a holder with an ID;
 * - no request timeout; keep-alive connections (one agent per client, reused), and a GET
 *   sent again at once when a reused connection turns out closed (net/http's own retry of
 *   a replayable request);
 * - a GET's Content-MD5 is taken as the digest, not checked against the body.
 * Waits are shortened only by an explicit {@link ClientOptions.timings}, with the test's
 * reason beside it. `bases` are tried round-robin, attempt by attempt: a load balancer
 * over replicas (each attempt, a retry too, may reach another one).
 */
import { createHash, randomUUID } from "node:crypto";
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/** The tool's lock info (statemgr.LockInfo marshalled). */
export interface ClientLockInfo {
  ID: string;
  Operation: string;
  Info: string;
  Who: string;
  Version: string;
  Created: string;
  Path: string;
}

export interface Reply {
  readonly status: number;
  readonly body: Buffer;
  readonly headers: Record<string, string | string[] | undefined>;
}

/** The waits of the real clients, in ms (see the module comment). */
export interface ClientTimings {
  /** go-retryablehttp's RetryWaitMin (the backend's retry_wait_min): the first wait; each next one doubles. */
  readonly retryWaitMinMs: number;
  /** RetryWaitMax (retry_wait_max): the longest wait between attempts. */
  readonly retryWaitMaxMs: number;
  /** LockWithContext's first wait between lock attempts; each next one doubles. */
  readonly lockWaitMinMs: number;
  /** LockWithContext's longest wait between lock attempts. */
  readonly lockWaitMaxMs: number;
}

/** Terraform's and OpenTofu's defaults. */
export const REAL_TIMINGS: ClientTimings = { retryWaitMinMs: 1000, retryWaitMaxMs: 30_000, lockWaitMinMs: 1000, lockWaitMaxMs: 16_000 };

export interface ClientOptions {
  /** Server base URLs; attempts go round-robin over them. */
  readonly bases: readonly string[];
  readonly workspace?: string;
  readonly username?: string;
  readonly password?: string;
  /** `opentofu`: no GET before LOCK, and its UNLOCK body (`{"ID": …}` on force-unlock). */
  readonly flavour?: "terraform" | "opentofu";
  /** Extra TLS options (ca, cert, key). */
  readonly tls?: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer };
  /** Retries after the first attempt (the backend's retry_max, default 2). */
  readonly retries?: number;
  /** Waits other than the real clients' ({@link REAL_TIMINGS}); say why where you pass them. */
  readonly timings?: Partial<ClientTimings>;
  /** Every attempt sent, for the tests that replay sequences. */
  readonly trace?: string[];
  /** `lock_method = POST` / `unlock_method = DELETE` on `{address}/lock`. */
  readonly lockStyle?: "custom" | "post-delete";
}

/** The error of a request given up on (retryablehttp's "giving up after N attempt(s)"). */
export class GaveUp extends Error {
  constructor(
    message: string,
    /** The last attempt's status; undefined when it failed without one. */
    readonly status: number | undefined,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/** A body that did not arrive whole after its status did (never retried). */
export class BodyReadError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

const md5b64 = (b: Buffer): string => createHash("md5").update(b).digest("base64");
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Node's codes for a certificate that does not verify: retryablehttp does not retry those. */
const CERT_ERRORS = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** retryablehttp's DefaultBackoff: `Retry-After` on 429/503, else min × 2^attempt, at most max. */
function backoff(t: ClientTimings, attempt: number, res: IncomingMessage | undefined): number {
  if (res !== undefined && (res.statusCode === 429 || res.statusCode === 503)) {
    const h = res.headers["retry-after"];
    const v = Array.isArray(h) ? h[0] : h;
    if (v !== undefined && /^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
    const at = v === undefined ? NaN : Date.parse(v);
    if (!Number.isNaN(at)) return Math.max(0, at - Date.now());
  }
  return Math.min(t.retryWaitMinMs * 2 ** attempt, t.retryWaitMaxMs);
}

export class HttpBackendClient {
  private next = 0;
  private agent: HttpAgent;
  lockID = "";
  jsonLockInfo: Buffer | undefined;
  readonly timings: ClientTimings;

  constructor(readonly options: ClientOptions) {
    this.timings = { ...REAL_TIMINGS, ...options.timings };
    this.agent = this.newAgent();
  }

  private newAgent(): HttpAgent {
    const https = this.options.bases.some((b) => b.startsWith("https:"));
    return https ? new HttpsAgent({ keepAlive: true, ...(this.options.tls ?? {}) }) : new HttpAgent({ keepAlive: true });
  }

  /** Close the kept-alive connections (the client stays usable). */
  close(): void {
    this.agent.destroy();
  }

  /**
   * Cut every connection of this client now, requests in flight included (they fail with a
   * network error, which the client retries): a connection a proxy or a load balancer drops.
   */
  dropConnections(): void {
    this.agent.destroy();
    this.agent = this.newAgent();
  }

  /** The base the next attempt goes to (a test arms a fault there). */
  get nextBase(): string {
    return this.options.bases[this.next % this.options.bases.length] as string;
  }

  private base(): string {
    const b = this.options.bases[this.next % this.options.bases.length] as string;
    this.next += 1;
    return b;
  }

  private get address(): string {
    return `/state/${encodeURIComponent(this.options.workspace ?? "default")}`;
  }

  /**
   * One request as httpClient.httpRequest makes it, with retryablehttp's policy: resolves
   * with the answer (its body read) or rejects with {@link GaveUp} / {@link BodyReadError}.
   */
  async send(method: string, path: string, data: Buffer | undefined): Promise<Reply> {
    const retries = this.options.retries ?? 2;
    for (let attempt = 0; ; attempt++) {
      const base = this.base();
      this.options.trace?.push(`${method} ${path}${data === undefined ? "" : ` (${data.length} bytes)`}`);
      let res: IncomingMessage | undefined;
      let error: unknown;
      try {
        res = await this.attempt(base, method, path, data);
      } catch (e) {
        if (CERT_ERRORS.has((e as NodeJS.ErrnoException).code ?? "")) throw e;
        error = e;
      }
      const status = res?.statusCode ?? 0;
      const retryable = res === undefined || status === 0 || status === 429 || (status >= 500 && status !== 501);
      if (res !== undefined && !retryable) return readReply(res);
      // A response that is retried is drained and dropped, whatever its body does.
      res?.resume();
      if (attempt >= retries) {
        throw new GaveUp(
          `${method} ${path} giving up after ${attempt + 1} attempt(s)${res === undefined ? `: ${(error as Error).message}` : ` (last status ${status})`}`,
          res?.statusCode,
          error,
        );
      }
      await sleep(backoff(this.timings, attempt, res));
    }
  }

  /** One attempt: resolves at the answer's headers. A GET on a kept-alive connection found closed is sent again at once (net/http). */
  private async attempt(base: string, method: string, path: string, data: Buffer | undefined): Promise<IncomingMessage> {
    try {
      return await this.request(base, method, path, data);
    } catch (e) {
      if (method === "GET" && data === undefined && (e as { reused?: boolean }).reused === true) return this.request(base, method, path, data);
      throw e;
    }
  }

  private request(base: string, method: string, path: string, data: Buffer | undefined): Promise<IncomingMessage> {
    const url = new URL(path, base);
    const headers = toolHeaders(data, this.options);
    const make = url.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = make(url, { method, headers, agent: this.agent, ...(this.options.tls ?? {}) }, resolve);
      req.on("error", (e: Error & { reused?: boolean }) => {
        if (req.reusedSocket) e.reused = true;
        reject(e);
      });
      req.end(data);
    });
  }

  /** `Get()`: null for 204/404 or an empty body; Content-MD5 is taken, not checked. */
  async get(): Promise<Buffer | null> {
    const r = await this.send("GET", this.address, undefined);
    if (r.status === 204 || r.status === 404) return null;
    if (r.status !== 200) throw new Error(`GET: HTTP ${r.status} ${r.body.toString()}`);
    if (r.body.length === 0) return null;
    return r.body;
  }

  /** `Put(data)`: POST with ?ID when this client holds the lock; 200/201/204 is success. */
  async put(data: Buffer): Promise<Reply> {
    const path = this.lockID === "" ? this.address : `${this.address}?ID=${encodeURIComponent(this.lockID)}`;
    return this.send("POST", path, data);
  }

  /** The lock info the tool makes for an operation (statemgr.NewLockInfo): a new ID each time. */
  newLockInfo(operation: string, who = "tester@host"): ClientLockInfo {
    return { ID: randomUUID(), Operation: operation, Info: "", Who: who, Version: "1.9.0", Created: new Date().toISOString(), Path: "" };
  }

  /** `Lock(info)`: 200 → held; 409/423 → the holder's info parsed from the body. */
  async lock(operation: string, who = "tester@host"): Promise<{ ok: true; id: string } | { ok: false; status: number; holder: ClientLockInfo | undefined }> {
    return this.lockWith(this.newLockInfo(operation, who));
  }

  /** `Lock(info)` with given lock info (LockWithContext sends the same one every attempt). */
  async lockWith(info: ClientLockInfo): Promise<{ ok: true; id: string } | { ok: false; status: number; holder: ClientLockInfo | undefined }> {
    this.lockID = "";
    const json = Buffer.from(JSON.stringify(info));
    const post = this.options.lockStyle === "post-delete";
    let r: Reply;
    try {
      r = await this.send(post ? "POST" : "LOCK", post ? `${this.address}/lock` : this.address, json);
    } catch (e) {
      // "already locked, failed to read body": a lock error without info.
      if (e instanceof BodyReadError && (e.status === 409 || e.status === 423)) return { ok: false, status: e.status, holder: undefined };
      throw e;
    }
    if (r.status === 200) {
      this.lockID = info.ID;
      this.jsonLockInfo = json;
      return { ok: true, id: info.ID };
    }
    let holder: ClientLockInfo | undefined;
    if (r.status === 409 || r.status === 423) {
      try {
        holder = JSON.parse(r.body.toString()) as ClientLockInfo;
      } catch {
        holder = undefined;
      }
    }
    return { ok: false, status: r.status, holder };
  }

  /**
   * statemgr.LockWithContext (`-lock-timeout`): the same lock info again while the answer is
   * a lock error whose holder has an ID, waiting 1 s, 2 s, 4 s … 16 s between attempts, until
   * `timeoutMs` has passed (a wait the deadline cuts short ends it).
   */
  async lockWithTimeout(
    operation: string,
    timeoutMs: number,
    who?: string,
  ): Promise<{ ok: true; id: string; waited: number; attempts: number } | { ok: false; status: number; holder: ClientLockInfo | undefined; attempts: number }> {
    const info = this.newLockInfo(operation, who);
    const started = Date.now();
    let delay = this.timings.lockWaitMinMs;
    for (let attempts = 1; ; attempts++) {
      const r = await this.lockWith(info);
      if (r.ok) return { ...r, waited: Date.now() - started, attempts };
      if (r.holder === undefined || typeof r.holder.ID !== "string" || r.holder.ID === "") return { ...r, attempts };
      const left = started + timeoutMs - Date.now();
      if (left <= 0) return { ...r, attempts };
      if (delay > left) {
        await sleep(left);
        return { ...r, attempts };
      }
      await sleep(delay);
      if (delay < this.timings.lockWaitMaxMs) delay = Math.min(delay * 2, this.timings.lockWaitMaxMs);
    }
  }

  /**
   * `Unlock(id)`: terraform sends the bytes it locked with (empty for its force-unlock);
   * OpenTofu sends lock info with the ID (the other fields empty on a force-unlock).
   */
  async unlock(forceId?: string): Promise<Reply> {
    let body: Buffer;
    if (this.options.flavour === "opentofu") {
      const base =
        this.jsonLockInfo === undefined
          ? { ID: "", Operation: "", Info: "", Who: "", Version: "", Created: "0001-01-01T00:00:00Z", Path: "" }
          : (JSON.parse(this.jsonLockInfo.toString()) as ClientLockInfo);
      body = Buffer.from(JSON.stringify({ ...base, ID: forceId ?? this.lockID }));
    } else body = this.jsonLockInfo ?? Buffer.alloc(0);
    const del = this.options.lockStyle === "post-delete";
    return this.send(del ? "DELETE" : "UNLOCK", del ? `${this.address}/lock` : this.address, body);
  }

  /** `Delete()`. */
  async delete(): Promise<Reply> {
    return this.send("DELETE", this.address, undefined);
  }
}

/** The headers the tool's client sets on a request. */
function toolHeaders(
  data: Buffer | undefined,
  options: Pick<ClientOptions, "username" | "password">,
  extra: Record<string, string> = {},
): Record<string, string> {
  const headers: Record<string, string> = { ...extra };
  if (options.username !== undefined) headers["Authorization"] = `Basic ${Buffer.from(`${options.username}:${options.password ?? ""}`).toString("base64")}`;
  if (data !== undefined) {
    headers["Content-Type"] ??= "application/json";
    headers["Content-Length"] = String(data.length);
    headers["Content-MD5"] ??= md5b64(data);
  }
  return headers;
}

/** The whole answer; a body cut short is a {@link BodyReadError}. */
function readReply(res: IncomingMessage): Promise<Reply> {
  return new Promise<Reply>((resolve, reject) => {
    const status = res.statusCode ?? 0;
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => resolve({ status, body: Buffer.concat(chunks), headers: res.headers }));
    res.on("error", (e) => reject(new BodyReadError(`the body of an HTTP ${status} answer did not arrive whole: ${e.message}`, status)));
    res.on("aborted", () => reject(new BodyReadError(`the body of an HTTP ${status} answer did not arrive whole: the connection was cut`, status)));
  });
}

/** One HTTP request with the headers the tool's client sets, on a connection of its own, no retries. */
export function rawRequest(
  base: string,
  method: string,
  path: string,
  data: Buffer | undefined,
  options: Pick<ClientOptions, "username" | "password" | "tls"> = {},
  extraHeaders: Record<string, string> = {},
): Promise<Reply> {
  const url = new URL(path, base);
  const headers = toolHeaders(data, options, extraHeaders);
  const make = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<Reply>((resolve, reject) => {
    const req = make(url, { method, headers, agent: false, ...(options.tls ?? {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
      res.on("error", reject);
    });
    // A guard against a hung server, not a bound a test asserts: room for a large diff on a loaded machine.
    req.setTimeout(120_000, () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end(data);
  });
}

/** A v4 state of the tool (as it writes them), with `serial`, `lineage` and outputs. */
export function toolState(
  serial: number,
  lineage: string,
  outputs: Record<string, { value: unknown; type: unknown; sensitive?: boolean }> = {},
  resources: unknown[] = [],
): Buffer {
  return Buffer.from(`${JSON.stringify({ version: 4, terraform_version: "1.9.0", serial, lineage, outputs, resources, check_results: null }, null, 2)}\n`);
}
