/** Secret hygiene: credentials in URLs, signing material in foreign error text, objects that hold secrets. */
import { inspect } from "node:util";

export const REDACTED = "<redacted>";

// `scheme://userinfo@`; the userinfo stops at anything that ends an authority, so `a@b` in a path is left alone.
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>`]+@/gi;

/** Text with the user info of every URL replaced: `http://<redacted>@host:9000` still says which host is meant. */
export function redactUrl(url: string): string {
  return url.replace(URL_USERINFO, `$1${REDACTED}@`);
}

// Signing material as SDKs and servers quote it: headers, presigned URLs' parameters, an Authorization header's parts.
const SIGNING: readonly [RegExp, string][] = [
  [/\b(Authorization\s*[:=]\s*)[^\r\n"]*/gi, `$1${REDACTED}`],
  [/\b(X-Amz-(?:Signature|Credential|Security-Token)|Credential|Signature|SecurityToken|Security-Token)(\s*[=:]\s*)[^\s,&;"'<>]+/gi, `$1$2${REDACTED}`],
];

/** Without URL credentials and request-signing material (signatures, credential scopes, session tokens). */
export function redactText(text: string): string {
  let out = redactUrl(text);
  for (const [re, to] of SIGNING) out = out.replace(re, to);
  return out;
}

/** A value as it may be shown: secrets as {@link REDACTED}, strings without URL credentials. */
export function shownValue(value: unknown, secret: boolean): unknown {
  if (value === undefined) return undefined;
  if (secret) return REDACTED;
  return typeof value === "string" ? redactUrl(value) : value;
}

/** Make `target` (an instance or a prototype) print only `view(self)` through `util.inspect` (even `showHidden`), `JSON.stringify` and `String()`. */
export function printSafely<T extends object>(target: T, label: string | ((self: T) => string), view: (self: T) => unknown): void {
  const name = (self: T): string => (typeof label === "string" ? label : label(self));
  const hidden = (value: unknown): PropertyDescriptor => ({ value, enumerable: false, writable: true, configurable: true });
  Object.defineProperties(target, {
    [inspect.custom]: hidden(function (this: T, _depth: number, options: object, show: (v: unknown, o: object) => string = inspect): string {
      return `${name(this)} ${show(view(this), options)}`;
    }),
    toJSON: hidden(function (this: T): unknown {
      return view(this);
    }),
    toString: hidden(function (this: T): string {
      return `${name(this)} ${JSON.stringify(view(this))}`;
    }),
  });
}

/**
 * What an `ObjstateError` keeps of a foreign error: name, message and stack without signing
 * material, `code`, HTTP status, and the same of its causes, so no SDK `$response` is reachable.
 */
export class SanitizedCause extends Error {
  /** Such as `ECONNREFUSED`. */
  readonly code: string | undefined;
  readonly httpStatus: number | undefined;
  /** The SDK's shape of the status, for code that reads `$metadata.httpStatusCode`. */
  readonly $metadata: { readonly httpStatusCode?: number | undefined; readonly requestId?: string | undefined } | undefined;
  readonly errors: readonly SanitizedCause[] | undefined;

  /** @internal use {@link sanitizeCause}. */
  constructor(original: unknown, depth: number) {
    const e = isRecord(original) ? original : {};
    const text = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
    const inner = depth < MAX_DEPTH && e["cause"] !== undefined ? sanitizeCause(e["cause"], depth + 1) : undefined;
    super(redactText(text(e["message"]) ?? String(original)), inner === undefined ? undefined : { cause: inner });
    this.name = text(e["name"]) ?? "Error";
    const stack = text(e["stack"]);
    this.stack = stack === undefined ? undefined : redactText(stack);
    this.code = text(e["code"]);
    const meta = isRecord(e["$metadata"]) ? e["$metadata"] : undefined;
    const status = [meta?.["httpStatusCode"], e["status"], e["statusCode"]].find((x): x is number => typeof x === "number");
    this.httpStatus = status;
    this.$metadata = meta === undefined ? undefined : { httpStatusCode: status, requestId: text(meta["requestId"]) };
    const list = e["errors"];
    this.errors = Array.isArray(list) && depth < MAX_DEPTH ? list.slice(0, 8).flatMap((x: unknown) => sanitizeCause(x, depth + 1) ?? []) : undefined;
  }
}

const MAX_DEPTH = 4;

/** Undefined and already sanitized causes pass as they are. */
export function sanitizeCause(cause: unknown, depth = 0): SanitizedCause | undefined {
  if (cause === undefined || cause instanceof SanitizedCause) return cause;
  return new SanitizedCause(cause, depth);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}
