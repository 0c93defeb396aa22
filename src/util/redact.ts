/**
 * Secret hygiene in one place: credentials inside endpoint URLs, request-signing material
 * in foreign error text, and printing of objects that hold secrets. Every class that
 * holds a secret prints through {@link printSafely}; every error keeps foreign causes only
 * through {@link sanitizeCause}.
 */
import { inspect } from "node:util";

/** What a hidden value prints as. */
export const REDACTED = "<redacted>";

// `scheme://userinfo@` anywhere in a text. The userinfo part stops at anything that ends
// an authority, so `a@b` in a path or an e-mail address after a URL is left alone.
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>`]+@/gi;

/**
 * `url` (or any text holding URLs) with the user-info part of every URL replaced:
 * `http://user:pass@host:9000` → `http://<redacted>@host:9000`. Everything else is kept,
 * so the result still says which host is meant.
 */
export function redactUrl(url: string): string {
  return url.replace(URL_USERINFO, `$1${REDACTED}@`);
}

// Request-signing material as SDKs and servers quote it: header values, query parameters
// of presigned URLs, and the `Credential=`/`Signature=` parts of an Authorization header.
const SIGNING: readonly [RegExp, string][] = [
  [/\b(Authorization\s*[:=]\s*)[^\r\n"]*/gi, `$1${REDACTED}`],
  [/\b(X-Amz-(?:Signature|Credential|Security-Token)|Credential|Signature|SecurityToken|Security-Token)(\s*[=:]\s*)[^\s,&;"'<>]+/gi, `$1$2${REDACTED}`],
];

/** `text` without URL credentials and request-signing material (signatures, credential scopes, session tokens). */
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

/**
 * Make `target` (an instance, or a prototype for a whole class) print only `view(self)`:
 * `util.inspect` (even with `showHidden`), `JSON.stringify` and `String()` all go through
 * it. The members are non-enumerable, so equality checks and `Object.keys` are unchanged.
 */
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
 * What an {@link ObjstateError} keeps of a foreign error: its name, message and stack with
 * signing material removed, its network `code`, its HTTP status, and the same of its own
 * causes. Nothing else survives, so fields an SDK hangs on its errors (`$response` with
 * the signed request, the request's headers) cannot be reached through `err.cause`.
 */
export class SanitizedCause extends Error {
  /** Network-level code such as `ECONNREFUSED`, when the original had one. */
  readonly code: string | undefined;
  /** HTTP status of the response that failed, when there was one. */
  readonly httpStatus: number | undefined;
  /** The SDK's own shape of the status, so code that reads `$metadata.httpStatusCode` still works. */
  readonly $metadata: { readonly httpStatusCode?: number | undefined; readonly requestId?: string | undefined } | undefined;
  /** Sanitized members of an AggregateError. */
  readonly errors: readonly SanitizedCause[] | undefined;

  /** @internal use {@link sanitizeCause}. */
  constructor(original: unknown, depth: number) {
    const e = isRecord(original) ? original : {};
    const message = typeof e["message"] === "string" ? e["message"] : String(original);
    const inner = depth < MAX_DEPTH && e["cause"] !== undefined ? sanitizeCause(e["cause"], depth + 1) : undefined;
    super(redactText(message), inner === undefined ? undefined : { cause: inner });
    this.name = typeof e["name"] === "string" ? e["name"] : "Error";
    this.stack = typeof e["stack"] === "string" ? redactText(e["stack"]) : undefined;
    this.code = typeof e["code"] === "string" ? e["code"] : undefined;
    const meta = isRecord(e["$metadata"]) ? e["$metadata"] : undefined;
    const status =
      typeof meta?.["httpStatusCode"] === "number"
        ? meta["httpStatusCode"]
        : typeof e["status"] === "number"
          ? e["status"]
          : typeof e["statusCode"] === "number"
            ? e["statusCode"]
            : undefined;
    this.httpStatus = status;
    this.$metadata =
      meta === undefined ? undefined : { httpStatusCode: status, requestId: typeof meta["requestId"] === "string" ? meta["requestId"] : undefined };
    const list = e["errors"];
    this.errors =
      Array.isArray(list) && depth < MAX_DEPTH
        ? list
            .slice(0, 8)
            .map((x: unknown) => sanitizeCause(x, depth + 1))
            .filter((x): x is SanitizedCause => x instanceof SanitizedCause)
        : undefined;
  }
}

const MAX_DEPTH = 4;

/** A {@link SanitizedCause} of `cause` (undefined and already sanitized causes pass as they are). */
export function sanitizeCause(cause: unknown, depth = 0): SanitizedCause | undefined {
  if (cause === undefined || cause instanceof SanitizedCause) return cause;
  return new SanitizedCause(cause, depth);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}
