import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ObjstateError } from "../errors.js";

/** Where an endpoint string points: an HTTP API, or a directory for the embedded drivers. */
export type ParsedEndpoint = { readonly kind: "http"; readonly url: string } | { readonly kind: "file"; readonly dir: string };
/** An endpoint as the drivers take it: parsed where the settings are resolved, or a library caller's text. */
export type EndpointInput = string | ParsedEndpoint;
type Of<K> = Extract<ParsedEndpoint, { kind: K }>;

/**
 * Interpret an endpoint the way docs/design.md §2 says: `http(s)://` as given, a bare host as
 * `https://host`, `file:///abs` and `file:rel` (relative to `cwd`) as a local directory.
 */
export function parseEndpoint(endpoint: string, cwd: string = process.cwd()): ParsedEndpoint {
  const e = endpoint.trim();
  const bad = (why: string, cause?: unknown): ObjstateError => new ObjstateError("INVALID_ENDPOINT", `endpoint "${endpoint}" ${why}`, { cause });
  const paths = "(expected file:///absolute/path or file:relative/path)";
  if (/^file:\/\//i.test(e)) {
    try {
      return { kind: "file", dir: fileURLToPath(e) };
    } catch (cause) {
      throw bad(`is not a valid file URL ${paths}`, cause);
    }
  }
  if (/^file:/i.test(e)) {
    let rest: string;
    try {
      rest = decodeURIComponent(e.slice("file:".length));
    } catch (cause) {
      throw bad("is not a valid file URL: a % must start an escape such as %20 (write %25 for a literal %)", cause);
    }
    if (rest === "") throw bad(`names no directory ${paths}`);
    return { kind: "file", dir: path.resolve(cwd, rest) };
  }
  if (/^https?:\/\//i.test(e)) return { kind: "http", url: e.replace(/\/+$/, "") };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(e)) throw bad("has an unsupported scheme (expected http://, https://, file: or a bare host)");
  return { kind: "http", url: `https://${e.replace(/\/+$/, "")}` };
}

/** `endpoint` parsed, unless it already is. */
export function parsedEndpoint(endpoint: EndpointInput, cwd?: string): ParsedEndpoint {
  return typeof endpoint === "string" ? parseEndpoint(endpoint, cwd) : endpoint;
}

/** {@link parsedEndpoint}, or `INVALID_ENDPOINT` when it is not the `kind` that `driver` needs. */
export function endpointOfKind<K extends ParsedEndpoint["kind"]>(endpoint: EndpointInput, kind: K, driver: string, cwd?: string): Of<K> {
  const p = parsedEndpoint(endpoint, cwd);
  if (p.kind === kind) return p as Of<K>;
  const text = typeof endpoint === "string" ? endpoint : p.kind === "http" ? p.url : pathToFileURL(p.dir).href;
  throw new ObjstateError("INVALID_ENDPOINT", `${driver} needs ${kind === "http" ? "an http(s)" : "a file:"} endpoint, got "${text}"`);
}

/** What to say when `url` (https) turned out to be plain HTTP: the http:// URL to use instead. */
export function plainHttpAdvice(url: string): string {
  const plain = url.replace(/^https:/i, "http:");
  return `the server speaks plain HTTP, not TLS (an endpoint without a scheme means https://): use ${plain}`;
}
