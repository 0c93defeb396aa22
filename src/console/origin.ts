/**
 * Is a POST from the console's own pages? Browsers send `Origin` on every cross-site POST
 * (and Chromium and Firefox on same-origin ones too), so it must name the console's origin.
 * Without it the `Referer`'s origin must; with neither the request is refused: a form the
 * console served always carries one, and a script that wants no browser uses the JSON API.
 */
import type { IncomingMessage } from "node:http";

/** The console's origin as the request reached it: `https://host` on TLS sockets, else `http://host`. */
export function requestOrigin(req: IncomingMessage): string | undefined {
  const host = req.headers.host;
  if (host === undefined || host === "") return undefined;
  const tls = (req.socket as { encrypted?: boolean }).encrypted === true;
  return `${tls ? "https" : "http"}://${host}`.toLowerCase();
}

/** Why a POST is refused, or undefined when it comes from `expected`. */
export function crossSiteReason(headers: IncomingMessage["headers"], expected: string | undefined): string | undefined {
  if (expected === undefined) return "the request has no Host header";
  const want = expected.toLowerCase();
  if (headers["sec-fetch-site"] === "cross-site") return "the browser says the request is cross-site (Sec-Fetch-Site)";
  const origin = headers.origin;
  if (typeof origin === "string" && origin !== "") {
    // The header's value is not quoted: this reason is logged, and no request header is.
    return origin.toLowerCase() === want ? undefined : "its Origin is not this console's";
  }
  const referer = headers.referer;
  if (typeof referer === "string" && referer !== "") {
    const from = URL.canParse(referer) ? new URL(referer).origin.toLowerCase() : undefined;
    return from === want ? undefined : "the Referer is not this console";
  }
  return "the request has neither Origin nor Referer";
}
