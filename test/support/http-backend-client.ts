/**
 * A replay of the tool's http backend client (hashicorp/terraform and opentofu/opentofu,
 * internal/backend/remote-state/http/client.go), request for request: the same methods,
 * headers (Content-Type, Content-MD5, Basic auth), `?ID=` on writes under a lock, the lock
 * info bodies, the status codes it accepts, and go-retryablehttp's retries (network errors,
 * 429, 5xx except 501), with short waits so tests stay fast. `bases` are tried round-robin:
 * one request to one replica, the next to the other.
 */
import { createHash, randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

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

export interface ClientOptions {
  /** Server base URLs; requests go round-robin over them. */
  readonly bases: readonly string[];
  readonly workspace?: string;
  readonly username?: string;
  readonly password?: string;
  /** `opentofu`: no GET before LOCK, and its UNLOCK body (`{"ID": …}` on force-unlock). */
  readonly flavour?: "terraform" | "opentofu";
  /** Extra TLS options (ca, cert, key). */
  readonly tls?: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer };
  /** Retries (go-retryablehttp's default is 2). */
  readonly retries?: number;
  /** Every request sent, for the tests that replay sequences. */
  readonly trace?: string[];
  /** `lock_method = POST` / `unlock_method = DELETE` on `{address}/lock`. */
  readonly lockStyle?: "custom" | "post-delete";
}

const md5b64 = (b: Buffer): string => createHash("md5").update(b).digest("base64");

export class HttpBackendClient {
  private next = 0;
  lockID = "";
  jsonLockInfo: Buffer | undefined;

  constructor(readonly options: ClientOptions) {}

  private base(): string {
    const b = this.options.bases[this.next % this.options.bases.length] as string;
    this.next += 1;
    return b;
  }

  private get address(): string {
    return `/state/${encodeURIComponent(this.options.workspace ?? "default")}`;
  }

  /** One request as httpClient.httpRequest makes it, with retryablehttp's retry policy. */
  async send(method: string, path: string, data: Buffer | undefined): Promise<Reply> {
    const retries = this.options.retries ?? 2;
    for (let attempt = 0; ; attempt++) {
      const base = this.base();
      this.options.trace?.push(`${method} ${path}${data === undefined ? "" : ` (${data.length} bytes)`}`);
      try {
        const reply = await rawRequest(base, method, path, data, this.options);
        const retryable = reply.status === 429 || (reply.status >= 500 && reply.status !== 501);
        if (!retryable || attempt >= retries) return reply;
      } catch (e) {
        if (attempt >= retries) throw e;
      }
      await new Promise((r) => setTimeout(r, 20 * (attempt + 1)));
    }
  }

  /** `Get()`: null for 204/404 or an empty body. */
  async get(): Promise<Buffer | null> {
    const r = await this.send("GET", this.address, undefined);
    if (r.status === 204 || r.status === 404) return null;
    if (r.status !== 200) throw new Error(`GET: HTTP ${r.status} ${r.body.toString()}`);
    if (r.body.length === 0) return null;
    const header = r.headers["content-md5"];
    if (typeof header === "string" && header !== md5b64(r.body)) throw new Error("GET: body does not match Content-MD5");
    return r.body;
  }

  /** `Put(data)`: POST with ?ID when this client holds the lock; 200/201/204 is success. */
  async put(data: Buffer): Promise<Reply> {
    const path = this.lockID === "" ? this.address : `${this.address}?ID=${encodeURIComponent(this.lockID)}`;
    return this.send("POST", path, data);
  }

  /** `Lock(info)`: 200 → held; 409/423 → the holder's info parsed from the body. */
  async lock(operation: string, who = "tester@host"): Promise<{ ok: true; id: string } | { ok: false; status: number; holder: ClientLockInfo | undefined }> {
    this.lockID = "";
    const info: ClientLockInfo = { ID: randomUUID(), Operation: operation, Info: "", Who: who, Version: "1.9.0", Created: new Date().toISOString(), Path: "" };
    const json = Buffer.from(JSON.stringify(info));
    const post = this.options.lockStyle === "post-delete";
    const r = await this.send(post ? "POST" : "LOCK", post ? `${this.address}/lock` : this.address, json);
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
   * statemgr.LockWithContext's wait: retry while the answer is a lock error whose holder info
   * has an ID, until `timeoutMs`.
   */
  async lockWithTimeout(operation: string, timeoutMs: number): Promise<{ ok: true; id: string; waited: number } | { ok: false; status: number; holder: ClientLockInfo | undefined }> {
    const started = Date.now();
    let delay = 50;
    for (;;) {
      const r = await this.lock(operation);
      if (r.ok) return { ...r, waited: Date.now() - started };
      if (r.holder === undefined || r.holder.ID === "" || Date.now() - started > timeoutMs) return r;
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(delay * 2, 400);
    }
  }

  /**
   * `Unlock(id)`: terraform sends the bytes it locked with (empty for its force-unlock);
   * OpenTofu sends lock info with the ID (the other fields empty on a force-unlock).
   */
  async unlock(forceId?: string): Promise<Reply> {
    let body: Buffer;
    if (this.options.flavour === "opentofu") {
      const base = this.jsonLockInfo === undefined ? { ID: "", Operation: "", Info: "", Who: "", Version: "", Created: "0001-01-01T00:00:00Z", Path: "" } : (JSON.parse(this.jsonLockInfo.toString()) as ClientLockInfo);
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

/** One HTTP request with the headers the tool's client sets. */
export function rawRequest(base: string, method: string, path: string, data: Buffer | undefined, options: Pick<ClientOptions, "username" | "password" | "tls"> = {}, extraHeaders: Record<string, string> = {}): Promise<Reply> {
  const url = new URL(path, base);
  const headers: Record<string, string> = { ...extraHeaders };
  if (options.username !== undefined) headers["Authorization"] = `Basic ${Buffer.from(`${options.username}:${options.password ?? ""}`).toString("base64")}`;
  if (data !== undefined) {
    headers["Content-Type"] ??= "application/json";
    headers["Content-Length"] = String(data.length);
    headers["Content-MD5"] ??= md5b64(data);
  }
  const make = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<Reply>((resolve, reject) => {
    const req = make(url, { method, headers, agent: false, ...(options.tls ?? {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
      res.on("error", reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end(data);
  });
}

/** A v4 state of the tool (as it writes them), with `serial`, `lineage` and outputs. */
export function toolState(serial: number, lineage: string, outputs: Record<string, { value: unknown; type: unknown; sensitive?: boolean }> = {}, resources: unknown[] = []): Buffer {
  return Buffer.from(`${JSON.stringify({ version: 4, terraform_version: "1.9.0", serial, lineage, outputs, resources, check_results: null }, null, 2)}\n`);
}
