/**
 * Reading a failed request of the AWS SDK's clients (S3, DynamoDB): name, HTTP status, whether
 * an answer came. By name and shape, never `instanceof` (the SDK may be loaded twice); a
 * socket's error arrives bare, as a `cause`, or in an AggregateError (dual-stack connects).
 */

/** Socket-level failures: the request got no answer from the server. */
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE"]);

/** The SDK's names for a request that timed out (without an answer: S3 also answers `RequestTimeout` itself). */
const TIMEOUT_NAMES = new Set(["TimeoutError", "RequestTimeout", "RequestTimeoutException"]);

/** Names that mean "the server refused who we are", whatever the service calls it (S3's, then DynamoDB's). */
const ACCESS_DENIED_NAMES = new Set([
  "AccessDenied",
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "AccessDeniedException",
  "UnrecognizedClientException",
  "InvalidSignatureException",
  "IncompleteSignatureException",
  "MissingAuthenticationTokenException",
  "MissingAuthenticationToken",
  "ExpiredTokenException",
  "InvalidClientTokenId",
  "CredentialsProviderError",
]);

/** Property `name` of `e`, when `e` is an object that has it. */
export function field(e: unknown, name: string): unknown {
  return typeof e === "object" && e !== null && name in e ? (e as Record<string, unknown>)[name] : undefined;
}

/** The first non-undefined `find(x)` of `e` or of an error inside it (`errors`, then `cause`). */
function inside<T>(e: unknown, find: (x: object) => T | undefined, depth = 0): T | undefined {
  if (depth > 4 || typeof e !== "object" || e === null) return undefined;
  const found = find(e);
  if (found !== undefined) return found;
  const errors = field(e, "errors");
  for (const sub of Array.isArray(errors) ? errors : []) {
    const f = inside(sub, find, depth + 1);
    if (f !== undefined) return f;
  }
  return inside(field(e, "cause"), find, depth + 1);
}

/** The error's name (the service's exception name for an answer), if it has one. */
export function sdkErrorName(e: unknown): string | undefined {
  const n = field(e, "name");
  return typeof n === "string" ? n : undefined;
}

/** The error's message, or its text when it is no error. */
export function sdkErrorMessage(e: unknown): string {
  const m = field(e, "message");
  return typeof m === "string" ? m : String(e);
}

/** The HTTP status of the answer the error came from; undefined when no answer came. */
export function sdkHttpStatus(e: unknown): number | undefined {
  const s = field(field(e, "$metadata"), "httpStatusCode");
  return typeof s === "number" ? s : undefined;
}

/** Why no answer came (a socket's code or the SDK's timeout name); undefined when the server answered. */
export function networkFailure(e: unknown): string | undefined {
  return inside(e, (x) => {
    const code = field(x, "code");
    if (typeof code === "string" && SOCKET_CODES.has(code)) return code;
    const name = sdkErrorName(x);
    return name !== undefined && TIMEOUT_NAMES.has(name) && sdkHttpStatus(x) === undefined ? name : undefined;
  });
}

/** Did the server refuse the request's identity (HTTP 403, or an access-denied exception by any service's name)? */
export function isAccessDenied(e: unknown): boolean {
  const name = sdkErrorName(e);
  return sdkHttpStatus(e) === 403 || (name !== undefined && ACCESS_DENIED_NAMES.has(name));
}

/** Could the SDK not read the answer as its service's (an HTML page)? Then another server answered. */
export function isForeignAnswer(e: unknown): boolean {
  return /Deserialization error|XML parse error/i.test(sdkErrorMessage(e)) || (sdkErrorName(e) === "SyntaxError" && sdkHttpStatus(e) !== undefined);
}

/** Did a TLS handshake meet a plain-HTTP server? OpenSSL reads its answer as a TLS record ("wrong version number"). */
export function isTlsToPlainHttp(e: unknown): boolean {
  const found = inside(e, (x) => {
    const code = field(x, "code");
    const message = field(x, "message");
    const c = typeof code === "string" ? code : "";
    return (c === "EPROTO" || c.startsWith("ERR_SSL_")) &&
      /wrong version number|packet length too long|unknown protocol/i.test(`${c} ${typeof message === "string" ? message : ""}`)
      ? true
      : undefined;
  });
  return found === true;
}
