/**
 * Before authentication: a `Host` not its own gets 421 (DNS rebinding; probes exempt); a browser's cross-site request (CSRF)
 * is refused on every change and every `/state` and `/api` route; a body must have its client's type (a form needs a preflight).
 */
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import { ObjstateError } from "../errors.js";
import { header } from "./context.js";

/** A `--public-url`: an origin the server answers for. */
export interface PublicOrigin {
  /** `https://state.example.com` (default port left out, as browsers send `Origin`). */
  readonly origin: string;
  /** `state.example.com` or `state.example.com:8443`: the `Host` a client sends for it. */
  readonly host: string;
}

type RouteKind = "api" | "console" | "probe";

const LOOPBACK_NAMES = new Set(["localhost", "localhost."]);

/** Is `host` (a name or address, no port, IPv6 without brackets) a loopback one? */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  if (LOOPBACK_NAMES.has(h)) return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || h === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(h);
  return false;
}

/** Parse a `--public-url` once, at the edge: an `http(s)` origin without credentials, path, query or fragment. */
export function parsePublicUrl(text: string): PublicOrigin {
  const bad = (problem: string): ObjstateError => new ObjstateError("INVALID_PUBLIC_URL", `--public-url ${problem}`);
  const u = URL.canParse(text.trim()) ? new URL(text.trim()) : undefined;
  if (u === undefined)
    throw bad(`must be the URL clients use to reach this server, such as https://state.example.com or http://10.0.0.5:8080, got ${JSON.stringify(text)}`);
  if (u.protocol !== "http:" && u.protocol !== "https:") throw bad(`must start with http:// or https://, got ${JSON.stringify(u.protocol.replace(/:$/, ""))}`);
  if (u.username !== "" || u.password !== "") throw bad("must not carry a user name or password");
  if ((u.pathname !== "/" && u.pathname !== "") || u.search !== "" || u.hash !== "")
    throw bad(
      `is an origin (scheme, host and port), without a path, query or fragment: the state lives at /state/{workspace} under it; got ${JSON.stringify(text)}`,
    );
  return { origin: u.origin.toLowerCase(), host: u.host.toLowerCase() };
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export class RequestGate {
  private readonly publicByHost: ReadonlyMap<string, string>;
  private readonly publicOrigins: ReadonlySet<string>;
  /** `host:port` of the listen address when it is a specific one (not 0.0.0.0 or ::). */
  private listenHost: string | undefined;
  private readonly scheme: string;

  /** `tls`: the server speaks TLS itself (the scheme of a loopback or listen-address origin). */
  constructor(options: { readonly publicUrls?: readonly PublicOrigin[] | undefined; readonly tls: boolean }) {
    const list = options.publicUrls ?? [];
    this.publicByHost = new Map(list.map((p) => [p.host, p.origin]));
    this.publicOrigins = new Set(list.map((p) => p.origin));
    this.scheme = options.tls ? "https" : "http";
  }

  /** Tell the gate the address the server is bound to (its own host:port is then answered). */
  bound(address: string, port: number): void {
    if (address === "0.0.0.0" || address === "::" || isLoopbackHost(address)) return;
    this.listenHost = `${isIP(address) === 6 ? `[${address.toLowerCase()}]` : address.toLowerCase()}:${port}`;
  }

  /** The server's own origin for this request, or `MISDIRECTED_REQUEST` (421), `CROSS_SITE_REQUEST` (403), `UNSUPPORTED_MEDIA_TYPE` (415). */
  check(req: IncomingMessage, kind: RouteKind): string | undefined {
    if (kind === "probe") return undefined;
    const own = this.ownOrigin(header(req, "host"));
    // Console reads are navigations a link from anywhere may start; nothing else is a browser's cross-site business.
    if (!SAFE_METHODS.has(req.method ?? "GET") || kind === "api") this.checkSite(req, own);
    if (hasBody(req)) checkType(req, kind);
    return own;
  }

  /** The origin this request reached, when its Host is one the server answers for; else 421. */
  private ownOrigin(host: string | undefined): string {
    if (host === undefined || host === "") throw misdirected("the request has no Host header");
    const lower = host.trim().toLowerCase();
    const listed = this.publicByHost.get(lower);
    if (listed !== undefined) return listed;
    // The name without its port; an IPv6 address without its brackets.
    const name = lower.startsWith("[") ? (lower.slice(1).split("]")[0] as string) : lower.replace(/:[^:]*$/, "");
    if (lower === this.listenHost || isLoopbackHost(name)) return `${this.scheme}://${lower}`;
    throw misdirected(`Host ${JSON.stringify(host.slice(0, 200))} is not an address of this server`);
  }

  private checkSite(req: IncomingMessage, own: string): void {
    const site = header(req, "sec-fetch-site");
    if (site === "cross-site" || site === "same-site") throw crossSite(`the browser marked it ${site} (Sec-Fetch-Site)`);
    const origin = header(req, "origin");
    if (origin === undefined) return;
    const o = origin.trim().toLowerCase();
    if (o === own || this.publicOrigins.has(o)) return;
    throw crossSite("its Origin is not this server's");
  }
}

export function hasBody(req: IncomingMessage): boolean {
  if (req.headers["transfer-encoding"] !== undefined) return true;
  const length = header(req, "content-length");
  return length !== undefined && length.trim() !== "0";
}

function checkType(req: IncomingMessage, kind: RouteKind): void {
  const want = kind === "console" ? "application/x-www-form-urlencoded" : "application/json";
  const type = (header(req, "content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (type === want) return;
  throw new ObjstateError(
    "UNSUPPORTED_MEDIA_TYPE",
    `a request body here must be ${want}${type === "" ? ", and this one has no Content-Type" : `, not ${type.slice(0, 100)}`}${kind === "console" ? " (the console's own forms send it)" : " (Terraform and OpenTofu send it; a script must set Content-Type: application/json)"}`,
    { details: { reason: `content type: not ${want}` } },
  );
}

function misdirected(why: string): ObjstateError {
  return new ObjstateError(
    "MISDIRECTED_REQUEST",
    `${why}: this server answers only for the hosts of its --public-url list, its listen address and loopback names. If clients reach it by this name, add it: objstate serve --public-url https://NAME`,
  );
}

function crossSite(why: string): ObjstateError {
  return new ObjstateError(
    "CROSS_SITE_REQUEST",
    `refused a cross-site request: ${why}. Another web page may not use this server; a script that is not a browser sends neither Origin nor Sec-Fetch-Site`,
    { details: { reason: `cross-site: ${why}` } },
  );
}
